#!/bin/sh
# alternating: feeder nice default (10) vs 15 vs 19; prints wall and ingest time
B=/tmp/scratch/rowsearch-exp-nice
for r in 1 2 3 4; do
  for n in def 15 19; do
    rm -rf /tmp/ing1
    s=$(date +%s.%N)
    if [ $n = def ]; then out=$($B --data /tmp/ing1 ingest /tmp/rowsearch-bench/corpus/mail 2>&1 | tail -1)
    else out=$(EXP_FEEDER_NICE=$n $B --data /tmp/ing1 ingest /tmp/rowsearch-bench/corpus/mail 2>&1 | tail -1); fi
    e=$(date +%s.%N)
    echo "round $r nice $n wall $(echo "$e-$s"|bc) $(echo "$out" | grep -o 'in [0-9.]* s')"
  done
done
