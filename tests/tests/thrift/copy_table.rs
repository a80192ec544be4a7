//! `rowsearch copy-table` between the embedded store and a real Apache
//! HBase, and back: the same rows (every version), the same search
//! answers on each side; killed mid-copy, the same command goes on from
//! its checkpoint.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::http::fixture;
use rowsearch_tests::{Rng, TestDir, bin, stderr, stdout};

fn ok(out: std::process::Output) -> String {
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// An export's rows, without the header (which names the source).
fn rows_of(export: &str) -> Vec<String> {
    export.lines().skip(1).map(str::to_owned).collect()
}

/// Every hit of a few searches, newest first; the hits of one date (the
/// copies of a message in several folders) in key order, as the two
/// sides' segments may hold them in either order.
fn searches(t: &TestDir, hbase: Option<&str>, table: &str) -> Vec<Vec<String>> {
    ["gas", "\"natural gas\"", "price from:enron.com"]
        .into_iter()
        .map(|q| {
            let mut args = hbase.map_or_else(Vec::new, |addr| vec!["--hbase", addr]);
            args.extend(["search", "--table", table, q, "--sort", "newest", "--limit", "1000"]);
            let mut hits: Vec<String> = ok(t.run(&args)).lines().map(str::to_owned).collect();
            hits.sort_by(|a, b| b.get(..16).cmp(&a.get(..16)).then(a.cmp(b)));
            hits
        })
        .collect()
}

fn copy_there_and_back(addr: &str, table: &str) {
    let source = TestDir::new();
    ok(source.run(&["ingest", &fixture(), "--table", table]));
    ok(source.run(&["reindex", "--table", table]));
    let want = rows_of(&ok(source.run(&["export", table])));
    let _ = source.run(&["--hbase", addr, "drop-table", table]);

    // Into HBase, killed a few times with small batches, then to the end.
    let mut rng = Rng(0xc0_97);
    for _ in 0..3 {
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(source.data())
            .args(["copy-table", table, "--to-hbase", addr, "--batch-rows", "20"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300 + rng.below(1500) as u64));
        child.kill().unwrap();
        let _ = child.wait();
    }
    let out = source.run(&["copy-table", table, "--to-hbase", addr, "--batch-rows", "20"]);
    let done: serde_json::Value = serde_json::from_str(&ok(out)).unwrap();
    assert_eq!(done["complete"], true, "{done}");
    // The HBase side's index lives in a data directory of its own.
    let over = TestDir::new();
    let there = rows_of(&ok(over.run(&["--hbase", addr, "export", table])));
    assert_eq!(there, want, "HBase holds the same rows, every version");
    ok(over.run(&["--hbase", addr, "reindex", "--table", table, "--full"]));
    assert_eq!(searches(&over, Some(addr), table), searches(&source, None, table), "searches over HBase");

    // And back into a new store.
    let back = TestDir::new();
    ok(back.run(&["copy-table", table, "--from-hbase", addr]));
    assert_eq!(rows_of(&ok(back.run(&["export", table]))), want, "the store holds the same rows again");
    ok(back.run(&["reindex", "--table", table]));
    assert_eq!(searches(&back, None, table), searches(&source, None, table), "searches after the round trip");
    ok(source.run(&["--hbase", addr, "drop-table", table]));
}

#[test]
fn copy_table_to_a_real_hbase_and_back_keeps_rows_and_searches() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::copy_table::copy_table_to_a_real_hbase_and_back")
    else {
        return;
    };
    copy_there_and_back(&hbase.thrift2, "mail_copied");
}
