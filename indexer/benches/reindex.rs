//! Full reindex from keyword rows against raw tantivy indexing the same
//! messages from their text, in one process; then an incremental reindex
//! of 1% changed rows against the full one.
//!
//! `ROWSEARCH_BENCH_STORE=DIR` names a store that already holds the mail
//! (see `bench/reindex_vs_tantivy.sh`, which ingests the full corpus);
//! without it the bench ingests the repository's fixture into a temporary
//! store. `ROWSEARCH_BENCH_RUNS` (default 3) runs of each, interleaved;
//! medians are printed with the ratios.
//!
//! Raw tantivy gets the same fields (subject, body, from, to, a catch-all
//! copy of them, the key as the one stored value, the user and the date), tantivy's
//! default tokenizer (simple split, lowercase, terms over 40 bytes
//! removed), the same threads and the same indexing buffer, and the texts
//! already in memory: only analysis and indexing are timed. The reindex is
//! timed end to end: reading the keyword rows from LMDB included.
//!
//! `ROWSEARCH_BENCH_ONLY=reindex` or `raw` runs one side once (for
//! profiling); `ROWSEARCH_BENCH_ONLY=prebuilt` times tantivy fed the
//! reindex's documents already built in memory against raw tantivy, so the
//! cost of reading the keyword rows shows apart from tantivy's own;
//! `ROWSEARCH_BENCH_ONLY=read` times reading and decoding every keyword
//! cell on one thread, without grouping (the reading side's floor).
//! `ROWSEARCH_BENCH_ONLY=size` prints the raw baseline of a data
//! directory (`bench/storage_vs_raw.py`): raw LMDB holding each row as
//! key -> JSON object of its cells (written in key order with
//! `MDB_APPEND`: full pages) plus the raw tantivy index.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rowsearch_indexer::doc::{CellDoc, DocSchema, register_cells};
use rowsearch_indexer::store::{PutCell, Scan, Store};
use rowsearch_indexer::{ReindexMode, ReindexOptions, open_store, reindex};
use tantivy::schema::{BytesOptions, DateOptions, DateTimePrecision, Schema, TEXT};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, TantivyDocument};

/// As the `rowsearch` binary, which runs the CLI's reindex (the system
/// allocator made the bench's reindex ~0.2-1 s slower than the CLI's).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const THREADS: usize = 2;
const BUDGET: usize = 512 << 20;

struct Message {
    key: Vec<u8>,
    user: Vec<u8>,
    date_ms: i64,
    texts: [String; 4],
}

fn text(row: &rowsearch_indexer::store::Row, family: &str, qualifier: &str) -> String {
    String::from_utf8_lossy(row.value(family, qualifier.as_bytes()).unwrap_or_default()).into_owned()
}

fn messages(store: &Store) -> Vec<Message> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let mut out = Vec::new();
    let rtxn = store.begin_read().unwrap();
    for row in rtxn.scan("mail", &Scan::new()).unwrap() {
        let row = row.unwrap();
        let fields = rk.decode_json(&row.key).unwrap();
        out.push(Message {
            user: fields["user"].as_str().unwrap().as_bytes().to_vec(),
            date_ms: fields["date"].as_i64().unwrap_or(0),
            texts: [
                text(&row, "m", "subject"),
                text(&row, "b", "text"),
                text(&row, "m", "from"),
                text(&row, "m", "to"),
            ],
            key: row.key,
        });
    }
    out
}

fn dir_bytes(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Raw LMDB: every row of the mail table as key -> JSON object of its
/// cells (`{"m:subject": "...", ...}`), appended in key order; the bytes of
/// its `data.mdb`.
fn raw_lmdb(store: &Store) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: a fresh directory only this function opens.
    #[allow(unsafe_code)]
    let env = unsafe { heed::EnvOpenOptions::new().map_size(8 << 30).open(dir.path()) }.unwrap();
    let mut wtxn = env.write_txn().unwrap();
    let db: heed::Database<heed::types::Bytes, heed::types::Bytes> =
        env.create_database(&mut wtxn, None).unwrap();
    let rtxn = store.begin_read().unwrap();
    for row in rtxn.scan("mail", &Scan::new()).unwrap() {
        let row = row.unwrap();
        let cells: serde_json::Map<String, serde_json::Value> = row
            .cells
            .iter()
            .map(|c| {
                let column = format!("{}:{}", c.family, String::from_utf8_lossy(&c.qualifier));
                (column, String::from_utf8_lossy(&c.value).into_owned().into())
            })
            .collect();
        let json = serde_json::to_vec(&cells).unwrap();
        db.put_with_flags(&mut wtxn, heed::PutFlags::APPEND, &row.key, &json).unwrap();
    }
    wtxn.commit().unwrap();
    env.force_sync().unwrap();
    std::fs::metadata(dir.path().join("data.mdb")).unwrap().len()
}

/// Raw tantivy: (seconds, bytes).
fn raw_tantivy(messages: &[Message], dir: &Path) -> (f64, u64) {
    let mut builder = Schema::builder();
    let names = ["subject", "body", "from", "to"];
    let fields: Vec<_> = names.iter().map(|n| builder.add_text_field(n, TEXT)).collect();
    let all = builder.add_text_field("_all", TEXT);
    let key = builder.add_bytes_field("_key", BytesOptions::default().set_indexed().set_stored());
    let partition = builder.add_bytes_field("_partition", BytesOptions::default().set_indexed().set_fast());
    let date = builder.add_date_field(
        "date",
        DateOptions::default().set_indexed().set_fast().set_precision(DateTimePrecision::Milliseconds),
    );
    let index = Index::create_in_dir(dir, builder.build()).unwrap();
    index.tokenizers().register(
        "default",
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(41))
            .filter(LowerCaser)
            .build(),
    );
    let started = Instant::now();
    let mut writer: tantivy::IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(THREADS, BUDGET / 4 * 3).unwrap();
    for m in messages {
        let mut doc = TantivyDocument::new();
        doc.add_bytes(key, &m.key);
        doc.add_bytes(partition, &m.user);
        doc.add_date(date, tantivy::DateTime::from_timestamp_millis(m.date_ms));
        for (field, text) in fields.iter().zip(&m.texts) {
            doc.add_text(*field, text);
        }
        for text in &m.texts {
            doc.add_text(all, text);
        }
        writer.add_document(doc).unwrap();
    }
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let seconds = started.elapsed().as_secs_f64();
    if std::env::var_os("ROWSEARCH_BENCH_TOKENS").is_some() {
        println!("raw tantivy tokens in _all: {}", tokens(&index, "_all"));
    }
    (seconds, dir_bytes(dir))
}

/// The reindex's documents, grouped from the keyword cells like a full
/// reindex groups them, kept in memory.
fn prebuilt_docs(store: &Store) -> Vec<CellDoc> {
    let search = store.schema("mail").unwrap().search.unwrap();
    let schema = DocSchema::for_search("mail", &search).unwrap();
    let mut docs: HashMap<Vec<u8>, CellDoc> = HashMap::new();
    store
        .begin_read()
        .unwrap()
        .for_each_keyword_cell_between("mail", None, None, &mut |cell| {
            let doc = docs.entry(cell.key.to_vec()).or_insert_with(|| {
                let mut doc = CellDoc::new(&schema);
                doc.key = cell.key.to_vec();
                doc.partition = cell.partition.to_vec();
                doc.date_ms = cell.date_ms;
                doc
            });
            doc.texts[cell.field_index].push(cell.term, cell.positions());
            Ok(())
        })
        .unwrap();
    let mut docs: Vec<CellDoc> = docs.into_values().collect();
    docs.sort_by(|a, b| a.key.cmp(&b.key));
    docs
}

/// tantivy with the reindex's schema, threads and buffers, fed `docs`
/// (moved in): seconds to index, commit and merge.
fn index_prebuilt(store: &Store, docs: Vec<CellDoc>, dir: &Path) -> f64 {
    let search = store.schema("mail").unwrap().search.unwrap();
    let schema = DocSchema::for_search("mail", &search).unwrap();
    let index = Index::create_in_dir(dir, schema.schema).unwrap();
    register_cells(&index);
    let started = Instant::now();
    let mut writer: tantivy::IndexWriter<CellDoc> =
        index.writer_with_num_threads(THREADS, BUDGET / 4 * 3).unwrap();
    for doc in docs {
        writer.add_document(doc).unwrap();
    }
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    started.elapsed().as_secs_f64()
}

/// Tokens indexed in `field` (all segments).
fn tokens(index: &Index, field: &str) -> u64 {
    let field = index.schema().get_field(field).unwrap();
    let searcher = index.reader().unwrap().searcher();
    searcher.segment_readers().iter().map(|s| s.inverted_index(field).unwrap().total_num_tokens()).sum()
}

/// CPU seconds this process has used (user + system), from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(") ").next().unwrap_or_default().split(' ').collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The key as a fast field (what the index does) against the key as a
/// stored field: microseconds to read the keys of 10 documents, median
/// over 2,000 random tens. Both on one index of the first 20,000 messages.
fn key_read_cost(messages: &[Message]) -> (f64, f64) {
    use tantivy::schema::{STORED, Value};
    let mut builder = Schema::builder();
    let fast = builder.add_bytes_field("fast_key", BytesOptions::default().set_fast());
    let stored = builder.add_bytes_field("stored_key", STORED);
    let body = builder.add_text_field("body", TEXT);
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create_in_dir(dir.path(), builder.build()).unwrap();
    let mut writer: tantivy::IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 100 << 20).unwrap();
    for m in messages.iter().take(20_000) {
        let mut doc = TantivyDocument::new();
        doc.add_bytes(fast, &m.key);
        doc.add_bytes(stored, &m.key);
        doc.add_text(body, &m.texts[1]);
        writer.add_document(doc).unwrap();
    }
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    let searcher = index.reader().unwrap().searcher();
    let segment = searcher.segment_reader(0);
    let max = segment.max_doc();
    let column = segment.fast_fields().bytes("fast_key").unwrap().unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % u64::from(max)) as u32
    };
    let (mut fast_us, mut stored_us) = (Vec::new(), Vec::new());
    let mut buf = Vec::new();
    for _ in 0..2000 {
        let docs: Vec<u32> = (0..10).map(|_| next()).collect();
        let t = Instant::now();
        for &d in &docs {
            buf.clear();
            let ord = column.term_ords(d).next().unwrap();
            column.ord_to_bytes(ord, &mut buf).unwrap();
        }
        fast_us.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        for &d in &docs {
            let doc: TantivyDocument = searcher.doc(tantivy::DocAddress::new(0, d)).unwrap();
            buf.clear();
            buf.extend_from_slice(doc.get_first(stored).and_then(|v| v.as_bytes()).unwrap());
        }
        stored_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    (median(fast_us), median(stored_us))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks benches to list themselves.
    }
    let runs: usize = std::env::var("ROWSEARCH_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let _tmp;
    let store_dir: PathBuf = match std::env::var_os("ROWSEARCH_BENCH_STORE") {
        Some(dir) => dir.into(),
        None => {
            _tmp = tempfile::tempdir().unwrap();
            let store = open_store(_tmp.path()).unwrap();
            let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
            rowsearch_indexer::ingest(&store, &[fixture], &Default::default(), &mut |_| {}).unwrap();
            _tmp.path().to_owned()
        }
    };
    let store = open_store(&store_dir).unwrap();
    let messages = messages(&store);
    let cells = store.begin_read().unwrap().keyword_cell_count("mail").unwrap();
    println!(
        "{} messages, {cells} keyword cells; {runs} runs each, {THREADS} threads, {} MiB budget",
        messages.len(),
        BUDGET >> 20
    );

    if std::env::var("ROWSEARCH_BENCH_ONLY").as_deref() == Ok("raw") {
        // For profiling the baseline alone.
        let raw_dir = tempfile::tempdir().unwrap();
        let (raw_s, bytes) = raw_tantivy(&messages, raw_dir.path());
        println!(
            "raw tantivy {raw_s:.2}s ({:.0} docs/s, {:.1} MB)",
            messages.len() as f64 / raw_s,
            bytes as f64 / 1e6
        );
        return;
    }
    if std::env::var("ROWSEARCH_BENCH_ONLY").as_deref() == Ok("size") {
        let raw_dir = tempfile::tempdir().unwrap();
        let (_, tantivy_bytes) = raw_tantivy(&messages, raw_dir.path());
        let lmdb_bytes = raw_lmdb(&store);
        println!(
            "raw size: lmdb {lmdb_bytes} bytes, tantivy {tantivy_bytes} bytes, total {} bytes",
            lmdb_bytes + tantivy_bytes
        );
        return;
    }
    if std::env::var("ROWSEARCH_BENCH_ONLY").as_deref() == Ok("read") {
        // The floor of the reading side: every keyword cell read from LMDB
        // and its positions decoded, on one thread, nothing grouped.
        let rtxn = store.begin_read().unwrap();
        for run in 1..=runs {
            let (started, cpu) = (Instant::now(), cpu_seconds());
            rtxn.for_each_keyword_cell_between("mail", None, None, &mut |cell| {
                std::hint::black_box(cell.positions().map(u64::from).sum::<u64>());
                Ok(())
            })
            .unwrap();
            println!(
                "run {run}: read and decode {cells} keyword cells {:.2}s ({:.2} CPU s)",
                started.elapsed().as_secs_f64(),
                cpu_seconds() - cpu
            );
        }
        return;
    }
    if std::env::var("ROWSEARCH_BENCH_ONLY").as_deref() == Ok("prebuilt") {
        // Where the gap is: tantivy alone, fed the reindex's documents
        // already built in memory, against raw tantivy, interleaved.
        let docs = prebuilt_docs(&store);
        for run in 1..=runs {
            let dir = tempfile::tempdir().unwrap();
            let copy = docs.clone();
            let cpu = cpu_seconds();
            let seconds = index_prebuilt(&store, copy, dir.path());
            let ours_cpu = cpu_seconds() - cpu;
            let raw_dir = tempfile::tempdir().unwrap();
            let cpu = cpu_seconds();
            let (raw_s, _) = raw_tantivy(&messages, raw_dir.path());
            println!(
                "run {run}: tantivy on prebuilt documents {seconds:.2}s ({ours_cpu:.1} CPU s); \
                 raw tantivy {raw_s:.2}s ({:.1} CPU s)",
                cpu_seconds() - cpu
            );
        }
        return;
    }
    let options = ReindexOptions {
        mode: ReindexMode::Full,
        threads: THREADS,
        memory_budget_bytes: BUDGET,
        // ROWSEARCH_BENCH_NO_MERGE=1: the segments as the threads made them
        // (raw tantivy's side does not merge either).
        merge: std::env::var_os("ROWSEARCH_BENCH_NO_MERGE").is_none(),
        ..ReindexOptions::default()
    };
    if std::env::var("ROWSEARCH_BENCH_ONLY").as_deref() == Ok("reindex") {
        let cpu = cpu_seconds();
        let report = reindex(&store, "mail", &options, &mut |_| {}).unwrap();
        println!("reindex {:.2}s, {:.1} CPU s", report.seconds, cpu_seconds() - cpu);
        return;
    }
    // One untimed build first, so both sides start with the store and the
    // messages in memory.
    reindex(&store, "mail", &options, &mut |_| {}).unwrap();
    let (mut ours, mut raw, mut our_bytes, mut raw_bytes) = (Vec::new(), Vec::new(), 0, 0);
    let mut serving = Vec::new();
    for run in 1..=runs {
        let cpu = cpu_seconds();
        let report = reindex(&store, "mail", &options, &mut |_| {}).unwrap();
        let our_cpu = cpu_seconds() - cpu;
        if std::env::var_os("ROWSEARCH_BENCH_TOKENS").is_some() {
            let dir = rowsearch_indexer::IndexDir::new(&store_dir, "mail");
            let index = Index::open_in_dir(dir.generation_path(report.generation)).unwrap();
            println!("reindex tokens in _all: {}", tokens(&index, "_all"));
        }
        assert_eq!(report.docs as usize, messages.len());
        let raw_dir = tempfile::tempdir().unwrap();
        let cpu = cpu_seconds();
        let (raw_s, bytes) = raw_tantivy(&messages, raw_dir.path());
        let raw_cpu = cpu_seconds() - cpu;
        println!(
            "run {run}: reindex {:.2}s, serving after {:.2}s ({:.0} docs/s, {:.1} MB, {our_cpu:.1} CPU s); \
             raw tantivy {raw_s:.2}s ({:.0} docs/s, {:.1} MB, {raw_cpu:.1} CPU s)",
            report.seconds,
            report.serving_seconds,
            report.docs as f64 / report.seconds,
            report.index_bytes as f64 / 1e6,
            messages.len() as f64 / raw_s,
            bytes as f64 / 1e6
        );
        ours.push(report.seconds);
        serving.push(report.serving_seconds);
        raw.push(raw_s);
        (our_bytes, raw_bytes) = (report.index_bytes, bytes);
    }

    // 1% of the rows changed: a new subject word each.
    let changed = (messages.len() / 100).max(1);
    let mut incremental = Vec::new();
    for run in 1..=runs {
        for m in messages.iter().step_by(messages.len() / changed).take(changed) {
            let subject = format!("{} benchrun{run}", m.texts[0]);
            store.put("mail", &m.key, vec![PutCell::new("m", "subject", subject)]).unwrap();
        }
        let options = ReindexOptions { mode: ReindexMode::Incremental, ..options.clone() };
        let report = reindex(&store, "mail", &options, &mut |_| {}).unwrap();
        assert_eq!(report.rows_indexed as usize, changed);
        println!("incremental run {run}: {changed} rows in {:.3}s", report.seconds);
        incremental.push(report.seconds);
    }
    let (fast_us, stored_us) = key_read_cost(&messages);
    println!("keys of 10 hits: fast field {fast_us:.1} us, stored field {stored_us:.1} us (median of 2000)");
    let (ours, raw, incremental, serving) = (median(ours), median(raw), median(incremental), median(serving));
    let n = messages.len() as f64;
    println!(
        "median full reindex: {ours:.2}s = {:.0} docs/s, index {:.1} MB",
        n / ours,
        our_bytes as f64 / 1e6
    );
    println!(
        "median raw tantivy:  {raw:.2}s = {:.0} docs/s, index {:.1} MB",
        n / raw,
        raw_bytes as f64 / 1e6
    );
    println!(
        "speed ratio (reindex / raw docs/s): {:.2}x; size ratio: {:.2}x",
        raw / ours,
        our_bytes as f64 / raw_bytes as f64
    );
    println!(
        "median until the new generation serves: {serving:.2}s, speed ratio {:.2}x (a build of more than \
         one segment merges them while it serves)",
        raw / serving
    );
    println!(
        "median incremental of {changed} rows (1%): {incremental:.3}s = {:.1}% of the full reindex",
        100.0 * incremental / ours
    );
}
