//! Behaviour tests of the public store API: bad input, map growth, the feed,
//! and concurrency between readers and the writer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rowsearch_store::{
    Batch, Column, Delete, ErrorKind, FamilySchema, MAX_QUALIFIER_BYTES, MAX_ROW_KEY_BYTES, PutCell,
    ReadOptions, Scan, Store, TableSchema,
};

fn mail_schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("m"), FamilySchema::new("b").max_versions(2)])
}

fn store_with_table() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("mail", &mail_schema()).unwrap();
    store.put("mail", b"r1", vec![PutCell::new("m", "s", "keep").at(1)]).unwrap();
    (dir, store)
}

/// Everything in the store, for "changed nothing" checks.
fn snapshot(store: &Store) -> Vec<(String, Vec<rowsearch_store::Row>)> {
    let all = Scan::new().read(ReadOptions::default().versions(rowsearch_store::ALL_VERSIONS));
    store.tables().unwrap().into_iter().map(|t| (t.clone(), store.scan(&t, &all).unwrap().rows)).collect()
}

#[test]
fn bad_input_over_long_keys_is_typed_and_changes_nothing() {
    let (_dir, store) = store_with_table();
    let before = snapshot(&store);
    let seq = store.next_seq().unwrap();
    let long_row = vec![b'k'; MAX_ROW_KEY_BYTES + 1];
    let mut batch = Batch::new();
    batch.put("mail", b"ok-row", vec![PutCell::new("m", "s", "x")]);
    batch.put("mail", long_row.clone(), vec![PutCell::new("m", "s", "x")]);
    let err = store.apply(&batch).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::RowKeyTooLong { len, max, .. } if *len == MAX_ROW_KEY_BYTES + 1 && *max == MAX_ROW_KEY_BYTES),
        "{err}"
    );
    assert!(err.is_user_error());
    assert!(err.to_string().starts_with("row key too long: 161 bytes, max 160"), "{err}");

    let long_q = vec![0u8; MAX_QUALIFIER_BYTES + 1];
    let err = store.put("mail", b"r2", vec![PutCell::new("m", long_q, "x")]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::QualifierTooLong { .. }), "{err}");
    let err = store.put("mail", b"", vec![PutCell::new("m", "s", "x")]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::EmptyRowKey { .. }), "{err}");

    // The longest accepted key and qualifier, all zero bytes (escaping doubles
    // them), fit in LMDB.
    let max_row = vec![0u8; MAX_ROW_KEY_BYTES];
    let max_q = vec![0u8; MAX_QUALIFIER_BYTES];
    store.put("mail", &max_row, vec![PutCell::new("m", max_q.clone(), "edge").at(7)]).unwrap();
    let row = store.get("mail", &max_row, &ReadOptions::default()).unwrap().unwrap();
    assert_eq!(row.value("m", &max_q), Some(&b"edge"[..]));
    store.delete("mail", &max_row, Delete::Row { up_to: None }).unwrap();

    assert_eq!(snapshot(&store), before);
    assert_eq!(store.next_seq().unwrap(), seq + 2, "only the edge-case put and delete reached the feed");
}

#[test]
fn bad_input_unknown_table_or_family_is_typed_and_changes_nothing() {
    let (_dir, store) = store_with_table();
    let before = snapshot(&store);
    let mut batch = Batch::new();
    batch.put("mail", b"r2", vec![PutCell::new("m", "s", "x")]);
    batch.put("nope", b"r2", vec![PutCell::new("m", "s", "x")]);
    let err = store.apply(&batch).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownTable { table } if table == "nope"), "{err}");
    assert!(err.is_not_found());

    let mut batch = Batch::new();
    batch.put("mail", b"r2", vec![PutCell::new("m", "s", "x")]);
    batch.delete("mail", b"r1", Delete::Family { family: "zz".into(), up_to: None });
    let err = store.apply(&batch).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownFamily { family, .. } if family == "zz"), "{err}");

    let err =
        store.get("mail", b"r1", &ReadOptions::default().column(Column::Family("zz".into()))).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownFamily { .. }), "{err}");
    let err = store.scan("nope", &Scan::new()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownTable { .. }), "{err}");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn bad_input_zero_length_family_name_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let err = store.create_table("t", &TableSchema::new([FamilySchema::new("")])).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidName { what: "family", .. }), "{err}");
    for bad in ["", "../etc", ".hidden", "a/b", "sp ace"] {
        let err = store.create_table(bad, &mail_schema()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::InvalidName { what: "table", .. }), "{bad:?}: {err}");
    }
    let err = store.create_table("t", &TableSchema::new([])).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidSchema { .. }), "{err}");
    let err =
        store.create_table("t", &TableSchema::new([FamilySchema::new("f").max_versions(0)])).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidSchema { .. }), "{err}");
    let err = store
        .create_table("t", &TableSchema::new([FamilySchema::new("f"), FamilySchema::new("f")]))
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidSchema { .. }), "{err}");
    assert!(store.tables().unwrap().is_empty());
}

#[test]
fn bad_input_schema_change_on_existing_table_conflicts() {
    let (_dir, store) = store_with_table();
    let before = snapshot(&store);
    assert!(!store.create_table("mail", &mail_schema()).unwrap(), "identical schema is not a conflict");
    let changed = TableSchema::new([FamilySchema::new("m").max_versions(5), FamilySchema::new("b")]);
    let err = store.create_table("mail", &changed).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::SchemaConflict { table } if table == "mail"), "{err}");
    assert_eq!(store.schema("mail").unwrap(), mail_schema());
    assert_eq!(snapshot(&store), before);
}

#[test]
fn bad_input_directory_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    // A directory holding something else.
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotAStore { .. }), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing was created");

    // A file instead of a directory.
    let err = Store::open(dir.path().join("notes.txt")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotAStore { .. }), "{err}");

    // A data.mdb that is garbage.
    let garbage = tempfile::tempdir().unwrap();
    std::fs::write(garbage.path().join("data.mdb"), vec![0xAB; 64 * 1024]).unwrap();
    let err = Store::open(garbage.path()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotAStore { .. }), "{err}");
    assert_eq!(std::fs::read(garbage.path().join("data.mdb")).unwrap(), vec![0xAB; 64 * 1024]);
}

#[test]
fn store_persists_across_reopen_and_shares_a_double_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_table("mail", &mail_schema()).unwrap();
        store
            .put("mail", b"r", vec![PutCell::new("b", "t", "v1").at(1), PutCell::new("b", "t", "v2").at(2)])
            .unwrap();
        // A second handle in this process shares the environment (LMDB
        // allows one per process) and sees the first one's writes.
        let second = Store::open(dir.path().join(".")).unwrap();
        assert_eq!(second.schema("mail").unwrap(), mail_schema());
        second.put("mail", b"s", vec![PutCell::new("b", "t", "w")]).unwrap();
        assert!(store.get("mail", b"s", &ReadOptions::default()).unwrap().is_some());
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.schema("mail").unwrap(), mail_schema());
    let row = store.get("mail", b"r", &ReadOptions::default().versions(5)).unwrap().unwrap();
    let values: Vec<&[u8]> = row.cells.iter().map(|c| c.value.as_slice()).collect();
    assert_eq!(values, vec![&b"v2"[..], b"v1"]);
}

#[test]
fn map_grows_on_demand_from_a_tiny_map() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().map_size_bytes(32 * 1024).open(dir.path()).unwrap();
    let initial = store.map_size_bytes();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    let value = vec![7u8; 4000];
    for chunk in 0..20u32 {
        let mut batch = Batch::new();
        for i in 0..200u32 {
            batch.put("t", format!("row{:08}", chunk * 200 + i), vec![PutCell::new("f", "q", value.clone())]);
        }
        store.apply(&batch).unwrap();
    }
    assert!(store.map_size_bytes() >= 16 * 1024 * 1024, "grew from {initial} to {}", store.map_size_bytes());
    assert_eq!(store.count("t", &Scan::new()).unwrap(), 4000);
    drop(store);
    let store = Store::builder().map_size_bytes(32 * 1024).open(dir.path()).unwrap();
    assert_eq!(store.count("t", &Scan::new()).unwrap(), 4000);
}

#[test]
fn feed_records_rows_and_trims() {
    let (_dir, store) = store_with_table();
    let mut batch = Batch::new();
    batch.put("mail", b"a", vec![PutCell::new("m", "s", "1")]);
    batch.put("mail", b"b", vec![PutCell::new("m", "s", "1")]);
    batch.delete("mail", b"a", Delete::Row { up_to: None });
    let info = store.apply(&batch).unwrap();
    assert_eq!((info.first_seq, info.last_seq, info.rows), (Some(2), Some(3), 2));
    let rows: Vec<Vec<u8>> = store.feed_since(2, 10).unwrap().into_iter().map(|e| e.row).collect();
    assert_eq!(rows, vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(store.trim_feed(2).unwrap(), 2);
    let left: Vec<u64> = store.feed_since(0, 10).unwrap().into_iter().map(|e| e.seq).collect();
    assert_eq!(left, vec![3]);
    assert_eq!(store.next_seq().unwrap(), 4, "trimming never reuses sequences");
}

/// Every commit's time is kept with the feed: the time of a sequence is
/// its commit's, by the store's clock; trimming keeps the time of the
/// first entry left.
#[test]
fn feed_keeps_commit_times_through_trims() {
    let dir = tempfile::tempdir().unwrap();
    let clock = rowsearch_store::ManualClock::new(1_000);
    let store = Store::builder().clock(Arc::new(clock.clone())).open(dir.path()).unwrap();
    store.create_table("mail", &mail_schema()).unwrap();
    let time = |seq| store.begin_read().unwrap().feed_time(seq).unwrap();
    assert_eq!(time(1), None, "nothing written yet");
    let mut batch = Batch::new();
    for row in [b"a", b"b", b"c"] {
        batch.put("mail", row, vec![PutCell::new("m", "s", "1")]);
    }
    store.apply(&batch).unwrap(); // seqs 1..=3 at 1,000
    clock.set_ms(5_000);
    store.put("mail", b"d", vec![PutCell::new("m", "s", "1")]).unwrap(); // 4 at 5,000
    clock.set_ms(9_000);
    store.apply(&batch).unwrap(); // 5..=7 at 9,000
    let times: Vec<Option<u64>> = (1..=8).map(time).collect();
    let want = [1_000, 1_000, 1_000, 5_000, 9_000, 9_000, 9_000, 9_000].map(Some);
    assert_eq!(times, want, "the time of each sequence is its commit's (8 is not written: the last one's)");
    assert_eq!(store.begin_read().unwrap().now_ms(), 9_000);
    // Trimmed into the middle of the last commit: its time stays for the
    // entries left, and the commits wholly trimmed lose theirs.
    store.trim_feed(5).unwrap();
    assert_eq!((6..=7).map(time).collect::<Vec<_>>(), vec![Some(9_000); 2]);
    assert_eq!(time(4), None, "the time of a commit wholly trimmed is gone");
}

#[test]
fn drop_table_removes_its_cells() {
    let (_dir, store) = store_with_table();
    store.drop_table("mail").unwrap();
    assert!(store.tables().unwrap().is_empty());
    assert!(matches!(
        store.get("mail", b"r1", &ReadOptions::default()).unwrap_err().kind(),
        ErrorKind::UnknownTable { .. }
    ));
    store.create_table("mail", &mail_schema()).unwrap();
    assert_eq!(store.count("mail", &Scan::new()).unwrap(), 0);
}

/// Each commit rewrites every row with its commit number; a reader must see
/// one number across all rows of its snapshot.
#[test]
fn concurrent_readers_see_whole_commits() {
    const ROWS: u32 = 200;
    const COMMITS: u32 = 150;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    store.create_table("t", &TableSchema::new([FamilySchema::new("f"), FamilySchema::new("g")])).unwrap();
    let write = |n: u32| {
        let mut batch = Batch::new();
        for r in 0..ROWS {
            let v = n.to_be_bytes().to_vec();
            batch.put(
                "t",
                format!("row{r:05}"),
                vec![PutCell::new("f", "n", v.clone()), PutCell::new("g", "n", v)],
            );
        }
        store.apply(&batch).unwrap();
    };
    write(0);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let store = Arc::clone(&store);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut scans = 0u32;
                let mut seen = std::collections::BTreeSet::new();
                while !done.load(Ordering::SeqCst) || scans == 0 {
                    let rtxn = store.begin_read().unwrap();
                    let mut values = std::collections::BTreeSet::new();
                    let mut rows = 0;
                    for row in rtxn.scan("t", &Scan::new()).unwrap() {
                        for cell in row.unwrap().cells {
                            values.insert(cell.value);
                        }
                        rows += 1;
                    }
                    assert_eq!(rows, ROWS, "every row in every snapshot");
                    assert_eq!(values.len(), 1, "a snapshot mixes commits: {values:?}");
                    seen.extend(values);
                    scans += 1;
                }
                seen.len()
            })
        })
        .collect();
    // The writer commits while a reader holds a snapshot open throughout:
    // LMDB readers never block the writer, so this finishes.
    let pinned = store.begin_read().unwrap();
    let pinned_count = pinned.count("t", &Scan::new()).unwrap();
    for n in 1..=COMMITS {
        write(n);
    }
    let still = pinned.get("t", b"row00000", &ReadOptions::default()).unwrap().unwrap();
    assert_eq!(still.cells[0].value, 0u32.to_be_bytes().to_vec(), "the pinned snapshot is unchanged");
    assert_eq!(pinned_count, u64::from(ROWS));
    drop(pinned);
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        let distinct = reader.join().unwrap();
        assert!(distinct >= 1);
    }
    let last = store.get("t", b"row00199", &ReadOptions::default()).unwrap().unwrap();
    assert_eq!(last.cells[0].value, COMMITS.to_be_bytes().to_vec());
}

#[test]
fn scan_is_lazy_and_stops_early() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    let mut batch = Batch::new();
    for i in 0..5000u32 {
        batch.put("t", i.to_be_bytes().to_vec(), vec![PutCell::new("f", "", "v")]);
    }
    store.apply(&batch).unwrap();
    let rtxn = store.begin_read().unwrap();
    let mut iter = rtxn.scan("t", &Scan::new().reverse(true)).unwrap();
    let first = iter.next().unwrap().unwrap();
    assert_eq!(first.key, 4999u32.to_be_bytes().to_vec());
    let cursor = iter.cursor().unwrap();
    assert_eq!(cursor.last_key, first.key);
}

#[test]
fn salted_tables_are_read_and_written_with_unsalted_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let schema = mail_schema().row_key(rowsearch_store::RowKeySchema::new([]).salted(8));
    store.create_table("s", &schema).unwrap();
    let keys: Vec<Vec<u8>> = (0u8..40).map(|i| vec![b'k', i]).collect();
    let mut batch = Batch::new();
    for key in &keys {
        batch.put("s", key.clone(), vec![PutCell::new("m", "q", key.clone()).at(1)]);
    }
    store.apply(&batch).unwrap();
    let read = ReadOptions::default();
    assert_eq!(store.get("s", b"k\x07", &read).unwrap().unwrap().cells[0].value, b"k\x07");
    let got = store.multi_get("s", &[b"k\x01", b"nope", b"k\x27"], &read).unwrap();
    assert_eq!(
        got.iter().map(|r| r.as_ref().map(|r| r.key.clone())).collect::<Vec<_>>(),
        [Some(b"k\x01".to_vec()), None, Some(b"k\x27".to_vec())]
    );
    store.delete("s", b"k\x07", Delete::Row { up_to: None }).unwrap();
    assert!(store.get("s", b"k\x07", &read).unwrap().is_none());
    let all: Vec<Vec<u8>> = store.scan("s", &Scan::new()).unwrap().rows.into_iter().map(|r| r.key).collect();
    let mut want = keys.clone();
    want.retain(|k| k != b"k\x07");
    assert_eq!(all, want, "one merged scan in key order, salt stripped");
    // The feed carries unsalted keys.
    let feed = store.feed_since(0, usize::MAX).unwrap();
    assert_eq!(feed.last().unwrap().row, b"k\x07");
    // Rows really are spread over the buckets.
    let stats = store.region_stats("s", 2).unwrap();
    assert_eq!(stats.len(), 8);
    assert!(stats.iter().filter(|s| s.rows > 0).count() >= 4, "{stats:?}");
}

#[test]
fn for_each_region_runs_regions_in_parallel_in_region_order() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &mail_schema().splits(["c", "f", "m"])).unwrap();
    for key in ["a", "b", "d", "g", "h", "i", "z"] {
        store.put("t", key.as_bytes(), vec![PutCell::new("m", "q", "v")]).unwrap();
    }
    // Each region's work counts itself in while it runs and waits (bounded)
    // for a second one to be running at the same time; run one after the
    // other, no region would ever see two.
    let running = std::sync::Mutex::new(0usize);
    let cv = std::sync::Condvar::new();
    let overlapped = AtomicBool::new(false);
    let counts = store
        .for_each_region("t", 2, |region, rtxn| {
            let mut n = running.lock().unwrap();
            *n += 1;
            cv.notify_all();
            let (mut n, _) = cv
                .wait_timeout_while(n, Duration::from_secs(10), |n| {
                    *n < 2 && !overlapped.load(Ordering::Relaxed)
                })
                .unwrap();
            if *n >= 2 {
                overlapped.store(true, Ordering::Relaxed);
                cv.notify_all();
            }
            *n -= 1;
            drop(n);
            rtxn.count("t", &Scan::new().region(region.index))
        })
        .unwrap();
    assert_eq!(counts, vec![2, 1, 3, 1], "results in region order");
    assert!(overlapped.load(Ordering::Relaxed), "two regions' work ran at once");
    let err = store.for_each_region("t", 2, |_, _| -> rowsearch_store::Result<()> {
        Err(ErrorKind::InvalidCursor { reason: "planted" }.into())
    });
    assert!(err.is_err());
    assert!(matches!(
        store.scan("t", &Scan::new().region(4)).unwrap_err().kind(),
        ErrorKind::UnknownRegion { .. }
    ));
}

/// Compressed families (HBase's `COMPRESSION`) are transparent to every
/// read path: gets, scans with value filters, versions, secondary indexes
/// and keyword-free tables alike, and they take fewer bytes.
#[test]
fn compressed_families_read_back_exactly_and_take_fewer_bytes() {
    use rowsearch_store::{Compression, Filter, IndexQuery, IndexSchema};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let body = "Dear all, the gas price meeting moves to Tuesday. ".repeat(40);
    for (table, compression) in
        [("plain", Compression::None), ("lz4", Compression::Lz4), ("zstd", Compression::Zstd)]
    {
        let schema = TableSchema::new([FamilySchema::new("b").compression(compression).max_versions(2)])
            .index(IndexSchema::new("by_tag", ["b:tag"]));
        store.create_table(table, &schema).unwrap();
        for i in 0..200u32 {
            let text = format!("{body}{i}");
            store
                .put(
                    table,
                    format!("r{i:03}").as_bytes(),
                    vec![
                        PutCell::new("b", "text", text.as_str()).at(1),
                        PutCell::new("b", "text", format!("v2 {text}").as_str()).at(2),
                        PutCell::new(
                            "b",
                            "tag",
                            if i % 2 == 0 {
                                "even-and-long-enough-to-compress-".repeat(3)
                            } else {
                                "odd".into()
                            },
                        ),
                    ],
                )
                .unwrap();
        }
        let row = store.get(table, b"r007", &ReadOptions::default().versions(2)).unwrap().unwrap();
        let texts: Vec<&[u8]> =
            row.cells.iter().filter(|c| c.qualifier == b"text").map(|c| c.value.as_slice()).collect();
        assert_eq!(texts, vec![format!("v2 {body}7").as_bytes(), format!("{body}7").as_bytes()], "{table}");
        let filtered = store
            .scan(
                table,
                &Scan::new().filter(Filter::parse("ValueFilter(=, 'substring:v2 Dear all')").unwrap()),
            )
            .unwrap();
        assert_eq!(filtered.rows.len(), 200, "{table}: every row has a matching newest version");
        let even = "even-and-long-enough-to-compress-".repeat(3);
        let query = IndexQuery { eq: vec![even.into_bytes()], limit: Some(1000), ..IndexQuery::default() };
        assert_eq!(store.index_lookup(table, "by_tag", &query).unwrap().hits.len(), 100, "{table}");
        assert!(store.verify_index(table, "by_tag").unwrap().is_clean());
    }
    let bytes = |t: &str| store.stats(t).unwrap().bytes;
    assert!(bytes("zstd") * 3 < bytes("plain"), "zstd {} plain {}", bytes("zstd"), bytes("plain"));
    assert!(bytes("lz4") < bytes("plain"), "lz4 {} plain {}", bytes("lz4"), bytes("plain"));
    // The schema says so, and a family without compression leaves it out.
    assert_eq!(store.schema("zstd").unwrap().families[0].compression, Compression::Zstd);
    let json = serde_json::to_string(&store.schema("plain").unwrap()).unwrap();
    assert!(!json.contains("compression"), "{json}");
}
