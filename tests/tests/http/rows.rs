//! Rows by their key fields, and `seq` on every write (issue 19), over
//! HTTP and on the CLI, through the real binary.

use rowsearch_tests::{stderr, stdout};
use serde_json::{Value, json};

use super::{enc, post, put};

fn typed_table(s: &rowsearch_tests::Server) {
    let schema = json!({"families": [{"name": "n"}],
        "row_key": {"fields": [{"name": "user", "type": "string"}, {"name": "id", "type": "u64"}]}});
    assert_eq!(put(s, "/tables/notes", &schema).0, 201);
}

#[test]
fn http_rows_by_key_fields_and_seq_on_every_write() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    typed_table(&s);
    let ann = enc(r#"{"user":"ann","id":7}"#);

    // PUT by fields, then the same row by its bytes and by its fields.
    let (status, first) = put(
        &s,
        &format!("/tables/notes/rows?key_fields={ann}"),
        &json!({"cells": [{"column": "n:s", "value": "hi"}]}),
    );
    assert_eq!(status, 200, "{first}");
    let seq1 = first["seq"].as_u64().expect("a put answers its seq");
    let (status, row) = s.get_json(&format!("/tables/notes/rows?key_fields={ann}"));
    assert_eq!(status, 200, "{row}");
    assert_eq!(row["key_fields"], json!({"user": "ann", "id": 7}));
    assert_eq!(row["cells"][0]["value"], "hi");
    let path_key: String = row["key"].as_str().unwrap().to_owned();
    let by_bytes = s.get_json(&format!("/tables/notes/rows/{}", enc_binary(&path_key))).1;
    assert_eq!(by_bytes, row);

    // mutate by fields; every write answers a larger seq.
    let (status, batch) = post(
        &s,
        &super::mutate_many(Some("notes")),
        &json!({"mutations": [
        {"put": {"key_fields": {"user": "bob", "id": 1}, "cells": [{"column": "n:s", "value": "yo"}]}},
        {"delete": {"key_fields": {"user": "ann", "id": 7}, "columns": ["n:s"]}}]}),
    );
    assert_eq!(status, 200, "{batch}");
    let seq2 = batch["seq"].as_u64().unwrap();
    assert!(seq2 > seq1);
    assert_eq!(s.get_json(&format!("/tables/notes/rows?key_fields={ann}")).0, 404);
    let bob = enc(r#"{"user":"bob","id":1}"#);
    let (status, deleted) = {
        let (status, text) = s.request("DELETE", &format!("/tables/notes/rows?key_fields={bob}"), None);
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    assert_eq!(status, 200, "{deleted}");
    assert!(deleted["seq"].as_u64().unwrap() > seq2, "a delete answers its seq: {deleted}");

    // Bad fields are 4xx with the reason.
    for (fields, code) in [
        // A field missing is JSON that does not fit the key, as a field of
        // another type is (bad_request before issue 37's conformance work).
        (r#"{"user":"ann"}"#, "invalid_key"),
        (r#"{"user":"ann","id":"seven"}"#, "invalid_key"),
        (r#"{"user":"ann","id":7,"x":1}"#, "invalid_key"),
        ("not json", "bad_request"),
    ] {
        let (status, text) =
            s.request("GET", &format!("/tables/notes/rows?key_fields={}", enc(fields)), None);
        let error: Value = serde_json::from_str(&text).unwrap();
        assert!((400..500).contains(&status), "{fields}: {status} {text}");
        assert_eq!(error["error"]["code"], code, "{fields}: {text}");
    }
    let (status, _) = s.request("GET", "/tables/notes/rows", None);
    assert_eq!(status, 400, "key_fields is needed");
}

#[test]
fn cli_rows_by_key_fields_and_seq_on_every_write() {
    let t = super::dir();
    let schema = r#"{"families":[{"name":"n"}],"row_key":{"fields":[{"name":"user","type":"string"},{"name":"id","type":"u64"}]}}"#;
    assert!(t.run(&["create-table", "notes", "--schema", schema]).status.success());
    let fields = r#"{"user":"ann","id":7}"#;
    let out = t.run(&["put", "notes", "--key-fields", fields, "n:s=hi", "n:t=there"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("feed seq 1"), "{}", stdout(&out));
    let out = t.run(&["get", "notes", "--key-fields", fields]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(row["key_fields"], json!({"user": "ann", "id": 7}));
    assert_eq!(row["cells"].as_array().unwrap().len(), 2);
    let out = t.run(&["delete", "notes", "--key-fields", fields, "--columns", "n:t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // (Over HBase a write's sequence is HBase's clock, ms.)
    let want = if super::over_hbase() { "feed seq " } else { "feed seq 2" };
    assert!(stdout(&out).contains(want), "a delete prints its seq: {}", stdout(&out));
    // KEY and --key-fields together, or neither, or a bad field: exit 2.
    assert_eq!(t.run(&["get", "notes", "k", "--key-fields", fields]).status.code(), Some(2));
    assert_eq!(t.run(&["get", "notes"]).status.code(), Some(2));
    assert_eq!(t.run(&["get", "notes", "--key-fields", r#"{"user":"ann"}"#]).status.code(), Some(2));
    assert_eq!(t.run(&["put", "notes", "--key-fields", fields]).status.code(), Some(2), "no cell");
}

/// A binary string (`\xNN` escapes) as a percent-encoded path segment.
fn enc_binary(s: &str) -> String {
    let bytes = rowsearch::wire::decode(s).unwrap();
    bytes.iter().map(|b| format!("%{b:02X}")).collect()
}

/// Percent-encoding carries any byte in a byte-string parameter (API.md),
/// and a text parameter that is not UTF-8 is a 400, never silently
/// changed to U+FFFD.
#[test]
fn http_query_parameters_are_byte_exact() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    assert_eq!(put(&s, "/tables/b", &json!({"families": [{"name": "f"}]})).0, 201);
    for key in ["a%FF", "a%FE", "b"] {
        let (status, _) =
            put(&s, &format!("/tables/b/rows/{key}"), &json!({"cells": [{"column": "f:q", "value": "v"}]}));
        assert_eq!(status, 200);
    }
    // prefix=a%FF selects the row whose key is the bytes a, 0xFF only.
    let (status, page) = s.get_json("/tables/b/scan?prefix=a%FF");
    assert_eq!(status, 200, "{page}");
    let keys: Vec<&str> =
        page["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["a\\xff"]);
    let (_, page) = s.get_json("/tables/b/scan?start=a%FF");
    assert_eq!(page["rows"].as_array().unwrap().len(), 2, "a\\xff and b: {page}");
    // A text parameter (the search query) with a byte that is not UTF-8.
    let (status, text) = s.request("GET", "/tables/b/search?q=caf%E9", None);
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, error["error"]["code"].as_str()), (400, Some("invalid_query_string")), "{text}");
}

/// `exact=true` deletes the one version at the timestamp (HBase's
/// `Delete.addColumn`), over HTTP (row and mutate) and the CLI; without it
/// every version up to the timestamp goes. Without a timestamp, or with a
/// family, it is refused and nothing changes.
#[test]
fn http_and_cli_exact_deletes_remove_one_version() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    assert_eq!(put(&s, "/tables/v", &json!({"families": [{"name": "f", "max_versions": 5}]})).0, 201);
    let versions = |s: &rowsearch_tests::Server| -> Vec<u64> {
        let (status, row) = s.get_json("/tables/v/rows/r?versions=all");
        assert_eq!(status, 200, "{row}");
        row["cells"].as_array().unwrap().iter().map(|c| c["timestamp"].as_u64().unwrap()).collect()
    };
    for ts in 1..=5 {
        let body = json!({"cells": [{"column": "f:q", "value": format!("v{ts}"), "timestamp": ts}]});
        assert_eq!(put(&s, "/tables/v/rows/r", &body).0, 200);
    }
    assert_eq!(versions(&s), vec![5, 4, 3, 2, 1]);
    for bad in ["columns=f:q&exact=true", "columns=f&timestamp=2&exact=true", "timestamp=2&exact=true"] {
        let (status, body) = s.request("DELETE", &format!("/tables/v/rows/r?{bad}"), None);
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(versions(&s), vec![5, 4, 3, 2, 1]);
    let (status, body) = s.request("DELETE", "/tables/v/rows/r?columns=f:q&timestamp=4&exact=true", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(versions(&s), vec![5, 3, 2, 1]);
    let mutate =
        json!({"mutations": [{"delete": {"key": "r", "columns": ["f:q"], "timestamp": 2, "exact": true}}]});
    assert_eq!(post(&s, "/tables/v/mutate", &mutate).0, 200);
    assert_eq!(versions(&s), vec![5, 3, 1]);
    drop(s);
    let out = t.run(&["delete", "v", "r", "--columns", "f:q", "--timestamp", "5", "--exact"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["get", "v", "r", "--versions", "all"]);
    let row: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let left: Vec<u64> =
        row["cells"].as_array().unwrap().iter().map(|c| c["timestamp"].as_u64().unwrap()).collect();
    assert_eq!(left, vec![3, 1]);
    // Without --exact, every version up to the timestamp.
    let out = t.run(&["delete", "v", "r", "--columns", "f:q", "--timestamp", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&t.run(&["get", "v", "r", "--versions", "all"])).contains("timestamp"));
}

/// `POST /mutate`: one transaction across tables, each mutation naming its
/// table; a bad one anywhere writes none; a key limited to some tables may
/// not write the others through it.
#[test]
fn http_mutate_across_tables_is_all_or_nothing_and_keeps_each_keys_tables() {
    if super::embedded_only("all-or-nothing batches across tables (HBase is atomic per row)") {
        return;
    }
    let t = super::dir();
    let master = "a-master-key-of-enough-bytes";
    let s = t.serve(&["serve", "--create", "--master-key", master]);
    let auth = [("Authorization", format!("Bearer {master}"))];
    let call = |method: &str, path: &str, body: &Value, key: &[(&str, String)]| {
        let headers: Vec<(&str, &str)> = key.iter().map(|(h, v)| (*h, v.as_str())).collect();
        let body = (!body.is_null()).then(|| body.to_string());
        let (status, bytes) = s.raw(method, path, &headers, body.as_deref().map(str::as_bytes));
        (status, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
    };
    for table in ["a", "b"] {
        let (status, body) =
            call("PUT", &format!("/tables/{table}"), &json!({"families": [{"name": "f"}]}), &auth);
        assert_eq!(status, 201, "{body}");
    }
    let cell = |v: &str| json!([{"column": "f:q", "value": v}]);
    let (status, body) = call(
        "POST",
        "/mutate",
        &json!({"mutations": [
            {"put": {"table": "a", "key": "r1", "cells": cell("one")}},
            {"put": {"table": "b", "key": "r1", "cells": cell("two")}}]}),
        &auth,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tables"], json!(["a", "b"]), "{body}");
    let seq = body["seq"].as_u64().unwrap();
    for (table, value) in [("a", "one"), ("b", "two")] {
        let (status, row) = call("GET", &format!("/tables/{table}/rows/r1"), &Value::Null, &auth);
        assert_eq!((status, row["cells"][0]["value"].as_str()), (200, Some(value)), "{row}");
    }
    // A mutation of a table that does not exist, after a good one: neither.
    let (status, body) = call(
        "POST",
        "/mutate",
        &json!({"mutations": [
            {"delete": {"table": "a", "key": "r1"}},
            {"put": {"table": "nope", "key": "r1", "cells": cell("x")}}]}),
        &auth,
    );
    assert_eq!(status, 404, "{body}");
    assert_eq!(call("GET", "/tables/a/rows/r1", &Value::Null, &auth).0, 200, "the delete was not kept");
    // A mutation without its table, and one naming another table on a
    // table's own route: 400.
    let (status, body) =
        call("POST", "/mutate", &json!({"mutations": [{"put": {"key": "r2", "cells": cell("x")}}]}), &auth);
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("names its table"), "{body}");
    let (status, body) = call(
        "POST",
        "/tables/a/mutate",
        &json!({"mutations": [{"put": {"table": "b", "key": "r2", "cells": cell("x")}}]}),
        &auth,
    );
    assert_eq!(status, 400, "{body}");
    // A key for table a alone may not write b through /mutate.
    let (status, key) = call("POST", "/keys", &json!({"actions": ["write", "read"], "tables": ["a"]}), &auth);
    assert_eq!(status, 201, "{key}");
    let limited = [("Authorization", format!("Bearer {}", key["key"].as_str().unwrap()))];
    let (status, body) = call(
        "POST",
        "/mutate",
        &json!({"mutations": [
            {"put": {"table": "a", "key": "r3", "cells": cell("x")}},
            {"put": {"table": "b", "key": "r3", "cells": cell("x")}}]}),
        &limited,
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(call("GET", "/tables/a/rows/r3", &Value::Null, &auth).0, 404, "nothing written");
    let (status, body) = call(
        "POST",
        "/mutate",
        &json!({"mutations": [{"put": {"table": "a", "key": "r3", "cells": cell("x")}}]}),
        &limited,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["seq"].as_u64().unwrap() > seq);
}

/// `GET /tables/{t}`'s row count, kept between calls while the store
/// commits nothing: it must follow every write, this server's or another
/// process's, a table made again, and cells that expire with no write.
#[test]
fn http_row_counts_follow_every_write_a_table_made_again_and_expiry() {
    if super::over_hbase() {
        return; // HBase keeps no row count: `rows` is null there.
    }
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    let rows = |table: &str| {
        let (status, info) = s.get_json(&format!("/tables/{table}"));
        assert_eq!(status, 200, "{info}");
        info["stats"]["rows"].as_u64().unwrap_or_else(|| panic!("no row count: {info}"))
    };
    assert_eq!(put(&s, "/tables/notes", &json!({"families": [{"name": "n"}]})).0, 201);
    assert_eq!(rows("notes"), 0);
    let cell = json!({"cells": [{"column": "n:s", "value": "hi"}]});
    assert_eq!(put(&s, "/tables/notes/rows/a", &cell).0, 200);
    assert_eq!((rows("notes"), rows("notes")), (1, 1));
    assert_eq!(put(&s, "/tables/notes/rows/b", &cell).0, 200);
    assert_eq!(rows("notes"), 2);
    // A write to another table changes nothing here (and costs a recount).
    assert_eq!(put(&s, "/tables/other", &json!({"families": [{"name": "n"}]})).0, 201);
    assert_eq!(put(&s, "/tables/other/rows/x", &cell).0, 200);
    assert_eq!((rows("notes"), rows("other")), (2, 1));
    assert_eq!(s.request("DELETE", "/tables/notes/rows/a", None).0, 200);
    assert_eq!(rows("notes"), 1);
    // Another process's write to the same store.
    let out = t.run(&["put", "notes", "c", "n:s=there"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(rows("notes"), 2);
    // The table dropped and made again: empty, with no row written since.
    assert_eq!(s.request("DELETE", "/tables/notes", None).0, 204);
    assert_eq!(put(&s, "/tables/notes", &json!({"families": [{"name": "n"}]})).0, 201);
    assert_eq!(rows("notes"), 0);
    // Cells past their TTL go uncounted with no write at all.
    let ttl = json!({"families": [{"name": "n", "ttl_seconds": 1}]});
    assert_eq!(put(&s, "/tables/brief", &ttl).0, 201);
    let now_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let soon_gone = json!({"cells": [{"column": "n:s", "value": "hi", "timestamp": now_ms - 500}]});
    assert_eq!(put(&s, "/tables/brief/rows/k", &soon_gone).0, 200);
    let first = rows("brief");
    assert!(first <= 1, "{first}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while rows("brief") != 0 {
        assert!(std::time::Instant::now() < deadline, "the expired row is still counted");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
