#!/bin/bash
# usage: cpu_reindex.sh PARALLEL -> wall, rowsearch CPU, RS CPU, gateway CPU
H=/tmp/rowsearch-bench/hbase
cpu() { awk '{print ($14+$15)/100}' /proc/$1/stat; }
M=$(cat $H/master.pid); T=$(cat $H/thrift2.pid)
m0=$(cpu $M); t0=$(cpu $T)
s=$(date +%s.%N)
/usr/bin/time -f "%U %S" -o /tmp/rs.time ${BIN:-target/release/rowsearch} --data /tmp/rowsearch-bench/over-local --hbase $ROWSEARCH_HBASE_THRIFT2 reindex --full --parallel $1 > /tmp/rs.out 2>&1
e=$(date +%s.%N)
m1=$(cpu $M); t1=$(cpu $T)
echo "parallel $1: wall $(echo "$e - $s" | bc) rowsearch $(awk '{print $1+$2}' /tmp/rs.time) rs $(echo "$m1 - $m0" | bc) gw $(echo "$t1 - $t0" | bc) :: $(grep -o 'serving after [0-9.]*s' /tmp/rs.out)"
