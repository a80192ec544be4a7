//! `rowsearch export`, `import` and `changes`: an export imported into a
//! new store gives the same rows (every version) and the same searches,
//! twice as well as once; an export or import killed at any moment never
//! leaves a complete-looking file, and the next run finishes; an export
//! cut short is imported and reported incomplete; `changes --follow`
//! prints a write of another process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rowsearch_tests::{Rng, TestDir, bin, stderr, stdout};

fn run_on(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin()).arg("--data").arg(data).args(args).output().unwrap()
}

fn ok(out: std::process::Output) -> String {
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// An export's rows (every line but the header, which names the sequence).
fn rows_of(export: &str) -> Vec<String> {
    export.lines().skip(1).map(str::to_owned).collect()
}

fn total(data: &Path, query: &str) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&ok(run_on(data, &["search", query, "--json", "--limit", "0"]))).unwrap();
    v["total"].as_u64().unwrap()
}

/// A store with the mail fixture and a second version of some cells.
fn mail_with_versions() -> TestDir {
    let t = TestDir::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    ok(t.run(&["ingest", fixture.to_str().unwrap()]));
    let schema = r#"{"families":[{"name":"f","max_versions":3}]}"#;
    ok(t.run(&["create-table", "versions", "--schema", schema]));
    for (ts, value) in [("1000", "one"), ("2000", "two"), ("3000", "three")] {
        ok(t.run(&["put", "versions", "r\\x00\\xff", &format!("f:q={value}"), "--timestamp", ts]));
    }
    t
}

#[test]
fn cli_export_then_import_gives_the_same_rows_and_searches_and_is_idempotent() {
    let t = mail_with_versions();
    let copy = TestDir::new();
    for table in ["mail", "versions"] {
        let file = t.dir.path().join(format!("{table}.jsonl"));
        ok(t.run(&["export", table, "--output", file.to_str().unwrap()]));
        let export = std::fs::read_to_string(&file).unwrap();
        assert!(export.lines().last().unwrap().starts_with(r#"{"rowsearch_export_end""#));
        // Twice: the second import changes nothing, and writes nothing (no
        // change-feed entry: the cells were there as they are).
        let feed = || ok(copy.run(&["changes", table])).lines().count();
        let mut entries = Vec::new();
        for _ in 0..2 {
            let out = ok(copy.run(&["import", file.to_str().unwrap()]));
            assert!(out.contains(r#""imported""#), "{out}");
            let again = ok(copy.run(&["export", table]));
            assert_eq!(rows_of(&again), rows_of(&export), "table {table}");
            entries.push(feed());
        }
        assert!(entries[0] > 0, "table {table}: {entries:?}");
        assert_eq!(entries[1], entries[0], "table {table}: the second import wrote again");
    }
    let versions = ok(copy.run(&["get", "versions", "r\\x00\\xff", "--versions", "all"]));
    for value in ["one", "two", "three"] {
        assert!(versions.contains(value), "every version: {versions}");
    }
    ok(t.run(&["reindex"]));
    ok(copy.run(&["reindex"]));
    for query in ["gas", "\"natural gas\"", "from:enron.com price"] {
        assert_eq!(total(&copy.data(), query), total(&t.data(), query), "{query}");
    }
    // Bad input: a cut export is imported and said incomplete (exit 2); a
    // newer layout and a line that is not a row are refused by line.
    let export = std::fs::read_to_string(t.dir.path().join("mail.jsonl")).unwrap();
    let cut: String = export.lines().take(11).map(|l| format!("{l}\n")).collect();
    let other = TestDir::new();
    let mut child = Command::new(bin())
        .arg("--data")
        .arg(other.data())
        .args(["import", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), cut.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("incomplete (its 10 rows were imported"), "{}", stderr(&out));
    let bad = other.dir.path().join("bad.jsonl");
    let header = export.lines().next().unwrap();
    for (text, says) in [
        (header.replace(r#""rowsearch_export":1"#, r#""rowsearch_export":9"#), "layout is 9"),
        (format!("{header}\n{{\"key\":1}}\n"), "line 2"),
        (String::new(), "empty"),
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = other.run(&["import", bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{says}: {}", stderr(&out));
    }
}

#[test]
fn cli_an_export_or_import_killed_at_any_moment_never_looks_complete_and_the_next_run_finishes() {
    // A table big enough that the kills land mid-run.
    let t = TestDir::new();
    let lines: String = std::iter::once(
        r#"{"rowsearch_export":1,"table":"big","schema":{"families":[{"name":"f","max_versions":2}]},"encoding":"binary","sequence":null}"#.to_owned(),
    )
    .chain((0..40_000).map(|i| {
        format!(r#"{{"key":"row{i:06}","cells":[{{"column":"f:a","timestamp":{},"value":"{}"}},{{"column":"f:a","timestamp":5,"value":"old"}}]}}"#, 10 + i, "v".repeat(200))
    }))
    .chain(std::iter::once(r#"{"rowsearch_export_end":{"rows":40000,"cells":80000}}"#.to_owned()))
    .map(|l| l + "\n")
    .collect();
    let source = t.dir.path().join("source.jsonl");
    std::fs::write(&source, &lines).unwrap();
    ok(t.run(&["import", source.to_str().unwrap()]));
    let want = rows_of(&lines);
    let mut rng = Rng(0x05ee_d0e1);
    let out_file = t.dir.path().join("big.jsonl");
    for round in 0..5 {
        let _ = std::fs::remove_file(&out_file);
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(t.data())
            .args(["export", "big", "--output", out_file.to_str().unwrap()])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(300) as u64));
        child.kill().unwrap();
        let _ = child.wait();
        // The named file is there only when whole.
        if let Ok(text) = std::fs::read_to_string(&out_file) {
            assert_eq!(rows_of(&text), want, "round {round}: a named export is whole");
        }
    }
    ok(t.run(&["export", "big", "--output", out_file.to_str().unwrap(), "--force"]));
    assert_eq!(rows_of(&std::fs::read_to_string(&out_file).unwrap()), want);
    // Imports killed mid-run, then one to the end: the same rows.
    let target = TestDir::new();
    for _ in 0..4 {
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(target.data())
            .args(["import", out_file.to_str().unwrap()])
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(400) as u64));
        child.kill().unwrap();
        let _ = child.wait();
    }
    ok(target.run(&["import", out_file.to_str().unwrap()]));
    assert_eq!(rows_of(&ok(target.run(&["export", "big"]))), want);
}

#[test]
fn cli_changes_follow_prints_another_processs_writes_and_a_consumer_resumes() {
    let t = mail_with_versions();
    // A consumer made at the end sees nothing yet.
    assert_eq!(ok(t.run(&["changes", "versions", "--consumer", "c"])), "");
    ok(t.run(&["put", "versions", "a", "f:q=1"]));
    ok(t.run(&["put", "versions", "b", "f:q=2"]));
    let out = ok(t.run(&["changes", "versions", "--consumer", "c", "--cells"]));
    let keys: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, ["a", "b"]);
    assert!(out.contains(r#""kind":"put""#) && out.contains(r#""value":"2""#), "{out}");
    // Acknowledged: the next run starts after them.
    assert_eq!(ok(t.run(&["changes", "versions", "--consumer", "c"])), "");
    let mut follow = Command::new(bin())
        .arg("--data")
        .arg(t.data())
        .args(["changes", "versions", "--consumer", "c", "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    ok(t.run(&["delete", "versions", "a"]));
    let line = lines.next().unwrap().unwrap();
    let change: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!((change["key"].as_str(), change["kind"].as_str()), (Some("a"), Some("delete")), "{line}");
    follow.kill().unwrap();
    let _ = follow.wait();
}
