//! Holes found trying the landed build as a user and an attacker would
//! (issue 59), each through the real binary: sloppy phrases within budgets,
//! phrases highlighted where they stand, the search page's own address,
//! a scan body's number of versions.

use serde_json::{Value, json};

use super::{enc, mail_server, post};

fn search(s: &rowsearch_tests::Server, query: &str) -> (u16, Value) {
    s.get_json(&format!("/tables/mail/search?{query}"))
}

#[test]
fn http_sloppy_phrases_have_budgets_and_repeated_words_answer() {
    let (_t, s) = mail_server();
    // Each past its budget: 400 naming the limit, nothing run.
    let long: Vec<String> = (0..33).map(|i| format!("w{i}")).collect();
    for (q, says) in [
        ("\"natural gas\"~101".to_owned(), "at most ~100"),
        (format!("\"{}\"", long.join(" ")), "at most 32 words"),
        ("\"enron enron enron enron enron enron\"~1000".to_owned(), "at most ~100"),
        ("\"enron enron enron enron enron\"~50".to_owned(), "at most 4 times"),
    ] {
        let (status, v) = search(&s, &format!("q={}", enc(&q)));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query")), "{q}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(says), "{q}: {v}");
    }
    // The costliest admitted forms answer (tantivy's sloppy scorer grew
    // these without bound): repeated words, the widest slop.
    for q in ["\"enron enron enron enron\"~100", "\"the and of to a in\"~100", "\"gas power\"~100"] {
        let (status, v) = search(&s, &format!("q={}&limit=5", enc(q)));
        assert_eq!(status, 200, "{q}: {v}");
    }
    // A sloppy phrase matches words apart and swapped, as Lucene's does:
    // every document `"natural gas"` finds, `"gas natural"~2` finds too.
    let total = |q: &str| search(&s, &format!("q={}&limit=0", enc(q))).1["total"].as_u64().unwrap();
    let exact = total("\"natural gas\"");
    assert!(exact > 0);
    assert!(total("\"gas natural\"~2") >= exact);
    assert!(total("\"natural gas\"~3") >= exact);
    assert_eq!(total("\"gas natural\"~1"), total("\"gas natural\""));
}

#[test]
fn http_a_phrase_is_highlighted_and_cropped_where_it_stands() {
    let (_t, s) = mail_server();
    let (status, v) =
        search(&s, &format!("q={}&highlight=true&limit=100&crop=body:6", enc("\"natural gas\"")));
    assert_eq!(status, 200, "{v}");
    let hits = v["hits"].as_array().unwrap();
    assert!(hits.len() > 3, "{v}");
    let mut marked = 0;
    for hit in hits {
        for (field, snippet) in hit["highlights"].as_object().unwrap() {
            let snippet = snippet.as_str().unwrap();
            // Every mark is the whole phrase, never a lone word of it.
            for piece in snippet.split("<em>").skip(1) {
                let inner = piece.split("</em>").next().unwrap();
                let words: Vec<String> = inner
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect();
                assert_eq!(words, ["natural", "gas"], "{field}: {snippet}");
                marked += 1;
            }
        }
        // The cropped body holds the phrase (discussion_threads/1. has a
        // lone "gas" 2,000 bytes before it).
        let body = hit["document"]["body"].as_str().unwrap_or_default().to_lowercase();
        let body = body
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if hit["highlights"]["body"].is_string() {
            assert!(body.contains("natural gas"), "{}: {body}", hit["key"]);
        }
    }
    assert!(marked >= hits.len(), "{marked}");
}

#[test]
fn http_the_search_pages_address_and_a_scans_number_of_versions_are_taken() {
    let (_t, s) = mail_server();
    // The page writes conversations=off into its address; loading it works.
    let (status, text) = s.request("GET", "/?q=gas&table=mail&conversations=off", None);
    assert_eq!(status, 200, "{text}");
    let (status, text) = s.request("GET", "/?q=gas&conversations=off&bogus=1", None);
    assert_eq!(status, 400, "{text}");
    // `versions` in a scan body: a number, its text, or "all".
    let (status, v) = s.request(
        "PUT",
        "/tables/v",
        Some(&json!({"families": [{"name": "f", "max_versions": 5}]}).to_string()),
    );
    assert!(status == 200 || status == 201, "{v}");
    for ts in [1, 2, 3, 4] {
        let cells = json!({"cells": [{"column": "f:q", "value": format!("v{ts}"), "timestamp": ts}]});
        let (status, v) = super::put(&s, "/tables/v/rows/r", &cells);
        assert!(status < 300, "{v}");
    }
    for (versions, want) in [(json!(3), 3), (json!("2"), 2), (json!("all"), 4), (json!(1), 1)] {
        let (status, v) = post(&s, "/tables/v/scan", &json!({"versions": versions}));
        assert_eq!(status, 200, "{versions}: {v}");
        assert_eq!(v["rows"][0]["cells"].as_array().unwrap().len(), want, "{versions}: {v}");
    }
    for bad in [json!(0), json!(-1), json!(1.5), json!(true)] {
        let (status, v) = post(&s, "/tables/v/scan", &json!({"versions": bad}));
        assert_eq!(status, 400, "{bad}: {v}");
    }
}

#[test]
fn http_a_relative_data_directory_is_hidden_only_where_it_stands_as_a_path() {
    let t = super::indexed_fixture();
    let mut command = std::process::Command::new(rowsearch_tests::bin());
    command.current_dir(t.dir.path()).args(["--data", "data", "serve", "--listen", "127.0.0.1:0"]);
    if let Some(hbase) = t.hbase() {
        command.env("ROWSEARCH_HBASE", hbase);
    }
    let s = rowsearch_tests::Server::spawn(command);
    // "metadata" and "timestamp" stay words.
    let (status, v) =
        super::put(&s, "/tables/mail/rows/x", &json!({"cells": [{"column": "metadata:q", "value": "v"}]}));
    assert_eq!(status, 422, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"metadata\"") && !message.contains("<data>"), "{message}");
}

#[test]
fn http_consumers_belong_to_their_keys_scope() {
    use super::keys::{MASTER, call, code, keyed_server, make_key};
    let (_t, s) = keyed_server();
    let (status, v) = call(&s, "PUT", "/consumers/follower", Some(MASTER), Some("{}"));
    assert_eq!(status, 201, "{v}");
    let master_position = v["position"].as_u64().unwrap();
    // A key with `changes`, confined to a mailbox, and one limited to
    // another table: neither sees, moves or deletes the master's consumer.
    let (_, confined) = make_key(&s, json!({"actions": ["changes", "write"], "partitions": ["cash-m"]}));
    let (_, other) = make_key(&s, json!({"actions": ["changes"], "tables": ["v"]}));
    for key in [&confined, &other] {
        let k = Some(key.as_str());
        let (status, v) = call(&s, "GET", "/consumers", k, None);
        assert_eq!((status, v["consumers"].as_array().map(Vec::len)), (200, Some(0)), "{v}");
        let (status, v) = call(&s, "GET", "/consumers/follower", k, None);
        assert_eq!((status, code(&v)), (404, "consumer_not_found"), "{v}");
        let (status, v) = call(&s, "DELETE", "/consumers/follower", k, None);
        assert_eq!((status, code(&v)), (404, "consumer_not_found"), "{v}");
        // Its own of the same name is another consumer.
        let (status, v) = call(&s, "PUT", "/consumers/follower", k, Some(r#"{"position": 0}"#));
        assert!(status == 201 || status == 400 || status == 410, "{v}");
    }
    let (status, v) = call(&s, "GET", "/consumers/follower", Some(MASTER), None);
    assert_eq!((status, v["position"].as_u64()), (200, Some(master_position)), "{v}");
    let (_, v) = call(&s, "GET", "/consumers", Some(MASTER), None);
    let names: Vec<&str> =
        v["consumers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["follower"], "the master lists its own");

    // A confined key's pending counts the changes it may see.
    let k = Some(confined.as_str());
    let (status, v) = call(&s, "PUT", "/consumers/mine", k, Some("{}"));
    assert_eq!(status, 201, "{v}");
    let cells = json!({"cells": [{"column": "m:subject", "value": "x"}]}).to_string();
    let other_row = format!("/tables/mail/rows?key_fields={}", enc(r#"{"user":"zz-other","date":5,"id":1}"#));
    let (status, v) = call(&s, "PUT", &other_row, Some(MASTER), Some(&cells));
    assert_eq!(status, 200, "{v}");
    // Over HBase a change is in the feed once settled (2 s): the master's
    // consumer counts it first, then the confined one is asked.
    let started = std::time::Instant::now();
    loop {
        let (_, v) = call(&s, "GET", "/consumers/follower", Some(MASTER), None);
        if v["pending"].as_u64().unwrap() >= 1 {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "never pending: {v}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (_, v) = call(&s, "GET", "/consumers/mine", k, None);
    assert_eq!(v["pending"], 0, "another mailbox's change is not its own: {v}");

    // Retention has a ceiling; `.` and `..` are no names.
    let (status, v) = call(&s, "PUT", "/consumers/mine", k, Some(r#"{"retention_ms": 9223372036854775808}"#));
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("30 days"), "{v}");
    for name in [".", ".."] {
        let (status, v) = call(&s, "PUT", &format!("/consumers/{}", enc(name)), Some(MASTER), Some("{}"));
        assert_eq!(status, 400, "{name}: {v}");
    }
}

#[test]
fn http_jobs_long_polls_and_cursors_stay_within_what_they_were_made_for() {
    use super::keys::{MASTER, call, code, keyed_server, make_key};
    let (_t, s) = keyed_server();
    // A reindex job of `mail`, seen by the master; a key limited to another
    // table is told there is no such job.
    let (status, v) = call(&s, "POST", "/tables/mail/reindex", Some(MASTER), None);
    assert_eq!(status, 202, "{v}");
    let job = v["job"].as_str().unwrap().to_owned();
    let (_, admin_other) = make_key(&s, json!({"actions": ["admin"], "tables": ["other"]}));
    let (status, v) = call(&s, "GET", &format!("/jobs/{job}"), Some(&admin_other), None);
    assert_eq!((status, code(&v)), (404, "job_not_found"), "{v}");
    let (_, admin_mail) = make_key(&s, json!({"actions": ["admin"], "tables": ["mail"]}));
    let (status, v) = call(&s, "GET", &format!("/jobs/{job}"), Some(&admin_mail), None);
    assert_eq!(status, 200, "{v}");

    // A long poll's wait is at most 60 s, as API.md says.
    for wait in ["70000", "18446744073709551615"] {
        let (status, v) =
            call(&s, "GET", &format!("/tables/mail/changes?wait_ms={wait}"), Some(MASTER), None);
        assert_eq!(status, 400, "{wait}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("0 to 60000"), "{v}");
    }

    // A cursor resumes its own search only.
    for collapse in ["", "&collapse=thread"] {
        let (status, v) =
            call(&s, "GET", &format!("/tables/mail/search?q=gas&limit=2{collapse}"), Some(MASTER), None);
        assert_eq!(status, 200, "{v}");
        let cursor = enc(v["next_cursor"].as_str().unwrap());
        let (status, v) = call(
            &s,
            "GET",
            &format!("/tables/mail/search?q=gas&limit=2{collapse}&cursor={cursor}"),
            Some(MASTER),
            None,
        );
        assert_eq!(status, 200, "{v}");
        for other in ["q=power", "q=gas&sort=newest", "q=gas&user=cash-m"] {
            let (status, v) = call(
                &s,
                "GET",
                &format!("/tables/mail/search?{other}&limit=2{collapse}&cursor={cursor}"),
                Some(MASTER),
                None,
            );
            assert_eq!((status, code(&v)), (400, "invalid_cursor"), "{other}{collapse}: {v}");
        }
    }
    let (status, v) = call(&s, "GET", "/tables/mail/search?q=gas&limit=2", Some(MASTER), None);
    assert_eq!(status, 200, "{v}");
    let cursor = enc(v["next_cursor"].as_str().unwrap());
    let (status, v) = call(
        &s,
        "GET",
        &format!("/tables/mail/search?q=gas&limit=2&collapse=thread&cursor={cursor}"),
        Some(MASTER),
        None,
    );
    assert_eq!(
        (status, code(&v)),
        (400, "invalid_cursor"),
        "a plain search's cursor on a collapsed one: {v}"
    );
}

#[test]
fn http_and_cli_a_full_reindex_rebuilds_past_a_damaged_pointer_as_health_advises() {
    for pointer in ["garbage\n", "gen-99\n"] {
        // The CLI, as /health's advice says.
        let t = super::indexed_fixture();
        std::fs::write(t.data().join("index/mail/CURRENT"), pointer).unwrap();
        let out = t.run(&["reindex", "--full", "--table", "mail"]);
        assert!(out.status.success(), "{pointer:?}: {}", rowsearch_tests::stderr(&out));
        let out = t.run(&["search", "gas"]);
        assert!(out.status.success() && !rowsearch_tests::stdout(&out).is_empty(), "{pointer:?}");
        // Over HTTP: a full reindex job.
        std::fs::write(t.data().join("index/mail/CURRENT"), pointer).unwrap();
        let s = t.serve(&["serve", "--refresh-ms", "0"]);
        let (status, v) = search(&s, "q=gas");
        assert_eq!(status, 503, "{v}");
        let (status, v) = post(&s, "/tables/mail/reindex?mode=full", &json!({}));
        assert_eq!(status, 202, "{v}");
        let job = super::wait_for_job(&s, v["job"].as_str().unwrap());
        assert_eq!(job["state"], "done", "{pointer:?}: {job}");
        let (status, v) = search(&s, "q=gas");
        assert_eq!(status, 200, "{pointer:?}: {v}");
        assert!(v["total"].as_u64().unwrap() > 0);
        let (_, health) = s.get_json("/health");
        assert_eq!(health["status"], "ok", "{health}");
    }
}

#[test]
fn http_and_cli_suggest_and_keywords_say_a_mailbox_that_holds_nothing() {
    let (t, s) = mail_server();
    // A misspelt mailbox: said with the nearest names, as a search says it.
    let (status, v) = s.get_json("/tables/mail/suggest?q=ga&user=cash-mm");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["unknown_user"]["user"], "cash-mm", "{v}");
    assert_eq!(v["unknown_user"]["nearest"][0], "cash-m", "{v}");
    let (status, v) = s.get_json("/tables/mail/keywords?user=cash-mm&terms=gas");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["unknown_user"]["nearest"][0], "cash-m", "{v}");
    // A mailbox that holds mail but not the words: nothing said.
    let (_, v) = s.get_json("/tables/mail/keywords?user=cash-m&terms=qqqzzz");
    assert!(v.get("unknown_user").is_none(), "{v}");
    let (_, v) = s.get_json("/tables/mail/suggest?q=qqqzz&user=cash-m");
    assert!(v.get("unknown_user").is_none(), "{v}");
    drop(s);
    let out = t.run(&["keywords", "--user", "cash-mm", "gas"]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    assert!(
        rowsearch_tests::stderr(&out).contains(r#"mailbox "cash-mm" holds no mail; nearest: cash-m"#),
        "{}",
        rowsearch_tests::stderr(&out)
    );
}

#[test]
fn http_a_failed_backup_jobs_error_names_neither_directory() {
    if super::embedded_only("backups (HBase's own snapshots back up its tables)") {
        return;
    }
    let t = super::indexed_fixture();
    let backups = t.dir.path().join("backups");
    let s = t.serve(&["serve", "--backup-dir", backups.to_str().unwrap()]);
    // The directory taken away and a file put in its place: the backup
    // fails with the path in the operating system's message.
    std::fs::remove_dir_all(&backups).unwrap();
    std::fs::write(&backups, "not a directory").unwrap();
    let (status, v) = post(&s, "/backups", &json!({}));
    assert_eq!(status, 202, "{v}");
    let job = super::wait_for_job(&s, v["job"].as_str().unwrap());
    assert_eq!(job["state"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    let absolute = backups.canonicalize().unwrap_or(backups.clone());
    assert!(
        !error.contains(backups.to_str().unwrap()) && !error.contains(absolute.to_str().unwrap()),
        "{error}"
    );
    assert!(!error.contains(t.data().to_str().unwrap()), "{error}");
}
