#!/bin/sh
# Full reindex from keyword rows against raw tantivy on the full corpus, and
# an incremental reindex of 1% of the rows (indexer/benches/reindex.rs).
#
# Usage: sh bench/reindex_vs_tantivy.sh [RUNS]   (default 5)
# 1. extracts ../shared/corpus/mail.tar.zst once into /tmp/rowsearch-bench/corpus
#    (as bench/ingest_vs_fts5.py does);
# 2. ingests it once into /tmp/rowsearch-bench/reindex-store with the release binary;
# 3. runs the bench against that store, RUNS runs of each side, interleaved,
#    and prints medians and ratios.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/rowsearch-bench
corpus=${ROWSEARCH_CORPUS:-$root/../shared/corpus/mail.tar.zst}
if [ ! -d "$work/corpus/mail" ]; then
    mkdir -p "$work/corpus"
    tar --zstd -xf "$corpus" -C "$work/corpus"
fi
cargo build -q --release -p rowsearch --manifest-path "$root/Cargo.toml"
if [ ! -f "$work/reindex-store/data.mdb" ]; then
    "$root/target/release/rowsearch" --data "$work/reindex-store" ingest "$work/corpus/mail"
fi
ROWSEARCH_BENCH_STORE="$work/reindex-store" ROWSEARCH_BENCH_RUNS="${1:-5}" \
    cargo bench -q --manifest-path "$root/Cargo.toml" -p rowsearch-indexer --bench reindex
