//! Change-feed consumers: their positions hold the feed from trimming for
//! their retention, reads after a trimmed position fall behind, and the
//! records survive reopening.

use std::sync::Arc;

use rowsearch_store::{ErrorKind, FamilySchema, ManualClock, PutCell, Store, TableSchema};

fn store_at(dir: &std::path::Path, clock: &ManualClock) -> Store {
    Store::builder().clock(Arc::new(clock.clone())).open(dir).unwrap()
}

fn put(store: &Store, row: &str) -> u64 {
    store.put("t", row.as_bytes(), vec![PutCell::new("f", "q", "v")]).unwrap().last_seq.unwrap()
}

#[test]
fn consumers_hold_the_feed_for_their_retention_then_fall_behind() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let store = store_at(dir.path(), &clock);
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    let first = put(&store, "a");
    // A new consumer starts at the feed's end; one given a position there.
    let late = store.set_consumer("late", None, Some(10_000)).unwrap();
    assert_eq!(late.position, first);
    store.set_consumer("early", Some(0), Some(60_000)).unwrap();
    for row in ["b", "c", "d"] {
        put(&store, row);
    }
    // Trimming everything stops below the lowest holding position.
    assert_eq!(store.trim_feed(u64::MAX).unwrap(), 0, "early holds every entry");
    assert_eq!(store.begin_read().unwrap().changes_after(0, 10).unwrap().len(), 4);
    store.set_consumer("early", Some(2), None).unwrap();
    assert_eq!(store.trim_feed(u64::MAX).unwrap(), 1, "late (at 1) holds from 2 on");
    let err = store.begin_read().unwrap().changes_after(0, 10).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::FellBehind { since: 0, oldest: 2 }), "{err}");
    // Past late's retention (its oldest held entry, seq 2, was written at
    // 1,000) the trim goes on without it, and it has fallen behind.
    clock.set_ms(20_000);
    assert_eq!(store.trim_feed(u64::MAX).unwrap(), 1, "early (60 s) still holds from 3 on");
    let late = store.consumer("late").unwrap();
    let state = store.consumer_state(&late).unwrap();
    assert!(state.fell_behind && !state.holding, "{state:?}");
    assert!(matches!(
        store.set_consumer("late", Some(1), None).unwrap_err().kind(),
        ErrorKind::FellBehind { .. }
    ));
    // Moving past the end is refused; moving to the end catches up.
    let next = store.next_seq().unwrap();
    assert!(matches!(
        store.set_consumer("late", Some(next), None).unwrap_err().kind(),
        ErrorKind::PastFeedEnd { .. }
    ));
    let late = store.set_consumer("late", Some(next - 1), None).unwrap();
    assert!(!store.consumer_state(&late).unwrap().fell_behind);
    // Deleting a consumer lets trimming pass it; records survive reopening.
    drop(store);
    let store = store_at(dir.path(), &clock);
    let names: Vec<String> = store.consumers().unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["early", "late"]);
    assert!(store.delete_consumer("early").unwrap());
    assert!(!store.delete_consumer("early").unwrap());
    assert!(matches!(store.consumer("early").unwrap_err().kind(), ErrorKind::UnknownConsumer { .. }));
    assert_eq!(store.trim_feed(u64::MAX).unwrap(), 2);
    assert!(store.begin_read().unwrap().changes_after(next - 1, 10).unwrap().is_empty());
    assert!(matches!(
        store.set_consumer("a/b/c", None, None).unwrap_err().kind(),
        ErrorKind::InvalidName { .. }
    ));
}
