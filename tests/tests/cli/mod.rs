use rowsearch_tests::{TestDir, stderr, stdout};

fn code(out: &std::process::Output) -> i32 {
    out.status.code().expect("exit code")
}

#[test]
fn cli_put_get_roundtrips_binary_bytes() {
    let t = TestDir::new();
    let out = t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f","max_versions":2}]}"#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = t.run(&["put", "t", "k\\x00\\xff", "f:q\\x01=v\\xfe\\\\", "--timestamp", "5"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = t.run(&["get", "t", "k\\x00\\xff"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json row");
    assert_eq!(row["key"], "k\\x00\\xff");
    assert_eq!(row["cells"][0]["column"], "f:q\\x01");
    assert_eq!(row["cells"][0]["value"], "v\\xfe\\\\");
    assert_eq!(row["cells"][0]["timestamp"], 5);
}

#[test]
fn cli_exit_codes() {
    let t = TestDir::new();
    assert_eq!(code(&t.run(&["tables"])), 0);
    // Bad usage and unusable input: 2.
    assert_eq!(code(&t.run(&["no-such-command"])), 2);
    assert_eq!(code(&t.run(&["put", "nope", "k", "f:q=v"])), 2, "unknown table");
    assert_eq!(code(&t.run(&["create-table", "t", "--schema", "{not json"])), 2);
    assert_eq!(code(&t.run(&["create-table", "../t", "--schema", r#"{"families":[{"name":"f"}]}"#])), 2);
    assert_eq!(code(&t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#])), 0);
    let out = t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"g"}]}"#]);
    assert_eq!(code(&out), 2, "schema conflict");
    assert!(stderr(&out).contains("already exists with a different schema"), "{}", stderr(&out));
    assert_eq!(code(&t.run(&["put", "t", "k", "f:q=bad\\escape"])), 2);
    assert_eq!(code(&t.run(&["put", "t", &"k".repeat(161), "f:q=v"])), 2, "row key too long");
    // The job ran and found nothing: 1.
    assert_eq!(code(&t.run(&["get", "t", "missing"])), 1);
    // Not a store: 2.
    let file = t.dir.path().join("file");
    std::fs::write(&file, "x").expect("write");
    let out = std::process::Command::new(rowsearch_tests::bin())
        .arg("--data")
        .arg(&file)
        .arg("tables")
        .output()
        .expect("run");
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("not a rowsearch store"), "{}", stderr(&out));
}

#[test]
fn cli_scan_pages_with_cursor() {
    let t = TestDir::new();
    assert_eq!(code(&t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#])), 0);
    for k in ["a", "b", "c", "d", "e"] {
        assert_eq!(code(&t.run(&["put", "t", k, &format!("f:q={k}")])), 0);
    }
    let mut keys = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["scan", "t", "--reverse", "--limit", "2"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c]);
        }
        let out = t.run(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        for line in stdout(&out).lines() {
            let row: serde_json::Value = serde_json::from_str(line).expect("json");
            keys.push(row["key"].as_str().expect("key").to_owned());
        }
        cursor = stderr(&out).lines().find_map(|l| l.strip_prefix("next cursor: ").map(str::to_owned));
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(keys, ["e", "d", "c", "b", "a"]);
    let out = t.run(&["scan", "t", "--count", "--start", "b", "--stop", "e"]);
    assert_eq!(stdout(&out).trim(), "3");
}

#[test]
fn cli_demo_runs_and_is_rerunnable() {
    let t = TestDir::new();
    for _ in 0..2 {
        let out = t.run(&["demo", "--rows", "200"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("wrote 200 rows in one atomic batch"), "{text}");
        assert!(text.contains("badeer-r: 50"), "{text}");
    }
}
