#!/bin/sh
# Alternating: the small batches at the end from 8,192 files left (the
# build's), from 2,048 (the last two), and none (only the first small).
# Prints each run's wall (s) and user+system CPU (s). B: a scratch build of
# ca8aa45 whose `batch_limits` read the threshold from EXP_TAIL (the
# switch was not kept in the code).
B=${B:-/tmp/scratch/rowsearch-tail}
for r in 1 2 3 4 5; do
  for tail in ${TAILS:-8192 2048 0}; do
    rm -rf /tmp/ing1
    /usr/bin/time -f "%e %U %S" -o /tmp/tail.time env EXP_TAIL=$tail $B --data /tmp/ing1 ingest /tmp/rowsearch-bench/corpus/mail >/dev/null 2>&1
    echo "round $r tail $tail $(cat /tmp/tail.time)"
  done
done
