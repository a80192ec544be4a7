//! Requests that used to take the server down (issue 19, "One GET kills
//! the server"): each must answer a 4xx in the JSON error shape and leave
//! the server answering.

use super::{enc, mail_server};

#[test]
fn http_hostile_queries_and_offsets_are_4xx_and_the_server_lives() {
    let (_t, s) = mail_server();
    let deep_balanced = format!("{}gas{}", "(".repeat(2125), ")".repeat(2125));
    let cases: Vec<(&str, String)> = vec![
        ("open parentheses", format!("/tables/mail/search?q={}", enc(&"(".repeat(3000)))),
        ("balanced nesting", format!("/tables/mail/search?q={}", enc(&deep_balanced))),
        ("nested negations", format!("/tables/mail/search?q={}", enc(&"-(".repeat(3000)))),
        ("a huge offset by date", "/tables/mail/search?q=gas&sort=newest&offset=1000000000000".into()),
        ("a huge offset by relevance", "/tables/mail/search?q=gas&offset=100000000000000".into()),
        ("an offset near the top of u64", "/tables/mail/search?q=gas&offset=18446744073709551610".into()),
        ("a forged cursor", "/tables/mail/search?q=gas&cursor=c1.1.0.1000000000000".into()),
    ];
    let mut cases = cases;
    if !super::over_hbase() {
        cases.push((
            "an index lookup past the limit",
            "/tables/mail/indexes/by_from?eq=x&limit=100000000".into(),
        ));
    }
    for (what, path) in cases {
        let (status, body) = s.request("GET", &path, None);
        assert!((400..500).contains(&status), "{what}: {status} {body}");
        let error: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body}"));
        assert!(
            error["error"]["code"].is_string() && error["error"]["message"].is_string(),
            "{what}: {body}"
        );
        let (status, health) = s.get_json("/health");
        assert_eq!((status, health["status"].as_str()), (200, Some("ok")), "the server died on {what}");
    }
    // The limits leave ordinary use alone: nesting within the bound, and
    // paging within the window.
    let nested = format!("{}gas{}", "(".repeat(30), ")".repeat(30));
    let (status, found) = s.get_json(&format!("/tables/mail/search?q={}", enc(&nested)));
    assert_eq!(status, 200, "{found}");
    let (_, plain) = s.get_json("/tables/mail/search?q=gas");
    assert_eq!(found["total"], plain["total"]);
    let (status, _) = s.get_json("/tables/mail/search?q=gas&offset=9990&limit=10");
    assert_eq!(status, 200);
}

/// Every route of the route table refuses a parameter it does not take
/// with a 400 `unknown_parameter` naming it, before doing anything (so a
/// misspelt `limt=1` never scans the whole table). Generated from
/// `rowsearch::http::ROUTES`: a new route is covered as it is added.
#[test]
fn http_every_route_refuses_unknown_parameters() {
    let (_t, s) = mail_server();
    // Routes between searchers of a cluster answer 404 elsewhere
    // (`thrift::cluster_search` calls them).
    for route in rowsearch::http::ROUTES.iter().filter(|r| r.needs != rowsearch::http::Needs::Cluster) {
        let what = format!("{} {}", route.method, route.path);
        // Over HBase a route of what only the embedded store keeps answers
        // 501 with its reason, before anything else.
        if super::over_hbase() && matches!(route.needs, rowsearch::http::Needs::Store(_)) {
            let (status, body) = s.request(route.method, route.example, route.example_body);
            assert!(status == 501 && body.contains("not_over_hbase"), "{what}: {status} {body}");
            continue;
        }
        // The example reaches the route (whatever it answers, it is not
        // "no such route" and not a failure of the server).
        let (status, body) = s.request(route.method, route.example, route.example_body);
        assert!(status < 500 && !body.contains("\"no such route\""), "{what}: {status} {body}");
        let (path, body) = if route.method == "POST" && route.path.ends_with("/scan") {
            // The scan body's fields are its parameters.
            (route.example.to_owned(), Some(r#"{"limit":"1","limt":"1"}"#))
        } else {
            let sep = if route.example.contains('?') { '&' } else { '?' };
            (format!("{}{sep}limt=1", route.example), route.example_body)
        };
        let (status, text) = s.request(route.method, &path, body);
        let error: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (400, Some("unknown_parameter")),
            "{what}: {text}"
        );
        assert!(error["error"]["message"].as_str().unwrap().contains("limt"), "{what}: {text}");
    }
    // Likewise a JSON body's unknown field, on every route that takes a
    // body (its example body with one field more).
    for route in rowsearch::http::ROUTES
        .iter()
        .filter(|r| r.example_body.is_some() && r.needs != rowsearch::http::Needs::Cluster)
        .filter(|r| !super::over_hbase() || r.needs == rowsearch::http::Needs::Anywhere)
    {
        let what = format!("{} {}", route.method, route.path);
        let mut body: serde_json::Value = serde_json::from_str(route.example_body.unwrap()).unwrap();
        body["bogus_field"] = serde_json::json!(1);
        let path = route.example.replace("/tables/probe", "/tables/probe2");
        let (status, text) = s.request(route.method, &path, Some(&body.to_string()));
        let error: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (400, Some("unknown_parameter")),
            "{what}: {text}"
        );
        assert!(error["error"]["message"].as_str().unwrap().contains("bogus_field"), "{what}: {text}");
    }
    assert_eq!(s.get_json("/tables/probe2").0, 404, "a refused body created nothing");
    // Nothing a refused request named was done: the scan did not run, the
    // probe table's row was not written.
    let (status, _) = s.get_json("/tables/probe/rows/r");
    assert_eq!(status, 404);
}

/// Writes need `application/json`: a form, a plain-text post (what a web
/// page on another origin can send without asking) or a body without a
/// content type is a 415 and writes nothing.
/// A parameter that takes one value, given twice, is refused (the server
/// took the last before: `min_ts=j&min_ts=5` read as 5); lists repeat.
#[test]
fn http_a_single_valued_parameter_given_twice_is_400() {
    let (_t, s) = mail_server();
    for path in [
        "/tables/mail/scan?min_ts=j&min_ts=5",
        "/tables/mail/search?q=gas&q=power",
        "/tables/mail/scan?limit=1&limit=2",
    ] {
        let (status, text) = s.request("GET", path, None);
        assert_eq!(status, 400, "{path}: {text}");
        assert!(text.contains("more than once"), "{path}: {text}");
    }
    for path in [
        "/tables/mail/scan?limit=1&columns=m:subject&columns=m:from",
        "/tables/mail/search?q=gas&fields=subject&fields=from",
    ] {
        let (status, text) = s.request("GET", path, None);
        assert_eq!(status, 200, "{path}: {text}");
    }
}

#[test]
fn http_writes_need_a_json_content_type() {
    let (_t, s) = mail_server();
    let (status, _) = s.request("PUT", "/tables/notes", Some(r#"{"families":[{"name":"n"}]}"#));
    assert_eq!(status, 201);
    let row = br#"{"cells":[{"column":"n:text","value":"planted"}]}"#;
    for content_type in [Some("application/x-www-form-urlencoded"), Some("text/plain"), None] {
        let headers: Vec<(&str, &str)> = content_type.map(|ct| ("Content-Type", ct)).into_iter().collect();
        let (status, body) =
            rowsearch_tests::parse_response(&raw_without_default_type(&s.addr, &headers, row));
        assert_eq!(status, 415, "{content_type:?}: {}", String::from_utf8_lossy(&body));
        let (status, _) = s.get_json("/tables/notes/rows/planted");
        assert_eq!(status, 404, "{content_type:?}: the row was written");
    }
    let (status, _) = s.raw(
        "PUT",
        "/tables/notes/rows/planted",
        &[("Content-Type", "application/json; charset=utf-8")],
        Some(row),
    );
    assert_eq!(status, 200);
}

/// A PUT of a row with exactly `headers` (no content type added).
fn raw_without_default_type(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut head =
        format!("PUT /tables/notes/rows/planted HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (h, v) in headers {
        head.push_str(&format!("{h}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response
}

/// A client that connects and sends nothing is disconnected after the
/// header timeout, like one that stops half-way through its headers, and
/// at most `--max-connections` are open at once, so silent clients cannot
/// use up the server's file descriptors. With room for one connection, a
/// request behind a silent client is served once the server has closed it.
#[test]
fn http_silent_connections_are_closed_and_the_open_ones_capped() {
    use std::io::{Read, Write};
    use std::time::Duration;
    let t = super::dir();
    let s = t.serve(&["serve", "--create", "--header-timeout-ms", "300", "--max-connections", "1"]);
    let mut silent = std::net::TcpStream::connect(&s.addr).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Behind it, in the listen backlog, a request: answered only once the
    // silent client's slot is free (a read that times out fails the test).
    let mut client = std::net::TcpStream::connect(&s.addr).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    client.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).expect("the request behind the silent client was answered");
    assert_eq!(rowsearch_tests::parse_response(&response).0, 200);
    let mut byte = [0u8; 1];
    assert_eq!(
        silent.read(&mut byte).expect("closed, not timed out"),
        0,
        "the server closed the silent client"
    );
    let (_, metrics) = s.request("GET", "/metrics", None);
    let closed: f64 = metrics
        .lines()
        .find(|l| l.contains("connections_closed_idle") && !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no idle-close counter in {metrics}"));
    assert!(closed >= 1.0, "{metrics}");
}

/// A write past the request time limit is never answered as failed when
/// it was applied: one still waiting for a worker is dropped unrun (503,
/// nothing written), one already running is waited for (its real answer).
/// With a 1 ms limit, one worker and writers in parallel, the rows stored
/// are exactly those of the batches answered 200.
#[test]
fn http_writes_past_the_time_limit_answer_what_they_did() {
    let t = super::dir();
    // The table first (under a 1 ms limit even its creation may wait too
    // long for the worker, and be dropped).
    let out = t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    let s = t.serve(&["serve", "--timeout-ms", "1", "--workers", "1"]);
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let s = &s;
                scope.spawn(move || {
                    (0..5)
                        .map(|b| {
                            let mutations: Vec<serde_json::Value> = (0..300)
                                .map(|i| {
                                    serde_json::json!({"put": {"key": format!("w{w}b{b}r{i:03}"),
                                    "cells": [{"column": "f:q", "value": "v"}]}})
                                })
                                .collect();
                            let body = serde_json::json!({"mutations": mutations}).to_string();
                            s.request("POST", &super::mutate_many(Some("t")), Some(&body))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let applied = answers.iter().filter(|(status, _)| *status == 200).count();
    for (status, body) in &answers {
        assert!(*status == 200 || (*status == 503 && body.contains("\"timeout\"")), "{status} {body}");
    }
    // Counted by the CLI once the server is gone (its reads may time out).
    drop(s);
    let rows: usize = if super::over_hbase() {
        // (The CLI's `scan` is the embedded store's: a new server counts.)
        let s = t.serve(&["serve"]);
        s.get_json("/tables/t/count").1["count"].as_u64().unwrap() as usize
    } else {
        let out = t.run(&["scan", "t", "--count"]);
        assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
        rowsearch_tests::stdout(&out).trim().parse().unwrap()
    };
    assert_eq!(rows, applied * 300, "{applied} batches answered 200 of {}", answers.len());
}

/// A table with more families than a table may have (32: each takes a
/// database from the store's shared budget) is a 422 that says why, not a
/// 500, and leaves the server and its tables as they were.
#[test]
fn http_a_table_past_the_family_limit_is_a_422() {
    let (_t, s) = super::mail_server();
    let families: Vec<serde_json::Value> =
        (0..2000).map(|i| serde_json::json!({"name": format!("f{i}")})).collect();
    let body = serde_json::json!({"families": families}).to_string();
    let (status, text) = s.request("PUT", "/tables/wide", Some(&body));
    let error: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, error["error"]["code"].as_str()), (422, Some("invalid_schema")), "{text}");
    assert!(text.contains("2000 families; a table has at most 32"), "{text}");
    assert_eq!(s.get_json("/tables/wide").0, 404);
    assert_eq!(s.get_json("/tables/mail").0, 200);
}
