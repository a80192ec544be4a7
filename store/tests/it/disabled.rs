//! `Store::set_table_enabled`: HBase's disable and enable.

use rowsearch_store::{Batch, ErrorKind, FamilySchema, PutCell, ReadOptions, Scan, Store, TableSchema};

fn is_disabled<T: std::fmt::Debug>(outcome: rowsearch_store::Result<T>) -> bool {
    match outcome {
        Err(e) => matches!(e.kind(), ErrorKind::TableDisabled { table } if table == "t"),
        Ok(v) => panic!("a disabled table answered {v:?}"),
    }
}

/// A disabled table refuses every read and write of its rows, in every
/// handle on the store, keeps its schema and rows, and gives them back
/// unchanged once enabled; other tables go on as before.
#[test]
fn a_disabled_table_refuses_rows_in_every_handle_until_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path()).unwrap();
    let b = Store::open(dir.path()).unwrap();
    a.create_table("t", &TableSchema::new([FamilySchema::new("c")])).unwrap();
    a.create_table("u", &TableSchema::new([FamilySchema::new("c")])).unwrap();
    a.put("t", b"r", vec![PutCell::new("c", b"q".to_vec(), b"v".to_vec())]).unwrap();
    let read = ReadOptions::default();
    let before = b.get("t", b"r", &read).unwrap();

    assert!(a.set_table_enabled("t", false).unwrap());
    assert!(!a.set_table_enabled("t", false).unwrap(), "disabling twice changed something");
    for store in [&a, &b] {
        assert!(!store.is_table_enabled("t").unwrap());
        assert!(store.is_table_enabled("u").unwrap());
        assert!(is_disabled(store.get("t", b"r", &read)));
        assert!(is_disabled(store.begin_read().unwrap().scan_page("t", &Scan::default())));
        assert!(is_disabled(store.put("t", b"r2", vec![PutCell::new("c", b"q".to_vec(), b"w".to_vec())])));
        assert!(is_disabled(store.increment("t", b"n", "c", b"q", 1)));
        // A batch touching it is refused whole: the other table's put is not applied.
        let mut batch = Batch::new();
        batch.put("u", b"x", vec![PutCell::new("c", b"q".to_vec(), b"1".to_vec())]);
        batch.put("t", b"x", vec![PutCell::new("c", b"q".to_vec(), b"1".to_vec())]);
        assert!(is_disabled(store.apply(&batch)));
        assert_eq!(store.get("u", b"x", &read).unwrap(), None);
        // Its schema is still there to describe.
        assert_eq!(store.schema("t").unwrap().families[0].name, "c");
    }

    assert!(b.set_table_enabled("t", true).unwrap());
    assert!(a.is_table_enabled("t").unwrap());
    assert_eq!(a.get("t", b"r", &read).unwrap(), before);
    a.put("t", b"r2", vec![PutCell::new("c", b"q".to_vec(), b"w".to_vec())]).unwrap();
    assert!(b.get("t", b"r2", &read).unwrap().is_some());
}

/// The mark outlives the handle (it is in the store), and a table
/// dropped while disabled comes back enabled when created again.
#[test]
fn the_state_is_kept_in_the_store_and_forgotten_with_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let schema = TableSchema::new([FamilySchema::new("c")]);
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_table("t", &schema).unwrap();
        store.set_table_enabled("t", false).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert!(!store.is_table_enabled("t").unwrap());
    assert!(is_disabled(store.get("t", b"r", &ReadOptions::default())));
    assert!(matches!(
        store.set_table_enabled("nope", false).unwrap_err().kind(),
        ErrorKind::UnknownTable { .. }
    ));
    store.drop_table("t").unwrap();
    store.create_table("t", &schema).unwrap();
    assert!(store.is_table_enabled("t").unwrap());
}
