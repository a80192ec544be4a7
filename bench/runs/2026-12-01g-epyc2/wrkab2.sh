#!/bin/bash
# wrkab2.sh BASE_URL NEW_URL ROUNDS PATH...: each path timed on one server, then the other, round after round (wrk -t1 -c1, p50)
A=$1; B=$2; R=$3; shift 3
for r in $(seq $R); do
 for p in "$@"; do
  for side in base new; do
   if [ $side = base ]; then a=$A; else a=$B; fi
   wrk -t1 -c1 -d1s "$a$p" > /dev/null
   v=$(wrk -t1 -c1 -d${SECS:-3}s --latency "$a$p" | awk '$1=="50%"{print $2}')
   echo "$r $side $v $p"
  done
 done
done
