//! Holes a user and an attacker found in the command line (issue 59):
//! each through the real binary.

use std::path::Path;

use rowsearch_tests::{TestDir, stderr, stdout};

use super::code;

/// A store with the mail fixture ingested.
fn mail() -> TestDir {
    let t = TestDir::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    t
}

#[test]
fn cli_export_never_replaces_what_it_must_not() {
    let t = mail();
    let dir = t.dir.path();
    let data_mdb = t.data().join("data.mdb");
    let before = std::fs::metadata(&data_mdb).unwrap().len();
    // The store's own file, also through a relative path with `..`.
    let sneaky = t.data().join("..").join(t.data().file_name().unwrap()).join("data.mdb");
    for target in [data_mdb.clone(), sneaky, t.data().join("new.jsonl")] {
        let out = t.run(&["export", "mail", "--output", target.to_str().unwrap(), "--force"]);
        assert_eq!(code(&out), 2, "{}: {}", target.display(), stderr(&out));
        assert!(stderr(&out).contains("inside the data directory"), "{}", stderr(&out));
    }
    assert_eq!(std::fs::metadata(&data_mdb).unwrap().len(), before);
    let out = t.run(&["get", "mail", "x"]);
    assert!(!stderr(&out).contains("not a store"), "the store is whole: {}", stderr(&out));

    // A device, a directory and a symlink are never replaced, --force or not.
    let link = dir.join("link.jsonl");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (target, says) in [
        ("/dev/null", "not a regular file"),
        (link.to_str().unwrap(), "symbolic link"),
        (sub.to_str().unwrap(), "a directory"),
    ] {
        for force in [false, true] {
            let mut args = vec!["export", "mail", "--output", target];
            if force {
                args.push("--force");
            }
            let out = t.run(&args);
            assert_eq!(code(&out), 2, "{target}: {}", stderr(&out));
            assert!(stderr(&out).contains(says), "{target}: {}", stderr(&out));
        }
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(sub.is_dir());

    // A new file is written; an existing one needs --force.
    let file = dir.join("mail.jsonl");
    let out = t.run(&["export", "mail", "--output", file.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let first = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "mine").unwrap();
    let out = t.run(&["export", "mail", "--output", file.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let out = t.run(&["export", "mail", "--output", file.to_str().unwrap(), "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), first.lines().count());
    let _ = stdout(&out);
}

#[test]
fn cli_changes_limit_is_a_cap() {
    let t = mail();
    for n in [1usize, 2, 5] {
        let out = t.run(&["changes", "mail", "--limit", &n.to_string()]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out).lines().count(), n, "--limit {n}");
    }
    let all = stdout(&t.run(&["changes", "mail"])).lines().count();
    assert!(all > 5, "{all}");
}

#[test]
fn cli_verify_reports_a_table_never_indexed_and_a_restored_store_is_clean() {
    let t = TestDir::new();
    let schema = r#"{"families":[{"name":"n"}],"search":{"fields":[{"column":"n:text","name":"text","type":"text"}]}}"#;
    assert_eq!(code(&t.run(&["create-table", "notes", "--schema", schema])), 0);
    // Empty and never indexed: clean (it was exit 2, "no index yet").
    let out = t.run(&["verify", "--table", "notes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("clean: no index yet"), "{}", stderr(&out));
    // A row and still no index: said, exit 1, the row listed.
    assert_eq!(code(&t.run(&["put", "notes", "a", "n:text=hello world"])), 0);
    let out = t.run(&["verify", "--table", "notes"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (report["no_index"].as_bool(), report["missing"]["count"].as_u64()),
        (Some(true), Some(1)),
        "{report}"
    );
    // Backed up and restored (the backup holds no index): verify-clean.
    let backup = t.dir.path().join("b");
    assert_eq!(code(&t.run(&["backup", backup.to_str().unwrap()])), 0);
    let restored = t.dir.path().join("restored");
    let out = std::process::Command::new(rowsearch_tests::bin())
        .arg("--data")
        .arg(&restored)
        .args(["restore", backup.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = std::process::Command::new(rowsearch_tests::bin())
        .arg("--data")
        .arg(&restored)
        .args(["verify", "--table", "notes"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
