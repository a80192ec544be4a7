#!/bin/sh
# Keyword lookups and single-row put/delete on the full corpus, this build
# against an earlier one (default: 897ce6a, the last build with format 3
# keyword rows, one LMDB entry per cell), same machine, same script.
#
# Usage: sh bench/keyword_vs_before.sh [COMMIT] [RUNS]   (default 897ce6a, 3)
# 1. extracts ../shared/corpus/mail.tar.zst once into /tmp/rowsearch-bench/corpus;
# 2. checks COMMIT out as a git worktree in /tmp/rowsearch-bench/before-COMMIT, with
#    this build's indexer/examples/keyword_latency.rs copied in (it uses only
#    API both builds have), and builds both in release;
# 3. ingests the corpus once with each build (its own format; the time and
#    peak RSS printed; a store left by an earlier run is kept: remove
#    /tmp/rowsearch-bench/keyword-now after changing this build);
# 4. runs the example RUNS times on each store, alternating, and prints
#    every run (each line: p50 and p99 per lookup, put and delete).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/rowsearch-bench
before=${1:-897ce6a}
runs=${2:-3}
corpus=${ROWSEARCH_CORPUS:-$root/../shared/corpus/mail.tar.zst}
if [ ! -d "$work/corpus/mail" ]; then
    mkdir -p "$work/corpus"
    tar --zstd -xf "$corpus" -C "$work/corpus"
fi
btree=$work/before-$before
if [ ! -d "$btree" ]; then
    git -C "$root" worktree add --detach "$btree" "$before"
fi
mkdir -p "$btree/indexer/examples"
cp "$root/indexer/examples/keyword_latency.rs" "$btree/indexer/examples/"
for side in "$root" "$btree"; do
    cargo build -q --release --manifest-path "$side/Cargo.toml" -p rowsearch \
        -p rowsearch-indexer --bin rowsearch --example keyword_latency
done
store() { case $1 in now) echo "$work/keyword-now" ;; before) echo "$work/keyword-before-$before" ;; esac; }
for side in now before; do
    case $side in now) tree=$root ;; before) tree=$btree ;; esac
    if [ ! -f "$(store $side)/data.mdb" ]; then
        /usr/bin/time -f "ingest $side: %e s, peak RSS %M KB" \
            "$tree/target/release/rowsearch" --data "$(store $side)" ingest "$work/corpus/mail" >/dev/null
    fi
done
i=0
while [ $i -lt "$runs" ]; do
    i=$((i + 1))
    for side in before now; do
        case $side in now) tree=$root ;; before) tree=$btree ;; esac
        echo "== $side run $i ($(wc -c < "$(store $side)/data.mdb" | awk '{printf "%d MB", $1/1e6}'))"
        "$tree/target/release/examples/keyword_latency" "$(store $side)"
    done
done
