//! Repacking a store: refused while any handle (this process's or another
//! process's) has it open, and an open refused while a repack runs; a
//! leftover of a killed repack is removed; pages written at random come
//! out full. The model tests (`model_prop`, `keyword_prop`) repack at
//! random points and check every row, index and keyword lookup after it.

use rowsearch_store::{ErrorKind, FamilySchema, PutCell, Scan, Store, TableSchema, repack};

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

    // A repack runs: an open is refused.
    lock.lock().unwrap();
    let message = in_use(Store::open(dir.path()));
    assert!(message.contains("a repack is rewriting it"), "{message}");
    lock.unlock().unwrap();

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
