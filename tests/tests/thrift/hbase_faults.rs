//! Faults under rowsearch over HBase: HBase going away (a proxy between
//! rowsearch and HBase's Thrift2 gateway is cut, so the HBase other tests
//! share keeps running) during an ingest, a search and a reindex, and
//! rowsearch killed (-9) in the middle of a reindex. Each gives a clear
//! error, leaves the serving index generation as it was, and everything
//! works again once HBase is back, without a restart. Run against a real
//! HBase and against rowsearch's own gateway standing in for it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::fixture;
use rowsearch::indexer::IndexDir;
use rowsearch_tests::{Proxy, TestDir, bin, stderr, stdout};

fn suite(upstream: &str, table: &str) {
    let proxy = Proxy::new(upstream);
    let t = TestDir::new();
    let over = |args: &[&str]| {
        let mut all = vec!["--hbase", proxy.addr.as_str()];
        all.extend_from_slice(args);
        t.run(&all)
    };
    let _ = over(&["drop-table", table]);

    // HBase goes away in the middle of an ingest: exit 1 naming it; the
    // same ingest once it is back stores the rest.
    let out = over(&["create-table", table, "--schema", &mail_schema_json()]);
    assert!(out.status.success(), "{}", stderr(&out));
    proxy.down_after(300_000);
    let out = over(&["ingest", &fixture(), "--table", table]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains(&format!("HBase at {} is unavailable", proxy.addr)), "{}", stderr(&out));
    proxy.up();
    let out = over(&["ingest", &fixture(), "--table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = over(&["reindex", "--table", table, "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = over(&["verify", "--table", table]);
    assert!(out.status.success(), "verify after an interrupted ingest: {}", stdout(&out));
    let dir = IndexDir::new(&t.data(), table);
    let serving = dir.current().unwrap().expect("a generation");

    // A search while HBase is away: 503 with the reason, /health
    // degraded; back: the same answer, no restart.
    let server = t.serve(&["--hbase", &proxy.addr, "serve", "--refresh-ms", "200"]);
    let path = format!("/tables/{table}/search?q=gas&limit=5");
    let (status, before) = server.get_json(&path);
    assert_eq!(status, 200, "{before}");
    proxy.down();
    let (status, refused) = server.get_json(&path);
    assert_eq!((status, refused["error"]["code"].as_str()), (503, Some("hbase_unavailable")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("unavailable"), "{refused}");
    let (status, health) = server.get_json("/health");
    assert_eq!((status, health["status"].as_str()), (200, Some("degraded")), "{health}");
    proxy.up();
    let (status, after) = server.get_json(&path);
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["hits"], before["hits"]);
    assert_eq!(server.get_json("/health").1["status"], "ok");

    // HBase goes away in the middle of a reindex: exit 1, the serving
    // generation untouched and still answering; back: a reindex works.
    // (A few requests in: the build reads each region in a handful of
    // calls, and what comes after its switch no longer fails it.)
    proxy.down_after(300);
    let out = over(&["reindex", "--table", table, "--full"]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("unavailable"), "{}", stderr(&out));
    assert_eq!(dir.current().unwrap(), Some(serving), "{}\n{}", stdout(&out), stderr(&out));
    proxy.up();
    let (status, again) = server.get_json(&path);
    assert_eq!((status, &again["hits"]), (200, &before["hits"]), "{again}");
    let out = over(&["reindex", "--table", table, "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let serving = dir.current().unwrap().expect("a generation");

    // rowsearch killed while a reindex reads HBase's rows: the serving
    // generation is intact and answers; the next reindex is clean.
    proxy.stall_big_replies();
    let mut child = Command::new(bin())
        .arg("--data")
        .arg(t.data())
        .args(["--hbase", &proxy.addr, "reindex", "--table", table, "--full"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !dir.generations().unwrap().iter().any(|&g| g > serving) {
        assert!(started.elapsed() < Duration::from_secs(60), "the reindex never began a generation");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    proxy.release();
    assert_eq!(dir.current().unwrap(), Some(serving));
    let (status, again) = server.get_json(&path);
    assert_eq!((status, &again["hits"]), (200, &before["hits"]), "{again}");
    let reindexed = over(&["reindex", "--table", table, "--full"]);
    assert!(reindexed.status.success(), "{}", stderr(&reindexed));
    let out = over(&["verify", "--table", table]);
    assert!(out.status.success(), "verify after kill -9: {}", stdout(&out));
    let docs = |out: &std::process::Output| -> u64 {
        let s = stdout(out);
        let n = s.split(" docs,").next().and_then(|h| h.rsplit(' ').next()).and_then(|n| n.parse().ok());
        n.unwrap_or_else(|| panic!("no docs in {s}"))
    };
    let all = docs(&reindexed);

    // The connection a reindex reads rows on is lost while a scanner's
    // next rows are on their way: the reindex fails, or reads every row
    // (a scanner's call is never sent again: it would skip rows).
    proxy.stall_big_replies();
    let child = Command::new(bin())
        .arg("--data")
        .arg(t.data())
        .args(["--hbase", &proxy.addr, "reindex", "--table", table, "--full", "--parallel", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stalls = proxy.stalls();
    while proxy.stalls() == stalls {
        assert!(started.elapsed() < Duration::from_secs(60), "the reindex never read rows");
        std::thread::sleep(Duration::from_millis(10));
    }
    proxy.reset();
    proxy.release();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        assert_eq!(docs(&out), all, "a reindex whose connection was lost indexed fewer rows");
    } else {
        assert!(stderr(&out).contains("unavailable"), "{}", stderr(&out));
    }
    drop(server);
    assert!(over(&["drop-table", table]).status.success());
}

/// The mail table as HBase takes it: threads and all, without the
/// secondary indexes (the embedded store's alone for now).
fn mail_schema_json() -> String {
    let schema = rowsearch::store::TableSchema { indexes: Vec::new(), ..rowsearch::indexer::mail_schema() };
    serde_json::to_string(&schema).unwrap()
}

#[test]
fn faults_over_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::hbase_faults::faults_over_a_real_hbase") else {
        return;
    };
    suite(&hbase.thrift2, "mail_faults_hbase");
}

#[test]
fn faults_over_rowsearchs_own_gateway() {
    let (_t, _s, thrift2) = super::thrift2_server();
    suite(&thrift2, "mail_faults_gateway");
}
