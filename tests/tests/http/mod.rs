//! The HTTP API through the real binary on 127.0.0.1, port 0.

mod answers;
mod budget;
mod cancel;
mod changes;
mod disk;
mod documents;
mod doors;
mod freshness;
mod holes;
mod hostile;
mod keys;
mod logs;
mod processes;
mod protocol;
mod rows;
mod threads;

use rowsearch_tests::{Backend, Rng, Server, TestDir, stderr};

/// A fresh data directory, its tables where this test binary keeps them
/// (`crate::BACKEND`: the embedded store in `e2e`, a real HBase in
/// `http_over_hbase`, the same suite run twice).
pub(crate) fn dir() -> TestDir {
    TestDir::on(crate::BACKEND)
}

/// Whether the tables live in HBase in this run of the suite.
pub(crate) fn over_hbase() -> bool {
    crate::BACKEND == Backend::Hbase
}

/// Whether a test of what only the embedded store keeps is skipped in this
/// run: over HBase it is, `why` saying which (the routes of it answer
/// 501 `not_over_hbase` with their documented reason there, which
/// `thrift::over_hbase_routes` checks route by route).
pub(crate) fn embedded_only(why: &str) -> bool {
    if over_hbase() {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "(not run over HBase: {why})");
    }
    over_hbase()
}

/// `mutate`'s path for a batch of many rows: over HBase, whose atomicity
/// is per row, with `atomic=false` (the answer says `"atomicity":"row"`);
/// the embedded store's batch is all or nothing either way.
pub(crate) fn mutate_many(table: Option<&str>) -> String {
    let path = match table {
        Some(t) => format!("/tables/{t}/mutate"),
        None => "/mutate".to_owned(),
    };
    if over_hbase() { format!("{path}?atomic=false") } else { path }
}
use serde_json::{Value, json};

pub(crate) fn fixture() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/mail/maildir")
        .to_str()
        .unwrap()
        .to_owned()
}

/// A data directory with the fixture ingested and indexed.
fn indexed_fixture() -> TestDir {
    let t = dir();
    let out = t.run(&["ingest", &fixture()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    t
}

/// The fixture ingested and indexed, and a server on it.
fn mail_server() -> (TestDir, Server) {
    let t = indexed_fixture();
    // The store exists: no --create.
    let server = t.serve(&["serve"]);
    (t, server)
}

pub(crate) fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn put(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = server.request("PUT", path, Some(&body.to_string()));
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn post(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = server.request("POST", path, Some(&body.to_string()));
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Polls `/jobs/{id}` until it leaves queued and running (at most a
/// minute); returns its last state.
fn wait_for_job(s: &Server, id: &str) -> Value {
    let mut state = Value::Null;
    for _ in 0..1200 {
        state = s.get_json(&format!("/jobs/{id}")).1;
        if state["state"] != "running" && state["state"] != "queued" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    state
}

fn keys(v: &Value, field: &str) -> Vec<String> {
    v[field].as_array().unwrap().iter().map(|h| h["key"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn http_every_endpoint_answers_its_success_path() {
    let (_t, s) = mail_server();
    let (status, health) = s.get_json("/health");
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));

    // Tables.
    // (Secondary indexes are the embedded store's: not over HBase.)
    let schema = match over_hbase() {
        false => json!({"families": [{"name": "n", "max_versions": 2}],
                        "indexes": [{"name": "by_tag", "columns": ["n:tag"]}]}),
        true => json!({"families": [{"name": "n", "max_versions": 2}]}),
    };
    assert_eq!(put(&s, "/tables/notes", &schema).0, 201);
    assert_eq!(put(&s, "/tables/notes", &schema).0, 200, "an identical schema");
    let (status, err) = put(&s, "/tables/notes", &json!({"families": [{"name": "x"}]}));
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("schema_conflict")));
    let (_, tables) = s.get_json("/tables");
    let names: Vec<&str> =
        tables["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mail", "notes"]);
    // A searchable table says how to search it and how current it is.
    assert_eq!(
        tables["tables"][0]["search"],
        json!({"partition": "user", "fields": ["subject", "body", "from", "to", "folder", "id", "thread"],
               "columns": {"subject": "m:subject", "body": "b:text", "from": "m:from", "to": "m:to",
                           "folder": "m:folder", "id": "m:message_id", "thread": "m:thread"},
               "display": ["subject", "from", "to", "folder", "user", "date", "thread"],
               "facets": ["user", "from", "to", "folder", "thread", "month", "year"], "threads": "thread"})
    );
    // Over HBase the index claims only what is past HBase's 2 s clock
    // margin: the ingest's rows count as lag until it has passed.
    let mut tables = tables;
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_secs(if over_hbase() { 10 } else { 0 });
    while tables["tables"][0]["freshness"]["lag_rows"] != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        tables = s.get_json("/tables").1;
    }
    assert_eq!(tables["tables"][0]["freshness"]["lag_rows"], 0);
    assert!(tables["tables"][1].get("search").is_none() && tables["tables"][1].get("freshness").is_none());
    let (status, info) = s.get_json("/tables/notes");
    assert_eq!(status, 200);
    assert_eq!(info["schema"]["families"][0]["name"], "n");
    let (_, mail) = s.get_json("/tables/mail");
    assert_eq!(mail["stats"]["index"]["generation"], 1, "{mail}");
    // HBase keeps no row count without a full scan: null there.
    let rows = if over_hbase() { Value::Null } else { json!(288) };
    assert_eq!(mail["stats"]["rows"], rows, "{mail}");

    // Rows: a binary key through percent-encoding.
    let (status, _) = put(
        &s,
        "/tables/notes/rows/a%00b",
        &json!({"cells": [
        {"column": "n:text", "value": "hello \\xff", "timestamp": 5}, {"column": "n:tag", "value": "red"}]}),
    );
    assert_eq!(status, 200);
    let (status, row) = s.get_json("/tables/notes/rows/a%00b?columns=n:text");
    assert_eq!(status, 200);
    assert_eq!(row["key"], "a\\x00b");
    assert_eq!(row["cells"], json!([{"column": "n:text", "timestamp": 5, "value": "hello \\xff"}]));
    let (status, result) = post(
        &s,
        &mutate_many(Some("notes")),
        &json!({"mutations": [
        {"put": {"key": "b", "cells": [{"column": "n:tag", "value": "red"}]}},
        {"put": {"key": "c", "cells": [{"column": "n:tag", "value": "blue"}]}},
        {"delete": {"key": "a\\x00b", "columns": ["n:text"]}}]}),
    );
    assert_eq!((status, result["rows"].as_u64()), (200, Some(3)), "{result}");
    let (_, row) = s.get_json("/tables/notes/rows/a%00b");
    assert_eq!(row["cells"].as_array().unwrap().len(), 1, "text deleted, tag kept: {row}");
    // No mutations: nothing written, and the table must exist all the same
    // (it answered 200 for any name before).
    let (status, result) = post(&s, "/tables/notes/mutate", &json!({"mutations": []}));
    assert_eq!((status, result["rows"].as_u64()), (200, Some(0)), "{result}");
    let (status, result) = post(&s, "/tables/nowhere/mutate", &json!({"mutations": []}));
    assert_eq!((status, result["error"]["code"].as_str()), (404, Some("table_not_found")), "{result}");

    // The same bytes in base64 and hex (encoding= applies to the whole
    // request and response).
    let (status, _) = put(
        &s,
        "/tables/notes/rows/zz?encoding=hex",
        &json!({"cells": [
        {"column": "6e3a6869", "value": "00ff41", "timestamp": 9}]}),
    );
    assert_eq!(status, 200);
    let (_, row) = s.get_json("/tables/notes/rows/zz?encoding=base64&columns=bjpoaQ==");
    assert_eq!(row["key"], "eno=");
    assert_eq!(row["cells"], json!([{"column": "bjpoaQ==", "timestamp": 9, "value": "AP9B"}]), "{row}");
    let (_, row) = s.get_json("/tables/notes/rows/zz?columns=n:hi");
    assert_eq!(row["cells"][0]["value"], "\\x00\\xffA");
    assert_eq!(s.get_json("/tables/notes/rows/zz?encoding=rot13").0, 400);
    assert_eq!(s.get_json("/tables/notes/scan?encoding=hex&start=zz").0, 400, "zz is not hex");
    assert_eq!(s.request("DELETE", "/tables/notes/rows/zz", None).0, 200);

    // Scans and counts.
    let (_, page) = s.get_json("/tables/notes/scan?limit=2");
    assert_eq!(keys(&page, "rows"), ["a\\x00b", "b"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, page) = s.get_json(&format!("/tables/notes/scan?limit=2&cursor={}", enc(cursor)));
    assert_eq!((keys(&page, "rows"), &page["next_cursor"]), (vec!["c".to_owned()], &Value::Null));
    let (_, page) = post(
        &s,
        "/tables/notes/scan",
        &json!({"filter": "SingleColumnValueFilter('n', 'tag', =, 'binary:red')", "columns": ["n"]}),
    );
    assert_eq!(keys(&page, "rows"), ["a\\x00b", "b"], "{page}");
    let (_, count) = s.get_json("/tables/notes/count?reverse=true");
    assert_eq!(count["count"], 3);

    // Secondary indexes (the embedded store's).
    if !over_hbase() {
        let (_, found) = s.get_json("/tables/notes/indexes/by_tag?eq=red");
        assert_eq!(keys(&found, "keys"), ["a\\x00b", "b"]);
        let (_, found) = s.get_json("/tables/notes/indexes/by_tag?eq=red&rows=true&limit=1");
        assert_eq!(found["rows"][0]["cells"][0]["value"], "red");
        assert!(found["next_cursor"].is_string());
        let (_, both) = s.get_json("/tables/notes/indexes:intersect?q=by_tag:eq:red&q=by_tag:prefix:r");
        assert_eq!(keys(&both, "keys"), ["a\\x00b", "b"]);
        let (_, any) =
            s.get_json("/tables/notes/indexes:intersect?q=by_tag:eq:red&q=by_tag:eq:blue&op=union");
        assert_eq!(keys(&any, "keys"), ["a\\x00b", "b", "c"]);
    }

    // Deletes.
    assert_eq!(s.request("DELETE", "/tables/notes/rows/b", None).0, 200);
    assert_eq!(s.get_json("/tables/notes/rows/b").0, 404);

    // Search, paged through its cursor, with projection and highlights.
    let (status, first) = s.get_json(
        "/tables/mail/search?q=enron&user=cash-m&sort=newest&limit=3&columns=m:subject&highlight=true",
    );
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["hits"].as_array().unwrap().len(), 3);
    let total = first["total"].as_u64().unwrap();
    assert!(total > 3);
    for hit in first["hits"].as_array().unwrap() {
        assert_eq!(hit["key_fields"]["user"], "cash-m");
        // A document: the search fields, partition and date, and the
        // column asked for (already a search field: once).
        let doc = hit["document"].as_object().unwrap();
        assert!(doc.contains_key("subject") && doc["user"] == "cash-m" && doc.contains_key("date"), "{hit}");
        let marked =
            hit["highlights"].as_object().unwrap().values().any(|v| v.as_str().unwrap().contains("<em>"));
        assert!(marked, "{hit}");
    }
    let mut seen = keys(&first, "hits");
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    while let Some(c) = cursor {
        let (_, page) =
            s.get_json(&format!("/tables/mail/search?q=enron&user=cash-m&sort=newest&limit=3&cursor={c}"));
        seen.extend(keys(&page, "hits"));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen.len() as u64, total);
    let (_, kw) = s.get_json(&format!("/tables/mail/keywords?user=cash-m&terms=enron&limit={total}"));
    assert_eq!(keys(&kw, "keys"), seen, "search newest-first equals the keyword rows");

    // Reindex job, then its progress until done.
    let (status, job) = post(&s, "/tables/mail/reindex?mode=full", &json!({}));
    assert_eq!(status, 202);
    // A second one while the first runs is refused, naming the first.
    let (status, second) = post(&s, "/tables/mail/reindex?mode=full", &json!({}));
    if status == 409 {
        assert!(
            second["error"]["message"].as_str().unwrap().contains(job["job"].as_str().unwrap()),
            "{second}"
        );
    } else {
        // The first had already finished: then the second is a new job.
        assert_eq!(status, 202, "{second}");
        wait_for_job(&s, second["job"].as_str().unwrap());
    }
    let state = wait_for_job(&s, job["job"].as_str().unwrap());
    assert_eq!(state["state"], "done", "{state}");
    assert!(state["report"]["generation"].as_u64() >= Some(2), "{state}");
    let (_, page) = s.get_json("/tables/mail/search?q=enron&limit=1");
    let serving = page["generation"].as_u64().unwrap();
    assert!(serving >= 2, "{page}");

    // Metrics and the OpenAPI document.
    let (_, metrics) = s.request("GET", "/metrics", None);
    assert!(metrics.contains("rowsearch_http_requests_total{route=\"search\",status=\"200\"}"), "{metrics}");
    for taken in ["awake", "woken"] {
        assert!(metrics.contains(&format!("rowsearch_work_jobs_total{{taken=\"{taken}\"}}")), "{metrics}");
    }
    assert!(
        metrics.contains(&format!("rowsearch_index_generation{{table=\"mail\"}} {serving}")),
        "{metrics}"
    );
    let (_, api) = s.get_json("/openapi.json");
    for path in ["/tables/{table}/search", "/tables/{table}/rows/{key}", "/jobs/{id}", "/health"] {
        assert!(api["paths"][path].is_object(), "{path} missing from openapi.json");
    }

    assert_eq!(s.request("DELETE", "/tables/notes", None).0, 204);
    assert_eq!(s.get_json("/tables/notes").0, 404);
}

#[test]
fn http_stale_keys_are_dropped_and_counted() {
    let t = indexed_fixture();
    // No background refresh, and eventual searches: the index keeps the
    // deleted row.
    let s = t.serve(&["serve", "--refresh-ms", "0"]);
    let (_, page) = s.get_json("/tables/mail/search?q=enron&user=cash-m&sort=newest&limit=2");
    let gone = page["hits"][0]["key"].as_str().unwrap().to_owned();
    let total = page["total"].as_u64().unwrap();
    let path_key: String =
        rowsearch::wire::decode(&gone).unwrap().iter().map(|b| format!("%{b:02X}")).collect();
    assert_eq!(s.request("DELETE", &format!("/tables/mail/rows/{path_key}"), None).0, 200);
    // The index still has it (no refresh yet): the hit is dropped, not returned.
    let (_, page) =
        s.get_json("/tables/mail/search?q=enron&user=cash-m&sort=newest&limit=2&consistency=eventual");
    assert_eq!(page["total"].as_u64(), Some(total));
    assert!(!keys(&page, "hits").contains(&gone));
    assert_eq!(page["hits"].as_array().unwrap().len(), 1);
    let (_, metrics) = s.request("GET", "/metrics", None);
    assert!(metrics.contains("rowsearch_search_stale_hits_dropped_total 1"), "{metrics}");
}

#[test]
fn http_bad_input_gets_a_4xx_and_the_json_error_shape() {
    let (_t, s) = mail_server();
    let long_key = "k".repeat(200);
    let cases: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        ("PUT", "/tables/t".into(), Some("{not json".into()), 400, "bad_request"),
        ("PUT", "/tables/t".into(), Some(r#"{"families": "m"}"#.into()), 400, "bad_request"),
        ("GET", "/tables/nope/rows/a".into(), None, 404, "table_not_found"),
        ("GET", "/tables/mail/rows/nope".into(), None, 404, "row_not_found"),
        (
            "PUT",
            "/tables/mail/rows/a".into(),
            Some(r#"{"cells":[{"column":"zz:q","value":"v"}]}"#.into()),
            422,
            "unknown_family",
        ),
        (
            "PUT",
            "/tables/mail/rows/a".into(),
            Some(r#"{"cells":[{"column":"m:q","value":7}]}"#.into()),
            400,
            "bad_request",
        ),
        (
            "PUT",
            format!("/tables/mail/rows/{long_key}"),
            Some(r#"{"cells":[{"column":"m:q","value":"v"}]}"#.into()),
            422,
            "invalid_key",
        ),
        ("GET", "/tables/mail/rows/a%zz".into(), None, 400, "bad_request"),
        ("GET", "/tables/mail/indexes/nope?eq=x".into(), None, 404, "index_not_found"),
        ("GET", "/tables/mail/scan?filter=PrefixFilter(".into(), None, 400, "invalid_filter"),
        ("GET", "/tables/mail/scan?limit=ten".into(), None, 400, "bad_request"),
        ("GET", "/tables/mail/search?q=subject%3A(".into(), None, 400, "invalid_query"),
        ("GET", "/tables/mail/search?q=gas&sort=sideways".into(), None, 400, "bad_request"),
        ("GET", "/tables/mail/search?q=gas&cursor=nonsense".into(), None, 400, "bad_request"),
        ("GET", "/tables/mail/search?q=gas&limit=100000".into(), None, 400, "bad_request"),
        ("GET", "/tables/..%2F..%2Fetc/rows/a".into(), None, 404, "table_not_found"),
        (
            "PUT",
            "/tables/..%2F..%2Fetc".into(),
            Some(r#"{"families":[{"name":"m"}]}"#.into()),
            400,
            "invalid_name",
        ),
        ("GET", "/jobs/nope".into(), None, 404, "job_not_found"),
        ("GET", "/no/such/route".into(), None, 404, "not_found"),
        ("POST", "/health".into(), Some("{}".into()), 405, "method_not_allowed"),
    ];
    for (method, path, body, want_status, want_code) in cases {
        let (status, text) = s.request(method, &path, body.as_deref());
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"));
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (want_status, Some(want_code)),
            "{method} {path}: {text}"
        );
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert_eq!(s.get_json("/health").0, 200, "still serving after {method} {path}");
    }
    // A filter error says where.
    let (_, v) = s.get_json("/tables/mail/scan?filter=PrefixFilter(%27a%27)%20AND%20");
    assert!(v["error"]["message"].as_str().unwrap().contains("at byte 22"), "{v}");
    // Wrong content type.
    let (status, _) = s.raw("PUT", "/tables/t", &[("Content-Type", "text/plain")], Some(b"{}"));
    assert_eq!(status, 415);
    // A 100 MB body is refused from its length, before it is read.
    let (status, body) = s.raw("PUT", "/tables/mail/rows/a", &[], Some(&vec![b' '; 100 << 20]));
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    // A searchable table is searchable from its creation: no reindex.
    assert_eq!(
        put(
            &s,
            "/tables/s2",
            &json!({"families": [{"name": "m"}],
        "search": {"fields": [{"column": "m:t", "name": "t", "type": "text"}]}})
        )
        .0,
        201
    );
    let (status, v) = s.get_json("/tables/s2/search?q=x");
    assert_eq!((status, v["total"].as_u64()), (200, Some(0)), "{v}");
}

#[test]
fn http_sigterm_shuts_down_cleanly() {
    let (_t, s) = mail_server();
    assert_eq!(s.get_json("/health").0, 200);
    assert!(s.terminate().success());
}

#[test]
fn demo_serves_and_its_printed_curl_commands_work() {
    if embedded_only("the demo (it runs on the embedded store: `demo --hbase` is refused)") {
        return;
    }
    let t = dir();
    let mut s = t.serve(&["demo", "--rows", "100"]);
    let lines = s.read_lines(5);
    // The page's address first, and the page is there.
    assert_eq!(lines[0], format!("search page: http://{}/", s.addr));
    let (status, page) = s.request("GET", "/", None);
    assert_eq!(status, 200);
    assert!(page.starts_with("<!doctype html>") && page.contains("data-testid=\"search-input\""), "{page}");
    assert_eq!(lines[1], "Try:");
    for line in &lines[2..] {
        let command = line.trim();
        assert!(command.starts_with("curl -s '"), "{command}");
        let out = std::process::Command::new("sh").arg("-c").arg(command).output().expect("run curl");
        assert!(out.status.success(), "{command}");
        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON answer");
        let found = v["hits"].as_array().or(v["keys"].as_array()).map_or(0, Vec::len);
        assert!(found > 0, "{command} found nothing: {v}");
    }
}

#[test]
fn docs_curl_commands_run_as_written() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/http.md"))
            .unwrap();
    let section = readme.split("## HTTP").nth(1).unwrap().split("```").nth(1).unwrap();
    let (_t, s) = mail_server();
    let mut ran = 0;
    for line in section.lines().filter(|l| l.starts_with("curl ")) {
        // As written, on the test server's port; the comment stays a comment.
        let command = line.replace("localhost:7311", &s.addr);
        let out = std::process::Command::new("sh").arg("-c").arg(&command).output().expect("run curl");
        assert!(out.status.success(), "{command}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if line.contains("/metrics") {
            assert!(text.contains("rowsearch_http_requests_total"), "{command}: {text}");
        } else {
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{command}: {e}: {text}"));
            assert!(v.get("error").is_none(), "{command}: {v}");
        }
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} curl commands found");
}

#[test]
fn http_32_clients_search_while_an_ingest_and_a_full_reindex_run() {
    let (t, s) = mail_server();
    // 600 new messages that all say "enron", for the concurrent ingest.
    let mbox = t.dir.path().join("synthetic.mbox");
    let mut text = String::new();
    for i in 0..600 {
        text.push_str(&format!(
            "From synth@example.com Mon Jan  1 00:00:00 2001\nMessage-ID: <synth-{i}@example.com>\n\
             Date: Mon, 1 Jan 2001 00:{:02}:00 +0000\nFrom: synth@example.com\nSubject: enron note {i}\n\nenron body {i}\n\n",
            i % 60
        ));
    }
    std::fs::write(&mbox, text).unwrap();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Clients that have had their first answer (the work starts once all
    // have: on a loaded machine a thread's first search can come late).
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let addr = s.addr.clone();
    let clients: Vec<_> = (0..32)
        .map(|c| {
            let (stop, addr) = (std::sync::Arc::clone(&stop), addr.clone());
            let answered = std::sync::Arc::clone(&answered);
            std::thread::spawn(move || {
                let mut answers: Vec<(u64, u64)> = Vec::new();
                let path = if c % 2 == 0 {
                    "/tables/mail/search?q=enron&limit=5"
                } else {
                    "/tables/mail/search?q=enron&sort=newest&limit=5"
                };
                loop {
                    let last = stop.load(std::sync::atomic::Ordering::SeqCst);
                    let response = rowsearch_tests::raw_request(&addr, "GET", path, &[], None);
                    let (status, body) = rowsearch_tests::parse_response(&response);
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    assert_eq!(status, 200, "client {c}: {v}");
                    answers.push((v["generation"].as_u64().unwrap(), v["total"].as_u64().unwrap()));
                    if answers.len() == 1 {
                        answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    if last {
                        return answers;
                    }
                }
            })
        })
        .collect();
    let waiting = std::time::Instant::now();
    while answered.load(std::sync::atomic::Ordering::SeqCst) < 32 {
        assert!(
            waiting.elapsed() < std::time::Duration::from_secs(120),
            "the clients' first searches never came"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }

    let (status, job) = post(&s, "/tables/mail/reindex?mode=full", &json!({}));
    assert_eq!(status, 202);
    let out = t.run(&["ingest", mbox.to_str().unwrap(), "--user", "synth"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let state = wait_for_job(&s, job["job"].as_str().unwrap());
    assert_eq!(state["state"], "done", "{state}");
    // And one more generation that surely holds the new mail.
    let (_, job) = post(&s, "/tables/mail/reindex?mode=full", &json!({}));
    let state = wait_for_job(&s, job["job"].as_str().unwrap());
    assert_eq!(state["state"], "done", "{state}");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);

    // Only inserts happen and every search reflects every write made
    // before it began: each client's totals never go down, across
    // refreshes and generation switches alike.
    let mut per_generation: std::collections::BTreeMap<u64, std::collections::BTreeSet<u64>> =
        Default::default();
    let mut requests = 0;
    for (c, client) in clients.into_iter().enumerate() {
        let answers = client.join().expect("a client failed");
        for pair in answers.windows(2) {
            assert!(pair[1].1 >= pair[0].1, "client {c}: the total went down: {answers:?}");
        }
        for (generation, total) in answers {
            per_generation.entry(generation).or_default().insert(total);
            requests += 1;
        }
    }
    assert!(per_generation.contains_key(&3), "the last generation served: {per_generation:?}");
    let first = per_generation.values().next().and_then(|t| t.first().copied()).unwrap();
    let last = per_generation[&3].last().copied().unwrap();
    assert!(last >= first + 600, "{per_generation:?}");
    println!("{requests} searches over generations {per_generation:?}");
}

#[test]
fn http_search_equals_keyword_lookups_for_random_terms() {
    let (_t, s) = mail_server();
    let (_, page) = s.get_json("/tables/mail/scan?columns=m:subject,m:from&limit=400");
    let mut pairs: Vec<(String, String)> = Vec::new();
    for row in page["rows"].as_array().unwrap() {
        let user = row["key_fields"]["user"].as_str().unwrap().to_owned();
        for cell in row["cells"].as_array().unwrap() {
            for (term, _) in rowsearch::indexer::TextAnalyzer.tokens(cell["value"].as_str().unwrap()) {
                pairs.push((user.clone(), term));
            }
        }
    }
    let mut rng = Rng(0xfeed_f00d);
    for _ in 0..60 {
        let (user, term) = &pairs[rng.below(pairs.len())];
        let (status, found) = s.get_json(&format!(
            "/tables/mail/search?q={}&user={user}&sort=newest&limit=1000",
            enc(&format!("\"{term}\""))
        ));
        assert_eq!(status, 200, "{term}: {found}");
        let (_, kw) =
            s.get_json(&format!("/tables/mail/keywords?user={user}&terms={}&limit=1000", enc(term)));
        let mut a = keys(&found, "hits");
        let mut b = keys(&kw, "keys");
        assert!(!b.is_empty(), "{user} {term}: the term comes from one of the user's rows");
        a.sort();
        b.sort();
        assert_eq!(a, b, "{user} {term}");
        assert_eq!(found["total"].as_u64(), Some(b.len() as u64));
    }
}

#[test]
fn http_a_slow_client_does_not_hold_up_the_others() {
    use std::io::Write;
    let (_t, s) = mail_server();
    // Half a request line, then nothing.
    let mut slow = std::net::TcpStream::connect(&s.addr).unwrap();
    slow.write_all(b"GET /tables/mail/search?q=ga").unwrap();
    for _ in 0..20 {
        assert_eq!(s.get_json("/tables/mail/search?q=gas&limit=1").0, 200);
    }
    // The slow one still gets its answer when it finishes.
    slow.write_all(b"s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = Vec::new();
    std::io::Read::read_to_end(&mut slow, &mut response).unwrap();
    assert_eq!(rowsearch_tests::parse_response(&response).0, 200);
}

#[test]
fn http_a_client_that_never_finishes_its_headers_is_disconnected() {
    use std::io::{Read, Write};
    let t = dir();
    let s = t.serve(&["serve", "--create", "--header-timeout-ms", "300"]);
    let mut stalled = std::net::TcpStream::connect(&s.addr).unwrap();
    stalled.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    // The read ends when the server closes the connection; the socket's own
    // timeout only bounds a failing test.
    stalled.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let started = std::time::Instant::now();
    let mut buf = Vec::new();
    let result = stalled.read_to_end(&mut buf);
    let closed = match &result {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "not closed by the server: {result:?} after {:?}", started.elapsed());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "closed only after {:?}",
        started.elapsed()
    );
    assert_eq!(s.get_json("/health").0, 200, "others are still served");
}

/// Random query and filter strings (bytes, percent-encoded) never get a
/// 5xx or break the server. `ROWSEARCH_FUZZ_SECONDS` (default 3).
#[test]
fn http_fuzz_query_and_filter_parameters() {
    let (_t, s) = mail_server();
    let seconds: u64 = std::env::var("ROWSEARCH_FUZZ_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    println!("fuzz seed {seed}, {seconds} s");
    let mut rng = Rng(seed);
    let pieces: [&[u8]; 24] = [
        b"gas",
        b"\"",
        b"(",
        b")",
        b":",
        b"subject:",
        b"date:[",
        b" TO ",
        b"]",
        b"-",
        b"+",
        b"OR",
        b"AND",
        b"NOT",
        b"*",
        b"'",
        b"PrefixFilter(",
        b"ValueFilter(=,",
        b"'binary:",
        b"'regexstring:",
        b"SKIP ",
        b"WHILE ",
        b"\\x00",
        b"\xff",
    ];
    let started = std::time::Instant::now();
    let mut requests = 0u64;
    while started.elapsed().as_secs() < seconds {
        let mut text = Vec::new();
        for _ in 0..rng.below(8) + 1 {
            if rng.below(3) == 0 {
                text.push(rng.next_u64() as u8);
            } else {
                text.extend_from_slice(pieces[rng.below(pieces.len())]);
            }
        }
        let encoded: String = text.iter().map(|b| format!("%{b:02X}")).collect();
        let path = match rng.below(4) {
            0 => format!("/tables/mail/search?q={encoded}&sort=newest"),
            1 => format!("/tables/mail/search?q={encoded}&user=cash-m&highlight=true"),
            2 => format!("/tables/mail/scan?limit=3&filter={encoded}"),
            _ => format!("/tables/mail/keywords?user=cash-m&terms={encoded}"),
        };
        let (status, body) = s.request("GET", &path, None);
        assert!(status < 500, "{path}: {status} {body}");
        assert!(status == 200 || body.contains("\"error\""), "{path}: {status} {body}");
        requests += 1;
    }
    assert_eq!(s.get_json("/health").0, 200);
    println!("{requests} requests, no 5xx");
}

/// Found by the fuzzer: queries the schema cannot run were 500s, and an
/// excluded phrase tripped a tantivy debug assertion.
#[test]
fn regression_fuzz_queries_that_were_500s() {
    let (_t, s) = mail_server();
    for q in ["NOTSKIP%20subject%3A%2A", "gassubject%3A%2A"] {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q={q}&sort=newest"));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query")), "{q}: {v}");
    }
    // An excluded phrase beside a term: 200 (tantivy's debug assertion on
    // it is off, see Cargo.toml).
    // (The fuzzer's bytes %BF and %FF are not UTF-8: since issue 19 a text
    // parameter with them is a 400, not decoded as U+FFFD; the query the
    // server used to see, with U+FFFD written out, stays a 200.)
    let (status, v) =
        s.get_json("/tables/mail/search?q=%20%54%4F%20%2D%EF%BF%BD%4E%4F%54%EF%BF%BD%4F%52&sort=newest");
    assert_eq!(status, 200, "{v}");
    let (status, v) = s.get_json("/tables/mail/search?q=%20%54%4F%20%2D%BF%4E%4F%54%FF%4F%52&sort=newest");
    assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query_string")), "{v}");
}

#[test]
fn http_search_cursors_refuse_a_changed_index() {
    let (t, s) = mail_server();
    let path = "/tables/mail/search?q=enron&user=cash-m&sort=newest&limit=2";
    let (_, first) = s.get_json(path);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    // Same index: the cursor works, also in another server process.
    let (status, second) = s.get_json(&format!("{path}&cursor={cursor}"));
    assert_eq!(status, 200);
    let other = t.serve(&["serve", "--create"]);
    assert_eq!(other.get_json(&format!("{path}&cursor={cursor}")).0, 200);
    drop(other);
    // The index changes (a row deleted, an incremental commit): this
    // server keeps the walk's snapshot, so the next page is the one it
    // was before the change.
    let key = first["hits"][0]["key"].as_str().unwrap();
    let path_key: String =
        rowsearch::wire::decode(key).unwrap().iter().map(|b| format!("%{b:02X}")).collect();
    assert_eq!(s.request("DELETE", &format!("/tables/mail/rows/{path_key}"), None).0, 200);
    let (status, job) = post(&s, "/tables/mail/reindex?mode=incremental", &json!({}));
    assert_eq!(status, 202);
    assert_eq!(wait_for_job(&s, job["job"].as_str().unwrap())["state"], "done");
    let (status, again) = s.get_json(&format!("{path}&cursor={cursor}"));
    assert_eq!(status, 200, "{again}");
    assert_eq!(keys(&again, "hits"), keys(&second, "hits"), "the walk's snapshot");
    // A process that does not keep the walk, with the index changed: 409.
    let other = t.serve(&["serve"]);
    let (status, v) = other.get_json(&format!("{path}&cursor={cursor}"));
    assert_eq!((status, v["error"]["code"].as_str()), (409, Some("stale_cursor")), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("restart the walk"));
    assert_eq!(s.get_json(&format!("{path}&cursor=c1.1.zz.2")).0, 400, "a malformed cursor");
}

#[test]
fn http_one_worker_serves_many_clients_in_turn() {
    let t = indexed_fixture();
    // Zero workers is a usage error, named.
    let out = t.run(&["serve", "--workers", "0", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--workers"), "{}", stderr(&out));
    // One worker thread: 8 clients at once all get their answers, each the
    // answer one client alone gets.
    let s = t.serve(&["serve", "--create", "--workers", "1"]);
    let queries = ["gas", "meeting", "price", "enron", "power", "energy", "deal", "market"];
    let alone: Vec<Value> =
        queries.iter().map(|q| s.get_json(&format!("/tables/mail/search?q={q}&limit=5")).1).collect();
    std::thread::scope(|scope| {
        for (q, want) in queries.iter().zip(&alone) {
            let s = &s;
            scope.spawn(move || {
                for _ in 0..15 {
                    let (status, body) = s.get_json(&format!("/tables/mail/search?q={q}&limit=5"));
                    assert_eq!(status, 200, "{body}");
                    assert_eq!(&body["hits"], &want["hits"], "{q}");
                    assert_eq!(&body["total"], &want["total"], "{q}");
                }
            });
        }
    });
    assert!(alone.iter().any(|v| v["total"].as_u64() > Some(0)), "{alone:?}");
}

#[test]
fn http_idle_spin_is_set_from_the_command_line_and_counted() {
    let t = indexed_fixture();
    // Searches, one after another, on one worker; then the counts.
    let searched = |idle_spin_us: &str, rounds: usize| {
        let s = t.serve(&["serve", "--create", "--workers", "1", "--idle-spin-us", idle_spin_us]);
        for _ in 0..rounds {
            for q in ["gas", "meeting", "price"] {
                let (status, body) = s.get_json(&format!("/tables/mail/search?q={q}&limit=5"));
                assert_eq!(status, 200, "{body}");
            }
        }
        let (_, text) = s.request("GET", "/metrics", None);
        let count = |taken: &str| {
            let line = format!("rowsearch_work_jobs_total{{taken=\"{taken}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(line.as_str()))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {line:?} in {text}"))
        };
        (count("awake"), count("woken"))
    };
    // One worker that looks for work for a minute after each job: it never
    // sleeps, whatever the pauses between requests. The three searches, and
    // the metrics request itself once counted.
    let (awake, woken) = searched("60000000", 1);
    assert!(awake >= 3, "awake {awake}");
    assert_eq!(woken, 0);
    // Turned off: the worker sleeps as soon as it finds nothing queued,
    // and each search comes only after the one before was answered. (A
    // search can still find the worker not yet back at the queue when the
    // machine is loaded and be counted awake; of 30, some are woken.)
    let (_, woken) = searched("0", 10);
    assert!(woken >= 1, "woken {woken}");
}
