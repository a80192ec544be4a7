//! Property tests of the read path: random filters (every kind, nested)
//! against the reference evaluator over the model; a salted table and an
//! unsalted one holding the same rows answer every scan identically; cursor
//! walks in random page sizes equal the one-shot scan; region-limited scans
//! partition the table.

mod common;

use common::filter_model::FilterModel;
use common::model::Model;
use proptest::prelude::*;
use rowsearch_store::{
    ALL_VERSIONS, Batch, Column, Comparator, CompareOp, FamilySchema, Filter, ListOp, Mutation, PutCell,
    ReadOptions, RegexComparator, Row, RowKeySchema, Scan, ScanCursor, Store, TableSchema,
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

fn bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]), min..=max)
}

fn rows() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<PutCell>)>> {
    let cell = (prop::sample::select(vec!["a", "b"]), bytes(0, 2), 1u64..5, bytes(0, 2))
        .prop_map(|(f, q, ts, v)| PutCell::new(f, q, v).at(ts));
    prop::collection::vec((bytes(1, 2), prop::collection::vec(cell, 1..6)), 1..24)
}

fn op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(vec![
        CompareOp::Less,
        CompareOp::LessOrEqual,
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::GreaterOrEqual,
        CompareOp::Greater,
    ])
}

fn comparison() -> impl Strategy<Value = (CompareOp, Comparator)> {
    prop_oneof![
        (op(), bytes(0, 2)).prop_map(|(o, b)| (o, Comparator::Binary(b))),
        (op(), bytes(0, 2)).prop_map(|(o, b)| (o, Comparator::BinaryPrefix(b))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["a", "^b", "a$", "\\x00", "."])
        )
            .prop_map(|(o, r)| (o, Comparator::Regex(RegexComparator::new(r).unwrap()))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["A", "b", ""])
        )
            .prop_map(|(o, s)| (o, Comparator::substring(s))),
    ]
}

fn leaf(stateful: bool) -> BoxedStrategy<Filter> {
    let family = prop::sample::select(vec!["a", "b"]).prop_map(str::to_owned);
    let stateless = prop_oneof![
        comparison().prop_map(|(o, c)| Filter::Row(o, c)),
        comparison().prop_map(|(o, c)| Filter::Family(o, c)),
        comparison().prop_map(|(o, c)| Filter::Qualifier(o, c)),
        comparison().prop_map(|(o, c)| Filter::Value(o, c)),
        bytes(0, 2).prop_map(Filter::Prefix),
        any::<bool>().prop_map(|len_as_value| Filter::KeyOnly { len_as_value }),
        Just(Filter::FirstKeyOnly),
        prop::sample::select(vec![0.0f32, 1.0]).prop_map(|chance| Filter::RandomRow { chance }),
        (family.clone(), bytes(0, 1), comparison(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(family, qualifier, (op, comparator), filter_if_missing, latest_version_only, exclude)| {
                Filter::SingleColumnValue {
                    family,
                    qualifier,
                    op,
                    comparator,
                    filter_if_missing,
                    latest_version_only,
                    exclude,
                }
            }
        ),
        (0u32..3, 0u32..3).prop_map(|(limit, offset)| Filter::ColumnPagination { limit, offset }),
        bytes(0, 1).prop_map(Filter::ColumnPrefix),
        prop::collection::vec(bytes(0, 1), 1..3).prop_map(Filter::MultipleColumnPrefix),
        (prop::option::of(bytes(1, 1)), any::<bool>(), prop::option::of(bytes(1, 2)), any::<bool>())
            .prop_map(|(min, min_inclusive, max, max_inclusive)| Filter::ColumnRange {
                min,
                min_inclusive,
                max,
                max_inclusive
            }),
        prop::collection::vec(1u64..5, 0..3).prop_map(Filter::Timestamps),
        bytes(1, 2).prop_map(Filter::InclusiveStop),
        (family, bytes(0, 1), any::<bool>(), prop::option::of(comparison())).prop_map(
            |(family, qualifier, drop_dependent_column, value)| Filter::DependentColumn {
                family,
                qualifier,
                drop_dependent_column,
                value
            }
        ),
    ];
    if stateful {
        prop_oneof![
            8 => stateless,
            1 => (0u64..4).prop_map(Filter::Page),
            1 => (0u32..3).prop_map(|limit| Filter::ColumnCountGet { limit }),
        ]
        .boxed()
    } else {
        stateless.boxed()
    }
}

/// Filter trees up to three levels deep. Stateful filters (PageFilter,
/// WhileMatchFilter, ColumnCountGetFilter) restart on every page of a cursor
/// walk, so walks use stateless trees only.
fn filter(stateful: bool) -> BoxedStrategy<Filter> {
    let tree = leaf(stateful)
        .prop_recursive(3, 12, 3, move |inner| {
            let mut options = vec![
                (
                    prop::sample::select(vec![ListOp::All, ListOp::One]),
                    prop::collection::vec(inner.clone(), 0..3),
                )
                    .prop_map(|(op, fs)| Filter::List(op, fs))
                    .boxed(),
                inner.clone().prop_map(|f| Filter::Skip(Box::new(f))).boxed(),
            ];
            if stateful {
                options.push(inner.prop_map(|f| Filter::WhileMatch(Box::new(f))).boxed());
            }
            prop::strategy::Union::new(options)
        });
    // Single filters at the top often, so range-bounding ones meet the rows
    // they bound.
    if stateful {
        prop_oneof![
            2 => leaf(true),
            1 => leaf(true).prop_map(|f| Filter::WhileMatch(Box::new(f))),
            3 => tree,
        ]
        .boxed()
    } else {
        prop_oneof![2 => leaf(false), 3 => tree].boxed()
    }
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
                read: ReadOptions { columns, versions, min_ts, max_ts },
                offset,
                limit,
                cursor: None,
                keys_only,
                filter,
                region: None,
            },
        )
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

fn walk(store: &Store, table: &str, scan: &Scan, pages: &[usize]) -> Vec<Row> {
    let mut got = Vec::new();
    let mut cursor: Option<ScanCursor> = None;
    let mut sizes = pages.iter().cycle();
    loop {
        let mut page_scan = scan.clone();
        page_scan.limit = sizes.next().copied();
        if cursor.is_some() {
            page_scan.offset = 0;
        }
        page_scan.cursor = cursor.take();
        let page = store.scan(table, &page_scan).unwrap();
        got.extend(page.rows);
        match page.next_cursor {
            Some(c) => cursor = Some(ScanCursor::from_token(&c.to_token()).unwrap()),
            None => return got,
        }
    }
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
