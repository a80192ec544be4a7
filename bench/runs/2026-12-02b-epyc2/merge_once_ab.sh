#!/bin/sh
# Alternating: the default ingest (a merge of the keyword runs every 4
# batches) against one that keeps every batch's run (ROWSEARCH_KEYWORD_PENDING_RUNS=1000)
# and merges them once at the end (`rowsearch compact`). Prints each
# round's ingest wall, the compact's wall, and the data directory's size.
B=${B:-/tmp/scratch/rowsearch-s25base}
for r in 1 2 3; do
  for runs in 4 1000; do
    rm -rf /tmp/ing1
    s=$(date +%s.%N)
    ROWSEARCH_KEYWORD_PENDING_RUNS=$runs $B --data /tmp/ing1 ingest /tmp/rowsearch-bench/corpus/mail >/dev/null 2>&1
    m=$(date +%s.%N)
    $B --data /tmp/ing1 compact >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "round $r runs $runs ingest $(echo "$m-$s"|bc) compact $(echo "$e-$m"|bc) total $(echo "$e-$s"|bc) MB $(du -sm /tmp/ing1|cut -f1)"
  done
done
