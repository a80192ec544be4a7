//! Index generations built from keyword rows: searches against the
//! keyword-row lookups, planned failures, and searches during switches.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::foreign::Foreign;
use rowsearch_indexer::IndexDir;
use rowsearch_indexer::store::Store;
use rowsearch_indexer::{
    FailPoint, IngestOptions, ReindexMode, ReindexOptions, SortBy, TableIndex, ingest, open_store, reindex,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail")
}

fn options(mode: ReindexMode) -> ReindexOptions {
    ReindexOptions { mode, threads: 2, memory_budget_bytes: 64 << 20, ..ReindexOptions::default() }
}

fn ingested() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    ingest(&store, &[fixtures().join("maildir")], &IngestOptions::default(), &mut |_| {}).unwrap();
    (dir, store)
}

/// A query string for terms: each quoted, so addresses and other terms
/// with punctuation are read as one word.
fn query_of(terms: &[String]) -> String {
    terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" ")
}

fn index_keys(index: &TableIndex, user: &str, terms: &[String]) -> (u64, Vec<(u64, Vec<u8>)>) {
    let generation = index.generation().unwrap();
    let hits =
        generation.search_keys(&query_of(terms), Some(user.as_bytes()), SortBy::Newest, 0, 100_000).unwrap();
    (hits.total, hits.keys.into_iter().map(|(k, d)| (d as u64, k)).collect())
}

/// (partition, term) pairs of the keyword rows, and each user's terms.
fn vocabulary(store: &Store) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut per_user: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    store
        .begin_read()
        .unwrap()
        .for_each_keyword_cell("mail", None, &mut |c| {
            per_user
                .entry(String::from_utf8(c.partition.to_vec()).unwrap())
                .or_default()
                .insert(c.term.to_owned());
            Ok(())
        })
        .unwrap();
    let users = per_user.keys().cloned().collect();
    (users, per_user.into_iter().map(|(u, t)| (u, t.into_iter().collect())).collect())
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// 100 random single terms and pairs per mailbox: the index finds exactly
/// the keys the keyword rows give, in the same newest-first order.
fn assert_index_equals_keyword_rows(store: &Store, index: &TableIndex, seed: u64) {
    let (users, terms) = vocabulary(store);
    let mut rng = Rng(seed);
    let mut nonempty = 0;
    for q in 0..100 {
        let (user, own) = &terms[rng.below(users.len())];
        let mut query = vec![own[rng.below(own.len())].clone()];
        if q % 2 == 1 {
            query.push(own[rng.below(own.len())].clone());
        }
        let want = crate::keyword_keys(store, user, &query, 500);
        let (total, mut got) = index_keys(index, user, &query);
        assert_eq!(total, want.len() as u64, "{user} {query:?}");
        // Equal dates may come in either order from tantivy.
        got.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        assert_eq!(got, want, "{user} {query:?}");
        nonempty += usize::from(!want.is_empty());
    }
    assert!(nonempty >= 40, "only {nonempty} of 100 queries matched");
}

#[test]
fn full_reindex_finds_exactly_what_the_keyword_rows_find() {
    let (_dir, store) = ingested();
    let report = reindex(&store, "mail", &options(ReindexMode::Auto), &mut |_| {}).unwrap();
    assert_eq!(report.mode, ReindexMode::Full, "no index yet: auto means full");
    assert_eq!((report.generation, report.docs, report.rows_indexed), (1, 288, 288), "{report:?}");
    assert_eq!(report.next_seq, store.next_seq().unwrap());
    // The mail table's splits g, n, t make four regions; the fixture's
    // mailboxes (b..., c..., g...) fill the first two, whose keyword rows
    // are read on two threads at once.
    assert_eq!((report.ranges, report.readers), (2, 2), "{report:?}");
    let index = TableIndex::open(&store, "mail").unwrap();
    assert_index_equals_keyword_rows(&store, &index, 0x5eed);

    // One reader, and more threads than regions: the same index.
    for (threads, readers, generation) in [(1, 1, 2), (8, 2, 3)] {
        let report =
            reindex(&store, "mail", &ReindexOptions { threads, ..options(ReindexMode::Full) }, &mut |_| {})
                .unwrap();
        assert_eq!(
            (report.generation, report.docs, report.readers),
            (generation, 288, readers),
            "{report:?}"
        );
        assert_index_equals_keyword_rows(&store, &index, 0x5eed + threads as u64);
        // The threads' segments merged into one, the commit's payload kept.
        let generation = index.generation().unwrap();
        assert_eq!(generation.reader.searcher().segment_readers().len(), 1, "{threads} threads");
        assert_eq!(generation.next_seq().unwrap(), report.next_seq);
    }
    // Unmerged: a segment per indexing thread that got documents (four
    // threads: tantivy's own merge policy leaves fewer than eight alone).
    let unmerged = ReindexOptions { threads: 4, merge: false, ..options(ReindexMode::Full) };
    reindex(&store, "mail", &unmerged, &mut |_| {}).unwrap();
    assert_index_equals_keyword_rows(&store, &index, 0x5eed + 9);
    assert!(index.generation().unwrap().reader.searcher().segment_readers().len() > 1);

    // The same through a grouping budget so small that every partition is
    // read again in hash slices.
    let tiny = ReindexOptions { memory_budget_bytes: 1, ..options(ReindexMode::Full) };
    let report = reindex(&store, "mail", &tiny, &mut |_| {}).unwrap();
    assert_eq!((report.generation, report.docs, report.removed_generations.clone()), (5, 288, vec![4]));
    assert_index_equals_keyword_rows(&store, &index, 0xbeef);
}

#[test]
fn phrases_fields_and_dates_work_on_prebuilt_terms() {
    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let index = TableIndex::open(&store, "mail").unwrap();
    let generation = index.generation().unwrap();
    let count = |q: &str| generation.search_keys(q, None, SortBy::Relevance, 0, 10).unwrap().total;
    // A phrase matches where its words are adjacent, and no more often than
    // its words appear together.
    let words = count("enron energy");
    let phrase = count("\"enron energy\"");
    assert!(phrase > 0 && phrase <= words, "phrase {phrase}, words {words}");
    assert!(count("\"energy enron\"") < phrase.max(1) + words, "reversed phrase is a different query");
    // A field restricts; a bare term searches every field.
    assert!(count("subject:enron") < count("enron"));
    assert!(count("subject:enron") > 0);
    // Date ranges cover everything or nothing as they should.
    let all = generation.search_keys("*", None, SortBy::Relevance, 0, 1).unwrap().total;
    assert_eq!(all, 288);
    assert_eq!(count("date:[1970-01-01T00:00:00Z TO 2100-01-01T00:00:00Z]"), 288);
    assert_eq!(count("date:[2100-01-01T00:00:00Z TO 2200-01-01T00:00:00Z]"), 0);
    // A query that does not parse is a typed, usage error.
    let err = generation.search_keys("subject:(", None, SortBy::Relevance, 0, 10).unwrap_err();
    assert!(err.is_usage(), "{err}");
}

#[test]
fn failed_builds_leave_the_serving_generation_and_the_next_run_cleans_up() {
    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let index = TableIndex::open(&store, "mail").unwrap();
    let dir = IndexDir::new(store.path(), "mail");
    let before = index_keys(&index, "allen-p", &["gas".to_owned()]);
    for fail in [FailPoint::BeforeCommit, FailPoint::BeforeSwitch] {
        let opts = ReindexOptions { fail_at: Some(fail), ..options(ReindexMode::Full) };
        let err = reindex(&store, "mail", &opts, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("failpoint"), "{err}");
        assert_eq!(dir.current().unwrap(), Some(1), "{fail:?}: pointer unchanged");
        assert_eq!(dir.generations().unwrap().len(), 2, "{fail:?}: the leftover is there until the next run");
        assert_eq!(index_keys(&index, "allen-p", &["gas".to_owned()]), before);
    }
    // Changes, then an incremental run that fails half way: nothing of it
    // is visible, and the next run applies all of it.
    let rows = store.scan("mail", &rowsearch_indexer::store::Scan::new().limit(10)).unwrap().rows;
    for row in &rows {
        store.delete("mail", &row.key, rowsearch_indexer::store::Delete::Row { up_to: None }).unwrap();
    }
    let opts =
        ReindexOptions { fail_at: Some(FailPoint::MidIncremental), ..options(ReindexMode::Incremental) };
    reindex(&store, "mail", &opts, &mut |_| {}).unwrap_err();
    assert_eq!(index.generation().unwrap().reader.searcher().num_docs(), 288);

    let report = reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    assert!(report.generation > 1, "past every generation that served: {report:?}");
    assert_eq!(report.docs, 278);
    assert_eq!(
        dir.generations().unwrap(),
        vec![report.generation],
        "leftover and replaced generations removed"
    );
    assert_index_equals_keyword_rows(&store, &index, 7);
}

#[test]
fn incremental_reindex_applies_the_feed_and_trims_it() {
    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    assert!(store.feed_since(0, 10).unwrap().is_empty(), "the full build absorbed and trimmed the feed");
    let index = TableIndex::open(&store, "mail").unwrap();
    let rows = store.scan("mail", &rowsearch_indexer::store::Scan::new().limit(20)).unwrap().rows;
    for row in &rows[..5] {
        store.delete("mail", &row.key, rowsearch_indexer::store::Delete::Row { up_to: None }).unwrap();
    }
    for row in &rows[5..] {
        let cell = rowsearch_indexer::store::PutCell::new("m", "subject", "zanzibar quokka overwritten");
        store.put("mail", &row.key, vec![cell]).unwrap();
    }
    let report = reindex(&store, "mail", &options(ReindexMode::Auto), &mut |_| {}).unwrap();
    assert_eq!(report.mode, ReindexMode::Incremental);
    assert_eq!((report.rows_indexed, report.rows_removed, report.docs), (15, 5, 283), "{report:?}");
    assert_eq!(report.feed_trimmed, 20);
    assert_eq!(index_keys(&index, &user_of(&store, &rows[5].key), &["quokka".to_owned()]).0, {
        rows[5..].iter().filter(|r| user_of(&store, &r.key) == user_of(&store, &rows[5].key)).count() as u64
    });
    assert_index_equals_keyword_rows(&store, &index, 11);
    // Nothing new: nothing changes.
    let again = reindex(&store, "mail", &options(ReindexMode::Incremental), &mut |_| {}).unwrap();
    assert_eq!((again.rows_indexed, again.rows_removed, again.docs), (0, 0, 283));
}

/// A table dropped through the store alone (its index directory left
/// behind) and created again is a new table: the old generation must not
/// answer for it, nor be updated incrementally as if it were its index.
#[test]
fn a_table_created_again_does_not_inherit_the_old_index() {
    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let old_id = store.table_id("mail").unwrap();
    store.drop_table("mail").unwrap();
    // Created again with a few of the messages.
    let one_box = fixtures().join("maildir/badeer-r");
    ingest(&store, &[one_box], &IngestOptions::default(), &mut |_| {}).unwrap();
    let rows = store.count("mail", &rowsearch_indexer::store::Scan::new()).unwrap();
    assert_ne!(store.table_id("mail").unwrap(), old_id);
    let index = TableIndex::open(&store, "mail").unwrap();
    assert_eq!(index.generation().unwrap().table_id, old_id, "the old generation still serves on disk");
    let err = reindex(&store, "mail", &options(ReindexMode::Incremental), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("dropped since"), "{err}");
    let report = reindex(&store, "mail", &options(ReindexMode::Auto), &mut |_| {}).unwrap();
    assert_eq!((report.mode, report.docs), (ReindexMode::Full, rows), "{report:?}");
    assert!(rows < 288, "{rows}");
    assert_eq!(index.generation().unwrap().table_id, store.table_id("mail").unwrap());
}

fn user_of(store: &Store, key: &[u8]) -> String {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    rk.decode_json(key).unwrap()["user"].as_str().unwrap().to_owned()
}

#[test]
fn searches_during_generation_switches_never_fail_or_see_half_an_index() {
    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let store = Arc::new(store);
    let expected = {
        let index = TableIndex::open(&store, "mail").unwrap();
        index.generation().unwrap().search_keys("enron", None, SortBy::Relevance, 0, 5).unwrap().total
    };
    let done = Arc::new(AtomicBool::new(false));
    let searcher = {
        let (store, done) = (Arc::clone(&store), Arc::clone(&done));
        std::thread::spawn(move || {
            let index = TableIndex::open(&store, "mail").unwrap();
            let mut seen = BTreeSet::new();
            let mut searches = 0u64;
            loop {
                // One more search after the last switch, then stop.
                let last = done.load(Ordering::SeqCst);
                let generation = index.generation().unwrap();
                let hits = generation.search_keys("enron", None, SortBy::Relevance, 0, 5).unwrap();
                assert_eq!(hits.total, expected, "generation {}", hits.generation);
                seen.insert(hits.generation);
                searches += 1;
                if last {
                    break;
                }
            }
            (seen, searches)
        })
    };
    for _ in 0..5 {
        reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let (seen, searches) = searcher.join().unwrap();
    assert!(searches > 0);
    assert!(seen.len() >= 2, "the searcher picked up new generations: {seen:?}");
    assert!(seen.contains(&6), "the last generation is seen: {seen:?}");
}

#[test]
fn verify_is_clean_after_a_reindex_and_finds_what_is_changed_behind_its_back() {
    use rowsearch_indexer::doc::{CellDoc, DocSchema, register_cells};
    use rowsearch_indexer::{VerifyOptions, verify};

    let (_dir, store) = ingested();
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let all = VerifyOptions { sample: 1000, max_listed: 50 };
    let report = verify(&store, "mail", &all).unwrap();
    assert!(report.is_clean(), "{}", report.summary());
    assert_eq!(
        (report.docs, report.rows_with_cells, report.sampled),
        (288, 288, 288),
        "{}",
        report.summary()
    );

    // Unindexed changes are pending, not mismatches.
    let rows = store.scan("mail", &rowsearch_indexer::store::Scan::new().limit(3)).unwrap().rows;
    store.delete("mail", &rows[0].key, rowsearch_indexer::store::Delete::Row { up_to: None }).unwrap();
    let report = verify(&store, "mail", &all).unwrap();
    assert!(report.is_clean(), "{}", report.summary());
    assert_eq!(report.pending, 1);
    reindex(&store, "mail", &options(ReindexMode::Incremental), &mut |_| {}).unwrap();

    // Behind the index's back: drop row 1's document, add a second one for
    // row 2 with a wrong term, and one for a key the store lacks.
    let dir = IndexDir::new(store.path(), "mail");
    let index = tantivy::Index::open_in_dir(dir.generation_path(dir.current().unwrap().unwrap())).unwrap();
    register_cells(&index);
    let schema = DocSchema::from_index("mail", &index).unwrap();
    let mut writer: tantivy::IndexWriter<CellDoc> = index.writer_with_num_threads(1, 15_000_000).unwrap();
    writer.delete_term(tantivy::Term::from_field_bytes(schema.key, &rows[1].key));
    let mut wrong = CellDoc::new(&schema);
    wrong.key = rows[2].key.clone();
    wrong.partition = b"allen-p".to_vec();
    wrong.texts[0].push("zzyzx", [0]);
    writer.add_document(wrong.clone()).unwrap();
    wrong.key = b"no such row".to_vec();
    writer.add_document(wrong).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    let payload = index.load_metas().unwrap().payload.unwrap();
    prepared.set_payload(&payload);
    prepared.commit().unwrap();

    let report = verify(&store, "mail", &all).unwrap();
    assert!(!report.is_clean());
    let bin = |k: &[u8]| rowsearch_indexer::store::binstr::encode(k);
    assert_eq!(report.missing.keys, vec![bin(&rows[1].key)], "{}", report.summary());
    assert_eq!(report.stale.keys, vec![bin(b"no such row")]);
    assert_eq!(report.duplicates.count, 1);
    assert!(report.duplicates.keys[0].starts_with(&bin(&rows[2].key)));
    assert_eq!(report.terms_differ.count, 1, "{:?}", report.terms_differ);
    assert!(report.terms_differ.keys[0].contains("zzyzx"), "{:?}", report.terms_differ);

    // A full reindex makes it clean again.
    reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    assert!(verify(&store, "mail", &all).unwrap().is_clean());
}

#[test]
fn a_reindex_waits_for_another_to_let_go_up_to_its_lock_wait() {
    let (_dir, store) = ingested();
    let held = IndexDir::new(store.path(), "mail").lock().unwrap();
    // Not waiting: refused at once.
    let now = ReindexOptions { lock_wait: std::time::Duration::ZERO, ..options(ReindexMode::Full) };
    assert!(matches!(reindex(&store, "mail", &now, &mut |_| {}), Err(rowsearch_indexer::Error::Busy { .. })));
    // Waiting: it goes on once the other lets go.
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            started_tx.send(()).unwrap();
            let patient = ReindexOptions {
                lock_wait: std::time::Duration::from_secs(60),
                ..options(ReindexMode::Full)
            };
            reindex(&store, "mail", &patient, &mut |_| {})
        });
        started_rx.recv().unwrap();
        drop(held);
        let report = waiter.join().unwrap().unwrap();
        assert_eq!(report.mode, ReindexMode::Full);
    });
}

/// Every document's key in the serving generation under `dir`.
fn indexed_keys(dir: &Path) -> Vec<Vec<u8>> {
    use tantivy::schema::Value as _;
    let index_dir = IndexDir::new(dir, "mail");
    let n = index_dir.current().unwrap().expect("a serving generation");
    let index = tantivy::Index::open_in_dir(index_dir.generation_path(n)).unwrap();
    let key = index.schema().get_field(rowsearch_indexer::doc::KEY_FIELD).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let mut keys: Vec<Vec<u8>> = searcher
        .search(&tantivy::query::AllQuery, &tantivy::collector::DocSetCollector)
        .unwrap()
        .into_iter()
        .map(|addr| {
            let doc: tantivy::TantivyDocument = searcher.doc(addr).unwrap();
            doc.get_first(key).and_then(|v| v.as_bytes()).unwrap().to_vec()
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn a_source_that_is_not_the_store_builds_the_same_index_elsewhere() {
    let (_dir, store) = ingested();
    let from_store = reindex(&store, "mail", &options(ReindexMode::Full), &mut |_| {}).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = Foreign::new(&store);
    let from_source = reindex(
        rowsearch_indexer::Place::new(&foreign, elsewhere.path()),
        "mail",
        &options(ReindexMode::Auto),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(from_source.mode, ReindexMode::Full);
    assert_eq!(
        (from_source.docs, from_source.rows_indexed, from_source.next_seq),
        (from_store.docs, from_store.rows_indexed, from_store.next_seq)
    );
    let keys = indexed_keys(elsewhere.path());
    assert_eq!(keys.len(), 288);
    assert_eq!(keys, indexed_keys(store.path()));
    // And incrementally, from the same source, once rows change.
    store
        .put("mail", &keys[0], vec![rowsearch_indexer::store::PutCell::new("m", "subject", "walrus")])
        .unwrap();
    let again = reindex(
        rowsearch_indexer::Place::new(&foreign, elsewhere.path()),
        "mail",
        &options(ReindexMode::Auto),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((again.mode, again.rows_indexed), (ReindexMode::Incremental, 1), "{again:?}");
}
