mod all_positions;
mod backup;
mod holes;
mod moves;
mod pack;
mod repack;
mod threads;
pub(crate) mod upgrade;
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
    // A command that only reads, or serve, on a --data that holds no store
    // (a mistyped path): 2, and nothing is created there.
    for args in [&["tables"][..], &["scan", "t"], &["search", "gas"], &["serve", "--listen", "127.0.0.1:0"]] {
        let out = t.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no store at"), "{args:?}: {}", stderr(&out));
        assert!(!t.data().try_exists().unwrap(), "{args:?} created {}", t.data().display());
    }
    // Bad usage and unusable input: 2.
    assert_eq!(code(&t.run(&["no-such-command"])), 2);
    assert_eq!(code(&t.run(&["put", "nope", "k", "f:q=v"])), 2, "unknown table");
    assert_eq!(code(&t.run(&["create-table", "t", "--schema", "{not json"])), 2);
    assert_eq!(code(&t.run(&["create-table", "../t", "--schema", r#"{"families":[{"name":"f"}]}"#])), 2);
    assert_eq!(code(&t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#])), 0);
    assert!(t.data().join("data.mdb").is_file(), "a command that writes creates the store");
    assert_eq!(code(&t.run(&["tables"])), 0);
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
        let out = t.run(&["demo", "--rows", "200", "--no-serve"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("wrote 200 rows in one atomic batch"), "{text}");
        assert!(text.contains("badeer-r: 50"), "{text}");
    }
}

/// A binary copied elsewhere (its own directory, run from there, its own
/// temporary directory) still has the sample mail: it carries it.
#[test]
fn cli_demo_from_a_copied_binary_loads_the_mail_it_carries() {
    let t = TestDir::new();
    let elsewhere = t.dir.path().join("elsewhere");
    let tmp = t.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let copy = elsewhere.join("rowsearch");
    std::fs::copy(rowsearch_tests::bin(), &copy).unwrap();
    let out = std::process::Command::new(&copy)
        .current_dir(&elsewhere)
        .env("TMPDIR", &tmp)
        .args(["--data", "data", "demo", "--rows", "50", "--no-serve"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Sample mail (carried in this binary"), "{text}");
    assert!(text.contains("347 files, 347 messages: 288 stored, 59 duplicates"), "{text}");
    assert!(text.contains("matches in all mailboxes"), "{text}");
    // The unpacked sample is gone once loaded.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn cli_typed_keys_filters_and_regions() {
    let t = TestDir::new();
    let schema = r#"{"families":[{"name":"m"}],
        "row_key":{"fields":[{"name":"user","type":"string"},{"name":"date","type":"u64","order":"desc"}],
                   "salt_buckets":3}}"#;
    let out = t.run(&["create-table", "mail", "--schema", schema]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Keys built from fields by the library; the CLI writes raw keys, so use
    // the encoding: "ann" 00 01, then !date big-endian.
    for (user, date, subject) in [("ann", 1u64, "old"), ("ann", 2, "new"), ("bob", 1, "hi")] {
        let mut key = format!("{user}\\x00\\x01");
        for b in (!date).to_be_bytes() {
            key.push_str(&format!("\\x{b:02x}"));
        }
        let out = t.run(&["put", "mail", &key, &format!("m:subject={subject}")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = t.run(&["scan", "mail", "--prefix-fields", r#"{"user":"ann"}"#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let fields: Vec<String> = rows.iter().map(|r| r["key_fields"].to_string()).collect();
    assert_eq!(
        fields,
        [r#"{"user":"ann","date":2}"#, r#"{"user":"ann","date":1}"#],
        "newest first, salt hidden"
    );

    let out = t.run(&[
        "scan",
        "mail",
        "--filter",
        "ValueFilter(=, 'binary:hi') OR ValueFilter(=, 'substring:OLD')",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let subjects: Vec<String> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["cells"][0]["value"].to_string())
        .collect();
    assert_eq!(subjects, [r#""old""#, r#""hi""#]);

    let out = t.run(&["scan", "mail", "--filter", "ValueFilter(=, 'binary:hi'"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid filter at byte 26"), "{}", stderr(&out));
    let out = t.run(&["scan", "mail", "--prefix-fields", r#"{"date":1}"#]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("earlier field \"user\""), "{}", stderr(&out));

    let out = t.run(&["regions", "mail"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let regions: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(regions.len(), 3, "one region per salt bucket");
    assert_eq!(regions.iter().map(|r| r["rows"].as_u64().unwrap()).sum::<u64>(), 3);
    let counts: Vec<String> = (0..3)
        .map(|i| stdout(&t.run(&["scan", "mail", "--count", "--region", &i.to_string()])).trim().to_owned())
        .collect();
    let per_region: Vec<String> = regions.iter().map(|r| r["rows"].to_string()).collect();
    assert_eq!(counts, per_region);
    assert_eq!(code(&t.run(&["scan", "mail", "--region", "3"])), 2, "no region 3");
}

#[test]
fn cli_indexes_add_lookup_verify_drop() {
    let t = TestDir::new();
    let out = t.run(&["create-table", "mail", "--schema", r#"{"families":[{"name":"m"}]}"#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for (key, from) in [("r1", "ann"), ("r2", "bob"), ("r3", "ann"), ("r4", "anna")] {
        let out = t.run(&["put", "mail", key, &format!("m:from={from}")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = t.run(&["index", "add", "mail", "by_from", "--columns", "m:from"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("added index by_from"), "{}", stdout(&out));

    let keys = |args: &[&str]| -> Vec<String> {
        let out = t.run(args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    assert_eq!(keys(&["index", "lookup", "mail", "by_from", "--eq", "ann"]), ["r1", "r3"]);
    assert_eq!(keys(&["index", "lookup", "mail", "by_from", "--prefix", "ann"]), ["r1", "r3", "r4"]);
    assert_eq!(keys(&["index", "lookup", "mail", "by_from", "--eq", "bob", "--rows"]), ["r2"]);
    let out = t.run(&["index", "lookup", "mail", "by_from", "--prefix", "a", "--limit", "2"]);
    let cursor = stderr(&out).trim().strip_prefix("next cursor: ").expect("a cursor").to_owned();
    assert_eq!(keys(&["index", "lookup", "mail", "by_from", "--prefix", "a", "--cursor", &cursor]), ["r4"]);

    let out = t.run(&["index", "verify", "mail", "by_from"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains(r#""missing":0"#), "{}", stdout(&out));
    assert_eq!(code(&t.run(&["index", "lookup", "mail", "nope", "--eq", "x"])), 2, "unknown index");
    assert_eq!(code(&t.run(&["index", "lookup", "mail", "by_from", "--eq", "a", "--eq", "b"])), 2);
    assert_eq!(code(&t.run(&["index", "drop", "mail", "by_from"])), 0);
    assert_eq!(code(&t.run(&["index", "lookup", "mail", "by_from", "--eq", "ann"])), 2, "dropped");
}

#[test]
fn cli_ingest_and_keywords() {
    let t = TestDir::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail");
    let maildir = fixtures.join("maildir");
    let report = t.dir.path().join("skipped.tsv");
    let out = t.run(&["ingest", maildir.to_str().unwrap(), "--report", report.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("ingest: 347 files, 347 messages: 288 stored, 59 duplicates, 0 skipped"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "");
    // Again, in batches sized by a memory budget: all duplicates, still
    // success; a budget too small or beside --batch-rows is bad usage.
    let out = t.run(&["ingest", maildir.to_str().unwrap(), "--memory-mb", "200"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("0 stored, 347 duplicates"), "{}", stdout(&out));
    let out = t.run(&["ingest", maildir.to_str().unwrap(), "--memory-mb", "100"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("at least 176 MiB"), "{}", stderr(&out));
    let out = t.run(&["ingest", maildir.to_str().unwrap(), "--memory-mb", "300", "--batch-rows", "9"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // A bad file is skipped and named, and is not a failure.
    let bad = t.dir.path().join("junk/inbox");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("1."), b"\x00\x01 binary").unwrap();
    let out = t.run(&["ingest", t.dir.path().join("junk").to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 skipped") && stdout(&out).contains("no header lines"),
        "{}",
        stdout(&out)
    );
    // Unusable input: 2.
    assert_eq!(code(&t.run(&["ingest", "/no/such/path"])), 2);
    assert_eq!(code(&t.run(&["ingest", maildir.to_str().unwrap(), "--format", "nope"])), 2);
    // Keyword lookups, newest first, paged.
    let out = t.run(&["keywords", "--user", "cash-m", "enron", "--limit", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let hits: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(hits.len(), 2);
    assert!(hits[0]["key_fields"]["date"].as_u64() >= hits[1]["key_fields"]["date"].as_u64());
    assert!(stderr(&out).contains("next cursor: k1."), "{}", stderr(&out));
    assert_eq!(code(&t.run(&["keywords", "--user", "cash-m", "nosuchfield:x"])), 2);
}

/// A message ingest cannot store (its mailbox name makes a row key past
/// the 160-byte limit) is skipped and named; the rest of its batch,
/// including a message whose `From:` is 570 bytes long (once a whole batch
/// lost to LMDB's key limit through the `by_from` index), is stored and
/// found.
#[test]
fn cli_ingest_skips_and_names_a_message_it_cannot_store_and_keeps_its_batch() {
    let t = TestDir::new();
    let root = t.dir.path().join("mail");
    let message = |from: &str, subject: &str| {
        format!(
            "From: {from}\r\nTo: someone@example.com\r\nSubject: {subject}\r\n\
             Date: Mon, 14 May 2001 16:39:00 -0700\r\nMessage-ID: <{subject}@example.com>\r\n\r\nbody of {subject}\r\n"
        )
    };
    let long_from = format!("{}@example.com", "x".repeat(558));
    assert_eq!(long_from.len(), 570);
    let ok = root.join("alice/inbox");
    std::fs::create_dir_all(&ok).unwrap();
    std::fs::write(ok.join("1."), message("bob@example.com", "plain")).unwrap();
    std::fs::write(ok.join("2."), message(&long_from, "longfrom")).unwrap();
    let user = "u".repeat(200);
    let bad = root.join(&user).join("inbox");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("1."), message("carol@example.com", "longuser")).unwrap();
    let out = t.run(&["ingest", root.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{} {}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("3 messages: 2 stored, 0 duplicates, 1 skipped"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("skipped {}", bad.join("1.").display()))
            && stdout(&out).contains("row key too long"),
        "the message is named with the reason: {}",
        stdout(&out)
    );
    // The long sender is indexed and found, by equality and by prefix.
    let out = t.run(&["index", "lookup", "mail", "by_from", "--eq", &long_from]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let hit: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(hit["values"][0], long_from.as_str(), "the whole value comes back");
    let out = t.run(&["index", "lookup", "mail", "by_from", "--prefix", &"x".repeat(300)]);
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    let out = t.run(&["keywords", "--user", "alice", "longfrom"]);
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    for index in ["by_from", "by_from_date"] {
        let out = t.run(&["index", "verify", "mail", index]);
        assert_eq!(code(&out), 0, "{}", stdout(&out));
    }
}

#[test]
fn cli_reindex_search_and_verify() {
    let t = TestDir::new();
    let maildir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    assert_eq!(code(&t.run(&["ingest", maildir.to_str().unwrap()])), 0);
    // No reindex needed: the first search builds the index on its way.
    let out = t.run(&["search", "enron"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).is_empty());
    let dir = rowsearch::indexer::IndexDir::new(&t.data(), "mail");
    assert_eq!(dir.current().unwrap(), Some(1), "the search built generation 1");

    let out = t.run(&["reindex", "--full"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("reindex full of \"mail\": generation 2, 288 docs"), "{}", stdout(&out));
    let out = t.run(&["search", "enron", "--user", "cash-m", "--sort", "newest", "--limit", "3", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let response: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let hits = response["hits"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 3);
    // Without --json: one line per hit, newest first, with its subject.
    let out = t.run(&["search", "enron", "--user", "cash-m", "--sort", "newest", "--limit", "3"]);
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    assert!(stderr(&out).contains(&format!("{} matches, 3 shown", response["total"])), "{}", stderr(&out));
    assert!(hits.iter().all(|h| h["key_fields"]["user"] == "cash-m"));
    assert!(hits[0]["date_ms"].as_u64() >= hits[1]["date_ms"].as_u64());
    // The same keys as the keyword rows, newest first.
    let out = t.run(&["keywords", "enron", "--user", "cash-m", "--limit", "3"]);
    let keywords: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let dates = |v: &[serde_json::Value], f: &str| v.iter().map(|h| h[f].as_u64()).collect::<Vec<_>>();
    assert_eq!(dates(&hits, "date_ms"), dates(&keywords, "date_ms"));
    assert_eq!(code(&t.run(&["search", "subject:("])), 2, "a query that does not parse");
    assert_eq!(code(&t.run(&["reindex", "--table", "nope"])), 2);
    assert_eq!(code(&t.run(&["verify"])), 0);

    // A change: pending in the index until a search (or a reindex) needs
    // it; the next search reflects it.
    let key = hits[0]["key"].as_str().unwrap();
    assert_eq!(code(&t.run(&["put", "mail", key, "m:subject=quokkas everywhere"])), 0);
    let out = t.run(&["verify"]);
    assert_eq!(code(&out), 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["pending"], 1, "{report}");
    assert!(report["index_seq"].as_u64() < report["store_seq"].as_u64(), "{report}");
    let out = t.run(&["search", "quokkas"]);
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    assert!(stderr(&out).contains("1 matches"));
    // The search matched the changed row directly: the index itself is
    // still behind until a reindex (or a server's refresher) absorbs it.
    let out = t.run(&["verify"]);
    assert!(stdout(&out).contains("\"pending\":1"), "{}", stdout(&out));
    assert_eq!(code(&t.run(&["reindex"])), 0);
    let out = t.run(&["verify"]);
    assert!(stdout(&out).contains("\"pending\":0"), "{}", stdout(&out));

    // Behind the index's back: one document deleted. verify says so: 1.
    {
        let dir = rowsearch::indexer::IndexDir::new(&t.data(), "mail");
        let index = tantivy::Index::open_in_dir(dir.generation_path(2)).unwrap();
        rowsearch::indexer::doc::register_cells(&index);
        let field = index.schema().get_field("_key").unwrap();
        let mut writer: tantivy::IndexWriter<rowsearch::indexer::doc::CellDoc> =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        let bytes = rowsearch::store::binstr::decode(key).unwrap();
        writer.delete_term(tantivy::Term::from_field_bytes(field, &bytes));
        let payload = index.load_metas().unwrap().payload.unwrap();
        let mut prepared = writer.prepare_commit().unwrap();
        prepared.set_payload(&payload);
        prepared.commit().unwrap();
    }
    let out = t.run(&["verify"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("MISMATCH"), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["missing"]["keys"], serde_json::json!([key]), "{report}");
    assert_eq!(code(&t.run(&["reindex", "--full"])), 0);
    assert_eq!(code(&t.run(&["verify"])), 0);

    // Dropping the table removes its index.
    assert_eq!(code(&t.run(&["drop-table", "mail"])), 0);
    assert!(!t.data().join("index/mail").try_exists().unwrap());
}
