//! Index builds while writes go on: an index added to a table with rows is
//! built a step at a time, writes between the steps maintain it, lookups
//! wait for it, and a build stopped anywhere (the store closed, as a kill
//! would) goes on from where it stood.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rowsearch_store::{
    Delete, ErrorKind, FamilySchema, IndexQuery, IndexSchema, PutCell, Store, TableSchema,
};

#[derive(Debug, Clone)]
enum Op {
    Put { row: u8, value: u8 },
    Delete { row: u8 },
    Step,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..40u8, 0..4u8).prop_map(|(row, value)| Op::Put { row, value }),
        1 => (0..40u8).prop_map(|row| Op::Delete { row }),
        3 => Just(Op::Step),
        1 => Just(Op::Reopen),
    ]
}

fn lookup(store: &Store, value: u8) -> rowsearch_store::Result<Vec<Vec<u8>>> {
    let query = IndexQuery { eq: vec![vec![b'v', value]], ..IndexQuery::default() };
    Ok(store.index_lookup("t", "by_x", &query)?.hits.into_iter().map(|h| h.key).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn an_index_built_while_writes_go_on_matches_the_rows(
        initial in prop::collection::btree_map(0..40u8, 0..4u8, 0..30),
        ops in prop::collection::vec(op(), 0..40),
        step_rows in 1..5usize,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.create_table("t", &TableSchema::new([FamilySchema::new("m")])).unwrap();
        let mut model: BTreeMap<u8, u8> = BTreeMap::new();
        for (&row, &value) in &initial {
            store.put("t", &[b'r', row], vec![PutCell::new("m", "x", vec![b'v', value])]).unwrap();
            model.insert(row, value);
        }
        prop_assert!(store.start_index("t", IndexSchema::new("by_x", ["m:x"])).unwrap());
        let mut ready = false;
        for op in &ops {
            match op {
                Op::Put { row, value } => {
                    store.put("t", &[b'r', *row], vec![PutCell::new("m", "x", vec![b'v', *value])]).unwrap();
                    model.insert(*row, *value);
                }
                Op::Delete { row } => {
                    store.delete("t", &[b'r', *row], Delete::Row { up_to: None }).unwrap();
                    model.remove(row);
                }
                Op::Step => ready = store.build_index_step("t", "by_x", step_rows).unwrap().ready,
                Op::Reopen => {
                    drop(store);
                    store = Store::open(dir.path()).unwrap();
                }
            }
            let state = &store.indexes("t").unwrap()[0];
            prop_assert_eq!(state.building, !ready);
            if !ready {
                let err = lookup(&store, 0).unwrap_err();
                prop_assert!(matches!(err.kind(), ErrorKind::IndexBuilding { .. }), "{}", err);
            }
        }
        store.finish_index_build("t", "by_x", &mut |_, _| {}).unwrap();
        let report = store.verify_index("t", "by_x").unwrap();
        prop_assert!(report.is_clean(), "{:?}", report);
        for value in 0..4u8 {
            let expected: Vec<Vec<u8>> =
                model.iter().filter(|(_, v)| **v == value).map(|(r, _)| vec![b'r', *r]).collect();
            prop_assert_eq!(lookup(&store, value).unwrap(), expected);
        }
        let state = &store.indexes("t").unwrap()[0];
        prop_assert_eq!((state.building, state.entries), (false, model.len() as u64));
    }
}

#[test]
fn adding_an_index_again_is_idempotent_and_other_columns_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("m")])).unwrap();
    store.put("t", b"a", vec![PutCell::new("m", "x", "1")]).unwrap();
    store.add_index("t", IndexSchema::new("i", ["m:x"]), &mut |_, _| {}).unwrap();
    assert!(!store.start_index("t", IndexSchema::new("i", ["m:x"])).unwrap());
    store.add_index("t", IndexSchema::new("i", ["m:x"]), &mut |_, _| {}).unwrap();
    let err = store.add_index("t", IndexSchema::new("i", ["m:y"]), &mut |_, _| {}).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::IndexConflict { .. }), "{err}");
    // A rebuild clears and marks it building until it has gone through
    // the rows again.
    store.start_index_rebuild("t", "i").unwrap();
    assert!(store.indexes("t").unwrap()[0].building);
    assert_eq!(store.indexes("t").unwrap()[0].entries, 0);
    store.finish_index_build("t", "i", &mut |_, _| {}).unwrap();
    assert_eq!(store.indexes("t").unwrap()[0].entries, 1);
    assert!(store.verify_index("t", "i").unwrap().is_clean());
}
