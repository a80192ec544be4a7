//! `Durability::Process`: commits counted until a sync, synced by the
//! background thread, by `Store::sync` and when the store closes; the
//! default syncs every commit.

use std::time::{Duration, Instant};

use rowsearch_store::{Durability, FamilySchema, PutCell, ReadOptions, Store, TableSchema};

fn open(dir: &std::path::Path, durability: Durability) -> Store {
    let store = Store::builder().durability(durability).open(dir).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    store
}

fn put(store: &Store, row: &str) {
    store.put("t", row.as_bytes(), vec![PutCell::new("f", "q", row)]).unwrap();
}

const HOUR: Durability = Durability::Process { sync_interval: Duration::from_secs(3600) };

#[test]
fn the_default_syncs_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Durability::default());
    put(&store, "a");
    assert_eq!(store.sync_stats(), None);
    store.sync().unwrap();
}

#[test]
fn commits_wait_for_a_sync() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), HOUR);
    let (syncs, before) = store.sync_stats().unwrap();
    assert_eq!(syncs, 0);
    for row in ["a", "b", "c"] {
        put(&store, row);
    }
    assert_eq!(store.sync_stats(), Some((0, before + 3)));
    store.sync().unwrap();
    assert_eq!(store.sync_stats(), Some((1, 0)));
    // Nothing new: no sync.
    store.sync().unwrap();
    assert_eq!(store.sync_stats(), Some((1, 0)));
    put(&store, "d");
    assert_eq!(store.sync_stats(), Some((1, 1)));
}

#[test]
fn the_background_thread_syncs_within_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Durability::Process { sync_interval: Duration::from_millis(20) });
    put(&store, "a");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (syncs, unsynced) = store.sync_stats().unwrap();
        if syncs >= 1 && unsynced == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no background sync: {syncs} syncs, {unsynced} unsynced");
        std::thread::yield_now();
    }
}

#[test]
fn closing_syncs_and_ends_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), HOUR);
    put(&store, "a");
    drop(store);
    // The syncer held the environment only weakly: it closed, and a store
    // opened now is a new environment with its own durability.
    let again = Store::open(dir.path()).unwrap();
    assert_eq!(again.sync_stats(), None);
    let row = again.get("t", b"a", &ReadOptions::default()).unwrap().unwrap();
    assert_eq!(row.cells[0].value, b"a");
}
