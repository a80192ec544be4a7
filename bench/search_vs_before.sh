#!/bin/sh
# Search latency (search-api/benches/search.rs, in process) on the full
# corpus, this build against the earlier one that bench/keyword_vs_before.sh
# checked out and ingested (run that first with the same COMMIT: it leaves
# the worktree /tmp/rowsearch-bench/before-COMMIT and the two stores
# keyword-before-COMMIT and keyword-now). Each store is fully reindexed by
# its own build, then the bench runs RUNS times on each, alternating.
#
# Usage: sh bench/search_vs_before.sh [COMMIT] [RUNS]   (default 897ce6a, 3)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/rowsearch-bench
before=${1:-897ce6a}
runs=${2:-3}
btree=$work/before-$before
for dir in "$btree" "$work/keyword-before-$before" "$work/keyword-now"; do
    [ -d "$dir" ] || { echo "missing $dir: run sh bench/keyword_vs_before.sh $before first" >&2; exit 2; }
done
store() { case $1 in now) echo "$work/keyword-now" ;; before) echo "$work/keyword-before-$before" ;; esac; }
"$btree/target/release/rowsearch" --data "$(store before)" reindex --full > /dev/null 2>&1
"$root/target/release/rowsearch" --data "$(store now)" reindex --full > /dev/null 2>&1
(cd "$btree" && cargo bench -q -p rowsearch --bench search --no-run)
(cd "$root" && cargo bench -q -p rowsearch --bench search --no-run)
i=1
while [ "$i" -le "$runs" ]; do
    for side in before now; do
        case $side in now) tree=$root ;; before) tree=$btree ;; esac
        echo "== $side run $i"
        (cd "$tree" && ROWSEARCH_BENCH_STORE="$(store $side)" ROWSEARCH_BENCH_ITERATIONS=1000 \
            cargo bench -q -p rowsearch --bench search 2>&1 | grep -v "^$")
    done
    i=$((i + 1))
done
