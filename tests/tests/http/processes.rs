//! One data directory, several processes (issue 19, "one truth"): `serve`
//! and the CLI, and two servers, through every kind of schema change.
//! Each process must see the others' changes at its next transaction and
//! never write under a stale schema.

use rowsearch_tests::{TestDir, stderr, stdout};
use serde_json::{Value, json};

use super::{post, put};

fn cli_ok(t: &TestDir, args: &[&str]) -> String {
    let out = t.run(args);
    assert!(out.status.success(), "{args:?}: {}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

fn code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["error"]["code"].as_str().unwrap_or("").to_owned()
}

fn put_row(s: &rowsearch_tests::Server, table: &str, key: &str, column: &str, value: &str) -> (u16, String) {
    let body = json!({"cells": [{"column": column, "value": value}]}).to_string();
    s.request("PUT", &format!("/tables/{table}/rows/{key}"), Some(&body))
}

#[test]
fn serve_and_the_cli_share_one_catalog_through_every_schema_change() {
    if super::embedded_only(
        "secondary indexes and the CLI's `scan` (the catalog shared over HBase: `two_servers_on_one_directory_agree_on_every_schema`)",
    ) {
        return;
    }
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);

    // A table the CLI creates is served at once.
    cli_ok(&t, &["create-table", "notes", "--schema", r#"{"families":[{"name":"n"}]}"#]);
    for (key, tag) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        assert_eq!(put_row(&s, "notes", key, "n:tag", tag).0, 200);
    }

    // An index the CLI adds is maintained by the server's next writes.
    cli_ok(&t, &["index", "add", "notes", "by_tag", "--columns", "n:tag"]);
    assert_eq!(put_row(&s, "notes", "d", "n:tag", "red").0, 200);
    assert_eq!(put_row(&s, "notes", "a", "n:tag", "green").0, 200, "moves a between entries");
    assert_eq!(s.request("DELETE", "/tables/notes/rows/c", None).0, 200);
    let verify = t.run(&["index", "verify", "notes", "by_tag"]);
    assert!(verify.status.success(), "verify after the server's writes: {}", stdout(&verify));
    let (status, found) = s.get_json("/tables/notes/indexes/by_tag?eq=red");
    assert_eq!(status, 200, "{found}");
    let keys: Vec<&str> =
        found["keys"].as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["d"]);

    // An index the CLI drops is gone for the server.
    cli_ok(&t, &["index", "drop", "notes", "by_tag"]);
    let (status, body) = s.request("GET", "/tables/notes/indexes/by_tag?eq=red", None);
    assert_eq!((status, code(&body).as_str()), (404, "index_not_found"), "{body}");
    assert_eq!(put_row(&s, "notes", "e", "n:tag", "red").0, 200);

    // A table the CLI drops refuses the server's writes, and created again
    // elsewhere (with another family) it is a new table: the old rows do
    // not come back and the old family is unknown.
    cli_ok(&t, &["drop-table", "notes"]);
    let (status, body) = put_row(&s, "notes", "f", "n:tag", "red");
    assert_eq!((status, code(&body).as_str()), (404, "table_not_found"), "{body}");
    cli_ok(&t, &["create-table", "notes", "--schema", r#"{"families":[{"name":"m"}]}"#]);
    let (status, body) = put_row(&s, "notes", "f", "n:tag", "red");
    assert_eq!((status, code(&body).as_str()), (422, "unknown_family"), "{body}");
    let (_, page) = s.get_json("/tables/notes/scan");
    assert_eq!(page["rows"], json!([]), "nothing of the dropped table reappears");
    assert_eq!(put_row(&s, "notes", "g", "m:x", "1").0, 200);
    let rows = cli_ok(&t, &["scan", "notes"]);
    assert_eq!(rows.lines().count(), 1, "{rows}");

    // What the server creates, the CLI sees.
    assert_eq!(put(&s, "/tables/fresh", &json!({"families": [{"name": "f"}]})).0, 201);
    assert_eq!(cli_ok(&t, &["tables"]).lines().collect::<Vec<_>>(), ["fresh", "notes"]);
}

#[test]
fn two_servers_on_one_directory_agree_on_every_schema() {
    let t = super::dir();
    let (one, two) = (t.serve(&["serve", "--create"]), t.serve(&["serve", "--create"]));
    assert_eq!(put(&one, "/tables/x", &json!({"families": [{"name": "a"}]})).0, 201);
    // The second server sees the first one's table: the same schema is
    // "exists alike", another one a conflict; never two truths.
    assert_eq!(put(&two, "/tables/x", &json!({"families": [{"name": "a"}]})).0, 200);
    let (status, err) = put(&two, "/tables/x", &json!({"families": [{"name": "b"}]}));
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("schema_conflict")));
    // Writes through either are read through the other.
    let (status, _) = post(
        &two,
        "/tables/x/mutate",
        &json!({"mutations": [{"put": {"key": "k2", "cells": [{"column": "a:q", "value": "2"}]}}]}),
    );
    assert_eq!(status, 200);
    assert_eq!(put_row(&one, "x", "k1", "a:q", "1").0, 200);
    for server in [&one, &two] {
        let (_, page) = server.get_json("/tables/x/scan");
        assert_eq!(page["rows"].as_array().map(Vec::len), Some(2), "{page}");
    }
    // A drop through one is seen by the other at once.
    assert_eq!(one.request("DELETE", "/tables/x", None).0, 204);
    let (status, body) = put_row(&two, "x", "k3", "a:q", "3");
    assert_eq!((status, code(&body).as_str()), (404, "table_not_found"), "{body}");
}

/// Index admin over HTTP: an index added to a table with rows is built by
/// a job while writes go on, lookups answer 409 `index_building` until it
/// is ready, and a build another process left unfinished is picked up.
#[test]
fn indexes_are_added_built_verified_rebuilt_and_dropped_over_http() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    assert_eq!(put(&s, "/tables/notes", &json!({"families": [{"name": "n"}]})).0, 201);
    let mutations: Vec<Value> = (0..500)
        .map(|i| json!({"put": {"key": format!("k{i:04}"), "cells": [{"column": "n:tag", "value": format!("t{}", i % 7)}]}}))
        .collect();
    assert_eq!(post(&s, &super::mutate_many(Some("notes")), &json!({"mutations": mutations})).0, 200);

    // Another process starts a build and stops before it is done: the
    // server sees the index, maintains it, and refuses lookups.
    {
        let by_tag = rowsearch::store::IndexSchema::new("by_tag", ["n:tag"]);
        match t.hbase() {
            None => {
                let store = rowsearch::indexer::open_store(t.data()).unwrap();
                assert!(store.start_index("notes", by_tag).unwrap());
                store.build_index_step("notes", "by_tag", 100).unwrap();
            }
            // Over HBase the build is one walk of the rows: started, not run.
            Some(hbase) => {
                let source = rowsearch::hbase::HbaseSource::new(
                    hbase,
                    std::sync::Arc::new(rowsearch::indexer::TextAnalyzer),
                );
                assert!(rowsearch::store::TableStore::start_index(&source, "notes", by_tag).unwrap());
            }
        }
    }
    // (Over HBase another process's index is seen within the catalog
    // cache, a second.)
    let seen = std::time::Instant::now();
    let listed = loop {
        let (_, listed) = s.get_json("/tables/notes/indexes");
        if listed["indexes"][0]["state"] == "building" || seen.elapsed() > std::time::Duration::from_secs(5) {
            break listed;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(listed["indexes"][0]["state"], "building", "{listed}");
    let (status, body) = s.request("GET", "/tables/notes/indexes/by_tag?eq=t3", None);
    assert_eq!((status, code(&body).as_str()), (409, "index_building"), "{body}");
    assert_eq!(put_row(&s, "notes", "k9999", "n:tag", "t3").0, 200, "writes go on during the build");

    // A server starting on the directory resumes the unfinished build as
    // its first job; the other server sees the index ready.
    let second = t.serve(&["serve", "--create"]);
    let job = super::wait_for_job(&second, "j1");
    assert_eq!((job["state"].as_str(), job["index"].as_str()), (Some("done"), Some("by_tag")), "{job}");
    drop(second);
    let (status, found) = s.get_json("/tables/notes/indexes/by_tag?eq=t3&limit=1000");
    assert_eq!(status, 200, "{found}");
    // i % 7 == 3 for 71 of the 500 rows, and the row written during the build.
    assert_eq!(found["keys"].as_array().unwrap().len(), 72, "{found}");
    let (_, report) = s.get_json("/tables/notes/indexes/by_tag/verify");
    assert_eq!((report["clean"].as_bool(), report["entries"].as_u64()), (Some(true), Some(501)), "{report}");
    let (_, listed) = s.get_json("/tables/notes/indexes");
    assert_eq!(
        listed["indexes"],
        json!([{"name": "by_tag", "columns": ["n:tag"], "state": "ready", "entries": 501}])
    );

    // A new index is built by a job.
    let (status, started) = put(&s, "/tables/notes/indexes/by_tag2", &json!({"columns": ["n:tag"]}));
    assert_eq!(status, 202, "{started}");
    assert_eq!(super::wait_for_job(&s, started["job"].as_str().unwrap())["state"], "done");
    assert_eq!(s.get_json("/tables/notes/indexes/by_tag2?eq=t3&limit=1000").1["keys"], found["keys"]);
    assert_eq!(s.request("DELETE", "/tables/notes/indexes/by_tag2", None).0, 204);

    // Ready and identical: 200; other columns: 409; bad body: 400.
    assert_eq!(put(&s, "/tables/notes/indexes/by_tag", &json!({"columns": ["n:tag"]})).0, 200);
    let (status, err) = put(&s, "/tables/notes/indexes/by_tag", &json!({"columns": ["n:other"]}));
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("index_conflict")), "{err}");
    let (status, err) = put(&s, "/tables/notes/indexes/by_x", &json!({"colums": ["n:x"]}));
    assert_eq!(status, 400, "{err}");

    // Rebuild is a job too; the result verifies.
    let (status, started) = post(&s, "/tables/notes/indexes/by_tag/rebuild", &json!({}));
    assert_eq!(status, 202, "{started}");
    assert_eq!(super::wait_for_job(&s, started["job"].as_str().unwrap())["state"], "done");
    assert_eq!(s.get_json("/tables/notes/indexes/by_tag/verify").1["clean"], true);
    let verify = t.run(&["index", "verify", "notes", "by_tag"]);
    assert!(verify.status.success(), "{}", stdout(&verify));

    // Dropped: gone for lookups and the list.
    assert_eq!(s.request("DELETE", "/tables/notes/indexes/by_tag", None).0, 204);
    let (status, body) = s.request("GET", "/tables/notes/indexes/by_tag?eq=t3", None);
    assert_eq!((status, code(&body).as_str()), (404, "index_not_found"), "{body}");
    assert_eq!(s.get_json("/tables/notes/indexes").1["indexes"], json!([]));
}

/// The binary turns transparent huge pages off for itself (alloc.rs): its
/// heap is short-lived buffers, and each first touch of a huge page zeroes
/// 2 MiB (an ingest spent ~1.8 s of CPU on it). Linux reports the
/// process's setting in `/proc/PID/status` (`THP_enabled`, since 5.0).
#[test]
fn the_server_runs_without_transparent_huge_pages() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).expect("read /proc status");
    let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("THP_enabled in /proc status");
    assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
}
