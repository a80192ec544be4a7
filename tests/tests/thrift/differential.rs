//! The differential test: one sequence of Thrift calls sent to a real
//! Apache HBase's Thrift gateway (started by `hbase/hbase.sh`) and to
//! `rowsearch serve --thrift`, answer by answer equal after a few stated
//! normalizations.
//!
//! Normalized, and why:
//! - a cell timestamp the server chose (an increment's, an append's, a
//!   checkAndPut's: milliseconds since 1970) becomes 0; every other write
//!   names its timestamp, so those are compared as they are;
//! - an exception is compared by which one it is (`IOError`,
//!   `IllegalArgument`, `AlreadyExists`), not by its message;
//! - a `TRowResult`'s column map in key order (a map has none on the wire);
//! - `getTableRegions`, `getRegionInfo` and `getColumnDescriptors` by what HBase and
//!   rowsearch share: region bounds; family names and max versions.

use super::client::{A, Client, V};

/// The table the sequence makes and drops.
const TABLE: &[u8] = b"rowsearch_diff";

/// Timestamps below this were named by the calls; above, a server chose it.
const SERVER_CHOSEN: i64 = 1_000_000_000_000;

pub(super) fn normalize(v: &V) -> V {
    match v {
        V::Int(n) if *n >= SERVER_CHOSEN => V::Int(0),
        V::Struct(fields) => V::Struct(fields.iter().map(|(id, f)| (*id, normalize(f))).collect()),
        V::List(items) => V::List(items.iter().map(normalize).collect()),
        V::Map(entries) => {
            let mut entries: Vec<(V, V)> =
                entries.iter().map(|(k, v)| (normalize(k), normalize(v))).collect();
            entries.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
            V::Map(entries)
        }
        other => other.clone(),
    }
}

/// Which exception a reply is, if it is one: `TApplicationException`, or
/// the exception field of its result struct (1 `IOError`/`TIOError`, 2
/// `IllegalArgument`/`TIllegalArgument`, 3 `AlreadyExists`).
pub(super) fn outcome_kind(reply: &Result<V, String>) -> Option<String> {
    match reply {
        Err(_) => Some("TApplicationException".to_owned()),
        Ok(V::Struct(fields)) => fields.iter().find(|(id, _)| *id != 0).map(|(id, _)| match id {
            1 => "IOError".to_owned(),
            2 => "IllegalArgument".to_owned(),
            3 => "AlreadyExists".to_owned(),
            id => format!("exception field {id}"),
        }),
        Ok(other) => Some(format!("not a result struct: {other:?}")),
    }
}

/// A reply as compared: the value, or which exception (its field id), or
/// that the method is not served.
fn outcome(method: &str, reply: Result<V, String>) -> String {
    if let Some(kind) = outcome_kind(&reply) {
        return kind;
    }
    match reply.ok().and_then(|r| r.field(0).cloned()) {
        None => "ok".to_owned(),
        Some(value) => shared(method, normalize(&value)),
    }
}

/// What HBase and rowsearch share of the admin answers that describe
/// their own machinery.
fn shared(method: &str, value: V) -> String {
    match method {
        // TRegionInfo: 1 startKey, 2 endKey (ids, names, versions, servers are HBase's own).
        "getTableRegions" => {
            let bounds: Vec<(Option<V>, Option<V>)> =
                value.items().iter().map(|r| (r.field(1).cloned(), r.field(2).cloned())).collect();
            format!("{bounds:?}")
        }
        // Other tests' tables may share the HBase: whether this one's is listed.
        "getTableNames" => format!("lists the table: {}", value.items().contains(&V::Bytes(TABLE.to_vec()))),
        "getRegionInfo" => format!("{:?}", (value.field(1), value.field(2))),
        // ColumnDescriptor: 1 name, 2 maxVersions.
        "getColumnDescriptors" => {
            let V::Map(entries) = value else { return format!("{value:?}") };
            let families: Vec<(V, Option<V>, Option<V>)> =
                entries.into_iter().map(|(k, d)| (k, d.field(1).cloned(), d.field(2).cloned())).collect();
            format!("{families:?}")
        }
        _ => format!("{value:?}"),
    }
}

/// A scanner's rows (`TRowResult`s), opened with `scan` and read 2 at a
/// time; the open's failure as its outcome.
fn scan(c: &mut Client, table: &[u8], scan: Vec<(i16, A)>) -> String {
    let opened = c.call("scannerOpenWithScan", &[(1, A::Bytes(table)), (2, A::Struct(scan))]);
    let id = match &opened {
        Ok(reply) => match reply.field(0) {
            Some(V::Int(id)) => *id as i32,
            _ => return outcome("scannerOpenWithScan", opened),
        },
        Err(_) => return outcome("scannerOpenWithScan", opened),
    };
    let mut rows = Vec::new();
    loop {
        let page = c.call("scannerGetList", &[(1, A::I32(id)), (2, A::I32(2))]);
        let Ok(reply) = &page else { return outcome("scannerGetList", page) };
        if reply.field(0).is_none() {
            rows.push(outcome("scannerGetList", page));
            break;
        }
        let got = reply.field(0).map(|v| v.items().to_vec()).unwrap_or_default();
        if got.is_empty() {
            break;
        }
        rows.extend(got.iter().map(|r| format!("{:?}", normalize(r))));
    }
    let _ = c.call("scannerClose", &[(1, A::I32(id))]);
    rows.join("\n")
}

fn mutation<'a>(column: &'a [u8], value: &'a [u8]) -> Vec<(i16, A<'a>)> {
    vec![(2, A::Bytes(column)), (3, A::Bytes(value))]
}

fn delete(column: &[u8]) -> Vec<(i16, A<'_>)> {
    vec![(1, A::Bool(true)), (2, A::Bytes(column))]
}

/// A put's (column, value) pairs.
type Cells<'a> = &'a [(&'a [u8], &'a [u8])];

/// One step: a label and what it answered.
type Step = (String, String);

/// The sequence, run against one gateway.
fn run(addr: &str) -> Vec<Step> {
    let mut c = Client::connect(addr);
    let mut steps: Vec<Step> = Vec::new();
    let t: &[u8] = TABLE;
    let call = |c: &mut Client, steps: &mut Vec<Step>, label: &str, method: &str, args: &[(i16, A)]| {
        let reply = c.call(method, args);
        steps.push((label.to_owned(), outcome(method, reply)));
    };
    // A table left by an earlier run of this test on the same HBase.
    let _ = c.call("disableTable", &[(1, A::Bytes(t))]);
    let _ = c.call("deleteTable", &[(1, A::Bytes(t))]);

    let families = A::Structs(vec![
        vec![(1, A::Bytes(b"a:")), (2, A::I32(3))],
        vec![(1, A::Bytes(b"b:")), (2, A::I32(1))],
    ]);
    call(&mut c, &mut steps, "create", "createTable", &[(1, A::Bytes(t)), (2, families)]);
    let again = A::Structs(vec![vec![(1, A::Bytes(b"a:"))]]);
    call(&mut c, &mut steps, "create again", "createTable", &[(1, A::Bytes(t)), (2, again)]);
    call(&mut c, &mut steps, "families", "getColumnDescriptors", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "tables with it", "getTableNames", &[]);
    call(&mut c, &mut steps, "server type", "getThriftServerType", &[]);
    call(&mut c, &mut steps, "regions", "getTableRegions", &[(1, A::Bytes(t))]);
    let meta_row = [t, b",r3,99999999999999"].concat();
    call(&mut c, &mut steps, "region of r3", "getRegionInfo", &[(1, A::Bytes(&meta_row))]);

    // Rows r1..r6, two versions of some cells, at named timestamps.
    let rows: [(&[u8], Cells, i64); 9] = [
        (b"r1", &[(b"a:x", b"apple"), (b"a:y", b"1"), (b"b:z", b"zeta")], 100),
        (b"r1", &[(b"a:x", b"apricot")], 200),
        (b"r2", &[(b"a:x", b"banana"), (b"b:z", b"zulu")], 100),
        (b"r3", &[(b"a:y", b"3"), (b"a:yy", b"33")], 100),
        (b"r4", &[(b"a:x", b"cherry"), (b"b:w", b"walrus")], 150),
        (b"r4", &[(b"a:x", b"cranberry")], 250),
        (b"r5", &[(b"b:z", b"zebra")], 100),
        (b"r6", &[(b"a:x", b"date"), (b"a:y", b"6"), (b"b:z", b"zoo")], 120),
        (b"s1", &[(b"a:x", b"elder")], 100),
    ];
    for (row, cells, ts) in rows {
        let mutations = A::Structs(cells.iter().map(|(c, v)| mutation(c, v)).collect());
        let args = [(1, A::Bytes(t)), (2, A::Bytes(row)), (3, mutations), (4, A::I64(ts))];
        call(&mut c, &mut steps, &format!("put {}", String::from_utf8_lossy(row)), "mutateRowTs", &args);
    }

    // Reads.
    for row in [&b"r1"[..], b"r4", b"nope"] {
        let label = format!("getRow {}", String::from_utf8_lossy(row));
        call(&mut c, &mut steps, &label, "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(row))]);
    }
    let columns = A::BytesList(vec![b"a:x", b"b"]);
    call(
        &mut c,
        &mut steps,
        "getRowWithColumns",
        "getRowWithColumns",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r1")), (3, columns)],
    );
    call(
        &mut c,
        &mut steps,
        "getRowTs",
        "getRowTs",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r4")), (3, A::I64(200))],
    );
    call(
        &mut c,
        &mut steps,
        "getVer",
        "getVer",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r1")), (3, A::Bytes(b"a:x")), (4, A::I32(5))],
    );
    call(
        &mut c,
        &mut steps,
        "getVerTs",
        "getVerTs",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r4")), (3, A::Bytes(b"a:x")), (4, A::I64(250)), (5, A::I32(5))],
    );
    call(&mut c, &mut steps, "get", "get", &[(1, A::Bytes(t)), (2, A::Bytes(b"r2")), (3, A::Bytes(b"b:z"))]);
    call(
        &mut c,
        &mut steps,
        "getRows",
        "getRows",
        &[(1, A::Bytes(t)), (2, A::BytesList(vec![b"r5", b"nope", b"r2"]))],
    );
    call(
        &mut c,
        &mut steps,
        "getRow of no table",
        "getRow",
        &[(1, A::Bytes(b"no_such_table")), (2, A::Bytes(b"r"))],
    );

    // Scans: ranges, reversed, timestamp, columns, and filter strings.
    let mut scans: Vec<(String, Vec<(i16, A)>)> = vec![
        ("all".into(), vec![]),
        ("r2..r5".into(), vec![(1, A::Bytes(b"r2")), (2, A::Bytes(b"r5"))]),
        ("reversed".into(), vec![(9, A::Bool(true))]),
        ("reversed from r4".into(), vec![(1, A::Bytes(b"r4")), (9, A::Bool(true))]),
        ("timestamp 150".into(), vec![(3, A::I64(150))]),
        ("columns".into(), vec![(4, A::BytesList(vec![b"a:y", b"b"]))]),
        ("sorted columns".into(), vec![(8, A::Bool(true))]),
    ];
    let filters: &[&str] = &[
        "PrefixFilter('r')",
        "ValueFilter(=, 'substring:an')",
        "ValueFilter(>=, 'binary:c')",
        "RowFilter(!=, 'binary:r2')",
        "RowFilter(=, 'regexstring:r[3-5]')",
        "FamilyFilter(=, 'binary:b')",
        "QualifierFilter(>=, 'binary:y')",
        "ColumnPrefixFilter('y')",
        "MultipleColumnPrefixFilter('x', 'w')",
        "ColumnRangeFilter('x', true, 'y', false)",
        "KeyOnlyFilter()",
        "FirstKeyOnlyFilter()",
        "PageFilter(2)",
        "InclusiveStopFilter('r3')",
        "ColumnCountGetFilter(1)",
        "ColumnPaginationFilter(1, 1)",
        "TimestampsFilter(100, 250)",
        "SingleColumnValueFilter('a', 'x', =, 'binaryprefix:c', true, true)",
        "SingleColumnValueFilter('a', 'x', =, 'binary:banana', false, false)",
        "SingleColumnValueExcludeFilter('b', 'z', =, 'substring:z')",
        "DependentColumnFilter('a', 'y')",
        "ColumnValueFilter('a', 'x', =, 'substring:an')",
        "MultiRowRangeFilter('r1', false, 'r3', true, 's', true, '', false)",
        "SKIP ValueFilter(!=, 'binary:zeta')",
        "WHILE RowFilter(<, 'binary:r4')",
        "PrefixFilter('r') AND (QualifierFilter(=, 'binary:x') OR FamilyFilter(=, 'binary:b'))",
        "PrefixFilter('r1') OR PrefixFilter('s')",
        "FuzzyRowFilter('r?', '01')",
        "PrefixFilter(",
        "NoSuchFilter('x')",
    ];
    for f in filters {
        scans.push((format!("filter {f}"), vec![(6, A::Bytes(f.as_bytes()))]));
    }
    for (label, tscan) in scans {
        let rows = scan(&mut c, t, tscan);
        steps.push((format!("scan {label}"), rows));
    }

    // Deletes: a column's versions up to a timestamp, a column, a row.
    call(
        &mut c,
        &mut steps,
        "deleteAllTs",
        "deleteAllTs",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r4")), (3, A::Bytes(b"a:x")), (4, A::I64(200))],
    );
    call(
        &mut c,
        &mut steps,
        "after deleteAllTs",
        "getVer",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r4")), (3, A::Bytes(b"a:x")), (4, A::I32(5))],
    );
    call(
        &mut c,
        &mut steps,
        "deleteAll",
        "deleteAll",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r1")), (3, A::Bytes(b"a:x"))],
    );
    call(&mut c, &mut steps, "after deleteAll", "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r1"))]);
    let deletes = A::Structs(vec![delete(b"b:z")]);
    call(
        &mut c,
        &mut steps,
        "mutateRowTs delete",
        "mutateRowTs",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r6")), (3, deletes), (4, A::I64(500))],
    );
    call(&mut c, &mut steps, "after the delete", "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r6"))]);
    call(&mut c, &mut steps, "deleteAllRow", "deleteAllRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r2"))]);
    call(&mut c, &mut steps, "after deleteAllRow", "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r2"))]);

    // Counters, checkAndPut, append.
    for delta in [5, -2, 10] {
        call(
            &mut c,
            &mut steps,
            &format!("increment {delta}"),
            "atomicIncrement",
            &[(1, A::Bytes(t)), (2, A::Bytes(b"c1")), (3, A::Bytes(b"a:n")), (4, A::I64(delta))],
        );
    }
    call(
        &mut c,
        &mut steps,
        "increment a non-counter",
        "atomicIncrement",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r3")), (3, A::Bytes(b"a:y")), (4, A::I64(1))],
    );
    call(
        &mut c,
        &mut steps,
        "counter cell",
        "get",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"c1")), (3, A::Bytes(b"a:n"))],
    );
    for (label, expected) in [("checkAndPut wrong", &b"nope"[..]), ("checkAndPut right", b"3")] {
        call(
            &mut c,
            &mut steps,
            label,
            "checkAndPut",
            &[
                (1, A::Bytes(t)),
                (2, A::Bytes(b"r3")),
                (3, A::Bytes(b"a:y")),
                (5, A::Bytes(expected)),
                (6, A::Struct(mutation(b"a:y", b"checked"))),
            ],
        );
    }
    call(
        &mut c,
        &mut steps,
        "after checkAndPut",
        "get",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r3")), (3, A::Bytes(b"a:y"))],
    );
    let append = vec![
        (1, A::Bytes(t)),
        (2, A::Bytes(b"r5")),
        (3, A::BytesList(vec![b"b:z"])),
        (4, A::BytesList(vec![b"-appended"])),
    ];
    call(&mut c, &mut steps, "append", "append", &[(1, A::Struct(append))]);
    call(
        &mut c,
        &mut steps,
        "after append",
        "get",
        &[(1, A::Bytes(t)), (2, A::Bytes(b"r5")), (3, A::Bytes(b"b:z"))],
    );

    // Admin: disable refuses rows, enable brings them back, delete.
    call(&mut c, &mut steps, "delete enabled", "deleteTable", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "disable", "disableTable", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "is enabled", "isTableEnabled", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "read disabled", "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r3"))]);
    call(&mut c, &mut steps, "enable", "enableTable", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "read enabled", "getRow", &[(1, A::Bytes(t)), (2, A::Bytes(b"r3"))]);
    call(&mut c, &mut steps, "disable again", "disableTable", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "delete", "deleteTable", &[(1, A::Bytes(t))]);
    call(&mut c, &mut steps, "tables", "getTableNames", &[]);
    steps
}

/// A step of a sequence: its label and what it answered.
pub(super) type Answers = Vec<(String, String)>;

/// Fails listing every step where `got` (rowsearch) differs from `want`
/// (HBase), but the `known` differences, which must still differ as stated.
pub(super) fn assert_same(want: &Answers, got: &Answers, known: &[(&str, &str, &str)]) {
    assert_eq!(want.len(), got.len());
    let differences: Vec<String> = want
        .iter()
        .zip(got)
        .filter(|((label, w), (_, g))| match known.iter().find(|(l, _, _)| l == label) {
            Some((_, hbase, _)) => w != hbase || g == w,
            None => w != g,
        })
        .map(|((label, w), (_, g))| format!("== {label}\nHBase:     {w}\nrowsearch: {g}"))
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} steps differ:\n{}",
        differences.len(),
        want.len(),
        differences.join("\n")
    );
}

/// Where rowsearch answers otherwise on purpose: the step, what HBase
/// answers, and why rowsearch does not. Each must still differ so (a
/// difference gone or changed fails the test, to be looked at).
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "scan filter MultiRowRangeFilter('r1', false, 'r3', true, 's', true, '', false)",
        "TApplicationException",
        "HBase's filter language (ParseFilter) has no MultiRowRangeFilter; rowsearch's has, with HBase's semantics",
    ),
    (
        "scan filter FuzzyRowFilter('r?', '01')",
        "TApplicationException",
        "HBase's filter language has no FuzzyRowFilter; rowsearch's has, with HBase's semantics",
    ),
    (
        "scan filter PrefixFilter(",
        "TApplicationException",
        "a filter that does not parse is HBase's IOError naming the byte, not an internal error without one",
    ),
    (
        "scan filter NoSuchFilter('x')",
        "TApplicationException",
        "an unknown filter is an IOError naming it and the filters there are",
    ),
];

/// The same calls, the same answers, step by step (but the known
/// differences above); every difference is listed before the test fails.
#[test]
fn thrift_answers_equal_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::differential::thrift_answers_equal_a_real_hbase")
    else {
        return;
    };
    let (_t, _s, thrift) = super::thrift_server();
    let want = run(&hbase.thrift);
    let got = run(&thrift);
    assert_same(&want, &got, KNOWN);
    // The sequence did reach rows (not every step an error on both sides).
    let with_cells = want.iter().filter(|(_, w)| w.contains("Struct([(1, Bytes(")).count();
    assert!(with_cells >= 30, "only {with_cells} steps answered cells");
}
