//! Read-path benchmarks over 1M rows (`ROWSEARCH_BENCH_ROWS` changes it):
//! - a PrefixFilter scan against the same range given as start/stop (the
//!   filter bounds the LMDB range, so the ratio should be close to 1);
//! - a prefix scan of a 16-bucket salted table against the unsalted one;
//! - a SingleColumnValueFilter full scan, in cells/s, beside the plain full
//!   scan of the same table.
//!
//! Run: `cargo bench -p rowsearch-store --bench reads` (results in store/BENCHMARKS.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rowsearch_store::{
    Batch, FamilySchema, Filter, KeyField, KeyOrder, KeyType, KeyValue, PutCell, RowKeySchema, Scan, Store,
    TableSchema,
};

const BATCH: u64 = 20_000;
/// Rows per user: a prefix scan reads 1% of the table.
const USERS: u64 = 100;

fn rows() -> u64 {
    std::env::var("ROWSEARCH_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn key_schema() -> RowKeySchema {
    RowKeySchema::new([
        KeyField::new("user", KeyType::U32, KeyOrder::Asc),
        KeyField::new("date", KeyType::U64, KeyOrder::Desc),
    ])
}

fn load(store: &Store, table: &str, schema: &RowKeySchema, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut batch = Batch::new();
        for i in start..(start + BATCH).min(n) {
            let user = u32::try_from(i % USERS).unwrap();
            let key = schema.encode(&[KeyValue::U32(user), KeyValue::U64(i)]).unwrap();
            let from = format!("sender{}@example.com", i % 1000);
            batch.put(
                table,
                key,
                vec![
                    PutCell::new("m", "from", from).at(1),
                    PutCell::new("m", "subject", "a subject line").at(1),
                ],
            );
        }
        store.apply(&batch).unwrap();
    }
}

fn count(store: &Store, table: &str, scan: &Scan) -> u64 {
    let rtxn = store.begin_read().unwrap();
    let mut rows = 0;
    for row in rtxn.scan(table, scan).unwrap() {
        black_box(row.unwrap());
        rows += 1;
    }
    rows
}

fn reads(c: &mut Criterion) {
    let n = rows();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().map_size_bytes(8 << 30).open(dir.path()).unwrap();
    let families = [FamilySchema::new("m")];
    let plain = key_schema();
    let salted = key_schema().salted(16);
    store.create_table("plain", &TableSchema::new(families.clone()).row_key(plain.clone())).unwrap();
    store.create_table("salted", &TableSchema::new(families).row_key(salted.clone())).unwrap();
    load(&store, "plain", &plain, n);
    load(&store, "salted", &salted, n);

    let prefix = plain.encode_prefix(&[KeyValue::U32(42)]).unwrap();
    let stop = plain.encode_prefix(&[KeyValue::U32(43)]).unwrap();
    let per_user = n / USERS;

    let mut group = c.benchmark_group("prefix_scan");
    group.throughput(Throughput::Elements(per_user)).measurement_time(Duration::from_secs(8));
    group.bench_function(BenchmarkId::new("start_stop", n), |b| {
        let scan = Scan::new().start(prefix.clone()).stop(stop.clone());
        b.iter(|| assert_eq!(count(&store, "plain", &scan), per_user))
    });
    group.bench_function(BenchmarkId::new("prefix_filter", n), |b| {
        let scan = Scan::new().filter(Filter::Prefix(prefix.clone()));
        b.iter(|| assert_eq!(count(&store, "plain", &scan), per_user))
    });
    group.bench_function(BenchmarkId::new("unsalted_prefix", n), |b| {
        let scan = Scan::new().prefix(prefix.clone());
        b.iter(|| assert_eq!(count(&store, "plain", &scan), per_user))
    });
    group.bench_function(BenchmarkId::new("salted16_prefix", n), |b| {
        let scan = Scan::new().prefix(prefix.clone());
        b.iter(|| assert_eq!(count(&store, "salted", &scan), per_user))
    });
    group.finish();

    let mut group = c.benchmark_group("full_scan_filter");
    group.sample_size(10).throughput(Throughput::Elements(2 * n)).measurement_time(Duration::from_secs(20));
    group.bench_function(BenchmarkId::new("no_filter", n), |b| {
        b.iter(|| assert_eq!(count(&store, "plain", &Scan::new()), n))
    });
    group.bench_function(BenchmarkId::new("single_column_value", n), |b| {
        let filter = Filter::parse(
            "SingleColumnValueFilter('m', 'from', =, 'binary:sender7@example.com', true, true)",
        )
        .unwrap();
        let scan = Scan::new().filter(filter);
        b.iter(|| assert_eq!(count(&store, "plain", &scan), n / 1000))
    });
    group.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);
