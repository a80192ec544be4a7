//! HBase's own Java client (hbase-client and hbase-thrift 2.6.1, the
//! client most HBase code runs on) against rowsearch's Thrift2 gateway
//! through its `ThriftConnection`, and the same steps against a real
//! HBase 2.6.1 through its native client (and, for reference, through
//! HBase's own Thrift2 gateway): `tests/java/ClientSuite.java`, compiled
//! here with `javac` against `hbase/hbase.sh classpath`; rowsearch through
//! both of the client's transports (binary over a socket, and over HTTP).
//! Every answer is
//! HBase's, but the differences stated below (and in docs/hbase.md "HBase's
//! Java client"), each with its reason.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Steps whose answer through `ThriftConnection` is the client's own
/// doing: its scanner sends the whole scan again for every batch (from
/// the row after the last), so a scan's `setLimit` (and a `PageFilter`,
/// or a read of every version) is applied to each batch, not to the scan.
/// There rowsearch must answer what HBase's own Thrift2 gateway answers.
const AS_HBASE_GATEWAY: &[&str] = &[
    "scan limit",
    "scan reversed",
    "scan column",
    "scan all versions",
    "scan family time range",
    "scan family time range and all versions",
    "filter page with limit",
];

/// Stated differences: the step, and why its answer is not HBase's.
const STATED: &[(&str, &str)] = &[
    (
        "get existence only",
        "ThriftConnection drops a TResult's `exists` (its resultFromThrift never sets it): null from any \
         Thrift2 gateway (HBase's own fails the call)",
    ),
    (
        "scan time range",
        "HBase keeps a one-version family's older versions until a compaction (a time-range read sees \
         them); rowsearch keeps the versions a family allows, from the write on",
    ),
    (
        "filter page",
        "PageFilter counts rows over the whole scan (HBase: per region), and ThriftConnection's scanner \
         applies it again to every batch",
    ),
    (
        "filter while match",
        "WhileMatchFilter ends the whole scan (HBase: the region's scan; the next region goes on)",
    ),
    ("filter bit comparator", "BitComparator is not served: an error naming it, never ignored"),
    (
        "put after delete row",
        "a delete removes the versions there are; HBase also keeps a delete marker that hides later \
         writes at older timestamps until a major compaction",
    ),
    ("scan after everything", "follows from the two steps before (the row put after its delete)"),
];

fn javac_suite() -> PathBuf {
    let repo = rowsearch_tests::repo();
    let classpath =
        Command::new("bash").arg(repo.join("hbase/hbase.sh")).arg("classpath").output().expect("hbase.sh");
    assert!(classpath.status.success(), "{}", String::from_utf8_lossy(&classpath.stderr));
    let classpath = String::from_utf8(classpath.stdout).expect("class path").trim().to_owned();
    // One place, compiled over each run (not a directory per test process).
    let classes = repo.join("target").join("java-suite");
    let out = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&classes)
        .arg("-cp")
        .arg(&classpath)
        .arg(repo.join("tests/java/ClientSuite.java"))
        .output()
        .expect("javac");
    assert!(out.status.success(), "javac: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(classes.join("classpath"), format!("{}:{classpath}", classes.display())).unwrap();
    classes
}

/// Runs the suite in `mode` against `address`: its lines, step -> answer.
fn run(classes: &Path, mode: &str, address: &str) -> Vec<(String, String)> {
    let classpath = std::fs::read_to_string(classes.join("classpath")).unwrap();
    let output = classes.join(format!("{mode}-{}.txt", address.replace(':', "_")));
    let out = Command::new("java")
        .arg("-cp")
        .arg(classpath)
        .args(["ClientSuite", mode, address])
        .arg(&output)
        .output()
        .expect("java");
    assert!(out.status.success(), "ClientSuite {mode}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&output).unwrap();
    assert_eq!(text.lines().last(), Some("done"), "{mode}: the suite did not finish:\n{text}");
    text.lines()
        .filter(|l| *l != "done")
        .map(|l| {
            let (step, answer) = l.split_once(": ").unwrap_or((l, ""));
            (step.to_owned(), answer.to_owned())
        })
        .collect()
}

#[test]
fn hbase_java_client_gets_hbase_answers_from_rowsearch() {
    let Some(hbase) = rowsearch_tests::hbase("hbase_java_client_gets_hbase_answers_from_rowsearch") else {
        return;
    };
    let Some(zookeeper) = hbase.zookeeper.clone() else {
        eprintln!("SKIPPED: HBase started by hand without ROWSEARCH_HBASE_ZOOKEEPER");
        return;
    };
    let classes = javac_suite();
    let native = run(&classes, "native", &zookeeper);
    let gateway = run(&classes, "thrift", &hbase.thrift2);
    let (_t, _s, thrift2) = super::thrift2_server();
    let ours = run(&classes, "thrift", &thrift2);
    // Thrift over HTTP (ThriftConnection's HTTPThriftClientBuilder), on the
    // same port: the same answers.
    let (_t2, _s2, thrift2_http) = super::thrift2_server();
    let over_http = run(&classes, "http", &thrift2_http);
    assert_eq!(over_http, ours, "Thrift over HTTP answers as the binary transport");
    assert_eq!(ours.len(), native.len(), "the same steps");
    let mut wrong = Vec::new();
    let mut stated = 0;
    for ((step, mine), ((native_step, theirs), (_, gateway))) in ours.iter().zip(native.iter().zip(&gateway))
    {
        assert_eq!(step, native_step);
        if let Some((_, why)) = STATED.iter().find(|(s, _)| s == step) {
            stated += 1;
            eprintln!("stated: {step}: {why}\n  HBase:     {theirs}\n  rowsearch: {mine}");
            // Still an answer, not an unexplained failure.
            assert!(mine != "ERR other", "{step}: {mine}");
            continue;
        }
        let want = if AS_HBASE_GATEWAY.contains(&step.as_str()) { gateway } else { theirs };
        if mine != want {
            wrong.push(format!("{step}:\n  HBase:     {want}\n  rowsearch: {mine}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} answers differ from HBase's:\n{}",
        wrong.len(),
        ours.len(),
        wrong.join("\n")
    );
    assert_eq!(stated, STATED.len(), "every stated difference is a step of the suite");
    // The filter rowsearch does not run is named, not ignored.
    let bit = ours.iter().find(|(s, _)| s == "filter bit comparator").map(|(_, a)| a.as_str());
    assert_eq!(bit, Some("ERR DoNotRetryIOException"));
}
