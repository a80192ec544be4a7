#!/bin/bash
# The two servers run at once over the same store; each path is timed on one, then the other, round after round.
# wrkab.sh BASE_BIN NEW_BIN DATA ROUNDS PATH...
T=$(mktemp -d); BASE=$1; NEW=$2; DATA=$3; R=$4; shift 4
$BASE --data $DATA serve --listen 127.0.0.1:0 --refresh-ms 0 > $T/base.out 2>/dev/null &
P1=$!
$NEW --data $DATA serve --listen 127.0.0.1:0 --refresh-ms 0 > $T/new.out 2>/dev/null &
P2=$!
sleep 2
A=$(head -1 $T/base.out | sed 's/listening on //'); B=$(head -1 $T/new.out | sed 's/listening on //')
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
kill $P1 $P2
