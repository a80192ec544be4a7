//! Store benchmarks, each beside the same work done with raw heed in the same
//! run (the baseline): batch put of 1M small cells, random point get of one
//! cell from 1M rows, full scan of 1M rows.
//!
//! A second baseline, `raw_heed_cell_keys`, is raw heed over keys laid out as
//! rowsearch lays out cells (escaped row, terminator, qualifier, inverted
//! timestamp; store/FORMAT.md), written here independently of the store: it
//! separates what the key layout costs LMDB from what the store's code adds.
//!
//! Run: `cargo bench -p rowsearch-store --bench store`
//! (`ROWSEARCH_BENCH_ROWS` changes the 1M; results feed store/BENCHMARKS.md).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions};
use rowsearch_store::{Batch, FamilySchema, PutCell, ReadOptions, Scan, Store, TableSchema};

const BATCH: u64 = 10_000;
const MAP: usize = 8 << 30;

fn rows() -> u64 {
    std::env::var("ROWSEARCH_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn row_key(i: u64) -> [u8; 12] {
    let mut k = *b"row-00000000";
    k[4..].copy_from_slice(&i.to_be_bytes());
    k
}

fn value(i: u64) -> [u8; 16] {
    let mut v = [b'v'; 16];
    v[8..].copy_from_slice(&i.to_le_bytes());
    v
}

fn open_raw(dir: &Path) -> (Env, Database<Bytes, Bytes>) {
    let mut options = EnvOpenOptions::new();
    options.map_size(MAP).max_dbs(4);
    // SAFETY: a fresh directory used only by this benchmark.
    #[allow(unsafe_code)]
    let env = unsafe { options.open(dir) }.unwrap();
    let mut wtxn = env.write_txn().unwrap();
    let db = env.create_database(&mut wtxn, Some("cells")).unwrap();
    wtxn.commit().unwrap();
    (env, db)
}

fn raw_load(env: &Env, db: Database<Bytes, Bytes>, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut wtxn = env.write_txn().unwrap();
        for i in start..(start + BATCH).min(n) {
            db.put(&mut wtxn, &row_key(i), &value(i)).unwrap();
        }
        wtxn.commit().unwrap();
    }
}

/// Appends `bytes` with each 0x00 written as 00 FF (FORMAT.md's escape).
fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        if b == 0 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
}

/// The first key of a row's cells: esc(row) 00 01.
fn row_start(row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() * 2 + 2);
    push_escaped(&mut out, row);
    out.extend_from_slice(&[0x00, 0x01]);
    out
}

/// The cell key of (row, qualifier "q", timestamp 1).
fn cell_key(row: &[u8]) -> Vec<u8> {
    let mut out = row_start(row);
    out.extend_from_slice(&[b'q', 0x00, 0x01]);
    out.extend_from_slice(&(!1u64).to_be_bytes());
    out
}

fn cell_keys_load(env: &Env, db: Database<Bytes, Bytes>, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut wtxn = env.write_txn().unwrap();
        for i in start..(start + BATCH).min(n) {
            db.put(&mut wtxn, &cell_key(&row_key(i)), &value(i)).unwrap();
        }
        wtxn.commit().unwrap();
    }
}

fn open_store(dir: &Path) -> Store {
    let store = Store::builder().map_size_bytes(MAP).open(dir).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    store
}

fn store_load(store: &Store, n: u64) {
    for start in (0..n).step_by(BATCH as usize) {
        let mut batch = Batch::new();
        for i in start..(start + BATCH).min(n) {
            batch.put("t", row_key(i).to_vec(), vec![PutCell::new("f", "q", value(i).to_vec()).at(1)]);
        }
        store.apply(&batch).unwrap();
    }
}

/// Total time of `iters` loads, each into a fresh directory opened by
/// `open` (opening is not timed).
fn fresh_loads<S>(iters: u64, open: impl Fn(&Path) -> S, load: impl Fn(&S)) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = tempfile::tempdir().unwrap();
        let state = open(dir.path());
        let t = Instant::now();
        load(&state);
        total += t.elapsed();
    }
    total
}

fn batch_put(c: &mut Criterion) {
    let n = rows();
    let mut group = c.benchmark_group("batch_put");
    group.sample_size(10).measurement_time(Duration::from_secs(20)).throughput(Throughput::Elements(n));
    group.bench_function(BenchmarkId::new("raw_heed", n), |b| {
        b.iter_custom(|iters| fresh_loads(iters, open_raw, |(env, db)| raw_load(env, *db, n)))
    });
    group.bench_function(BenchmarkId::new("raw_heed_cell_keys", n), |b| {
        b.iter_custom(|iters| fresh_loads(iters, open_raw, |(env, db)| cell_keys_load(env, *db, n)))
    });
    group.bench_function(BenchmarkId::new("rowsearch", n), |b| {
        b.iter_custom(|iters| fresh_loads(iters, open_store, |store| store_load(store, n)))
    });
    group.finish();
}

/// Copies out every key and value of `db`, as the store's scan copies out rows.
fn raw_scan(env: &Env, db: Database<Bytes, Bytes>, n: u64) {
    let rtxn = env.read_txn().unwrap();
    let mut rows = 0u64;
    for item in db.iter(&rtxn).unwrap() {
        let (k, v) = item.unwrap();
        black_box((k.to_vec(), v.to_vec()));
        rows += 1;
    }
    assert_eq!(rows, n);
}

/// A fixed pseudo-random sequence of row numbers.
fn random_rows(n: u64) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

fn reads(c: &mut Criterion) {
    let n = rows();
    let raw_dir = tempfile::tempdir().unwrap();
    let (env, db) = open_raw(raw_dir.path());
    raw_load(&env, db, n);
    let cells_dir = tempfile::tempdir().unwrap();
    let (cells_env, cells_db) = open_raw(cells_dir.path());
    cell_keys_load(&cells_env, cells_db, n);
    let store_dir = tempfile::tempdir().unwrap();
    let store = open_store(store_dir.path());
    store_load(&store, n);
    let picks = random_rows(n);

    let mut group = c.benchmark_group("point_get");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("raw_heed", n), |b| {
        let rtxn = env.read_txn().unwrap();
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % picks.len();
            let v = db.get(&rtxn, &row_key(picks[i])).unwrap().unwrap().to_vec();
            black_box(v)
        })
    });
    group.bench_function(BenchmarkId::new("raw_heed_cell_keys", n), |b| {
        let rtxn = cells_env.read_txn().unwrap();
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % picks.len();
            // The timestamp is unknown to a reader: seek the row's first cell.
            let (_, v) = cells_db
                .get_greater_than_or_equal_to(&rtxn, &row_start(&row_key(picks[i])))
                .unwrap()
                .unwrap();
            black_box(v.to_vec())
        })
    });
    group.bench_function(BenchmarkId::new("rowsearch", n), |b| {
        let rtxn = store.begin_read().unwrap();
        let read = ReadOptions::default();
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % picks.len();
            black_box(rtxn.get("t", &row_key(picks[i]), &read).unwrap().unwrap())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("full_scan");
    group.sample_size(10).measurement_time(Duration::from_secs(15)).throughput(Throughput::Elements(n));
    group.bench_function(BenchmarkId::new("raw_heed", n), |b| b.iter(|| raw_scan(&env, db, n)));
    group.bench_function(BenchmarkId::new("raw_heed_cell_keys", n), |b| {
        b.iter(|| raw_scan(&cells_env, cells_db, n))
    });
    group.bench_function(BenchmarkId::new("rowsearch", n), |b| {
        b.iter(|| {
            let rtxn = store.begin_read().unwrap();
            let mut rows = 0u64;
            for row in rtxn.scan("t", &Scan::new()).unwrap() {
                black_box(row.unwrap());
                rows += 1;
            }
            assert_eq!(rows, n);
        })
    });
    group.finish();
}

criterion_group!(benches, batch_put, reads);
criterion_main!(benches);
