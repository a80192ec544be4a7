//! Property tests of the read path: random filters (every kind, nested)
//! against the reference evaluator over the model; a salted table and an
//! unsalted one holding the same rows answer every scan identically; cursor
//! walks in random page sizes equal the one-shot scan; region-limited scans
//! partition the table.

use crate::common;

use common::filter_gen::{bytes, filter};
use common::filter_model::FilterModel;
use common::model::{Model, walk};
use proptest::prelude::*;
use rowsearch_store::{
    ALL_VERSIONS, Batch, Column, FamilySchema, Filter, Mutation, PutCell, ReadOptions, Row, RowKeySchema,
    Scan, Store, TableSchema,
};

fn schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("a").max_versions(3), FamilySchema::new("b").max_versions(2)])
}

/// The same rows in an unsalted table, a salted one and one cut into regions.
const TABLES: [&str; 3] = ["plain", "salty", "split"];

fn schema_of(table: &str) -> TableSchema {
    match table {
        "salty" => schema().row_key(RowKeySchema::new([]).salted(5)),
        "split" => schema().splits([vec![0x01], b"a\x00".to_vec(), b"b".to_vec()]),
        _ => schema(),
    }
}

fn rows() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<PutCell>)>> {
    let cell = (prop::sample::select(vec!["a", "b"]), bytes(0, 2), 1u64..5, bytes(0, 2))
        .prop_map(|(f, q, ts, v)| PutCell::new(f, q, v).at(ts));
    prop::collection::vec((bytes(1, 2), prop::collection::vec(cell, 1..6)), 1..24)
}

fn scan(stateful: bool) -> impl Strategy<Value = Scan> {
    let column = prop_oneof![
        prop::sample::select(vec!["a", "b"]).prop_map(|f| Column::Family(f.to_owned())),
        (prop::sample::select(vec!["a", "b"]), bytes(0, 1))
            .prop_map(|(f, q)| Column::Qualifier(f.to_owned(), q)),
    ];
    (
        (
            prop::option::of(bytes(1, 2)),
            prop::option::of(bytes(1, 2)),
            prop::option::of(bytes(1, 1)),
            any::<bool>(),
        ),
        (
            prop::collection::vec(column, 0..2),
            prop_oneof![Just(1u32), Just(2), Just(ALL_VERSIONS)],
            0u64..3,
            prop::option::of(2u64..6),
        ),
        prop::option::of(filter(stateful)),
        (0usize..3, prop::option::of(1usize..5), any::<bool>()),
    )
        .prop_map(
            |(
                (start, stop, prefix, reverse),
                (columns, versions, min_ts, max_ts),
                filter,
                (offset, limit, keys_only),
            )| Scan {
                start,
                stop,
                prefix,
                reverse,
                read: ReadOptions { columns, versions, min_ts, max_ts, ..ReadOptions::default() },
                offset,
                limit,
                cursor: None,
                keys_only,
                filter,
                region: None,
            },
        )
}

/// What a filter reads back as: a one-filter list is its filter, an empty
/// list is written as `ColumnPrefixFilter('')`.
fn normalize(f: Filter) -> Filter {
    match f {
        Filter::List(_, fs) if fs.is_empty() => Filter::ColumnPrefix(Vec::new()),
        Filter::List(_, mut fs) if fs.len() == 1 => normalize(fs.remove(0)),
        Filter::List(op, fs) => Filter::List(op, fs.into_iter().map(normalize).collect()),
        Filter::Skip(inner) => Filter::Skip(Box::new(normalize(*inner))),
        Filter::WhileMatch(inner) => Filter::WhileMatch(Box::new(normalize(*inner))),
        other => other,
    }
}

fn load(rows: &[(Vec<u8>, Vec<PutCell>)]) -> (tempfile::TempDir, Store, Model) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut model = Model::new();
    let mut batch = Batch::new();
    for table in TABLES {
        store.create_table(table, &schema_of(table)).unwrap();
        model.create_table(table, schema());
        for (row, cells) in rows {
            batch.mutations.push(Mutation::Put {
                table: table.to_owned(),
                row: row.clone(),
                cells: cells.clone(),
            });
        }
    }
    store.apply(&batch).unwrap();
    model.apply(&batch, 0);
    (dir, store, model)
}

/// What the model says a scan returns: all versions in the range through the
/// reference filter, then versions, keys-only, offset and limit.
fn expected(model: &Model, scan: &Scan) -> Vec<Row> {
    let mut wide = scan.clone();
    wide.read.versions = ALL_VERSIONS;
    wide.filter = None;
    wide.offset = 0;
    wide.limit = None;
    wide.keys_only = false;
    let rows = model.scan_all("plain", &wide, 0);
    let mut rows = match &scan.filter {
        Some(f) => FilterModel::run(f, rows, scan.reverse, scan.read.versions),
        None => FilterModel::run(&Filter::all([]), rows, scan.reverse, scan.read.versions),
    };
    if scan.keys_only {
        rows.iter_mut().flat_map(|r| r.cells.iter_mut()).for_each(|c| c.value.clear());
    }
    rows.into_iter().skip(scan.offset).take(scan.limit.unwrap_or(usize::MAX)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn scans_with_filters_agree_with_the_model_on_salted_split_and_plain_tables(
        rows in rows(),
        scans in prop::collection::vec(scan(true), 1..6),
    ) {
        let (_dir, store, model) = load(&rows);
        for scan in &scans {
            let want = expected(&model, scan);
            for table in TABLES {
                let got = store.scan(table, scan).unwrap().rows;
                prop_assert_eq!(&got, &want, "table {} scan {:?}", table, scan);
            }
            let mut unlimited = scan.clone();
            unlimited.limit = None;
            let total = expected(&model, &unlimited).len() as u64;
            prop_assert_eq!(store.count("salty", scan).unwrap(), total);
        }
    }

    #[test]
    fn cursor_walks_equal_one_shot_scans(
        rows in rows(),
        scan in scan(false),
        pages in prop::collection::vec(1usize..4, 1..5),
    ) {
        let (_dir, store, model) = load(&rows);
        let mut whole = scan.clone();
        whole.limit = None;
        let want = expected(&model, &whole);
        for table in TABLES {
            prop_assert_eq!(&walk(&store, table, &whole, &pages), &want, "table {} scan {:?}", table, whole);
        }
    }

    #[test]
    fn the_language_round_trips_every_filter(f in filter(true)) {
        let text = f.to_language();
        let parsed = Filter::parse(&text);
        prop_assert!(parsed.is_ok(), "{}: {:?}", String::from_utf8_lossy(&text), parsed);
        prop_assert_eq!(parsed.unwrap(), normalize(f), "{}", String::from_utf8_lossy(&text));
    }

    #[test]
    fn regions_partition_every_scan(rows in rows(), scan in scan(false)) {
        let (_dir, store, _model) = load(&rows);
        let mut scan = scan;
        scan.limit = None;
        scan.offset = 0;
        let whole = store.scan("split", &scan).unwrap().rows;
        let regions = store.regions("split").unwrap();
        prop_assert_eq!(regions.len(), 4);
        let mut pieces: Vec<Vec<Row>> = Vec::new();
        for region in &regions {
            pieces.push(store.scan("split", &scan.clone().region(region.index)).unwrap().rows);
        }
        if scan.reverse {
            pieces.reverse();
        }
        prop_assert_eq!(pieces.concat(), whole);
        // The salted table's default regions are its buckets.
        prop_assert_eq!(store.regions("salty").unwrap().len(), 5);
        let stats = store.region_stats("salty", 2).unwrap();
        let rows_in_regions: u64 = stats.iter().map(|s| s.rows).sum();
        prop_assert_eq!(rows_in_regions, store.count("plain", &Scan::new()).unwrap());
    }
}
