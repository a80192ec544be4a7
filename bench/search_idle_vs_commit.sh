#!/bin/sh
# Idle search latency (search-api/benches/search.rs, in process) of this
# tree against an earlier commit's, on one indexed store, alternating three
# runs each. The earlier tree is checked out at /tmp/rowsearch-bench/before.
#
# Usage: sh bench/search_idle_vs_commit.sh COMMIT STORE
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
before=/tmp/rowsearch-bench/before
if [ ! -d "$before" ]; then git -C "$root" worktree add -f "$before" "$1" > /dev/null; fi
git -C "$before" checkout -q "$1"
(cd "$before" && cargo bench -q -p rowsearch --bench search --no-run)
(cd "$root" && cargo bench -q -p rowsearch --bench search --no-run)
for i in 1 2 3; do
    for side in before now; do
        case $side in now) tree=$root ;; before) tree=$before ;; esac
        echo "== $side run $i"
        (cd "$tree" && ROWSEARCH_BENCH_STORE="$2" ROWSEARCH_BENCH_ITERATIONS=1000 \
            cargo bench -q -p rowsearch --bench search 2>&1 | grep -v "^$")
    done
done
