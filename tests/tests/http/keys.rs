//! Access keys (issue 20) through the real binary: the master key, keys
//! with actions, tables, partitions and expiry, deletion, hashed storage,
//! the loopback rule and the Origin check.

use rowsearch_tests::{Server, TestDir, stderr};
use serde_json::{Value, json};

use super::{enc, indexed_fixture};

pub(super) const MASTER: &str = "a-master-key-of-32-bytes-or-so!!";

/// A request with `key` (if any); (status, JSON body or Null).
pub(super) fn call(
    s: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> (u16, Value) {
    let auth = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let (status, bytes) = s.raw(method, path, &headers, body.map(str::as_bytes));
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

pub(super) fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

/// Makes a key with the master key; returns (uid, key).
pub(super) fn make_key(s: &Server, spec: Value) -> (String, String) {
    let (status, made) = call(s, "POST", "/keys", Some(MASTER), Some(&spec.to_string()));
    assert_eq!(status, 201, "{made}");
    (made["uid"].as_str().unwrap().to_owned(), made["key"].as_str().unwrap().to_owned())
}

pub(super) fn keyed_server() -> (TestDir, Server) {
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--master-key", MASTER]);
    (t, s)
}

#[test]
fn http_every_route_checks_its_action_generated_from_the_route_table() {
    let (_t, s) = keyed_server();
    let keys: Vec<(&str, String)> = ["search", "read", "write", "changes", "admin"]
        .into_iter()
        .map(|action| (action, make_key(&s, json!({"actions": [action]})).1))
        .collect();
    // Routes between searchers of a cluster answer 404 elsewhere
    // (`thrift::cluster_search` calls them).
    for route in rowsearch::http::ROUTES.iter().filter(|r| r.needs != rowsearch::http::Needs::Cluster) {
        let what = format!("{} {}", route.method, route.path);
        let (status, body) = call(&s, route.method, route.example, None, route.example_body);
        if route.action == rowsearch::keys::Action::Public {
            assert!(status < 400, "{what} needs no key: {status} {body}");
            continue;
        }
        assert_eq!((status, code(&body)), (401, "missing_key"), "{what}: {body}");
        let (status, body) = call(&s, route.method, route.example, Some("rsk_0_nope"), route.example_body);
        assert_eq!((status, code(&body)), (403, "invalid_key"), "{what}: {body}");
        for (action, key) in &keys {
            let (status, body) = call(&s, route.method, route.example, Some(key), route.example_body);
            let allowed = route.action == rowsearch::keys::Action::Any || route.action.name() == *action;
            if allowed {
                assert!(status != 401 && status != 403, "{what} with a {action} key: {status} {body}");
            } else {
                assert_eq!((status, code(&body)), (403, "forbidden"), "{what} with a {action} key: {body}");
            }
        }
    }
    // Refusals are counted by reason, and no key appears in the metrics.
    let (_, metrics) = s.raw("GET", "/metrics", &[("Authorization", &format!("Bearer {MASTER}"))], None);
    let metrics = String::from_utf8_lossy(&metrics).into_owned();
    for reason in ["missing_key", "invalid_key", "forbidden"] {
        assert!(
            metrics.contains(&format!("rowsearch_http_refused_total{{reason=\"{reason}\"}}")),
            "{reason}"
        );
    }
    assert!(!metrics.contains(MASTER) && keys.iter().all(|(_, k)| !metrics.contains(k.as_str())));
}

#[test]
fn http_keys_are_confined_to_tables_and_partitions() {
    let (_t, s) = keyed_server();
    // What the whole mailbox answers with the master key.
    let (_, all) = call(&s, "GET", "/tables/mail/search?q=enron", Some(MASTER), None);
    let (_, cash) = call(&s, "GET", "/tables/mail/search?q=enron&user=cash-m", Some(MASTER), None);
    assert!(all["total"].as_u64().unwrap() > cash["total"].as_u64().unwrap(), "{all} {cash}");
    let (_, key) = make_key(&s, json!({"actions": ["search", "read", "write"], "partitions": ["cash-m"]}));
    let k = Some(key.as_str());

    // The table list tells it how to search, not the table-wide figures
    // (freshness), which the master key sees.
    let (_, listed) = call(&s, "GET", "/tables", k, None);
    assert_eq!(listed["tables"][0]["search"]["partition"], "user", "{listed}");
    assert!(listed["tables"][0].get("freshness").is_none(), "{listed}");
    let (_, listed) = call(&s, "GET", "/tables", Some(MASTER), None);
    assert!(listed["tables"][0]["freshness"]["store_seq"].as_u64().is_some(), "{listed}");

    // Searches see that partition only: the total is the partition's, with
    // or without user=, and paging by cursor stays inside it.
    let (status, mine) = call(&s, "GET", "/tables/mail/search?q=enron&limit=3", k, None);
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["total"], cash["total"]);
    let mut cursor = mine["next_cursor"].as_str().map(str::to_owned);
    let mut seen = mine["hits"].as_array().unwrap().len();
    while let Some(c) = cursor {
        let (status, page) =
            call(&s, "GET", &format!("/tables/mail/search?q=enron&limit=3&cursor={}", enc(&c)), k, None);
        assert_eq!(status, 200, "{page}");
        for hit in page["hits"].as_array().unwrap() {
            assert_eq!(hit["key_fields"]["user"], "cash-m", "{hit}");
        }
        seen += page["hits"].as_array().unwrap().len();
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen as u64, cash["total"].as_u64().unwrap());
    let (status, other) = call(&s, "GET", "/tables/mail/search?q=enron&user=badeer-r", k, None);
    assert_eq!((status, code(&other)), (403, "forbidden"), "{other}");

    // Keyword lookups: its partition, not another.
    assert_eq!(call(&s, "GET", "/tables/mail/keywords?user=cash-m&terms=enron", k, None).0, 200);
    assert_eq!(call(&s, "GET", "/tables/mail/keywords?user=badeer-r&terms=enron", k, None).0, 403);

    // Rows: its own are there, another partition's are not (404, as if
    // absent), and it may not write there.
    let (_, theirs) = call(
        &s,
        "GET",
        "/tables/mail/scan?prefix_fields=%7B%22user%22%3A%22badeer-r%22%7D&limit=1",
        Some(MASTER),
        None,
    );
    let their_key = theirs["rows"][0]["key_fields"].to_string();
    let (_, mine_rows) = call(&s, "GET", "/tables/mail/scan?limit=2", k, None);
    let rows = mine_rows["rows"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r["key_fields"]["user"] == "cash-m"), "{mine_rows}");
    let my_key = rows[0]["key_fields"].to_string();
    assert_eq!(call(&s, "GET", &format!("/tables/mail/rows?key_fields={}", enc(&my_key)), k, None).0, 200);
    let (status, body) =
        call(&s, "GET", &format!("/tables/mail/rows?key_fields={}", enc(&their_key)), k, None);
    assert_eq!((status, code(&body)), (404, "row_not_found"), "{body}");
    let put = r#"{"cells":[{"column":"m:subject","value":"planted"}]}"#;
    let (status, body) =
        call(&s, "PUT", &format!("/tables/mail/rows?key_fields={}", enc(&their_key)), k, Some(put));
    assert_eq!((status, code(&body)), (403, "forbidden"), "{body}");
    let (status, _) =
        call(&s, "GET", "/tables/mail/scan?prefix_fields=%7B%22user%22%3A%22badeer-r%22%7D", k, None);
    assert_eq!(status, 403, "a scan of another partition");
    // Index lookups drop other partitions' rows (exactly those); table-wide
    // figures are refused.
    // (Secondary indexes are the embedded store's.)
    if !super::over_hbase() {
        let path = "/tables/mail/indexes/by_from?start=%01&limit=10000";
        let (_, by_master) = call(&s, "GET", path, Some(MASTER), None);
        let (status, by_key) = call(&s, "GET", path, k, None);
        assert_eq!(status, 200, "{by_key}");
        let expected: Vec<&Value> = by_master["keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["key_fields"]["user"] == "cash-m")
            .collect();
        let got: Vec<&Value> = by_key["keys"].as_array().unwrap().iter().collect();
        assert!(expected.len() < by_master["keys"].as_array().unwrap().len(), "other partitions are there");
        assert_eq!(got, expected);
    }
    assert_eq!(call(&s, "GET", "/tables/mail", k, None).0, 403);

    // A key for other tables does not touch mail, and GET /tables lists
    // only its own.
    assert_eq!(call(&s, "PUT", "/tables/notes", Some(MASTER), Some(r#"{"families":[{"name":"n"}]}"#)).0, 201);
    let (_, notes_key) = make_key(&s, json!({"actions": ["read", "search"], "tables": ["notes"]}));
    let (status, body) = call(&s, "GET", "/tables/mail/search?q=enron", Some(&notes_key), None);
    assert_eq!((status, code(&body)), (403, "forbidden"), "{body}");
    assert_eq!(call(&s, "GET", "/tables", Some(&notes_key), None).1["tables"], json!([{"name": "notes"}]));
}

#[test]
fn http_keys_expire_are_deleted_and_are_stored_hashed() {
    let (t, s) = keyed_server();
    let (uid, key) = make_key(&s, json!({"actions": ["search"], "description": "for the test"}));
    assert_eq!(call(&s, "GET", "/tables/mail/search?q=gas", Some(&key), None).0, 200);
    let (status, listed) = call(&s, "GET", "/keys", Some(MASTER), None);
    assert_eq!(status, 200);
    assert_eq!(listed["keys"][0]["uid"], uid.as_str());
    assert!(!listed.to_string().contains(&key), "GET /keys never shows a key");
    // Only the master key manages keys.
    assert_eq!(call(&s, "GET", "/keys", Some(&key), None).0, 403);
    // The key's bytes (nor its secret part) are nowhere in the data directory.
    let secret = key.rsplit('_').next().unwrap();
    for entry in walk(&t.data()) {
        let bytes = std::fs::read(&entry).unwrap();
        for needle in [key.as_bytes(), secret.as_bytes(), MASTER.as_bytes()] {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle), "{} holds a key", entry.display());
        }
    }
    // Deleted: refused at once.
    assert_eq!(call(&s, "DELETE", &format!("/keys/{uid}"), Some(MASTER), None).0, 204);
    let (status, body) = call(&s, "GET", "/tables/mail/search?q=gas", Some(&key), None);
    assert_eq!((status, code(&body)), (403, "invalid_key"), "{body}");
    assert_eq!(call(&s, "DELETE", &format!("/keys/{uid}"), Some(MASTER), None).0, 404);
    // An expiry in the past is refused; one a second ahead works, then not.
    let (status, _) = call(
        &s,
        "POST",
        "/keys",
        Some(MASTER),
        Some(r#"{"actions":["search"],"expires_at":"2001-01-01T00:00:00Z"}"#),
    );
    assert_eq!(status, 400);
    let soon = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1500);
    let (_, short) = make_key(&s, json!({"actions": ["search"], "expires_at": soon.to_string()}));
    assert_eq!(call(&s, "GET", "/tables/mail/search?q=gas", Some(&short), None).0, 200);
    // Bounded wait for the clock to pass the expiry (not for the server).
    while jiff::Timestamp::now() <= soon {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(call(&s, "GET", "/tables/mail/search?q=gas", Some(&short), None).0, 403);
    // The CLI makes keys on the data directory; the running server takes them.
    let out = t.run(&["keys", "create", "--actions", "search"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let made: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli_key = made["key"].as_str().unwrap();
    assert_eq!(call(&s, "GET", "/tables/mail/search?q=gas", Some(cli_key), None).0, 200);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

#[test]
fn serve_refuses_to_expose_itself_without_a_master_key_and_checks_origins() {
    let t = indexed_fixture();
    let out = t.run(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--master-key"), "{}", stderr(&out));
    let out = t.run(&["serve", "--listen", "127.0.0.1:0", "--master-key", "short"]);
    assert_eq!(out.status.code(), Some(2), "a master key under 16 bytes: {}", stderr(&out));

    // Origins: the server's own and --allow-origin pass, others are 403.
    let s = t.serve(&["serve", "--allow-origin", "https://app.example.com"]);
    let own = format!("http://{}", s.addr);
    for (origin, expected) in
        [(own.as_str(), 200), ("https://app.example.com", 200), ("https://evil.example", 403)]
    {
        let (status, body) = s.raw("GET", "/tables/mail/search?q=gas", &[("Origin", origin)], None);
        assert_eq!(status, expected, "{origin}: {}", String::from_utf8_lossy(&body));
    }
    let (status, body) = s.raw(
        "PUT",
        "/tables/notes",
        &[("Origin", "https://evil.example")],
        Some(br#"{"families":[{"name":"n"}]}"#),
    );
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, code(&error)), (403, "forbidden_origin"));
    assert_eq!(s.raw("GET", "/tables/notes", &[], None).0, 404, "the foreign write did nothing");
}
