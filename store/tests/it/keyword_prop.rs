//! Keyword rows against a model: after random puts, overwrites and deletes
//! (with versions and out-of-order timestamps), the store's keyword cells
//! equal those computed from the model's rows, and keyword lookups equal a
//! brute-force search of the model, page by page; also after a reopen, a
//! repack, and the upgrade from format 4's keyword rows.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::model::Model;
use proptest::prelude::*;
use rowsearch_store::{
    Analyzer, Batch, Delete, FamilySchema, KeyField, KeyOrder, KeyType, KeyValue, KeywordCell, KeywordQuery,
    ManualClock, Mutation, PutCell, RowKeySchema, SearchField, SearchSchema, Store, TableSchema,
};

const START_MS: u64 = 1_000_000;

/// Splits on spaces, lowercases; dates are decimal milliseconds.
#[derive(Debug)]
struct Words;

impl Analyzer for Words {
    fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
        for (i, w) in text.split(' ').filter(|w| !w.is_empty()).enumerate() {
            sink(&w.to_lowercase(), i as u32);
        }
    }

    fn date_ms(&self, value: &[u8]) -> Option<u64> {
        std::str::from_utf8(value).ok()?.parse().ok()
    }
}

/// Table `c`: partition and date are columns. Table `k`: the partition is
/// the first field of a typed key, and there is no date column.
fn tables() -> Vec<(&'static str, TableSchema)> {
    let fields = [SearchField::text("subject", "m:subject"), SearchField::text("body", "b:text")];
    vec![
        (
            "c",
            TableSchema::new([FamilySchema::new("m").max_versions(2), FamilySchema::new("b")])
                .splits([vec![b'r', 3]])
                .search(SearchSchema::new(fields.clone()).partition("m:user").date_column("m:date")),
        ),
        (
            "k",
            TableSchema::new([FamilySchema::new("m").max_versions(2), FamilySchema::new("b")])
                .row_key(RowKeySchema::new([
                    KeyField::new("user", KeyType::String, KeyOrder::Asc),
                    KeyField::new("id", KeyType::U8, KeyOrder::Desc),
                ]))
                // Between the users "" and "ann", and "ann" and "bob".
                .splits([b"a".to_vec(), b"b".to_vec()])
                .search(SearchSchema::new(fields).partition("user")),
        ),
    ]
}

const WORDS: [&str; 6] = ["gas", "Gas", "deal", "power", "enron", "x\u{e9}"];
const USERS: [&str; 3] = ["ann", "b\0b", ""];

fn text() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..4).prop_map(|w| w.join(" ").into_bytes())
}

fn row_key(table: &str, user: usize, id: u8) -> Vec<u8> {
    match table {
        "k" => tables()[1]
            .1
            .row_key
            .as_ref()
            .unwrap()
            .encode(&[KeyValue::String(USERS[user].into()), KeyValue::U8(id)])
            .unwrap(),
        _ => vec![b'r', id],
    }
}

fn timestamp() -> impl Strategy<Value = Option<u64>> {
    // Whole seconds (as mail dates are: blocks keep Δdates in seconds) and
    // some not.
    prop_oneof![
        Just(None),
        (0u64..6).prop_map(|i| Some(START_MS - 6_000 + i * 1_000)),
        (0u64..6).prop_map(|i| Some(START_MS - 6_000 + i * 1_000 + 7)),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let put = (
        prop::sample::select(vec!["c", "k"]),
        0usize..3,
        0u8..4,
        // Dates in whole seconds but one: a block keeps its Δdates in
        // seconds until a version of 3 ms joins it.
        prop::collection::vec(
            (0u8..4, timestamp(), text(), 0usize..3, prop::sample::select(vec![0u64, 1_000, 2_000, 3])),
            1..4,
        ),
    )
        .prop_map(|(table, user, id, cells)| {
            let cells = cells
                .into_iter()
                .map(|(column, ts, text, u, date)| {
                    let (family, qualifier, value) = match column {
                        0 => ("m", "subject", text),
                        1 => ("b", "text", text),
                        2 => ("m", "user", USERS[u].as_bytes().to_vec()),
                        _ => ("m", "date", date.to_string().into_bytes()),
                    };
                    PutCell { family: family.into(), qualifier: qualifier.into(), timestamp: ts, value }
                })
                .collect();
            Mutation::Put { table: table.into(), row: row_key(table, user, id), cells }
        });
    let delete = (prop::sample::select(vec!["c", "k"]), 0usize..3, 0u8..4, 0u8..4, timestamp()).prop_map(
        |(table, user, id, kind, ts)| {
            let what = match kind {
                0 => Delete::Row { up_to: None },
                1 => Delete::Family { family: "m".into(), up_to: None },
                2 => Delete::Column { family: "m".into(), qualifier: b"subject".to_vec(), up_to: ts },
                _ => Delete::Version {
                    family: "m".into(),
                    qualifier: b"subject".to_vec(),
                    timestamp: ts.unwrap_or(START_MS),
                },
            };
            Mutation::Delete { table: table.into(), row: row_key(table, user, id), what }
        },
    );
    prop_oneof![3 => put, 1 => delete]
}

/// The keyword cells of table `name` as the model's data dictates.
fn expected_cells(model: &Model, name: &str) -> Vec<KeywordCell> {
    let (schema, cells) = &model.tables[name];
    // Newest value of each (row, family, qualifier): the first in map order.
    type Columns = BTreeMap<(String, Vec<u8>), Vec<u8>>;
    let mut newest: BTreeMap<Vec<u8>, Columns> = BTreeMap::new();
    for ((row, family, qualifier, _), value) in cells {
        newest
            .entry(row.clone())
            .or_default()
            .entry((family.clone(), qualifier.clone()))
            .or_insert(value.clone());
    }
    let search = schema.search.as_ref().unwrap();
    let mut out = Vec::new();
    for (row, columns) in newest {
        let value = |f: &str, q: &str| columns.get(&(f.to_owned(), q.as_bytes().to_vec()));
        let subject = value("m", "subject");
        let body = value("b", "text");
        if subject.is_none() && body.is_none() {
            continue;
        }
        let (partition, date_ms) = if name == "k" {
            let fields = schema.row_key.as_ref().unwrap().decode(&row).unwrap();
            let KeyValue::String(user) = &fields[0] else { unreachable!() };
            (user.clone().into_bytes(), 0)
        } else {
            (
                value("m", "user").cloned().unwrap_or_default(),
                value("m", "date").and_then(|d| Words.date_ms(d)).unwrap_or(0),
            )
        };
        for (field, v) in [(&search.fields[0], subject), (&search.fields[1], body)] {
            let Some(v) = v else { continue };
            let mut terms: BTreeMap<String, Vec<u32>> = BTreeMap::new();
            Words.terms(field, &String::from_utf8_lossy(v), &mut |t, p| {
                terms.entry(t.into()).or_default().push(p)
            });
            for (term, positions) in terms {
                out.push(KeywordCell {
                    partition: partition.clone(),
                    field: field.name.clone(),
                    term,
                    date_ms,
                    key: row.clone(),
                    positions,
                });
            }
        }
    }
    // The store's order: partition, field (declaration order), term, newest
    // first, row key.
    let field_no = |name: &str| search.fields.iter().position(|f| f.name == name);
    out.sort_by(|a, b| {
        (&a.partition, field_no(&a.field), &a.term, std::cmp::Reverse(a.date_ms), &a.key).cmp(&(
            &b.partition,
            field_no(&b.field),
            &b.term,
            std::cmp::Reverse(b.date_ms),
            &b.key,
        ))
    });
    out
}

/// The cells read range by range between the table's partition splits:
/// each range's cells, in order.
fn cells_by_range(store: &Store, table: &str) -> Vec<Vec<KeywordCell>> {
    let rtxn = store.begin_read().unwrap();
    let bounds = rtxn.keyword_partition_splits(table).unwrap();
    let mut edges: Vec<Option<&[u8]>> = vec![None];
    edges.extend(bounds.iter().map(|b| Some(b.as_slice())));
    edges.push(None);
    edges
        .windows(2)
        .map(|w| {
            let mut out = Vec::new();
            rtxn.for_each_keyword_cell_between(table, w[0], w[1], &mut |c| {
                out.push(c.to_cell());
                Ok(())
            })
            .unwrap();
            out
        })
        .collect()
}

/// The cells made from the rows' text, read region by region, and whether
/// each row's cells came together, the rows in key order within their
/// region.
fn cells_by_row_range(store: &Store, table: &str) -> (Vec<KeywordCell>, bool) {
    let rtxn = store.begin_read().unwrap();
    let (mut out, mut in_order) = (Vec::new(), true);
    for region in store.regions(table).unwrap() {
        let mut last: Option<Vec<u8>> = None;
        let (from, to) = (region.start.as_deref(), region.end.as_deref());
        rtxn.for_each_row_keyword_cells(table, from, to, &mut |c| {
            let inside = from.is_none_or(|f| f <= c.key) && to.is_none_or(|t| c.key < t);
            in_order &= inside && last.as_deref().is_none_or(|l| l <= c.key);
            last = Some(c.key.to_vec());
            out.push(c.to_cell());
            Ok(())
        })
        .unwrap();
    }
    (out, in_order)
}

/// A field's position in its table's search section.
fn schemas_field(tables: &[(&str, TableSchema)], (table, field): (&str, &str)) -> Option<usize> {
    let (_, schema) = tables.iter().find(|(n, _)| *n == table)?;
    schema.search.as_ref()?.fields.iter().position(|f| f.name == field)
}

fn stored_cells(store: &Store, table: &str) -> Vec<KeywordCell> {
    let mut out = Vec::new();
    store
        .begin_read()
        .unwrap()
        .for_each_keyword_cell(table, None, &mut |c| {
            out.push(c.to_cell());
            Ok(())
        })
        .unwrap();
    out
}

/// Brute force: rows of `partition` with every term (a bare term in any
/// field), newest first then by key.
fn expected_lookup(cells: &[KeywordCell], partition: &[u8], terms: &[String]) -> Vec<(u64, Vec<u8>)> {
    let mut rows: BTreeMap<(std::cmp::Reverse<u64>, Vec<u8>), usize> = BTreeMap::new();
    for (i, term) in terms.iter().enumerate() {
        let (field, word) = match term.split_once(':') {
            Some((f, w)) => (Some(f), w.to_lowercase()),
            None => (None, term.to_lowercase()),
        };
        for c in cells {
            if c.partition == partition && c.term == word && field.is_none_or(|f| f == c.field) {
                let seen = rows.entry((std::cmp::Reverse(c.date_ms), c.key.clone())).or_insert(0);
                // Count each term once per row (it may be in both fields).
                if *seen == i {
                    *seen += 1;
                }
            }
        }
    }
    rows.into_iter().filter(|(_, n)| *n == terms.len()).map(|((d, k), _)| (d.0, k)).collect()
}

fn lookup_all(
    store: &Store,
    table: &str,
    partition: &[u8],
    terms: &[String],
    page: usize,
) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let query =
            KeywordQuery { partition: partition.to_vec(), terms: terms.to_vec(), limit: Some(page), cursor };
        let result = store.keyword_lookup(table, &query).unwrap();
        assert!(result.hits.len() <= page);
        out.extend(result.hits.into_iter().map(|h| (h.date_ms, h.key)));
        match result.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn query_terms() -> impl Strategy<Value = Vec<String>> {
    let term = (prop::sample::select(vec!["", "subject:", "body:"]), prop::sample::select(WORDS.to_vec()))
        .prop_map(|(f, w)| format!("{f}{w}"));
    prop::collection::vec(term, 1..3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn keyword_rows_follow_the_data(
        steps in prop::collection::vec(prop::collection::vec(mutation(), 1..4), 1..14),
        queries in prop::collection::vec((0usize..3, query_terms(), 1usize..4), 6),
        prepare in prop::collection::vec(any::<bool>(), 1..5),
        repack in any::<bool>(),
        // The keyword rows written back as format 4 (1) or 9 (2) kept them.
        downgrade in 0u8..3,
        // Pending keyword runs a write leaves (0: none, every change
        // straight into the blocks), and a step after which `compact`
        // merges them.
        max_runs in 0usize..4,
        compact_after in 0usize..20,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START_MS));
        let open = || {
            Store::builder()
                .clock(clock.clone())
                .analyzer(Arc::new(Words))
                .keyword_pending_runs(max_runs)
                .open(dir.path())
                .unwrap()
        };
        let mut store = open();
        let mut model = Model::new();
        for (name, schema) in tables() {
            store.create_table(name, &schema).unwrap();
            model.create_table(name, schema);
        }
        // Some steps are prepared (keyword cells computed ahead) before the
        // step ahead of them is applied, so their rows may exist by the time
        // they are written, or the store may have been reopened.
        let mut ahead: Option<rowsearch_store::PreparedBatch> = None;
        for (i, step) in steps.iter().enumerate() {
            let batch = Batch { mutations: step.clone() };
            let current = ahead.take();
            if let Some(next) = steps.get(i + 1).filter(|_| prepare[(i + 1) % prepare.len()]) {
                ahead = Some(store.prepare(Batch { mutations: next.clone() }));
            }
            match current {
                Some(prepared) => {
                    prop_assert_eq!(prepared.batch(), &batch);
                    store.apply_prepared(&prepared).unwrap();
                }
                None => {
                    store.apply(&batch).unwrap();
                }
            }
            model.apply(&batch, rowsearch_store::Clock::now_ms(&*clock));
            clock.advance_ms(1);
            if i == steps.len() / 2 {
                // The keyword rows as the format 4 or 9 builds kept them,
                // upgraded by the next opening (and a repack, either way).
                match downgrade {
                    1 => store.write_format_4_for_tests().unwrap(),
                    2 => store.write_format_9_for_tests().unwrap(),
                    _ => {}
                }
                drop(store);
                if repack {
                    rowsearch_store::repack(dir.path(), &mut |_| {}).unwrap();
                }
                store = open();
                prop_assert_eq!(store.upgraded_from().is_some(), downgrade > 0);
            }
            if i == compact_after {
                store.compact().unwrap();
            }
            for (name, _) in tables() {
                let want = expected_cells(&model, name);
                prop_assert_eq!(stored_cells(&store, name), want.clone(), "table {} after step {}", name, i);
                let count = store.begin_read().unwrap().keyword_cell_count(name).unwrap();
                prop_assert_eq!(count, want.len() as u64, "cell count of {} after step {}", name, i);
                // Lookups equal the model's with runs pending or not.
                for (user, terms, page) in &queries {
                    let partition = USERS[*user].as_bytes();
                    let got = lookup_all(&store, name, partition, terms, *page);
                    prop_assert_eq!(got, expected_lookup(&want, partition, terms), "{} {:?} {:?} after step {}", name, USERS[*user], terms, i);
                }
                // A row has a number exactly while it has cells.
                let with_cells: std::collections::BTreeSet<&Vec<u8>> = want.iter().map(|c| &c.key).collect();
                let numbered = store.begin_read().unwrap().keyword_numbered_rows(name).unwrap();
                prop_assert_eq!(numbered, with_cells.len() as u64, "numbered rows of {} after step {}", name, i);
                let problems = store.begin_read().unwrap().check_keyword_numbers(name).unwrap();
                prop_assert!(problems.is_empty(), "{:?}", problems);
            }
        }
        for (name, schema) in tables() {
            // A row's keyword cells computed from its values alone (as for
            // rows that live in HBase) equal the ones the store keeps.
            let rtxn = store.begin_read().unwrap();
            for row in rtxn.scan_page(name, &rowsearch_store::Scan::new()).unwrap().rows {
                let alone = rowsearch_store::keyword_cells_of(name, &schema, &Words, &row).unwrap();
                prop_assert_eq!(alone, rtxn.row_keyword_cells(name, &row.key).unwrap(), "row {:?} of {}", row.key, name);
            }
        }
        for (name, _) in tables() {
            // Read from the rows' text region by region (as a full build
            // over HBase reads): the same cells, each row's together, the
            // rows in key order, each in its region.
            let (by_rows, in_order) = cells_by_row_range(&store, name);
            prop_assert!(in_order, "rows' cells apart or out of key order in {}", name);
            let all = tables();
            let field_no = |at: (&str, &str)| schemas_field(&all, at);
            let mut sorted = by_rows;
            sorted.sort_by(|a, b| {
                (&a.partition, field_no((name, a.field.as_str())), &a.term, std::cmp::Reverse(a.date_ms), &a.key).cmp(&(
                    &b.partition,
                    field_no((name, b.field.as_str())),
                    &b.term,
                    std::cmp::Reverse(b.date_ms),
                    &b.key,
                ))
            });
            prop_assert_eq!(sorted, stored_cells(&store, name), "rows' text of {}", name);
        }
        for (name, _) in tables() {
            // Ranges between the partition splits: together every cell in
            // order, each partition in one range, and in table "k" (the
            // partition leads the row key, splits between users) each
            // range's rows in one region, a different one per range.
            let ranges = cells_by_range(&store, name);
            prop_assert_eq!(ranges.concat(), stored_cells(&store, name), "ranges of {}", name);
            let mut seen = std::collections::BTreeSet::new();
            for range in &ranges {
                let partitions: std::collections::BTreeSet<_> = range.iter().map(|c| c.partition.clone()).collect();
                prop_assert!(partitions.iter().all(|p| !seen.contains(p)), "a partition in two ranges of {}", name);
                seen.extend(partitions);
            }
            if name == "k" {
                let regions = store.regions("k").unwrap();
                let region_of = |key: &[u8]| {
                    regions.iter().position(|r| {
                        r.start.as_deref().is_none_or(|s| s <= key) && r.end.as_deref().is_none_or(|e| key < e)
                    })
                };
                let mut used = std::collections::BTreeSet::new();
                for range in ranges.iter().filter(|r| !r.is_empty()) {
                    let of: std::collections::BTreeSet<_> = range.iter().map(|c| region_of(&c.key)).collect();
                    prop_assert_eq!(of.len(), 1, "one region per range");
                    prop_assert!(used.insert(of.into_iter().next()), "one range per region");
                }
            }
            let cells = expected_cells(&model, name);
            for (user, terms, page) in &queries {
                let partition = USERS[*user].as_bytes();
                let got = lookup_all(&store, name, partition, terms, *page);
                prop_assert_eq!(got, expected_lookup(&cells, partition, terms), "{} {:?} {:?}", name, USERS[*user], terms);
            }
        }
    }
}

#[test]
fn a_store_without_an_analyzer_refuses_to_write_searchable_tables() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (name, schema) = tables().remove(0);
    store.create_table(name, &schema).unwrap();
    let err = store.put(name, b"r", vec![PutCell::new("m", "subject", "gas")]).unwrap_err();
    assert!(matches!(err.kind(), rowsearch_store::ErrorKind::NoAnalyzer { .. }), "{err}");
    assert!(store.get(name, b"r", &Default::default()).unwrap().is_none(), "nothing written");
}

#[test]
fn search_sections_that_do_not_fit_the_table_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().analyzer(Arc::new(Words)).open(dir.path()).unwrap();
    let families = || TableSchema::new([FamilySchema::new("m"), FamilySchema::new("t").ttl_seconds(5)]);
    let cases = [
        (SearchSchema::new([]), "at least one field"),
        (SearchSchema::new([SearchField::text("s", "x:subject")]), "unknown family"),
        (SearchSchema::new([SearchField::text("s", "m")]), "family:qualifier"),
        (SearchSchema::new([SearchField::text("s", "t:subject")]), "TTL"),
        (SearchSchema::new([SearchField::text("s", "m:a"), SearchField::text("s", "m:b")]), "twice"),
        (SearchSchema::new([SearchField::text("s", "m:a")]).partition("user"), "neither a row key field"),
        (SearchSchema::new([SearchField::text("s", "m:a")]).date_column("q:date"), "unknown family"),
    ];
    for (search, expected) in cases {
        let err = store.create_table("bad", &families().search(search.clone())).unwrap_err();
        assert!(err.to_string().contains(expected), "{search:?}: {err}");
    }
    assert!(store.tables().unwrap().is_empty());
}

#[test]
fn keyword_lookups_reject_bad_queries_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().analyzer(Arc::new(Words)).open(dir.path()).unwrap();
    let (name, schema) = tables().remove(0);
    store.create_table(name, &schema).unwrap();
    store.create_table("plain", &TableSchema::new([FamilySchema::new("m")])).unwrap();
    let query = |terms: &[&str], cursor: Option<&str>| KeywordQuery {
        partition: b"ann".to_vec(),
        terms: terms.iter().map(|t| t.to_string()).collect(),
        limit: None,
        cursor: cursor.map(str::to_owned),
    };
    for (q, expected) in [
        (query(&[], None), "no terms"),
        (query(&["  "], None), "no terms"),
        (query(&["from:gas"], None), "unknown search field \"from\" (fields: subject, body)"),
        (query(&["gas"], Some("nope")), "bad cursor"),
        (query(&["gas"], Some("k1.zz00000000000000")), "bad cursor"),
    ] {
        let err = store.keyword_lookup(name, &q).unwrap_err();
        assert!(err.to_string().contains(expected), "{q:?}: {err}");
    }
    let err = store.keyword_lookup("plain", &query(&["gas"], None)).unwrap_err();
    assert!(matches!(err.kind(), rowsearch_store::ErrorKind::NotSearchable { .. }), "{err}");
}

#[test]
fn a_prepared_batch_takes_the_newest_value_at_write_time() {
    // A subject put twice in one row: stamped "now", and explicitly one
    // millisecond after the time of preparing. Prepared then, the explicit
    // one is newer; written two milliseconds later, the "now" one is. The
    // keyword cells must be those of the write.
    let write = |prepared: bool| -> Vec<KeywordCell> {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START_MS));
        let store = Store::builder().clock(clock.clone()).analyzer(Arc::new(Words)).open(dir.path()).unwrap();
        let (name, schema) = tables().remove(0);
        store.create_table(name, &schema).unwrap();
        let cells = vec![
            PutCell::new("m", "subject", "gas"),
            PutCell::new("m", "subject", "power").at(START_MS + 1),
            PutCell::new("m", "user", "ann"),
        ];
        let mut batch = Batch::new();
        batch.put(name, row_key(name, 1, 1), cells);
        let batch = if prepared { Ok(store.prepare(batch)) } else { Err(batch) };
        clock.advance_ms(2);
        match batch {
            Ok(prepared) => store.apply_prepared(&prepared).unwrap(),
            Err(batch) => store.apply(&batch).unwrap(),
        };
        stored_cells(&store, name)
    };
    let plain = write(false);
    assert_eq!(plain.iter().map(|c| c.term.as_str()).collect::<Vec<_>>(), ["gas"], "{plain:?}");
    assert_eq!(write(true), plain);
}

/// Like `Words`, but numbers the words from the end, as an analyzer may.
#[derive(Debug)]
struct Backwards;

impl Analyzer for Backwards {
    fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
        let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
        for (i, w) in words.iter().enumerate() {
            sink(&w.to_lowercase(), (words.len() - 1 - i) as u32);
        }
    }

    fn date_ms(&self, value: &[u8]) -> Option<u64> {
        Words.date_ms(value)
    }
}

#[test]
fn positions_are_stored_in_order_whatever_order_the_analyzer_gives() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().analyzer(Arc::new(Backwards)).open(dir.path()).unwrap();
    let (name, schema) = tables().remove(0);
    store.create_table(name, &schema).unwrap();
    let subject = "gas deal gas power gas gas";
    store
        .put(name, b"r1", vec![PutCell::new("m", "subject", subject), PutCell::new("m", "user", "ann")])
        .unwrap();
    let cells: BTreeMap<String, Vec<u32>> =
        stored_cells(&store, name).into_iter().map(|c| (c.term.clone(), c.positions.clone())).collect();
    let want: BTreeMap<String, Vec<u32>> =
        [("deal".to_owned(), vec![4]), ("gas".to_owned(), vec![0, 1, 3, 5]), ("power".to_owned(), vec![2])]
            .into();
    assert_eq!(cells, want);
}

proptest! {
    /// Terms sharing long prefixes (the cells are grouped by sorting tokens
    /// on their first eight bytes, then the whole term): one cell per term,
    /// in term order, holding every position of the term.
    #[test]
    fn terms_with_shared_prefixes_group_into_one_cell_each(
        words in proptest::collection::vec(
            proptest::sample::select(vec![
                "in", "int", "inter", "internat", "internati", "internation", "international",
                "internationals", "internatio", "a", "ab", "abcdefgh", "abcdefghi", "abcdefgg", "zz",
            ]),
            1..40,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::builder().analyzer(Arc::new(Words)).open(dir.path()).unwrap();
        let (name, schema) = tables().remove(0);
        store.create_table(name, &schema).unwrap();
        store
            .put(name, b"r1", vec![PutCell::new("m", "subject", words.join(" ")), PutCell::new("m", "user", "ann")])
            .unwrap();
        let mut want: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (position, word) in words.iter().enumerate() {
            want.entry((*word).to_owned()).or_default().push(position as u32);
        }
        let got: Vec<(String, Vec<u32>)> =
            stored_cells(&store, name).into_iter().map(|c| (c.term, c.positions)).collect();
        prop_assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn a_table_dropped_with_keyword_runs_pending_comes_back_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder().analyzer(Arc::new(Words)).keyword_pending_runs(8).open(dir.path()).unwrap();
    let (name, schema) = tables().remove(0);
    let put = |id: u8, subject: &str| {
        let mut batch = Batch::new();
        let cells = vec![PutCell::new("m", "subject", subject), PutCell::new("m", "user", "ann")];
        batch.put(name, row_key(name, 0, id), cells);
        store.apply(&batch).unwrap();
    };
    let gas = || lookup_all(&store, name, b"ann", &["gas".to_owned()], 10);
    store.create_table(name, &schema).unwrap();
    put(1, "gas deal");
    put(2, "gas");
    assert_eq!(gas().len(), 2, "the pending runs answer");
    store.drop_table(name).unwrap();
    store.create_table(name, &schema).unwrap();
    assert_eq!(gas(), vec![], "nothing left of the dropped table's runs");
    assert_eq!(store.begin_read().unwrap().keyword_cell_count(name).unwrap(), 0);
    put(3, "power gas");
    assert_eq!(gas().len(), 1);
    assert!(store.begin_read().unwrap().check_keyword_numbers(name).unwrap().is_empty());
}
