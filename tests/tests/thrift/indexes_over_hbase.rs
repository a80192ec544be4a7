//! Secondary indexes of a table in a real HBase against a model: random
//! puts and deletes (rows, the indexed column, an older version, other
//! columns), each by the real binary (`put`, `delete` with `--hbase`),
//! some stopped at random between their phases (`ROWSEARCH_FAULT`: the
//! process aborts after its index entries went in unverified, or after
//! its row was written, before they are verified). After every write,
//! every lookup (each value, a prefix, a range; a two-column index's
//! leading value) equals the model's rows: never a row whose value does
//! not match, never one missing; a long value (kept cut in its entry)
//! among them. At the end `index verify` is clean once lookups repaired
//! what the stopped writes left.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch::hbase::HbaseSource;
use rowsearch::store::{IndexQuery, TableStore};
use rowsearch_tests::{Backend, TestDir, stderr};

const ROWS: usize = 5;

/// Values of `m:from`; the last is long enough to be kept cut (its entry
/// holds its first bytes and a hash), sharing its first bytes with the
/// one before.
fn values() -> Vec<String> {
    let long = "l".repeat(300);
    vec!["ann".into(), "annie".into(), "bob".into(), format!("{long}1"), format!("{long}2")]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Stopped after the entries went in unverified.
    Unverified,
    /// Stopped after the row was written.
    Row,
}

#[derive(Debug, Clone)]
enum Op {
    Put {
        row: usize,
        value: usize,
        fault: Fault,
    },
    /// A put of a column no index names.
    Other {
        row: usize,
        fault: Fault,
    },
    DeleteRow {
        row: usize,
        fault: Fault,
    },
    DeleteColumn {
        row: usize,
        fault: Fault,
    },
    /// The newest version of `m:from` deleted: the one before shows.
    DeleteNewest {
        row: usize,
        fault: Fault,
    },
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![3 => Just(Fault::None), 1 => Just(Fault::Unverified), 1 => Just(Fault::Row)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..ROWS, 0..5usize, fault()).prop_map(|(row, value, fault)| Op::Put { row, value, fault }),
        1 => (0..ROWS, fault()).prop_map(|(row, fault)| Op::Other { row, fault }),
        1 => (0..ROWS, fault()).prop_map(|(row, fault)| Op::DeleteRow { row, fault }),
        1 => (0..ROWS, fault()).prop_map(|(row, fault)| Op::DeleteColumn { row, fault }),
        1 => (0..ROWS, fault()).prop_map(|(row, fault)| Op::DeleteNewest { row, fault }),
    ]
}

/// The model: per row, its `m:from` versions (timestamp, value), newest
/// last, and whether it has `m:other`.
#[derive(Default)]
struct Model {
    rows: BTreeMap<usize, (Vec<(u64, usize)>, bool)>,
}

impl Model {
    fn value(&self, row: usize) -> Option<usize> {
        self.rows.get(&row).and_then(|(v, _)| v.last().map(|(_, v)| *v))
    }
}

fn key(row: usize) -> String {
    format!("r{row}")
}

/// Runs the binary for one write, stopped at `fault`; whether its row
/// was written (a run stopped after its entries never writes it).
fn write(t: &TestDir, args: &[&str], fault: Fault) -> bool {
    let mut command = t.command();
    match fault {
        Fault::None => {}
        Fault::Unverified => {
            command.env("ROWSEARCH_FAULT", "index-unverified");
        }
        Fault::Row => {
            command.env("ROWSEARCH_FAULT", "index-row");
        }
    }
    let out = command.args(args).output().unwrap();
    match fault {
        Fault::None => assert!(out.status.success(), "{args:?}: {}", stderr(&out)),
        _ => assert!(
            !out.status.success() && stderr(&out).contains("ROWSEARCH_FAULT"),
            "{args:?} was to stop: {}",
            stderr(&out)
        ),
    }
    fault != Fault::Unverified
}

/// The keys a lookup finds, every page walked (pages of 2).
fn keys(source: &HbaseSource, index: &str, query: &IndexQuery) -> Vec<String> {
    let mut out = Vec::new();
    let mut query = IndexQuery { limit: Some(2), ..query.clone() };
    loop {
        let page = source.index_lookup("notes", index, &query).unwrap();
        out.extend(page.hits.iter().map(|h| String::from_utf8_lossy(&h.key).into_owned()));
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => return out,
        }
    }
}

fn check(source: &HbaseSource, model: &Model, what: &str) -> Result<(), TestCaseError> {
    let values = values();
    let rows_where = |f: &dyn Fn(&str) -> bool| -> Vec<String> {
        let mut v: Vec<(String, String)> = (0..ROWS)
            .filter_map(|r| model.value(r).map(|v| (values[v].clone(), key(r))))
            .filter(|(v, _)| f(v))
            .collect();
        v.sort();
        v.into_iter().map(|(_, k)| k).collect()
    };
    for value in &values {
        let got = keys(
            source,
            "by_from",
            &IndexQuery { eq: vec![value.as_bytes().to_vec()], ..Default::default() },
        );
        prop_assert_eq!(
            got,
            rows_where(&|v| v == value),
            "eq {} after {}",
            &value[..value.len().min(8)],
            what
        );
    }
    let got = keys(source, "by_from", &IndexQuery { prefix: Some(b"ann".to_vec()), ..Default::default() });
    prop_assert_eq!(got, rows_where(&|v| v.starts_with("ann")), "prefix ann after {}", what);
    let long = format!("{}2", "l".repeat(300));
    let range =
        IndexQuery { start: Some(b"b".to_vec()), stop: Some(long.as_bytes().to_vec()), ..Default::default() };
    prop_assert_eq!(
        keys(source, "by_from", &range),
        rows_where(&|v| v >= "b" && v < long.as_str()),
        "range after {}",
        what
    );
    // The two-column index: rows with both columns, by their `from`.
    let both = |v: &str| v == "bob";
    let got = keys(source, "by_from_other", &IndexQuery { eq: vec![b"bob".to_vec()], ..Default::default() });
    let mut want: Vec<String> = rows_where(&both);
    want.retain(|k| model.rows.get(&k[1..].parse::<usize>().unwrap()).is_some_and(|(_, other)| *other));
    prop_assert_eq!(got, want, "two columns after {}", what);
    Ok(())
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let t = TestDir::on(Backend::Hbase);
    let hbase = t.hbase().unwrap().to_owned();
    let schema = r#"{"families":[{"name":"m","max_versions":3}],
        "indexes":[{"name":"by_from","columns":["m:from"]},{"name":"by_from_other","columns":["m:from","m:other"]}]}"#;
    let out = t.run(&["create-table", "notes", "--schema", schema]);
    prop_assert!(out.status.success(), "{}", stderr(&out));
    let source = HbaseSource::new(&hbase, Arc::new(rowsearch::indexer::TextAnalyzer));
    let values = values();
    let mut model = Model::default();
    let mut clock = 1_000u64;
    for (i, op) in ops.iter().enumerate() {
        clock += 10;
        let ts = clock.to_string();
        match *op {
            Op::Put { row, value, fault } => {
                let cell = format!("m:from={}", values[value]);
                if write(&t, &["put", "notes", &key(row), &cell, "--timestamp", &ts], fault) {
                    let (versions, _) = model.rows.entry(row).or_default();
                    versions.push((clock, value));
                    // HBase keeps the three newest.
                    if versions.len() > 3 {
                        versions.remove(0);
                    }
                }
            }
            Op::Other { row, fault } => {
                if write(&t, &["put", "notes", &key(row), "m:other=x", "--timestamp", &ts], fault) {
                    model.rows.entry(row).or_default().1 = true;
                }
            }
            Op::DeleteRow { row, fault } => {
                if write(&t, &["delete", "notes", &key(row), "--timestamp", &ts], fault) {
                    model.rows.remove(&row);
                }
            }
            Op::DeleteColumn { row, fault } => {
                if write(
                    &t,
                    &["delete", "notes", &key(row), "--columns", "m:from", "--timestamp", &ts],
                    fault,
                ) && let Some((versions, _)) = model.rows.get_mut(&row)
                {
                    versions.clear();
                }
            }
            Op::DeleteNewest { row, fault } => {
                let Some(newest) = model.rows.get(&row).and_then(|(v, _)| v.last().map(|(t, _)| *t)) else {
                    continue;
                };
                let newest = newest.to_string();
                let args =
                    ["delete", "notes", &key(row), "--columns", "m:from", "--timestamp", &newest, "--exact"];
                if write(&t, &args, fault)
                    && let Some((versions, _)) = model.rows.get_mut(&row)
                {
                    versions.pop();
                }
            }
        }
        model.rows.retain(|_, (versions, other)| !versions.is_empty() || *other);
        check(&source, &model, &format!("op {i} {op:?}"))?;
    }
    for index in ["by_from", "by_from_other"] {
        let out = t.run(&["index", "verify", "notes", index]);
        prop_assert!(
            out.status.success(),
            "verify {}: {} {}",
            index,
            rowsearch_tests::stdout(&out),
            stderr(&out)
        );
    }
    Ok(())
}

proptest! {
    // Each case is a namespace of a real HBase and a process per write:
    // few cases, and a short shrink.
    #![proptest_config(ProptestConfig { cases: 6, max_shrink_iters: 24, ..ProptestConfig::default() })]

    #[test]
    fn indexes_over_a_real_hbase_equal_the_model_whatever_stops_a_write(
        ops in proptest::collection::vec(op(), 1..14)
    ) {
        if rowsearch_tests::hbase("thrift::indexes_over_hbase").is_none() {
            return Ok(());
        }
        run(&ops)?;
    }
}
