//! `Store::increment`: HBase's atomic counters.

use std::sync::Arc;

use rowsearch_store::{ErrorKind, FamilySchema, PutCell, ReadOptions, Store, TableSchema};

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("d")).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("c")])).unwrap();
    (dir, Arc::new(store))
}

fn counter(store: &Store, row: &[u8]) -> Option<i64> {
    let row = store.get("t", row, &ReadOptions::default()).unwrap()?;
    Some(i64::from_be_bytes(row.cells[0].value.as_slice().try_into().unwrap()))
}

/// Four threads adding 1 and 2 at once lose no increment, and every
/// answer is the counter's value right after that increment.
#[test]
fn concurrent_increments_lose_none() {
    let (_dir, store) = store();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                (0..200)
                    .map(|_| store.increment("t", b"r", "c", b"n", 1 + t % 2).unwrap().0)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen: Vec<i64> = threads.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(counter(&store, b"r"), Some(1200));
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 800, "two increments answered the same value");
    assert_eq!(seen.last(), Some(&1200));
}

#[test]
fn a_missing_counter_starts_at_zero_and_negative_deltas_count_down() {
    let (_dir, store) = store();
    assert_eq!(store.increment("t", b"r", "c", b"n", -5).unwrap().0, -5);
    assert_eq!(store.increment("t", b"r", "c", b"n", 0).unwrap().0, -5);
    assert_eq!(counter(&store, b"r"), Some(-5));
}

/// A cell that is not 8 bytes, and a sum past i64, are refused and
/// change nothing.
#[test]
fn what_is_not_a_counter_is_refused_and_left_alone() {
    let (_dir, store) = store();
    store.put("t", b"text", vec![PutCell::new("c", "n", "abc")]).unwrap();
    let err = store.increment("t", b"text", "c", b"n", 1).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotACounter { .. }), "{err}");
    assert!(err.to_string().contains("holds 3 bytes"), "{err}");
    assert!(err.is_user_error());
    store.increment("t", b"big", "c", b"n", i64::MAX).unwrap();
    let err = store.increment("t", b"big", "c", b"n", 1).unwrap_err();
    assert!(err.to_string().contains("overflows"), "{err}");
    assert_eq!(counter(&store, b"big"), Some(i64::MAX));
    let err = store.increment("t", b"r", "nofamily", b"n", 1).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownFamily { .. }), "{err}");
}
