//! Secondary indexes: combination cost, tampering found by verify, adding,
//! rebuilding and dropping indexes on tables with rows, and typed errors.

use rowsearch_store::{
    Batch, Delete, ErrorKind, FamilySchema, IndexQuery, IndexSchema, IndexTerm, PutCell, ReadOptions, SetOp,
    Store, TableSchema,
};

fn eq(value: &str) -> IndexQuery {
    IndexQuery { eq: vec![value.as_bytes().to_vec()], ..IndexQuery::default() }
}

fn term(index: &str, value: &str) -> IndexTerm {
    IndexTerm { index: index.to_owned(), query: eq(value) }
}

fn schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("m"), FamilySchema::new("t").ttl_seconds(60)])
        .index(IndexSchema::new("by_x", ["m:x"]))
        .index(IndexSchema::new("by_y", ["m:y"]))
}

fn key(i: u32) -> Vec<u8> {
    format!("row{i:06}").into_bytes()
}

#[test]
fn intersecting_two_100k_lookups_with_limit_10_reads_little() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &schema()).unwrap();
    let mut batch = Batch::new();
    for i in 0..100_000u32 {
        // Every row has x=1 and y=1; every 1000th also has the rare y.
        let y = if i % 1000 == 0 { "rare" } else { "1" };
        batch.put("t", key(i), vec![PutCell::new("m", "x", "1"), PutCell::new("m", "y", y)]);
    }
    store.apply(&batch).unwrap();
    let rtxn = store.begin_read().unwrap();
    assert_eq!(store.index_lookup("t", "by_x", &eq("1")).unwrap().hits.len(), 100_000);

    // Dense: both lists match almost everything.
    let page = rtxn
        .index_combine("t", &[term("by_x", "1"), term("by_y", "1")], SetOp::Intersect, None, Some(10))
        .unwrap();
    let want: Vec<Vec<u8>> = (1..11).map(key).collect();
    assert_eq!(page.keys, want);
    assert!(page.entries_read <= 40, "read {} entries of 199,900", page.entries_read);

    // Sparse: the leapfrog seeks over the long list instead of reading it.
    let page = rtxn
        .index_combine("t", &[term("by_x", "1"), term("by_y", "rare")], SetOp::Intersect, None, Some(10))
        .unwrap();
    let want: Vec<Vec<u8>> = (0..10).map(|i| key(i * 1000)).collect();
    assert_eq!(page.keys, want);
    assert!(page.entries_read <= 60, "read {} entries", page.entries_read);
    let rest = rtxn
        .index_combine(
            "t",
            &[term("by_x", "1"), term("by_y", "rare")],
            SetOp::Intersect,
            page.next_after.as_deref(),
            None,
        )
        .unwrap();
    assert_eq!(rest.keys.len(), 90);
    assert!(rest.next_after.is_none());

    // Union: each key once, in key order.
    let page = rtxn
        .index_combine("t", &[term("by_y", "rare"), term("by_y", "1")], SetOp::Union, None, Some(3))
        .unwrap();
    assert_eq!(page.keys, vec![key(0), key(1), key(2)]);
    let page = rtxn
        .index_combine("t", &[term("by_x", "1"), term("by_x", "1")], SetOp::Union, None, Some(3))
        .unwrap();
    assert_eq!(page.keys, vec![key(0), key(1), key(2)], "a key in both lookups comes once");
}

#[test]
fn maintenance_follows_overwrites_deletes_and_ttl() {
    let clock = rowsearch_store::ManualClock::new(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().clock(std::sync::Arc::new(clock.clone())).open(dir.path()).unwrap();
    let schema = schema().index(IndexSchema::new("by_t", ["t:q"]));
    store.create_table("t", &schema).unwrap();
    store.put("t", b"a", vec![PutCell::new("m", "x", "old"), PutCell::new("t", "q", "soon")]).unwrap();
    store.put("t", b"a", vec![PutCell::new("m", "x", "new")]).unwrap();
    let keys = |index: &str, value: &str| -> Vec<Vec<u8>> {
        store.index_lookup("t", index, &eq(value)).unwrap().hits.into_iter().map(|h| h.key).collect()
    };
    assert!(keys("by_x", "old").is_empty(), "overwritten value leaves the index");
    assert_eq!(keys("by_x", "new"), vec![b"a".to_vec()]);
    assert_eq!(keys("by_t", "soon"), vec![b"a".to_vec()]);
    clock.advance_ms(61_000);
    assert!(keys("by_t", "soon").is_empty(), "an expired cell's entry is not returned");
    assert!(store.verify_index("t", "by_t").unwrap().is_clean());
    store.compact().unwrap();
    assert!(store.verify_index("t", "by_t").unwrap().is_clean());
    store.delete("t", b"a", Delete::Row { up_to: None }).unwrap();
    assert!(keys("by_x", "new").is_empty());
    for index in ["by_x", "by_y", "by_t"] {
        assert!(store.verify_index("t", index).unwrap().is_clean());
    }
}

#[test]
fn a_new_row_written_twice_in_one_batch_is_indexed_by_its_last_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &schema()).unwrap();
    let mut batch = Batch::new();
    batch.put("t", b"a", vec![PutCell::new("m", "x", "first").at(5), PutCell::new("m", "x", "newer").at(9)]);
    batch.put("t", b"a", vec![PutCell::new("m", "x", "older").at(7)]);
    batch.put("t", b"b", vec![PutCell::new("m", "x", "first").at(5)]);
    batch.put("t", b"b", vec![PutCell::new("m", "x", "second").at(5)]);
    batch.put("t", b"c", vec![PutCell::new("m", "x", "one"), PutCell::new("m", "x", "two")]);
    store.apply(&batch).unwrap();
    let keys = |value: &str| -> Vec<Vec<u8>> {
        store.index_lookup("t", "by_x", &eq(value)).unwrap().hits.into_iter().map(|h| h.key).collect()
    };
    assert_eq!(keys("newer"), vec![b"a".to_vec()], "the newest timestamp wins");
    assert_eq!(keys("second"), vec![b"b".to_vec()], "equal timestamps: the last write wins");
    assert_eq!(keys("two"), vec![b"c".to_vec()], "both stamped now: the last write wins");
    for gone in ["first", "older", "one"] {
        assert!(keys(gone).is_empty(), "{gone}");
    }
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
}

/// A merge reads runs in chunks: runs longer than a chunk, whose entries
/// interleave, must still reach the main database complete and in order.
#[test]
fn merging_runs_longer_than_a_chunk_keeps_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().index_pending_runs(2).open(dir.path()).unwrap();
    store.create_table("t", &schema()).unwrap();
    let rows = 6_000u32;
    for batch_no in 0..3 {
        let mut batch = Batch::new();
        for i in (batch_no * rows)..((batch_no + 1) * rows) {
            batch.put("t", key(i), vec![PutCell::new("m", "x", format!("v{}", i % 7))]);
        }
        // The third run makes three, more than two: all merge.
        store.apply(&batch).unwrap();
    }
    for v in 0..7 {
        let hits = store.index_lookup("t", "by_x", &eq(&format!("v{v}"))).unwrap().hits;
        let want: Vec<Vec<u8>> = (0..3 * rows).filter(|i| i % 7 == v).map(key).collect();
        assert_eq!(hits.into_iter().map(|h| h.key).collect::<Vec<_>>(), want, "v{v}");
    }
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
}

/// An entry whose cell expired stays where it was written until a merge or
/// compaction; the same entry written again lands in a newer pending run.
/// Removals must take the live copy, and merges must keep it.
#[test]
fn a_live_entry_wins_over_its_expired_copy_in_an_older_run() {
    let clock = rowsearch_store::ManualClock::new(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let open = |runs: usize| {
        Store::builder()
            .clock(std::sync::Arc::new(clock.clone()))
            .index_pending_runs(runs)
            .open(dir.path())
            .unwrap()
    };
    let store = open(8);
    store.create_table("t", &schema().index(IndexSchema::new("by_t", ["t:q"]))).unwrap();
    let keys = |store: &Store, value: &str| -> Vec<Vec<u8>> {
        store.index_lookup("t", "by_t", &eq(value)).unwrap().hits.into_iter().map(|h| h.key).collect()
    };
    for row in [&b"a"[..], b"b"] {
        store.put("t", row, vec![PutCell::new("t", "q", "v")]).unwrap();
    }
    clock.advance_ms(61_000);
    assert!(keys(&store, "v").is_empty());
    // Written again: live copies in newer runs, expired ones in older runs.
    for row in [&b"a"[..], b"b"] {
        store.put("t", row, vec![PutCell::new("t", "q", "v")]).unwrap();
    }
    assert_eq!(keys(&store, "v"), vec![b"a".to_vec(), b"b".to_vec()]);
    // Deleting a row removes its live copy, not the expired one.
    store.delete("t", b"a", Delete::Row { up_to: None }).unwrap();
    assert_eq!(keys(&store, "v"), vec![b"b".to_vec()]);
    assert!(store.verify_index("t", "by_t").unwrap().is_clean());
    // The next write to by_t merges every run, and keeps b's live copy
    // over its expired one.
    drop(store);
    let store = open(0);
    store.put("t", b"c", vec![PutCell::new("t", "q", "w")]).unwrap();
    assert_eq!(keys(&store, "v"), vec![b"b".to_vec()]);
    assert!(store.verify_index("t", "by_t").unwrap().is_clean());
}

#[test]
fn verify_finds_entries_removed_or_added_behind_the_index() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_table("t", &schema()).unwrap();
        for i in 0..5 {
            store.put("t", &key(i), vec![PutCell::new("m", "x", format!("v{i}"))]).unwrap();
        }
        assert!(store.verify_index("t", "by_x").unwrap().is_clean());
    }
    // Behind the store's back: remove row 2's entry (new entries wait in
    // pending runs, keyed run id then entry), add one for no row in the
    // main database, and copy row 3's live entry there too (a key in both
    // is one too many).
    let tampered = {
        let env = raw_env(dir.path());
        let mut wtxn = env.write_txn().unwrap();
        let (main, pending) = (raw_db(&env, &wtxn, "t/t/i/by_x"), raw_db(&env, &wtxn, "t/t/p/by_x"));
        assert_eq!(main.len(&wtxn).unwrap(), 0, "five entries stay below the merge threshold");
        // Run id 0 is the run directory.
        let runs: Vec<Vec<u8>> = pending
            .iter(&wtxn)
            .unwrap()
            .map(|e| e.unwrap().0.to_vec())
            .filter(|k| !k.starts_with(&[0; 4]))
            .collect();
        assert_eq!(runs.len(), 5, "one run per put");
        assert!(runs.windows(2).all(|w| w[0][..4] < w[1][..4]), "each in its own run");
        let entries: Vec<Vec<u8>> = runs.iter().map(|k| k[4..].to_vec()).collect();
        assert!(pending.delete(&mut wtxn, &runs[2]).unwrap());
        let mut bogus = entries[4].clone();
        bogus.splice(2..4, *b"zz");
        main.put(&mut wtxn, &bogus, &[]).unwrap();
        main.put(&mut wtxn, &entries[3], &[]).unwrap();
        wtxn.commit().unwrap();
        let mut tampered = vec![entries[3].clone(), bogus];
        tampered.sort();
        tampered
    };
    let store = Store::open(dir.path()).unwrap();
    let report = store.verify_index("t", "by_x").unwrap();
    assert_eq!((report.missing_count, report.extra_count), (1, 2), "{report:?}");
    assert_eq!(report.missing, vec![key(2)]);
    assert_eq!(report.extra, tampered);
    // Rebuilding repairs it.
    let mut calls = Vec::new();
    store.rebuild_index("t", "by_x", &mut |done, total| calls.push((done, total))).unwrap();
    assert_eq!(calls.last(), Some(&(5, 5)));
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
}

#[test]
fn indexes_added_to_tables_with_rows_are_built_and_dropped_indexes_vanish() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("m")])).unwrap();
    // More rows than one build chunk (4,096), some with two versions.
    let mut batch = Batch::new();
    for i in 0..10_000 {
        let mut cells = vec![PutCell::new("m", "x", format!("{}", i % 3)).at(2)];
        if i % 7 == 0 {
            cells.push(PutCell::new("m", "x", "stale").at(1));
        }
        batch.put("t", key(i), cells);
    }
    store.apply(&batch).unwrap();
    let mut calls = Vec::new();
    store.add_index("t", IndexSchema::new("by_x", ["m:x"]), &mut |d, t| calls.push((d, t))).unwrap();
    assert!(calls.len() >= 3, "progress along the way: {calls:?}");
    assert_eq!(calls.last(), Some(&(10_000, 10_000)));
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
    assert_eq!(store.index_lookup("t", "by_x", &eq("1")).unwrap().hits.len(), 3333);
    assert!(store.index_lookup("t", "by_x", &eq("stale")).unwrap().hits.is_empty());
    let batch_delete = {
        let mut b = Batch::new();
        for i in 30..10_000 {
            b.delete("t", key(i), Delete::Row { up_to: None });
        }
        b
    };
    store.apply(&batch_delete).unwrap();
    assert_eq!(store.index_lookup("t", "by_x", &eq("1")).unwrap().hits.len(), 10);
    assert!(store.schema("t").unwrap().indexes.iter().any(|i| i.name == "by_x"));
    // Kept from now on, and across a reopen.
    store.put("t", b"new", vec![PutCell::new("m", "x", "1")]).unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.index_lookup("t", "by_x", &eq("1")).unwrap().hits.len(), 11);
    let (rows, _) =
        store.begin_read().unwrap().index_rows("t", "by_x", &eq("2"), &ReadOptions::default()).unwrap();
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.value("m", b"x") == Some(&b"2"[..])));
    store.drop_index("t", "by_x").unwrap();
    assert!(matches!(
        store.index_lookup("t", "by_x", &eq("1")).unwrap_err().kind(),
        ErrorKind::UnknownIndex { .. }
    ));
    // Adding it again starts from the rows, not from stale entries.
    store.add_index("t", IndexSchema::new("by_x", ["m:x"]), &mut |_, _| {}).unwrap();
    assert_eq!(store.index_lookup("t", "by_x", &eq("1")).unwrap().hits.len(), 11);
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
}

#[test]
fn entries_live_in_their_rows_region_and_lookups_merge_regions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &schema().splits(["row000010", "row000020"])).unwrap();
    for i in (0..30).rev() {
        store
            .put("t", &key(i), vec![PutCell::new("m", "x", if i % 2 == 0 { "even" } else { "odd" })])
            .unwrap();
    }
    let all: Vec<Vec<u8>> =
        store.index_lookup("t", "by_x", &eq("even")).unwrap().hits.into_iter().map(|h| h.key).collect();
    assert_eq!(all, (0..30).step_by(2).map(key).collect::<Vec<_>>(), "merged in row-key order");
    for region in 0..3 {
        let q = IndexQuery { region: Some(region), ..eq("even") };
        let keys: Vec<Vec<u8>> =
            store.index_lookup("t", "by_x", &q).unwrap().hits.into_iter().map(|h| h.key).collect();
        let lo = region as u32 * 10;
        assert_eq!(keys, (lo..lo + 10).step_by(2).map(key).collect::<Vec<_>>(), "region {region}");
    }
    let q = IndexQuery { region: Some(3), ..eq("even") };
    assert!(matches!(
        store.index_lookup("t", "by_x", &q).unwrap_err().kind(),
        ErrorKind::UnknownRegion { .. }
    ));
}

#[test]
fn bad_index_declarations_and_queries_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let bad = [
        TableSchema::new([FamilySchema::new("m")]).index(IndexSchema::new("i", ["nope:x"])),
        TableSchema::new([FamilySchema::new("m")]).index(IndexSchema::new("i", ["m"])),
        TableSchema::new([FamilySchema::new("m")]).index(IndexSchema::new("i", Vec::<String>::new())),
        TableSchema::new([FamilySchema::new("m")])
            .index(IndexSchema::new("i", ["m:x"]))
            .index(IndexSchema::new("i", ["m:y"])),
    ];
    for schema in bad {
        let err = store.create_table("t", &schema).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::InvalidSchema { .. }), "{err}");
    }
    store.create_table("t", &schema()).unwrap();
    let too_many = IndexQuery { eq: vec![b"a".to_vec(), b"b".to_vec()], ..IndexQuery::default() };
    let err = store.index_lookup("t", "by_x", &too_many).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidIndexQuery { .. }), "{err}");
    let bad_cursor = IndexQuery { cursor: Some("nope".into()), ..IndexQuery::default() };
    assert!(matches!(
        store.index_lookup("t", "by_x", &bad_cursor).unwrap_err().kind(),
        ErrorKind::InvalidCursor { .. }
    ));
}

/// The LMDB environment of the closed store in `dir`, opened directly to
/// change it behind the store's back.
fn raw_env(dir: &std::path::Path) -> heed::Env {
    let mut options = heed::EnvOpenOptions::new();
    options.max_dbs(64).map_size(1 << 30);
    #[allow(unsafe_code)]
    // SAFETY: the store is closed; nothing else has the environment open.
    unsafe { options.open(dir) }.unwrap()
}

/// An existing database of `env`.
fn raw_db(
    env: &heed::Env,
    txn: &heed::RoTxn,
    name: &str,
) -> heed::Database<heed::types::Bytes, heed::types::Bytes> {
    env.open_database(txn, Some(name)).unwrap().unwrap()
}

/// Sets the store's format marker behind its back and returns the old one.
fn set_format_marker(dir: &std::path::Path, marker: &str) -> String {
    let env = raw_env(dir);
    let mut wtxn = env.write_txn().unwrap();
    let meta = raw_db(&env, &wtxn, "meta");
    let old = String::from_utf8(meta.get(&wtxn, b"format").unwrap().unwrap().to_vec()).unwrap();
    meta.put(&mut wtxn, b"format", marker.as_bytes()).unwrap();
    wtxn.commit().unwrap();
    old
}

#[test]
fn version_1_stores_are_upgraded_and_unknown_formats_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        // No pending runs kept, as version 1 had none.
        let store = Store::builder().index_pending_runs(0).open(dir.path()).unwrap();
        store.create_table("t", &schema()).unwrap();
        store.put("t", &key(1), vec![PutCell::new("m", "x", "v")]).unwrap();
    }
    // A version 1 store (before pending index databases): opened, indexed
    // rows found, marked version 3.
    assert_eq!(set_format_marker(dir.path(), "rowsearch-store/1"), "rowsearch-store/10");
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.index_lookup("t", "by_x", &eq("v")).unwrap().hits.len(), 1);
        assert!(store.verify_index("t", "by_x").unwrap().is_clean());
    }
    assert_eq!(set_format_marker(dir.path(), "rowsearch-store/11"), "rowsearch-store/10");
    let err = Store::open(dir.path()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnsupportedFormat { found, .. } if found == "rowsearch-store/11"),
        "{err}"
    );
}

#[test]
fn version_2_pending_entries_are_moved_into_the_index_on_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        // No pending runs kept: every entry lands in the main database.
        let store = Store::builder().index_pending_runs(0).open(dir.path()).unwrap();
        store.create_table("t", &schema()).unwrap();
        for i in 0..3 {
            store.put("t", &key(i), vec![PutCell::new("m", "x", format!("v{i}"))]).unwrap();
        }
    }
    // Behind the store's back, the layout of version 2: two of the entries
    // pending, keyed by the entry alone (no run id).
    {
        let env = raw_env(dir.path());
        let mut wtxn = env.write_txn().unwrap();
        let (main, pending) = (raw_db(&env, &wtxn, "t/t/i/by_x"), raw_db(&env, &wtxn, "t/t/p/by_x"));
        assert_eq!(pending.len(&wtxn).unwrap(), 0);
        let entries: Vec<Vec<u8>> = main.iter(&wtxn).unwrap().map(|e| e.unwrap().0.to_vec()).collect();
        assert_eq!(entries.len(), 3);
        for entry in &entries[1..] {
            assert!(main.delete(&mut wtxn, entry).unwrap());
            pending.put(&mut wtxn, entry, &[]).unwrap();
        }
        wtxn.commit().unwrap();
    }
    assert_eq!(set_format_marker(dir.path(), "rowsearch-store/2"), "rowsearch-store/10");
    let store = Store::open(dir.path()).unwrap();
    for i in 0..3 {
        let hits = store.index_lookup("t", "by_x", &eq(&format!("v{i}"))).unwrap().hits;
        assert_eq!(hits.iter().map(|h| h.key.clone()).collect::<Vec<_>>(), vec![key(i)], "v{i}");
    }
    assert!(store.verify_index("t", "by_x").unwrap().is_clean());
    drop(store);
    assert_eq!(set_format_marker(dir.path(), "rowsearch-store/3"), "rowsearch-store/10", "marked version 10");
}

#[test]
fn a_table_takes_at_most_its_share_of_families_and_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let families = |n: usize| (0..n).map(|i| FamilySchema::new(format!("f{i}"))).collect::<Vec<_>>();
    let err = store.create_table("wide", &TableSchema::new(families(1000))).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidSchema { .. }), "{err}");
    assert!(err.to_string().contains("at most 32"), "{err}");
    assert!(store.tables().unwrap().is_empty(), "nothing was created");
    store.create_table("ok", &TableSchema::new(families(rowsearch_store::MAX_FAMILIES))).unwrap();
    let mut schema = TableSchema::new([FamilySchema::new("m")]);
    for i in 0..=rowsearch_store::MAX_INDEXES {
        schema = schema.index(IndexSchema::new(format!("i{i}"), ["m:x"]));
    }
    let err = store.create_table("indexed", &schema).unwrap_err();
    assert!(err.to_string().contains("at most 16"), "{err}");
}
