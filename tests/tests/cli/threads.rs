//! Threads against notmuch, the oracle: the fixture `fixtures/threads`
//! (a mailing list's reply trees with real In-Reply-To and References,
//! ghosts, a late message joining two threads, copies in several folders;
//! `make.py` writes it) ingested by the CLI, and indexed by Debian's
//! `notmuch`. The partition of Message-IDs into threads equals notmuch's,
//! by references alone and with the mail table's subject gathering (the
//! fixture's subjects differ per tree), and the rows, copies folded, are
//! notmuch's messages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use rowsearch::store::{ReadOptions, Scan};
use rowsearch_tests::{TestDir, stderr, stdout};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/threads/maildir")
}

/// Every message id of a `notmuch show --format=json` tree (a thread is a
/// list of [message, replies] pairs).
fn collect_ids(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_ids(i, out)),
        serde_json::Value::Object(map) => {
            if let Some(id) = map.get("id").and_then(|v| v.as_str()) {
                out.insert(id.to_owned());
            }
        }
        _ => {}
    }
}

/// notmuch's threads of the fixture: sets of Message-IDs, and its count of
/// messages.
fn notmuch_threads() -> (BTreeSet<BTreeSet<String>>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    let copied = Command::new("cp").arg("-r").arg(fixture()).arg(&mail).status().unwrap();
    assert!(copied.success());
    let config = dir.path().join("config");
    std::fs::write(&config, format!("[database]\npath={}\n[new]\ntags=\n", mail.display())).unwrap();
    let notmuch = |args: &[&str]| {
        let out = Command::new("notmuch")
            .args(args)
            .env("NOTMUCH_CONFIG", &config)
            .output()
            .expect("Debian's notmuch is installed (apt-get install notmuch; .ci/run does it)");
        assert!(out.status.success(), "notmuch {args:?}: {}", stderr(&out));
        stdout(&out)
    };
    notmuch(&["new", "--quiet"]);
    let count: usize = notmuch(&["count", "--output=messages", "*"]).trim().parse().unwrap();
    let shown: serde_json::Value =
        serde_json::from_str(&notmuch(&["show", "--format=json", "--body=false", "--entire-thread", "*"]))
            .unwrap();
    let threads = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|thread| {
            let mut ids = BTreeSet::new();
            collect_ids(thread, &mut ids);
            ids
        })
        .collect();
    (threads, count)
}

/// Ours: the Message-IDs of each thread of `table`, and its rows.
fn our_threads(data: &Path, table: &str) -> (BTreeSet<BTreeSet<String>>, usize) {
    let store = rowsearch::indexer::open_store(data).unwrap();
    let rows = store.scan(table, &Scan { read: ReadOptions::default(), ..Scan::new() }).unwrap().rows;
    let mut by_thread: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in &rows {
        let text = |q: &[u8]| String::from_utf8_lossy(row.value("m", q).unwrap_or_default()).into_owned();
        let thread = text(b"thread");
        assert_eq!(thread.len(), 16, "every row has a thread: {row:?}");
        by_thread.entry(thread).or_default().extend(text(b"message_id").lines().map(str::to_owned));
    }
    (by_thread.into_values().collect(), rows.len())
}

#[test]
fn cli_threads_by_references_equal_notmuchs_and_copies_fold_into_its_messages() {
    let (expected, messages) = notmuch_threads();
    assert_eq!((expected.len(), messages), (22, 100), "the fixture as make.py writes it");
    let t = TestDir::new();
    // By references alone: the mail table's schema without subject gathering.
    let mut schema = serde_json::to_value(rowsearch::indexer::mail_schema()).unwrap();
    schema["threads"].as_object_mut().unwrap().remove("subject_column");
    let out = t.run(&["create-table", "refs", "--schema", &schema.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fixture = fixture();
    let fixture = fixture.to_str().unwrap();
    for table in ["refs", "mail"] {
        let out = t.run(&["ingest", fixture, "--table", table, "--batch-rows", "7"]);
        assert!(out.status.success(), "{}", stderr(&out));
        // 126 files: 100 messages, 26 copies folded.
        assert!(stdout(&out).contains("126 messages: 100 stored, 26 duplicates"), "{}", stdout(&out));
        let (ours, rows) = our_threads(&t.data(), table);
        assert_eq!(rows, messages, "{table}: one row per message once copies fold");
        assert_eq!(ours, expected, "{table}: threads as notmuch groups them");
    }
}

/// What a new user trips on: an mbox given alone names its mailbox from
/// the file (and says so), a `user` holding no mail says so with the
/// nearest names, and typo tolerance keeps "did you mean".
#[test]
fn cli_an_mbox_alone_names_its_mailbox_and_an_empty_user_is_said() {
    let t = TestDir::new();
    // An mbox of the fixture's inbox, in the directory the command runs in.
    let mut mbox = String::new();
    let inbox = fixture().join("list/inbox");
    let mut files: Vec<_> = std::fs::read_dir(&inbox).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files.iter().take(20) {
        mbox.push_str("From someone@example.org Fri Mar  1 10:00:00 2024\n");
        mbox.push_str(&std::fs::read_to_string(file).unwrap().replace("\r\n", "\n"));
        mbox.push('\n');
    }
    std::fs::write(t.dir.path().join("lists.mbox"), mbox).unwrap();
    let out = Command::new(rowsearch_tests::bin())
        .current_dir(t.dir.path())
        .args(["--data", "data", "ingest", "lists.mbox"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("20 stored"), "{}", stdout(&out));
    assert!(stdout(&out).contains(r#"mailbox "lists", named from the file"#), "{}", stdout(&out));
    // A file in a directory: the directory names the mailbox, and says so.
    let other = TestDir::new();
    std::fs::create_dir(other.dir.path().join("craft")).unwrap();
    std::fs::copy(t.dir.path().join("lists.mbox"), other.dir.path().join("craft/team-x.mbox")).unwrap();
    let out = Command::new(rowsearch_tests::bin())
        .current_dir(other.dir.path())
        .args(["--data", "data", "ingest", "craft/team-x.mbox"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(r#"mailbox "craft", named from its directory"#), "{}", stdout(&out));
    let out = t.run(&["search", "topic", "--user", "lists"]);
    assert!(out.status.success() && stdout(&out).lines().count() > 1, "{}", stderr(&out));
    // A misspelt mailbox: no hits, said with the nearest name.
    let out = t.run(&["search", "topic", "--user", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(stderr(&out).contains(r#"mailbox "list" holds no mail; nearest: lists"#), "{}", stderr(&out));
    let out = t.run(&["search", "topic", "--user", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["unknown_user"], serde_json::json!({"user": "list", "nearest": ["lists"]}), "{v}");
    // A mailbox that holds mail but not the words: no notice.
    let out = t.run(&["search", "qqqzzz", "--user", "lists", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v.get("unknown_user").is_none(), "{v}");
    // Typo tolerance on, a query finding nothing still gets its correction.
    let out = t.run(&["search", "lne", "--typos", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((v["total"].as_u64(), v["did_you_mean"].as_str()), (Some(0), Some("line")), "{v}");
}

/// Ours over HBase: the Message-IDs of each thread of `table` and its
/// rows, read back from HBase.
fn hbase_threads(source: &rowsearch::hbase::HbaseSource, table: &str) -> (BTreeSet<BTreeSet<String>>, usize) {
    use rowsearch::store::TableStore;
    let scan = Scan { read: ReadOptions::default(), ..Scan::new() };
    let rows = source.scan_page(table, &scan, &rowsearch::store::Cancel::default()).unwrap().rows;
    let mut by_thread: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in &rows {
        let text = |q: &[u8]| String::from_utf8_lossy(row.value("m", q).unwrap_or_default()).into_owned();
        let thread = text(b"thread");
        assert_eq!(thread.len(), 16, "every row has a thread: {row:?}");
        by_thread.entry(thread).or_default().extend(text(b"message_id").lines().map(str::to_owned));
    }
    (by_thread.into_values().collect(), rows.len())
}

/// The mail table over HBase threads and folds copies as the embedded one:
/// the fixture ingested with `--hbase` in small batches (threads merged
/// across batches) gives notmuch's threads and messages, and each
/// thread's view (`rowsearch thread`) equals the embedded store's.
#[test]
fn cli_threads_over_hbase_equal_notmuchs_and_the_embedded_stores() {
    let Some(hbase) = rowsearch_tests::hbase("cli::threads::cli_threads_over_hbase_equal_notmuchs") else {
        return;
    };
    let (expected, messages) = notmuch_threads();
    let t = TestDir::new();
    let fixture = fixture();
    let fixture = fixture.to_str().unwrap();
    let table = "threads_over_hbase";
    let over = |args: &[&str]| {
        let mut all = vec!["--hbase", hbase.thrift2.as_str()];
        all.extend_from_slice(args);
        t.run(&all)
    };
    let _ = over(&["drop-table", table]);
    let out = over(&["ingest", fixture, "--table", table, "--batch-rows", "7"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("126 messages: 100 stored, 26 duplicates"), "{}", stdout(&out));
    let source = rowsearch::hbase::HbaseSource::new(
        &hbase.thrift2,
        std::sync::Arc::new(rowsearch::indexer::TextAnalyzer),
    );
    let (ours, rows) = hbase_threads(&source, table);
    assert_eq!(rows, messages, "one row per message once copies fold");
    assert_eq!(ours, expected, "threads as notmuch groups them");
    // Ingesting again stores nothing and changes no thread.
    let out = over(&["ingest", fixture, "--table", table, "--batch-rows", "7"]);
    assert!(stdout(&out).contains("126 messages: 0 stored, 126 duplicates"), "{}", stdout(&out));
    assert_eq!(hbase_threads(&source, table), (ours, rows));

    // Each thread's view equals the embedded store's (same rows, same keys).
    let out = t.run(&["ingest", fixture, "--table", "mail"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let embedded = rowsearch::indexer::open_store(t.data()).unwrap();
    let ids: BTreeSet<String> = embedded
        .scan("mail", &Scan { read: ReadOptions::default(), ..Scan::new() })
        .unwrap()
        .rows
        .iter()
        .map(|r| String::from_utf8_lossy(r.value("m", b"thread").unwrap()).into_owned())
        .collect();
    drop(embedded);
    assert_eq!(ids.len(), expected.len());
    for id in &ids {
        let mine = t.run(&["thread", id, "--table", "mail"]);
        assert!(mine.status.success(), "{}", stderr(&mine));
        let theirs = over(&["thread", id, "--table", table]);
        assert!(theirs.status.success(), "thread {id} over HBase: {}", stderr(&theirs));
        assert_eq!(stdout(&theirs), stdout(&mine), "thread {id}");
    }
    assert!(over(&["drop-table", table]).status.success());
}
