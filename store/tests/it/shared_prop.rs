//! Two handles on one directory: random schema changes and writes, each
//! through either handle, against a single-handle model. Each handle holds
//! its own catalog, so a schema change made through one is, for the other,
//! exactly what a change made by another process is: seen only through
//! the catalog version in its next transaction, or (for what a search asks
//! first, `RowSource::table_state`) through the store's version.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rowsearch_store::{
    Delete, ErrorKind, FamilySchema, IndexSchema, PutCell, ReadOptions, RowSource, Scan, Store, TableSchema,
};

const TABLES: [&str; 2] = ["t0", "t1"];
const FAMILIES: [&str; 2] = ["a", "b"];
const QUALIFIERS: [&str; 2] = ["q0", "q1"];
const INDEXES: [&str; 2] = ["i0", "i1"];

#[derive(Debug, Clone)]
enum Op {
    Create {
        table: usize,
        families: Vec<usize>,
    },
    Drop {
        table: usize,
    },
    AddIndex {
        table: usize,
        index: usize,
        family: usize,
        qualifier: usize,
    },
    DropIndex {
        table: usize,
        index: usize,
    },
    /// Adds an index without building it (as a process stopped mid-build).
    StartIndex {
        table: usize,
        index: usize,
        family: usize,
        qualifier: usize,
    },
    /// One step (one row) of an index's build.
    BuildStep {
        table: usize,
        index: usize,
    },
    Put {
        table: usize,
        row: u8,
        family: usize,
        qualifier: usize,
        value: u8,
    },
    DeleteRow {
        table: usize,
        row: u8,
    },
    SetEnabled {
        table: usize,
        enabled: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let families = prop_oneof![Just(vec![0]), Just(vec![1]), Just(vec![0, 1])];
    prop_oneof![
        1 => (0..2usize, families).prop_map(|(table, families)| Op::Create { table, families }),
        1 => (0..2usize).prop_map(|table| Op::Drop { table }),
        1 => (0..2usize, 0..2usize, 0..2usize, 0..2usize)
            .prop_map(|(table, index, family, qualifier)| Op::AddIndex { table, index, family, qualifier }),
        1 => (0..2usize, 0..2usize).prop_map(|(table, index)| Op::DropIndex { table, index }),
        1 => (0..2usize, 0..2usize, 0..2usize, 0..2usize)
            .prop_map(|(table, index, family, qualifier)| Op::StartIndex { table, index, family, qualifier }),
        2 => (0..2usize, 0..2usize).prop_map(|(table, index)| Op::BuildStep { table, index }),
        4 => (0..2usize, 0..4u8, 0..2usize, 0..2usize, 0..3u8)
            .prop_map(|(table, row, family, qualifier, value)| Op::Put { table, row, family, qualifier, value }),
        1 => (0..2usize, 0..4u8).prop_map(|(table, row)| Op::DeleteRow { table, row }),
        1 => (0..2usize, any::<bool>()).prop_map(|(table, enabled)| Op::SetEnabled { table, enabled }),
    ]
}

/// Rows by key: each column's newest value.
type Rows = BTreeMap<Vec<u8>, BTreeMap<(String, Vec<u8>), Vec<u8>>>;

/// One table of the model: its schema and its rows' newest values.
#[derive(Debug, Clone, PartialEq)]
struct ModelTable {
    schema: TableSchema,
    rows: Rows,
    enabled: bool,
}

/// What an operation answered: success, or the kind of error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Unchanged,
    UnknownTable,
    UnknownFamily,
    UnknownIndex,
    Conflict,
    InvalidSchema,
    Disabled,
}

fn outcome<T>(result: rowsearch_store::Result<T>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(e) => match e.kind() {
            ErrorKind::UnknownTable { .. } => Outcome::UnknownTable,
            ErrorKind::UnknownFamily { .. } => Outcome::UnknownFamily,
            ErrorKind::UnknownIndex { .. } => Outcome::UnknownIndex,
            ErrorKind::SchemaConflict { .. } | ErrorKind::IndexConflict { .. } => Outcome::Conflict,
            ErrorKind::InvalidSchema { .. } => Outcome::InvalidSchema,
            ErrorKind::TableDisabled { .. } => Outcome::Disabled,
            other => panic!("unexpected error: {other}"),
        },
    }
}

/// Applies `op` to the model; returns the outcome the store must give.
fn model_apply(model: &mut BTreeMap<String, ModelTable>, op: &Op) -> Outcome {
    let name = |t: usize| TABLES[t].to_owned();
    match op {
        Op::Create { table, families } => {
            let schema = TableSchema::new(families.iter().map(|&f| FamilySchema::new(FAMILIES[f])));
            match model.get(&name(*table)) {
                Some(t) if t.schema == schema => Outcome::Unchanged,
                Some(_) => Outcome::Conflict,
                None => {
                    model.insert(name(*table), ModelTable { schema, rows: BTreeMap::new(), enabled: true });
                    Outcome::Ok
                }
            }
        }
        Op::Drop { table } => match model.remove(&name(*table)) {
            Some(_) => Outcome::Ok,
            None => Outcome::UnknownTable,
        },
        Op::AddIndex { table, index, family, qualifier }
        | Op::StartIndex { table, index, family, qualifier } => {
            let Some(t) = model.get_mut(&name(*table)) else { return Outcome::UnknownTable };
            let column = format!("{}:{}", FAMILIES[*family], QUALIFIERS[*qualifier]);
            let wanted = IndexSchema::new(INDEXES[*index], [column]);
            match t.schema.indexes.iter().find(|i| i.name == INDEXES[*index]) {
                // Adding the same index again finishes its build: a no-op.
                Some(existing) if *existing == wanted => return Outcome::Ok,
                Some(_) => return Outcome::Conflict,
                None => {}
            }
            if t.schema.family(FAMILIES[*family]).is_none() {
                return Outcome::InvalidSchema;
            }
            t.schema.indexes.push(wanted);
            Outcome::Ok
        }
        Op::DropIndex { table, index } => {
            let Some(t) = model.get_mut(&name(*table)) else { return Outcome::UnknownTable };
            let before = t.schema.indexes.len();
            t.schema.indexes.retain(|i| i.name != INDEXES[*index]);
            if t.schema.indexes.len() == before { Outcome::UnknownIndex } else { Outcome::Ok }
        }
        Op::BuildStep { table, index } => {
            let Some(t) = model.get(&name(*table)) else { return Outcome::UnknownTable };
            if t.schema.indexes.iter().any(|i| i.name == INDEXES[*index]) {
                Outcome::Ok
            } else {
                Outcome::UnknownIndex
            }
        }
        Op::Put { table, row, family, qualifier, value } => {
            let Some(t) = model.get_mut(&name(*table)) else { return Outcome::UnknownTable };
            if !t.enabled {
                return Outcome::Disabled;
            }
            if t.schema.family(FAMILIES[*family]).is_none() {
                return Outcome::UnknownFamily;
            }
            t.rows.entry(vec![b'r', *row]).or_default().insert(
                (FAMILIES[*family].to_owned(), QUALIFIERS[*qualifier].as_bytes().to_vec()),
                vec![*value],
            );
            Outcome::Ok
        }
        Op::DeleteRow { table, row } => {
            let Some(t) = model.get_mut(&name(*table)) else { return Outcome::UnknownTable };
            if !t.enabled {
                return Outcome::Disabled;
            }
            t.rows.remove(&vec![b'r', *row]);
            Outcome::Ok
        }
        Op::SetEnabled { table, enabled } => {
            let Some(t) = model.get_mut(&name(*table)) else { return Outcome::UnknownTable };
            let changed = t.enabled != *enabled;
            t.enabled = *enabled;
            if changed { Outcome::Ok } else { Outcome::Unchanged }
        }
    }
}

fn store_apply(store: &Store, op: &Op, timestamp: u64) -> Outcome {
    let name = |t: usize| TABLES[t];
    match op {
        Op::Create { table, families } => {
            let schema = TableSchema::new(families.iter().map(|&f| FamilySchema::new(FAMILIES[f])));
            match store.create_table(name(*table), &schema) {
                Ok(false) => Outcome::Unchanged,
                other => outcome(other),
            }
        }
        Op::Drop { table } => outcome(store.drop_table(name(*table))),
        Op::AddIndex { table, index, family, qualifier } => {
            let column = format!("{}:{}", FAMILIES[*family], QUALIFIERS[*qualifier]);
            outcome(store.add_index(
                name(*table),
                IndexSchema::new(INDEXES[*index], [column]),
                &mut |_, _| {},
            ))
        }
        Op::DropIndex { table, index } => outcome(store.drop_index(name(*table), INDEXES[*index])),
        Op::StartIndex { table, index, family, qualifier } => {
            let column = format!("{}:{}", FAMILIES[*family], QUALIFIERS[*qualifier]);
            outcome(store.start_index(name(*table), IndexSchema::new(INDEXES[*index], [column])))
        }
        Op::BuildStep { table, index } => outcome(store.build_index_step(name(*table), INDEXES[*index], 1)),
        Op::Put { table, row, family, qualifier, value } => outcome(store.put(
            name(*table),
            &[b'r', *row],
            vec![PutCell::new(FAMILIES[*family], QUALIFIERS[*qualifier], vec![*value]).at(timestamp)],
        )),
        Op::DeleteRow { table, row } => {
            outcome(store.delete(name(*table), &[b'r', *row], Delete::Row { up_to: None }))
        }
        Op::SetEnabled { table, enabled } => match store.set_table_enabled(name(*table), *enabled) {
            Ok(false) => Outcome::Unchanged,
            other => outcome(other),
        },
    }
}

/// What a search asks first (`RowSource::table_state`, answered without a
/// transaction while the store's version stands) equals the model, for
/// every table name.
fn check_state(store: &Store, model: &BTreeMap<String, ModelTable>) -> Result<(), TestCaseError> {
    for name in TABLES {
        let state = RowSource::table_state(store, name);
        match (model.get(name), state) {
            (Some(t), Ok((schema, id, enabled))) => {
                prop_assert_eq!(&*schema, &t.schema, "{}", name);
                prop_assert_eq!(id, store.table_id(name).unwrap(), "{}", name);
                prop_assert_eq!(enabled, t.enabled, "{}", name);
            }
            (None, Err(e)) => prop_assert!(matches!(e.kind(), ErrorKind::UnknownTable { .. }), "{}", e),
            (t, state) => {
                prop_assert!(false, "{}: model {:?}, store {:?}", name, t.map(|t| t.enabled), state)
            }
        }
    }
    Ok(())
}

/// Everything `store` serves equals the model, and every index that is
/// ready verifies.
fn check(store: &Store, model: &BTreeMap<String, ModelTable>) -> Result<(), TestCaseError> {
    let names: Vec<String> = model.keys().cloned().collect();
    prop_assert_eq!(store.tables().unwrap(), names);
    check_state(store, model)?;
    for (name, table) in model {
        prop_assert_eq!(&store.schema(name).unwrap(), &table.schema);
        let rows = store.scan(name, &Scan::new().read(ReadOptions::default())).unwrap().rows;
        let got: Rows = rows
            .into_iter()
            .map(|row| {
                let cells =
                    row.cells.into_iter().map(|c| ((c.family.to_string(), c.qualifier), c.value)).collect();
                (row.key, cells)
            })
            .collect();
        prop_assert_eq!(&got, &table.rows, "rows of {}", name);
        for state in store.indexes(name).unwrap() {
            let index = &state.schema.name;
            match store.verify_index(name, index) {
                Ok(report) => prop_assert!(report.is_clean(), "index {}.{}: {:?}", name, index, report),
                Err(e) => prop_assert!(
                    state.building && matches!(e.kind(), ErrorKind::IndexBuilding { .. }),
                    "{}",
                    e
                ),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn two_handles_on_one_directory_match_one_model(
        ops in prop::collection::vec((0..2usize, op()), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let handles = [Store::open(dir.path()).unwrap(), Store::open(dir.path()).unwrap()];
        let mut model = BTreeMap::new();
        for (i, (handle, op)) in ops.iter().enumerate() {
            let timestamp = 1_000 + i as u64;
            let (before, was) = (handles[0].version(), model.clone());
            let expected = model_apply(&mut model, op);
            let got = store_apply(&handles[*handle], op, timestamp);
            prop_assert_eq!(got, expected, "step {} through handle {}: {:?}", i, handle, op);
            // Each handle asked before the step (its answer kept) and after.
            check_state(&handles[0], &model)?;
            check_state(&handles[1], &model)?;
            prop_assert_eq!(handles[0].version(), handles[1].version());
            // A step that changed what the store holds moved its version
            // (else the answers kept under it would be stale).
            if model != was {
                prop_assert!(handles[0].version() > before, "step {} changed the store under version {}", i, before);
            }
        }
        // Rows are read from enabled tables: each disabled one enabled
        // through handle 1, seen by handle 0 at once.
        for (name, table) in &mut model {
            if !table.enabled {
                handles[1].set_table_enabled(name, true).unwrap();
                table.enabled = true;
            }
        }
        check(&handles[0], &model)?;
        check(&handles[1], &model)?;
        // Both handles agree on each index's build state, and builds
        // finished through one are ready and clean through the other.
        for table in model.keys() {
            prop_assert_eq!(handles[0].indexes(table).unwrap(), handles[1].indexes(table).unwrap());
            for state in handles[0].indexes(table).unwrap() {
                handles[0].finish_index_build(table, &state.schema.name, &mut |_, _| {}).unwrap();
            }
        }
        check(&handles[1], &model)?;
        for table in model.keys() {
            prop_assert!(handles[1].indexes(table).unwrap().iter().all(|s| !s.building));
        }
    }
}
