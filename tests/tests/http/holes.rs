//! Holes an attacker and an upgrading user found (issue 35), each through
//! the real binary: DNS rebinding, ambiguous framing, highlights that carry
//! markup from incoming mail, `/metrics` for a table-limited key, absolute
//! paths in answers, and a damaged index pointer.

use rowsearch_tests::{TestDir, send_raw};
use serde_json::{Value, json};

use super::keys::{MASTER, call, code, keyed_server, make_key};
use super::{enc, indexed_fixture, mail_server, put};

/// A GET with the given `Host` and `Origin` headers; (status, JSON body).
fn with_host(addr: &str, method: &str, path: &str, host: &str, origin: Option<&str>) -> (u16, Value) {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    let (status, body) = send_raw(addr, request.as_bytes());
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[test]
fn http_requests_naming_another_host_are_refused_keyed_or_not() {
    let (_t, s) = mail_server();
    let port = s.addr.rsplit(':').next().unwrap().to_owned();
    // What a page on evil.example re-pointed at 127.0.0.1 sends.
    let evil = format!("evil.example:{port}");
    let evil_origin = format!("http://evil.example:{port}");
    for (method, path) in
        [("GET", "/tables"), ("GET", "/health"), ("GET", "/"), ("PUT", "/tables/mail/rows/x")]
    {
        let (status, body) = with_host(&s.addr, method, path, &evil, Some(&evil_origin));
        assert_eq!((status, code(&body)), (403, "forbidden_host"), "{method} {path}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("--allow-host"), "{body}");
    }
    // Nothing was written.
    let (status, _) = s.get_json("/tables/mail/rows/x");
    assert_eq!(status, 404);
    // Loopback names and addresses pass, with or without a port.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "localhost".into(), "[::1]".into()]
    {
        let (status, body) = with_host(&s.addr, "GET", "/tables", &host, None);
        assert_eq!(status, 200, "{host}: {body}");
    }

    // The operator lists a name; keyed servers check the host too.
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--allow-host", "search.example.com", "--master-key", MASTER]);
    let (status, body) = with_host(&s.addr, "GET", "/health", "search.example.com", None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = with_host(&s.addr, "GET", "/health", "other.example.com", None);
    assert_eq!((status, code(&body)), (403, "forbidden_host"), "{body}");
}

#[test]
fn http_content_length_with_transfer_encoding_is_400_and_nothing_after_it_is_read() {
    let (_t, s) = mail_server();
    let addr = &s.addr;
    // A proxy framing by the length would pass the smuggled PUT on.
    for order in
        ["Content-Length: 4\r\nTransfer-Encoding: chunked", "Transfer-Encoding: chunked\r\nContent-Length: 4"]
    {
        let smuggle = format!(
            "POST /tables/mail/scan HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{order}\r\n\r\n\
             0\r\n\r\nPUT /tables/mail/rows/smuggled HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: 2\r\n\r\n{{}}"
        );
        let (status, body) = send_raw(addr, smuggle.as_bytes());
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!((status, code(&body)), (400, "bad_request"), "{order}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("Transfer-Encoding"), "{body}");
    }
    let (status, _) = s.get_json("/tables/mail/rows/smuggled");
    assert_eq!(status, 404, "nothing was written");
    // One or the other is served, also several on one connection.
    let chunked = format!(
        "POST /tables/mail/scan HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\nd\r\n{{\"limit\":\"1\"}}\r\n0\r\n\r\n\
         POST /tables/mail/scan HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 13\r\nConnection: close\r\n\r\n{{\"limit\":\"1\"}}"
    );
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut stream, chunked.as_bytes()).unwrap();
    let mut answers = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answers).unwrap();
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 2, "{answers}");
}

#[test]
fn http_two_host_headers_are_400() {
    let (_t, s) = mail_server();
    let addr = &s.addr;
    let two_hosts =
        format!("GET /tables HTTP/1.1\r\nHost: {addr}\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let (status, body) = send_raw(addr, two_hosts.as_bytes());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    assert_eq!((status, code(&body)), (400, "bad_request"), "{body}");
    let one = format!("GET /tables HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    assert_eq!(send_raw(addr, one.as_bytes()).0, 200);
}

#[test]
fn http_highlights_escape_the_mails_markup_unless_asked_raw() {
    let (_t, s) = mail_server();
    let key_fields = enc(r#"{"user":"esc-e","date":990000000000,"id":1}"#);
    let subject = "click <em>HERE</em> </em><script>x</script> & more";
    let row = json!({"cells": [
        {"column": "m:subject", "value": subject},
        {"column": "b:text", "value": "quokka"},
        {"column": "m:date", "value": "2001-05-14T16:39:00-07:00"},
    ]});
    let (status, v) = put(&s, &format!("/tables/mail/rows?key_fields={key_fields}"), &row);
    assert!(status == 200 || status == 201, "{status} {v}");
    let (status, v) = s.get_json("/tables/mail/search?q=click&user=esc-e&highlight=true");
    assert_eq!(status, 200, "{v}");
    let marked = v["hits"][0]["highlights"]["subject"].as_str().unwrap().to_owned();
    assert_eq!(
        marked,
        "<em>click</em> &lt;em&gt;HERE&lt;/em&gt; &lt;/em&gt;&lt;script&gt;x&lt;/script&gt; &amp; more"
    );
    let (_, v) = s.get_json("/tables/mail/search?q=click&user=esc-e&highlight=true&highlight_encoder=raw");
    assert_eq!(
        v["hits"][0]["highlights"]["subject"],
        "<em>click</em> <em>HERE</em> </em><script>x</script> & more"
    );
    let (status, v) = s.get_json("/tables/mail/search?q=click&highlight=true&highlight_encoder=js");
    assert_eq!((status, code(&v)), (400, "bad_request"), "{v}");
}

#[test]
fn http_metrics_need_a_key_that_reaches_every_table() {
    let (_t, s) = keyed_server();
    let (_, limited) = make_key(&s, json!({"actions": ["admin"], "tables": ["mail"]}));
    let (status, body) = call(&s, "GET", "/metrics", Some(&limited), None);
    assert_eq!((status, code(&body)), (403, "forbidden"), "{body}");
    let (_, every) = make_key(&s, json!({"actions": ["admin"]}));
    let (status, _) = s.raw("GET", "/metrics", &[("Authorization", &format!("Bearer {every}"))], None);
    assert_eq!(status, 200);
}

#[test]
fn http_a_damaged_index_pointer_is_503_and_health_says_so_without_paths() {
    let t: TestDir = indexed_fixture();
    let s = t.serve(&["serve", "--refresh-ms", "0"]);
    let data = t.data().canonicalize().unwrap();
    std::fs::write(t.data().join("index/mail/CURRENT"), "gen-99\n").unwrap();
    let (status, v) = s.get_json("/tables/mail/search?q=gas");
    assert_eq!((status, code(&v)), (503, "index_unavailable"), "{v}");
    let (status, v) = s.get_json("/health");
    assert_eq!((status, v["status"].as_str()), (200, Some("degraded")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("reindex --full"), "{v}");
    // A job that fails on it says why, without the data directory's path.
    let (status, job) = s.request("POST", "/tables/mail/reindex", Some("{}"));
    assert!(status < 300, "{status} {job}");
    let id = serde_json::from_str::<Value>(&job).unwrap()["job"].as_str().unwrap_or_default().to_owned();
    let mut answers = vec![v.to_string()];
    for _ in 0..600 {
        let (_, state) = s.get_json(&format!("/jobs/{id}"));
        if state["state"] != "running" && state["state"] != "queued" {
            answers.push(state.to_string());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (_, search) = s.request("GET", "/tables/mail/search?q=gas", None);
    answers.push(search);
    for answer in &answers {
        assert!(!answer.contains(data.to_str().unwrap()), "an absolute path: {answer}");
        assert!(!answer.contains(t.data().to_str().unwrap()), "an absolute path: {answer}");
    }
    assert!(answers.iter().any(|a| a.contains("<data>")), "{answers:?}");
}

#[test]
fn http_a_confined_keys_index_cursors_are_sealed_and_its_own() {
    let (_t, s) = keyed_server();
    let (_, ann) = make_key(&s, json!({"actions": ["read"], "partitions": ["badeer-r"]}));
    let (_, other) = make_key(&s, json!({"actions": ["read"], "partitions": ["badeer-r"]}));
    // The master key's walk: every entry, with plain cursors.
    let walk = |key: &str| -> (Vec<Value>, Vec<String>) {
        let (mut keys, mut cursors) = (Vec::new(), Vec::new());
        let mut path = "/tables/mail/indexes/by_from?prefix=r&limit=2".to_owned();
        for _ in 0..500 {
            let (status, page) = call(&s, "GET", &path, Some(key), None);
            assert_eq!(status, 200, "{page}");
            keys.extend(page["keys"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(c) => {
                    cursors.push(c.to_owned());
                    path = format!("/tables/mail/indexes/by_from?prefix=r&limit=2&cursor={}", enc(c));
                }
                None => break,
            }
        }
        (keys, cursors)
    };
    let (all, plain) = walk(MASTER);
    assert!(plain.iter().all(|c| c.starts_with("i1.")), "{plain:?}");
    let (mine, sealed) = walk(&ann);
    assert!(!mine.is_empty() && mine.len() < all.len(), "{} of {}", mine.len(), all.len());
    assert!(mine.iter().all(|k| k["key_fields"]["user"] == "badeer-r"), "{mine:?}");
    let want: Vec<&Value> = all.iter().filter(|k| k["key_fields"]["user"] == "badeer-r").collect();
    assert_eq!(mine.iter().collect::<Vec<_>>(), want, "the walk finds each of its rows once");
    assert!(!sealed.is_empty() && sealed.iter().all(|c| c.starts_with("s1.")), "{sealed:?}");
    for c in &sealed {
        assert!(!plain.contains(c) && !c.contains("i1."), "{c}");
    }
    // Another key, even with the same rights, cannot use it; nor can a
    // plain cursor be given with a key.
    let path = format!("/tables/mail/indexes/by_from?prefix=r&limit=2&cursor={}", enc(&sealed[0]));
    let (status, body) = call(&s, "GET", &path, Some(&other), None);
    assert_eq!((status, code(&body)), (400, "invalid_cursor"), "{body}");
    let path = format!("/tables/mail/indexes/by_from?prefix=r&limit=2&cursor={}", enc(&plain[0]));
    let (status, body) = call(&s, "GET", &path, Some(&ann), None);
    assert_eq!((status, code(&body)), (400, "invalid_cursor"), "{body}");
}
