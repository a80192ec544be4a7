set -eu
cd /work/main
for size in 512 1800; do
  sed -i "s/^pub(crate) const TARGET_BLOCK_BYTES: usize = [0-9_]*;/pub(crate) const TARGET_BLOCK_BYTES: usize = $size;/" store/src/keyword/block.rs
  cargo build -q --release -p rowsearch -p rowsearch-indexer --bin rowsearch --example keyword_latency
  cp target/release/rowsearch /tmp/rs-bin-$size
  cp target/release/examples/keyword_latency /tmp/kl-$size
done
sed -i "s/^pub(crate) const TARGET_BLOCK_BYTES: usize = [0-9_]*;/pub(crate) const TARGET_BLOCK_BYTES: usize = 1024;/" store/src/keyword/block.rs
cargo build -q --release -p rowsearch -p rowsearch-indexer --bin rowsearch --example keyword_latency
cp target/release/rowsearch /tmp/rs-bin-1024
cp target/release/examples/keyword_latency /tmp/kl-1024
for round in 1 2; do
for size in 512 1024 1800; do
  rm -rf /tmp/bt-$size
  s=$(date +%s.%N)
  /tmp/rs-bin-$size --data /tmp/bt-$size ingest /tmp/corpus/mail > /dev/null 2>&1
  e=$(date +%s.%N)
  echo "== block $size round $round: ingest $(echo "$e - $s" | bc) s"
  /work/main/target/release/examples/page_usage /tmp/bt-$size | grep -E "kb|pages in"
  ROWSEARCH_BENCH_ONLY=lookups /tmp/kl-$size /tmp/bt-$size 2
done
done
