# one ingest over HBase with CPU accounting; $1 = label, env passes through
cd /tmp/rowsearch-bench
HB=127.0.0.1:36819
M=$(cat hbase/master.pid); T=$(cat hbase/thrift2.pid)
/tmp/rs-ab --data over-local --hbase $HB drop-table mail > /dev/null 2>&1
m0=$(bash /tmp/cpu.sh $M); t0=$(bash /tmp/cpu.sh $T)
/usr/bin/time -f "%e %U %S" -o /tmp/time.out /tmp/rs-ab --data over-local --hbase $HB ingest corpus/mail > /tmp/ingest.out 2> /tmp/ingest.err
m1=$(bash /tmp/cpu.sh $M); t1=$(bash /tmp/cpu.sh $T)
read wall user sys < /tmp/time.out
cells=$(grep "^AB cells" /tmp/ingest.err | tail -1)
echo "$1: wall $wall s, rowsearch cpu $(echo "$user + $sys" | bc) s, region server cpu $(echo "$m1 - $m0" | bc) s, gateway cpu $(echo "$t1 - $t0" | bc) s; $cells"
