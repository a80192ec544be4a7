#!/bin/sh
# Search latency (search-api/benches/search.rs, in process) on the full
# corpus, this build against the earlier one that bench/keyword_vs_before.sh
# checked out and ingested (run that first: it leaves
# /tmp/rowsearch-bench/before and the two stores keyword-before and
# keyword-now). Each store is fully reindexed by its own build, then the
# bench runs three times on each, alternating.
#
# Usage: sh bench/search_vs_before.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/rowsearch-bench
"$work/before/target/release/rowsearch" --data "$work/keyword-before" reindex --full > /dev/null 2>&1
"$root/target/release/rowsearch" --data "$work/keyword-now" reindex --full > /dev/null 2>&1
(cd "$work/before" && cargo bench -q -p rowsearch --bench search --no-run)
(cd "$root" && cargo bench -q -p rowsearch --bench search --no-run)
for i in 1 2 3; do
    for side in before now; do
        case $side in now) tree=$root ;; before) tree=$work/before ;; esac
        echo "== $side run $i"
        (cd "$tree" && ROWSEARCH_BENCH_STORE="$work/keyword-$side" ROWSEARCH_BENCH_ITERATIONS=1000 \
            cargo bench -q -p rowsearch --bench search 2>&1 | grep -v "^$")
    done
done
