//! Model-based property test: random operation sequences run against the
//! store and the in-memory model (tests/common/model.rs); every read must agree,
//! also after the store is closed and reopened.

use crate::common;

use std::sync::Arc;

use common::model::Model;
use proptest::prelude::*;
use rowsearch_store::{
    ALL_VERSIONS, Batch, Column, Delete, FamilySchema, IndexQuery, IndexSchema, IndexTerm, ManualClock,
    Mutation, PutCell, ReadOptions, Scan, SetOp, Store, TableSchema,
};

const START_MS: u64 = 1_000_000;

fn tables() -> Vec<(&'static str, TableSchema)> {
    vec![
        (
            "t",
            TableSchema::new([
                FamilySchema::new("a"),
                FamilySchema::new("b").max_versions(3),
                FamilySchema::new("c").max_versions(2).ttl_seconds(10),
            ])
            .splits([b"a".to_vec()])
            .index(IndexSchema::new("by_a", ["a:a"]))
            .index(IndexSchema::new("by_ab", ["a:a", "b:b"]))
            .index(IndexSchema::new("by_c", ["c:\\x00"])),
        ),
        ("u", TableSchema::new([FamilySchema::new("a").max_versions(2)])),
    ]
}

/// Bytes from an alphabet rich in 0x00 and 0xFF, so keys contain the escape
/// bytes and are often prefixes of each other.
fn key_bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]), min..=max)
}

/// Rows: often one of five one-byte keys, so puts and deletes meet the same
/// rows (overwrites, version eviction, index entries replaced).
fn row() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![2 => key_bytes(1, 1), 1 => key_bytes(1, 3)]
}

/// Values: often one of six short ones, so index lookups find several rows.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![2 => key_bytes(0, 1), 1 => key_bytes(0, 3)]
}

/// Qualifiers: often the indexed ones (`a`, `b`, 0x00).
fn qualifier() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![1 => prop::sample::select(vec![b"a".to_vec(), b"b".to_vec(), vec![0u8]]), 2 => key_bytes(0, 2)]
}

fn timestamp() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        Just(None),
        (0u64..24).prop_map(|i| Some(START_MS - 12_000 + i * 1_000)),
        (0u64..5).prop_map(Some),
    ]
}

fn table_family() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop::sample::select(vec![("t", "a"), ("t", "b"), ("t", "c"), ("u", "a")])
}

fn put() -> impl Strategy<Value = Mutation> {
    (
        prop::sample::select(vec!["t", "u"]),
        row(),
        // Up to five cells, so a put into `t` (three families, in turn)
        // can name a column twice.
        prop::collection::vec((qualifier(), timestamp(), value()), 1..6),
        0usize..3,
    )
        .prop_map(|(table, row, cells, fam_seed)| {
            let families: &[&str] = if table == "t" { &["a", "b", "c"] } else { &["a"] };
            let cells = cells
                .into_iter()
                .enumerate()
                .map(|(i, (q, ts, v))| PutCell {
                    family: families[(fam_seed + i) % families.len()].to_owned(),
                    qualifier: q,
                    timestamp: ts,
                    value: v,
                })
                .collect();
            Mutation::Put { table: table.to_owned(), row, cells }
        })
}

fn delete() -> impl Strategy<Value = Mutation> {
    let up_to = prop::option::of((0u64..24).prop_map(|i| START_MS - 12_000 + i * 1_000));
    (table_family(), row(), qualifier(), up_to, timestamp(), 0u8..4).prop_map(
        |((table, family), row, q, up_to, ts, kind)| {
            let what = match kind {
                0 => Delete::Row { up_to },
                1 => Delete::Family { family: family.to_owned(), up_to },
                2 => Delete::Column { family: family.to_owned(), qualifier: q, up_to },
                _ => Delete::Version {
                    family: family.to_owned(),
                    qualifier: q,
                    timestamp: ts.unwrap_or(START_MS),
                },
            };
            Mutation::Delete { table: table.to_owned(), row, what }
        },
    )
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![3 => put(), 1 => delete()]
}

/// Fits a query to an index: at most one value per column, and a prefix or
/// range only with a column left for it.
fn fit_query(index: &str, mut query: IndexQuery) -> IndexQuery {
    let columns = if index == "by_ab" { 2 } else { 1 };
    query.eq.truncate(columns);
    if query.eq.len() == columns {
        query.prefix = None;
        query.start = None;
        query.stop = None;
    }
    query
}

fn index_query() -> impl Strategy<Value = IndexQuery> {
    (prop::collection::vec(value(), 0..3), 0u8..3, key_bytes(0, 2), key_bytes(0, 2)).prop_map(
        |(eq, kind, a, b)| {
            let mut q = IndexQuery { eq, ..IndexQuery::default() };
            match kind {
                0 => {}
                1 => q.prefix = Some(a),
                _ => {
                    q.start = Some(a);
                    q.stop = Some(b);
                }
            }
            q
        },
    )
}

fn read_options() -> impl Strategy<Value = ReadOptions> {
    let column = prop_oneof![
        prop::sample::select(vec!["a", "b", "c"]).prop_map(|f| Column::Family(f.to_owned())),
        (prop::sample::select(vec!["a", "b", "c"]), qualifier())
            .prop_map(|(f, q)| Column::Qualifier(f.to_owned(), q)),
    ];
    let ts_bound = prop::option::of((0u64..24).prop_map(|i| START_MS - 12_000 + i * 1_000));
    (
        prop::collection::vec(column, 0..3),
        prop_oneof![Just(1u32), Just(2), Just(ALL_VERSIONS)],
        ts_bound.clone(),
        ts_bound,
    )
        .prop_map(|(columns, versions, min, max)| ReadOptions {
            columns,
            versions,
            min_ts: min.unwrap_or(0),
            max_ts: max,
            ..ReadOptions::default()
        })
}

fn scan() -> impl Strategy<Value = Scan> {
    (
        prop::option::of(row()),
        prop::option::of(row()),
        prop::option::of(key_bytes(1, 2)),
        any::<bool>(),
        read_options(),
        0usize..3,
        prop::option::of(1usize..5),
        any::<bool>(),
    )
        .prop_map(|(start, stop, prefix, reverse, read, offset, limit, keys_only)| Scan {
            start,
            stop,
            prefix,
            reverse,
            read,
            offset,
            limit,
            cursor: None,
            keys_only,
            filter: None,
            region: None,
        })
}

#[derive(Debug, Clone)]
enum Op {
    Apply(Vec<Mutation>),
    Get(&'static str, Vec<u8>, ReadOptions),
    Scan(&'static str, Scan),
    /// Walk a scan in pages of the given sizes with cursors.
    Walk(&'static str, Scan, Vec<usize>),
    Count(&'static str, Scan),
    /// Lookups combined (intersection or union), walked in pages.
    Combine(Vec<(&'static str, IndexQuery)>, bool, usize),
    /// An index lookup walked in pages of the given size.
    Lookup(&'static str, IndexQuery, usize),
    Compact,
    Reopen,
    /// Closes the store, repacks it (every database rewritten in key
    /// order) and opens it again.
    Repack,
    AdvanceClock(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let table = prop::sample::select(vec!["t", "u"]);
    prop_oneof![
        6 => prop::collection::vec(mutation(), 1..5).prop_map(Op::Apply),
        2 => (table.clone(), row(), read_options()).prop_map(|(t, r, o)| Op::Get(t, r, o)),
        3 => (table.clone(), scan()).prop_map(|(t, s)| Op::Scan(t, s)),
        1 => (table.clone(), scan(), prop::collection::vec(1usize..4, 1..8)).prop_map(|(t, s, p)| Op::Walk(t, s, p)),
        1 => (table, scan()).prop_map(|(t, s)| Op::Count(t, s)),
        2 => (prop::sample::select(vec!["by_a", "by_ab", "by_c"]), index_query(), 1usize..4)
            .prop_map(|(i, q, page)| Op::Lookup(i, q, page)),
        1 => (
            prop::collection::vec((prop::sample::select(vec!["by_a", "by_ab", "by_c"]), index_query()), 1..4),
            any::<bool>(),
            1usize..4,
        )
            .prop_map(|(terms, intersect, page)| Op::Combine(terms, intersect, page)),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        1 => Just(Op::Repack),
        1 => (0u64..6_000).prop_map(Op::AdvanceClock),
    ]
}

/// Reads every table in full (all versions, ignoring nothing but TTL) from
/// both and compares, plus the change feed.
fn assert_same_state(store: &Store, model: &Model, now: u64) {
    for index in ["by_a", "by_ab", "by_c"] {
        let report = store.verify_index("t", index).expect("verify");
        assert!(report.is_clean(), "index {index}: {report:?}");
        let all = IndexQuery::default();
        let got: Vec<_> = store
            .index_lookup("t", index, &all)
            .expect("lookup")
            .hits
            .into_iter()
            .map(|h| (h.values, h.key))
            .collect();
        assert_eq!(got, model.index_lookup("t", index, &all, now), "whole index {index}");
    }
    let all = Scan::new().read(ReadOptions::default().versions(ALL_VERSIONS));
    for (name, _) in tables() {
        let got = store.scan(name, &all).expect("scan").rows;
        assert_eq!(got, model.scan(name, &all, now), "full state of table {name}");
    }
    let feed: Vec<_> =
        store.feed_since(0, usize::MAX).expect("feed").into_iter().map(|e| (e.seq, e.table, e.row)).collect();
    assert_eq!(feed, model.feed, "change feed");
    assert_eq!(store.next_seq().expect("next seq"), model.next_seq);
}

/// `runs`: the most pending runs an index keeps; small bounds make most
/// writes merge the runs, so the merge path runs with entries in both
/// databases, and a large one keeps many runs for lookups to merge.
fn open(dir: &std::path::Path, clock: &ManualClock, runs: usize) -> Store {
    // A tiny initial map so the map-growth path runs in most cases.
    Store::builder()
        .map_size_bytes(64 * 1024)
        .index_pending_runs(runs)
        .clock(Arc::new(clock.clone()))
        .open(dir)
        .expect("open store")
}

/// Keeps only the column selections naming a family of `table`.
fn fit(table: &str, mut read: ReadOptions) -> ReadOptions {
    if table == "u" {
        read.columns.retain(|c| c.family() == "a");
    }
    read
}

fn fit_scan(table: &str, mut scan: Scan) -> Scan {
    scan.read = fit(table, scan.read);
    scan
}

fn run(ops: Vec<Op>, runs: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(START_MS);
    let mut store = open(dir.path(), &clock, runs);
    let mut model = Model::new();
    for (name, schema) in tables() {
        assert!(store.create_table(name, &schema).expect("create"));
        model.create_table(name, schema);
    }
    for op in ops {
        let now = clock.now_ms_for_test();
        match op {
            Op::Apply(mutations) => {
                let batch = Batch { mutations };
                store.apply(&batch).expect("apply");
                model.apply(&batch, now);
            }
            Op::Get(table, row, read) => {
                let read = fit(table, read);
                assert_eq!(store.get(table, &row, &read).expect("get"), model.get(table, &row, &read, now));
            }
            Op::Scan(table, scan) => {
                let scan = fit_scan(table, scan);
                let page = store.scan(table, &scan).expect("scan");
                assert_eq!(page.rows, model.scan(table, &scan, now), "scan {scan:?}");
                let total = model.scan_all(table, &scan, now).len().saturating_sub(scan.offset);
                let more = scan.limit.is_some_and(|l| total > l);
                assert_eq!(page.next_cursor.is_some(), more, "next_cursor of {scan:?}");
            }
            Op::Walk(table, scan, pages) => {
                let scan = fit_scan(table, scan);
                let mut want = model.scan_all(table, &scan, now);
                want.drain(..scan.offset.min(want.len()));
                let got = common::model::walk(&store, table, &scan, &pages);
                assert_eq!(got, want, "cursor walk of {scan:?} in pages {pages:?}");
            }
            Op::Count(table, scan) => {
                let scan = fit_scan(table, scan);
                let want = model.scan_all(table, &scan, now).len().saturating_sub(scan.offset) as u64;
                assert_eq!(store.count(table, &scan).expect("count"), want);
            }
            Op::Combine(terms, intersect, page) => {
                let terms: Vec<IndexTerm> = terms
                    .into_iter()
                    .map(|(index, query)| IndexTerm {
                        index: index.to_owned(),
                        query: fit_query(index, query),
                    })
                    .collect();
                let sets: Vec<std::collections::BTreeSet<Vec<u8>>> = terms
                    .iter()
                    .map(|t| {
                        model.index_lookup("t", &t.index, &t.query, now).into_iter().map(|(_, k)| k).collect()
                    })
                    .collect();
                let want: Vec<Vec<u8>> = if intersect {
                    sets[0].iter().filter(|k| sets.iter().all(|s| s.contains(*k))).cloned().collect()
                } else {
                    sets.iter()
                        .flatten()
                        .cloned()
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect()
                };
                let op = if intersect { SetOp::Intersect } else { SetOp::Union };
                let rtxn = store.begin_read().expect("read");
                let mut got = Vec::new();
                let mut after: Option<Vec<u8>> = None;
                loop {
                    let p =
                        rtxn.index_combine("t", &terms, op, after.as_deref(), Some(page)).expect("combine");
                    got.extend(p.keys);
                    match p.next_after {
                        Some(a) => after = Some(a),
                        None => break,
                    }
                }
                assert_eq!(got, want, "{op:?} of {terms:?} in pages of {page}");
            }
            Op::Lookup(index, query, page) => {
                let columns = if index == "by_ab" { 2 } else { 1 };
                if query.eq.len() >= columns {
                    let refused =
                        store.index_lookup("t", index, &IndexQuery { prefix: Some(vec![]), ..query.clone() });
                    assert!(refused.is_err(), "a prefix on no column is refused");
                }
                let query = fit_query(index, query);
                let want = model.index_lookup("t", index, &query, now);
                let mut got = Vec::new();
                let mut q = query.clone();
                q.limit = Some(page);
                loop {
                    let p = store.index_lookup("t", index, &q).expect("index lookup");
                    got.extend(p.hits.into_iter().map(|h| (h.values, h.key)));
                    match p.next_cursor {
                        Some(c) => q.cursor = Some(c),
                        None => break,
                    }
                }
                assert_eq!(got, want, "lookup {index} {query:?} in pages of {page}");
            }
            Op::Compact => {
                let report = store.compact().expect("compact");
                assert_eq!(report.cells_purged, model.compact(now));
            }
            Op::Reopen => {
                drop(store);
                store = open(dir.path(), &clock, runs);
            }
            Op::Repack => {
                drop(store);
                rowsearch_store::repack(dir.path(), &mut |_| {}).expect("repack");
                store = open(dir.path(), &clock, runs);
            }
            Op::AdvanceClock(ms) => clock.advance_ms(ms),
        }
        assert_same_state(&store, &model, clock.now_ms_for_test());
    }
    drop(store);
    let store = open(dir.path(), &clock, runs);
    assert_same_state(&store, &model, clock.now_ms_for_test());
}

trait NowForTest {
    fn now_ms_for_test(&self) -> u64;
}

impl NowForTest for ManualClock {
    fn now_ms_for_test(&self) -> u64 {
        rowsearch_store::Clock::now_ms(self)
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(96),
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_agrees_with_model(
        ops in prop::collection::vec(op(), 1..40),
        runs in prop_oneof![Just(0usize), 1usize..8, Just(1_000)],
    ) {
        run(ops, runs);
    }
}
