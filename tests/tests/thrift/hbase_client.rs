//! rowsearch's client of HBase's Thrift2 gateway (`HbaseClient`, the way
//! issue 39's HBase row source reaches a cluster), the same suite run
//! against a real Apache HBase and against rowsearch's own `--thrift2`
//! gateway standing in for it: tables, batched puts and gets, regions,
//! region-by-region scans, time-range scans; and a gateway that goes away
//! and comes back.

use std::collections::BTreeMap;
use std::time::Duration;

use rowsearch::store::{FamilySchema, PutCell, Row};
use rowsearch::thrift::{ClientError, HbaseClient};
use rowsearch_tests::{TestDir, stderr, stdout};

/// (key, value) of a row's one column `f:v`.
fn simple(rows: &[Option<Row>]) -> Vec<Option<(String, String)>> {
    rows.iter()
        .map(|r| {
            r.as_ref().map(|r| {
                let cell = r.cells.iter().find(|c| &*c.family == "f" && c.qualifier == b"v").unwrap();
                (
                    String::from_utf8_lossy(&r.key).into_owned(),
                    String::from_utf8_lossy(&cell.value).into_owned(),
                )
            })
        })
        .collect()
}

fn suite(addr: &str) {
    let mut c = HbaseClient::new(addr, Duration::from_secs(30));
    let t = "rowsearch_client_suite";
    if c.table_exists(t).unwrap() {
        c.drop_table(t).unwrap();
    }
    c.create_table(t, &[FamilySchema::new("f").max_versions(3)], &[b"m".to_vec()]).unwrap();
    assert!(c.table_exists(t).unwrap());
    let refused = c.create_table(t, &[FamilySchema::new("f")], &[]).unwrap_err();
    assert!(matches!(refused, ClientError::Refused { .. }), "{refused:?}");

    // 26 rows a..z, each f:v at 100; every third also at 200 (newer).
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut rows = Vec::new();
    for (i, ch) in ('a'..='z').enumerate() {
        let key = ch.to_string();
        let mut cells = vec![PutCell::new("f", "v", format!("{ch}100")).at(100)];
        model.insert(key.clone(), format!("{ch}100"));
        if i % 3 == 0 {
            cells.push(PutCell::new("f", "v", format!("{ch}200")).at(200));
            model.insert(key.clone(), format!("{ch}200"));
        }
        rows.push((key.into_bytes(), cells));
    }
    c.put_rows(t, &rows).unwrap();

    let keys: Vec<&[u8]> = vec![b"a", b"nope", b"b", b"z", b"m"];
    let got = simple(&c.get_rows(t, &keys).unwrap());
    let want: Vec<Option<(String, String)>> = keys
        .iter()
        .map(|k| {
            let k = String::from_utf8_lossy(k).into_owned();
            model.get(&k).map(|v| (k, v.clone()))
        })
        .collect();
    assert_eq!(got, want);

    let regions = c.regions(t).unwrap();
    assert_eq!(regions.len(), 2, "{regions:?}");
    assert_eq!((regions[0].start.as_deref(), regions[0].end.as_deref()), (None, Some(&b"m"[..])));
    assert_eq!((regions[1].start.as_deref(), regions[1].end.as_deref()), (Some(&b"m"[..]), None));

    // Region by region, 4 rows a call: every row once, in key order.
    let mut scanned = Vec::new();
    for r in &regions {
        let n = c
            .scan(t, (r.start.as_deref(), r.end.as_deref()), None, 4, &mut |row| scanned.push(Some(row)))
            .unwrap();
        assert!(n > 0);
    }
    let all: Vec<Option<(String, String)>> =
        model.iter().map(|(k, v)| Some((k.clone(), v.clone()))).collect();
    assert_eq!(simple(&scanned), all);

    // Cells written in [150, 250): the rows with a version at 200 only.
    let mut newer = Vec::new();
    c.scan(t, (None, None), Some((150, 250)), 100, &mut |row| newer.push(Some(row))).unwrap();
    let want: Vec<Option<(String, String)>> =
        model.iter().filter(|(_, v)| v.ends_with("200")).map(|(k, v)| Some((k.clone(), v.clone()))).collect();
    assert_eq!(simple(&newer), want);

    c.drop_table(t).unwrap();
    assert!(!c.table_exists(t).unwrap());
}

#[test]
fn the_client_works_against_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::hbase_client::the_client_works_against_a_real_hbase")
    else {
        return;
    };
    suite(&hbase.thrift2);
}

#[test]
fn the_client_works_against_rowsearchs_own_gateway() {
    let (_t, _s, thrift2) = super::thrift2_server();
    suite(&thrift2);
}

/// Nothing listening: `Unavailable` naming the address, at once; the
/// gateway stopped between calls: `Unavailable`; started again on the
/// same address: the same client's next call works.
#[test]
fn an_unavailable_gateway_is_a_clear_error_and_the_client_recovers() {
    let t = TestDir::new();
    let mut server = t.serve(&["serve", "--create", "--thrift2", "127.0.0.1:0"]);
    let lines = server.read_lines(2);
    let addr = lines.iter().find_map(|l| l.strip_prefix("thrift2 listening on ")).unwrap().to_owned();
    let mut c = HbaseClient::new(addr.clone(), Duration::from_secs(10));
    assert!(!c.table_exists("x").unwrap());
    drop(server);
    match c.table_exists("x") {
        Err(ClientError::Unavailable { addr: a, reason }) => assert_eq!(a, addr, "{reason}"),
        other => panic!("{other:?}"),
    }
    let mut server = t.serve(&["serve", "--thrift2", &addr]);
    server.read_lines(2);
    assert!(!c.table_exists("x").unwrap());
}

/// The CLI's `--hbase`: tables made, listed, written, read and dropped in
/// HBase, their schemas in HBase's `rowsearch_catalog` table; what does not
/// run over HBase yet says so (exit 2); HBase unreachable is exit 1 naming
/// it.
fn cli_suite(addr: &str) {
    let t = TestDir::new();
    let run = |args: &[&str]| {
        let mut all = vec!["--hbase", addr];
        all.extend_from_slice(args);
        t.run(&all)
    };
    let table = "rowsearch_cli_suite";
    let _ = run(&["drop-table", table]);
    let schema = r#"{"families":[{"name":"f","max_versions":2}],"splits":["m"]}"#;
    let out = run(&["create-table", table, "--schema", schema]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("created table"), "{}", stdout(&out));
    let out = run(&["create-table", table, "--schema", schema]);
    assert!(stdout(&out).contains("exists, identical"), "{}", stdout(&out));
    let out = run(&["create-table", table, "--schema", r#"{"families":[{"name":"g"}]}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(run(&["tables"]).status.success());
    assert!(stdout(&run(&["tables"])).lines().any(|l| l == table));
    let out = run(&["put", table, "r1", "f:a=apple", "f:b=banana"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["get", table, "r1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(row["key"], "r1", "{row}");
    let values: Vec<&str> =
        row["cells"].as_array().unwrap().iter().map(|c| c["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["apple", "banana"], "{row}");
    assert_eq!(run(&["get", table, "nope"]).status.code(), Some(1));
    let out = run(&["put", table, "r1", "nofamily:a=x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run(&["scan", table]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("embedded store"), "{}", stderr(&out));
    // Every version a family keeps, read over HBase too.
    let out = run(&["put", table, "r1", "f:a=apricot"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["get", table, "r1", "--versions", "2", "--columns", "f:a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let values: Vec<&str> =
        row["cells"].as_array().unwrap().iter().map(|c| c["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["apricot", "apple"], "{row}");
    let out = run(&["drop-table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&run(&["tables"])).lines().any(|l| l == table));
    assert_eq!(run(&["get", table, "r1"]).status.code(), Some(2));
}

#[test]
fn the_cli_runs_over_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::hbase_client::the_cli_runs_over_a_real_hbase") else {
        return;
    };
    cli_suite(&hbase.thrift2);
}

#[test]
fn the_cli_runs_over_rowsearchs_own_gateway() {
    let (_t, _s, thrift2) = super::thrift2_server();
    cli_suite(&thrift2);
    // Nothing listening: exit 1, naming the address.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let out = TestDir::new().run(&["--hbase", &addr, "tables"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("HBase at {addr} is unavailable")), "{}", stderr(&out));
}

/// `reindex --hbase`: a searchable table's rows in HBase indexed into the
/// local data directory, in full and then incrementally (the rows changed
/// since, found by a time-range scan), the keyword cells made from the
/// rows' text.
fn reindex_suite(addr: &str) {
    let t = TestDir::new();
    let run = |args: &[&str]| {
        let mut all = vec!["--hbase", addr];
        all.extend_from_slice(args);
        t.run(&all)
    };
    let table = "rowsearch_reindex_suite";
    let _ = run(&["drop-table", table]);
    let schema = r#"{"families":[{"name":"n"}],"search":{"fields":[{"column":"n:text","name":"text","type":"text"}]}}"#;
    assert!(run(&["create-table", table, "--schema", schema]).status.success());
    for (key, text) in [("r1", "walrus season"), ("r2", "the walrus sleeps"), ("r3", "penguins")] {
        let out = run(&["put", table, key, &format!("n:text={text}")]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = run(&["reindex", "--table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("reindex full of \"rowsearch_reindex_suite\": generation 1, 3 docs, 3 rows indexed"),
        "{}",
        stdout(&out)
    );
    let out = run(&["put", table, "r4", "n:text=walrus again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["reindex", "--table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The changed row, and (the margin for clock skew) possibly the rows
    // written just before the last pass: never fewer, 4 docs in all.
    let summary = stdout(&out);
    assert!(
        summary.starts_with("reindex incremental of \"rowsearch_reindex_suite\": generation 1, 4 docs"),
        "{summary}"
    );
    assert!(run(&["drop-table", table]).status.success());
}

#[test]
fn reindex_reads_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::hbase_client::reindex_reads_a_real_hbase") else {
        return;
    };
    reindex_suite(&hbase.thrift2);
}

#[test]
fn reindex_reads_rowsearchs_own_gateway() {
    let (_t, _s, thrift2) = super::thrift2_server();
    reindex_suite(&thrift2);
}
