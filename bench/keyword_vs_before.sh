#!/bin/sh
# Keyword lookups and single-row put/delete on the full corpus, this build
# against an earlier one (default: 897ce6a, the last build with format 3
# keyword rows, one LMDB entry per cell), same machine, same script.
#
# Usage: sh bench/keyword_vs_before.sh [COMMIT] [RUNS]   (default 897ce6a, 3)
# 1. extracts ../shared/corpus/mail.tar.zst once into /tmp/rowsearch-bench/corpus;
# 2. checks COMMIT out as a git worktree in /tmp/rowsearch-bench/before, with
#    this build's indexer/examples/keyword_latency.rs copied in (it uses only
#    API both builds have), and builds both in release;
# 3. ingests the corpus once with each build (its own format);
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
if [ ! -d "$work/before" ]; then
    git -C "$root" worktree add --detach "$work/before" "$before"
fi
mkdir -p "$work/before/indexer/examples"
cp "$root/indexer/examples/keyword_latency.rs" "$work/before/indexer/examples/"
for side in "$root" "$work/before"; do
    cargo build -q --release --manifest-path "$side/Cargo.toml" -p rowsearch \
        -p rowsearch-indexer --bin rowsearch --example keyword_latency
done
for side in now before; do
    case $side in now) tree=$root ;; before) tree=$work/before ;; esac
    if [ ! -f "$work/keyword-$side/data.mdb" ]; then
        "$tree/target/release/rowsearch" --data "$work/keyword-$side" ingest "$work/corpus/mail" >/dev/null
    fi
done
i=0
while [ $i -lt "$runs" ]; do
    i=$((i + 1))
    for side in before now; do
        case $side in now) tree=$root ;; before) tree=$work/before ;; esac
        echo "== $side run $i ($(cat "$work/keyword-$side/data.mdb" | wc -c | awk '{printf "%d MB", $1/1e6}'))"
        "$tree/target/release/examples/keyword_latency" "$work/keyword-$side"
    done
done
