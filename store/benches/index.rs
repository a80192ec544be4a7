//! Secondary-index benchmarks over 1M rows (`ROWSEARCH_BENCH_ROWS` changes it):
//! - an indexed equality lookup returning 100 rows against a full scan with
//!   SingleColumnValueFilter finding the same rows;
//! - batch-put throughput into a table with two indexes against one without
//!   (and with the pending runs a load leaves merged as well).
//!
//! Run: `cargo bench -p rowsearch-store --bench index` (results in store/BENCHMARKS.md).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rowsearch_store::{
    Batch, FamilySchema, Filter, IndexQuery, IndexSchema, PutCell, ReadOptions, Scan, Store, TableSchema,
};

const BATCH: u64 = 10_000;
/// Distinct senders: each matches rows / SENDERS rows (100 at 1M).
const SENDERS: u64 = 10_000;

fn rows() -> u64 {
    std::env::var("ROWSEARCH_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn schema(indexed: bool) -> TableSchema {
    let schema = TableSchema::new([FamilySchema::new("m")]);
    if indexed {
        schema.index(IndexSchema::new("by_from", ["m:from"])).index(IndexSchema::new("by_to", ["m:to"]))
    } else {
        schema
    }
}

fn load(store: &Store, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut batch = Batch::new();
        for i in start..(start + BATCH).min(n) {
            batch.put(
                "t",
                format!("msg{i:09}").into_bytes(),
                vec![
                    PutCell::new("m", "from", format!("sender{}", i % SENDERS)).at(1),
                    PutCell::new("m", "to", format!("rcpt{}", i % 977)).at(1),
                ],
            );
        }
        store.apply(&batch).unwrap();
    }
}

fn open(dir: &std::path::Path, indexed: bool) -> Store {
    let store = Store::builder().map_size_bytes(8 << 30).open(dir).unwrap();
    store.create_table("t", &schema(indexed)).unwrap();
    store
}

fn lookups(c: &mut Criterion) {
    let n = rows();
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), true);
    load(&store, n);
    let per_sender = n / SENDERS;
    let mut group = c.benchmark_group("equality_lookup");
    group.sample_size(10).measurement_time(Duration::from_secs(15));
    group.bench_function(BenchmarkId::new("index_rows", n), |b| {
        let query = IndexQuery { eq: vec![b"sender42".to_vec()], ..IndexQuery::default() };
        let read = ReadOptions::default();
        b.iter(|| {
            let rtxn = store.begin_read().unwrap();
            let (rows, _) = rtxn.index_rows("t", "by_from", &query, &read).unwrap();
            assert_eq!(rows.len() as u64, per_sender);
            black_box(rows)
        })
    });
    group.bench_function(BenchmarkId::new("scan_single_column_value_filter", n), |b| {
        let filter =
            Filter::parse("SingleColumnValueFilter('m', 'from', =, 'binary:sender42', true, true)").unwrap();
        let scan = Scan::new().filter(filter);
        b.iter(|| {
            let rows = store.scan("t", &scan).unwrap().rows;
            assert_eq!(rows.len() as u64, per_sender);
            black_box(rows)
        })
    });
    group.finish();
}

fn puts(c: &mut Criterion) {
    let n = rows();
    let mut group = c.benchmark_group("batch_put_indexes");
    group.sample_size(10).measurement_time(Duration::from_secs(30)).throughput(Throughput::Elements(n));
    // `two_indexes_merged` adds the merge of the runs a load leaves pending
    // (`compact`), so no index work is left out of the figure.
    for (name, indexed, merged) in
        [("no_index", false, false), ("two_indexes", true, false), ("two_indexes_merged", true, true)]
    {
        group.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().unwrap();
                    let store = open(dir.path(), indexed);
                    let t = Instant::now();
                    load(&store, n);
                    if merged {
                        store.compact().unwrap();
                    }
                    total += t.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, lookups, puts);
criterion_main!(benches);
