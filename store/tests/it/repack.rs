//! Repacking a store: refused while any handle (this process's or another
//! process's) has it open, and an open waits while a repack runs; a store
//! packs itself when loose and alone (`pack_when_loose`); a
//! leftover of a killed repack is removed; pages written at random come
//! out full. The model tests (`model_prop`, `keyword_prop`) repack at
//! random points and check every row, index and keyword lookup after it.

use rowsearch_store::{
    ErrorKind, FamilySchema, LOOSE_MIN_BYTES, LOOSE_RATIO, Packing, PutCell, Scan, Store, TableSchema,
    pack_when_loose, repack,
};

fn in_use(result: rowsearch_store::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(e) if matches!(e.kind(), ErrorKind::InUse { .. }) => e.to_string(),
        other => panic!("expected InUse, got {other:?}"),
    }
}

/// A store with `rows` rows written in a scattered key order.
fn scattered_store(dir: &std::path::Path, rows: u32) -> Vec<rowsearch_store::Row> {
    let store = Store::open(dir).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    for i in 0..rows {
        // Odd multiplier modulo 2^32: every key once, in no order.
        let key = i.wrapping_mul(2_654_435_761).to_be_bytes();
        store.put("t", &key, vec![PutCell::new("f", "q", vec![b'v'; 100])]).unwrap();
    }
    let all = store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap().rows;
    assert_eq!(all.len() as u32, rows);
    all
}

#[test]
fn a_repack_needs_the_store_alone_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let rows = scattered_store(dir.path(), 3_000);

    // This process has it open.
    let store = Store::open(dir.path()).unwrap();
    let message = in_use(repack(dir.path(), &mut |_| {}));
    assert!(message.contains("this process has the store open"), "{message}");
    drop(store);

    // Another process has it open: its shared lock on `open.lock` (a second
    // open file description locks as another process's would).
    let lock = std::fs::File::options().write(true).open(dir.path().join("open.lock")).unwrap();
    lock.lock_shared().unwrap();
    let message = in_use(repack(dir.path(), &mut |_| {}));
    assert!(message.contains("another process has the store open"), "{message}");
    lock.unlock().unwrap();

    // A repack runs: an open waits for it to finish (it returns only once
    // the repack's lock is released), then opens.
    lock.lock().unwrap();
    let path = dir.path().to_owned();
    let opener = std::thread::spawn(move || {
        let store = Store::open(&path);
        (std::time::Instant::now(), store.map(drop))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let released = std::time::Instant::now();
    lock.unlock().unwrap();
    let (opened, result) = opener.join().unwrap();
    result.expect("the open waited for the repack");
    assert!(opened >= released, "the open returned while the repack held the store");

    // A killed repack's leftover is removed; the store is rewritten full.
    std::fs::create_dir(dir.path().join("repack.tmp")).unwrap();
    std::fs::write(dir.path().join("repack.tmp/data.mdb"), b"half a file").unwrap();
    let mut seen = Vec::new();
    let report = repack(dir.path(), &mut |db| seen.push(db.name.clone())).unwrap();
    assert!(!dir.path().join("repack.tmp").try_exists().unwrap());
    assert_eq!(seen, report.databases.iter().map(|d| d.name.clone()).collect::<Vec<_>>());
    let family = report.databases.iter().find(|d| d.name == "t/t/f/f").expect("the family's database");
    assert_eq!(family.entries, 3_000);
    // Scattered inserts leave leaves about two-thirds full; appends fill them.
    assert!(
        family.pages_after * 10 <= family.pages_before * 8,
        "{} pages -> {}",
        family.pages_before,
        family.pages_after
    );
    assert!(report.bytes_after < report.bytes_before, "{report:?}");

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap().rows, rows);
    // And it takes writes again.
    store.put("t", b"new", vec![PutCell::new("f", "q", b"v".to_vec())]).unwrap();
}

#[test]
fn a_loose_store_packs_itself_when_alone_and_a_tight_one_is_left() {
    let dir = tempfile::tempdir().unwrap();
    // Small: never worth a pack.
    scattered_store(dir.path(), 100);
    assert!(matches!(
        pack_when_loose(dir.path(), &mut |_| {}).unwrap(),
        Packing::Tight { packed_bytes: None, .. }
    ));
    // Past LOOSE_MIN_BYTES, never packed: packed, and its size recorded.
    let store = Store::open(dir.path()).unwrap();
    for i in 0..4_000u32 {
        let key = i.wrapping_mul(2_654_435_761).to_be_bytes();
        store.put("t", &key, vec![PutCell::new("f", "big", vec![b'x'; 3_000])]).unwrap();
    }
    let rows = store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap().rows;
    // Open here: left for later.
    assert_eq!(pack_when_loose(dir.path(), &mut |_| {}).unwrap(), Packing::InUse);
    drop(store);
    let size = |dir: &std::path::Path| std::fs::metadata(dir.join("data.mdb")).unwrap().len();
    let before = size(dir.path());
    assert!(before >= LOOSE_MIN_BYTES, "{before}");
    let Packing::Packed(report) = pack_when_loose(dir.path(), &mut |_| {}).unwrap() else {
        panic!("a loose store alone is packed")
    };
    assert_eq!(report.bytes_before, before);
    assert!(report.bytes_after < before, "{report:?}");
    // Packed: tight until it grows past LOOSE_RATIO times that size.
    let Packing::Tight { packed_bytes: Some(packed), .. } = pack_when_loose(dir.path(), &mut |_| {}).unwrap()
    else {
        panic!("just packed: tight")
    };
    assert_eq!(packed, report.bytes_after);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap().rows, rows);
    let mut i = 0u32;
    while (size(dir.path()) as f64) <= packed as f64 * LOOSE_RATIO {
        store
            .put("t", &(1u32 << 31 | i).to_be_bytes(), vec![PutCell::new("f", "big", vec![b'y'; 3_000])])
            .unwrap();
        i += 1;
    }
    drop(store);
    assert!(matches!(pack_when_loose(dir.path(), &mut |_| {}).unwrap(), Packing::Packed(_)));
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap().rows.len(),
        rows.len() + i as usize
    );
}
