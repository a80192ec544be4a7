//! Bounded work (issue 36), through the real binary: queries that would
//! tie up a worker for seconds are refused before they run, with the limit
//! and the figure; open date ranges match everything instead of panicking;
//! `/health` reports the work pool's load.

use serde_json::Value;

use super::{enc, indexed_fixture, mail_server};

fn search(s: &rowsearch_tests::Server, q: &str) -> (u16, Value) {
    s.get_json(&format!("/tables/mail/search?q={}", enc(q)))
}

#[test]
fn http_queries_past_the_expansion_or_clause_budget_are_400_naming_both_figures() {
    let (_t, s) = mail_server();
    for (what, q, figure) in [
        ("800 phrase prefixes", vec!["\"the co\"*"; 800].join(" "), "3200 units"),
        ("1,638 fuzzy words", vec!["ab~2"; 1638].join(" "), "1638 units"),
        ("2,048 prefixes", vec!["th*"; 2048].join(" "), "2048 units"),
    ] {
        assert!(q.len() <= 8192, "{what}: within the query length limit");
        let (status, v) = search(&s, &q);
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query")), "{what}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(figure) && message.contains("at most 32"), "{what}: {message}");
    }
    let words: Vec<String> = (0..1100).map(|i| format!("w{i}")).collect();
    let (status, v) = search(&s, &words.join(" "));
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("1100 clauses; at most 1024"), "{v}");
    // Within the budget: answered.
    let (status, v) = search(&s, &vec!["ga*"; 32].join(" OR "));
    assert_eq!(status, 200, "{v}");
    assert!(v["total"].as_u64().unwrap() > 0);

    // Index set operations have their budget too (the embedded store's).
    let terms: Vec<String> = (0..17).map(|i| format!("q=by_from:prefix:{i}")).collect();
    if !super::over_hbase() {
        let (status, v) = s.get_json(&format!("/tables/mail/indexes:intersect?{}", terms.join("&")));
        assert_eq!(status, 400, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("17 lookups combined; at most 16"), "{v}");
        let (status, v) = s.get_json(&format!("/tables/mail/indexes:intersect?{}", terms[..16].join("&")));
        assert_eq!(status, 200, "{v}");
    }

    // The operator sets the budgets.
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--max-expansions", "2", "--max-clauses", "3"]);
    let (status, v) = search(&s, "ga* po*");
    assert_eq!(status, 200, "{v}");
    let (status, v) = search(&s, "ga* po* en*");
    assert!(status == 400 && v["error"]["message"].as_str().unwrap().contains("at most 2"), "{v}");
    let (status, v) = search(&s, "gas power enron meeting");
    assert!(status == 400 && v["error"]["message"].as_str().unwrap().contains("at most 3"), "{v}");

    // And the other budgets: lookups combined, hits and rows per page,
    // highlight text.
    let s = t.serve(&[
        "serve",
        "--max-lookups",
        "2",
        "--max-search-limit",
        "5",
        "--max-scan-limit",
        "3",
        "--max-highlight-bytes",
        "8",
    ]);
    let refused = |path: &str, figure: &str| {
        let (status, v) = s.get_json(path);
        let message = v["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(status == 400 && message.contains(figure), "{path}: {v}");
    };
    if !super::over_hbase() {
        refused(
            &format!("/tables/mail/indexes:intersect?{}", terms[..3].join("&")),
            "at most 2 (serve --max-lookups)",
        );
    }
    refused("/tables/mail/search?q=gas&limit=6", "limit must be 0..=5");
    refused("/tables/mail/scan?limit=4", "at most 3 (serve --max-scan-limit)");
    if !super::over_hbase() {
        assert_eq!(s.get_json(&format!("/tables/mail/indexes:intersect?{}", terms[..2].join("&"))).0, 200);
    }
    assert_eq!(s.get_json("/tables/mail/search?q=gas&limit=5").0, 200);
    assert_eq!(s.get_json("/tables/mail/scan?limit=3").0, 200);
    // A subject whose "meeting" starts past its 8th byte is not marked.
    let (_, v) = s.get_json("/tables/mail/search?q=subject:meeting&highlight=true&limit=5");
    let late: Vec<&Value> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["document"]["subject"].as_str().unwrap().to_lowercase().find("meeting") > Some(1))
        .collect();
    assert!(!late.is_empty(), "a subject with the word past its start: {v}");
    for hit in late {
        assert!(hit["highlights"]["subject"].is_null(), "marked past the 8th byte: {hit}");
    }
}

#[test]
fn http_open_date_ranges_match_everything_and_health_reports_the_work_pool() {
    let (_t, s) = mail_server();
    let (_, all) = search(&s, "*");
    let total = all["total"].as_u64().unwrap();
    assert!(total > 250, "{all}");
    for q in ["date:[* TO *]", "date:{* TO *}", "date:.."] {
        let (status, v) = search(&s, q);
        assert_eq!(status, 200, "{q}: {v}");
        assert_eq!(v["total"].as_u64(), Some(total), "{q}");
    }
    let (status, health) = s.get_json("/health");
    assert_eq!(status, 200);
    assert!(health["work"]["threads"].as_u64().unwrap() >= 1, "{health}");
    assert_eq!(health["work"]["queued"].as_u64(), Some(0), "{health}");
}

/// A GET of `/health` from a socket bound to `from` (another loopback
/// address is another client); (status, body), or `None` when the server
/// closed the connection without answering.
fn health_from(from: &str, addr: &str) -> Option<u16> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut stream = socket.connect(addr.parse().unwrap()).await.ok()?;
        let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        let text = String::from_utf8_lossy(&answer);
        text.split(' ').nth(1).and_then(|s| s.parse().ok())
    })
}

#[test]
fn http_one_client_holds_at_most_its_share_of_the_connections() {
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--max-connections", "16", "--max-connections-per-client", "4"]);
    // Four idle connections from 127.0.0.1, each answered once (so the
    // server has counted them), then held open.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
        let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr);
        std::io::Write::write_all(&mut c, request.as_bytes()).unwrap();
        let mut first = [0u8; 12];
        std::io::Read::read_exact(&mut c, &mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        held.push(c);
    }
    // A fifth from the same address is closed unanswered...
    assert_eq!(health_from("127.0.0.1", &s.addr), None, "the fifth connection of one client");
    // ...while another client is served.
    assert_eq!(health_from("127.0.0.2", &s.addr), Some(200), "another client");
    drop(held);
    // Its connections closed, the first client is served again (the
    // server notices the closes as it reads them).
    let served = (0..200).any(|_| {
        let answered = health_from("127.0.0.1", &s.addr) == Some(200);
        if !answered {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        answered
    });
    assert!(served, "served again once its connections closed");
    let (_, metrics) = s.request("GET", "/metrics", None);
    assert!(metrics.contains("reason=\"per_client_connections\""), "counted");
}

/// Request bodies in flight share a server-wide budget taken before a body
/// is read: a body that does not fit waits its read time and is refused
/// 503 `busy` unread; the budget comes back when the request holding it is
/// gone.
#[test]
fn http_bodies_in_flight_share_a_budget_taken_before_reading() {
    use std::io::Write as _;
    let t = super::dir();
    let out = t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    // A body waits half its read time (2 s) for the budget.
    let s = t.serve(&["serve", "--max-bodies-bytes", "1000000", "--body-timeout-ms", "4000"]);
    let mutate = |n: usize| {
        let mutations: Vec<Value> = (0..n)
            .map(|i| serde_json::json!({"put": {"key": format!("r{i:07}"), "cells": [{"column": "f:q", "value": "v"}]}}))
            .collect();
        serde_json::json!({"mutations": mutations}).to_string()
    };
    let big = mutate(5000);
    assert!(big.len() > 200_000 && big.len() < 400_000, "{}", big.len());
    // A client that announces 900 KB and sends a little: it holds 900 KB of
    // the budget while its body arrives.
    let mut slow = std::net::TcpStream::connect(&s.addr).unwrap();
    let head = format!(
        "POST /tables/t/mutate HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 900000\r\n\r\n{{",
        s.addr
    );
    slow.write_all(head.as_bytes()).unwrap();
    // Until the slow body holds its share (it is read on the server's
    // time), another big body does not fit: 503 busy, not read.
    let refused = (0..5).find_map(|_| {
        let (status, text) = s.request("POST", &super::mutate_many(Some("t")), Some(&big));
        (status == 503).then_some(text)
    });
    let text = refused.expect("a body past the budget refused");
    assert!(text.contains("\"busy\"") && text.contains("--max-bodies-bytes"), "{text}");
    // Small requests go on.
    assert_eq!(s.get_json("/tables/t").0, 200);
    // The slow client gone, its share comes back.
    drop(slow);
    let served = (0..100).any(|_| s.request("POST", &super::mutate_many(Some("t")), Some(&big)).0 == 200);
    assert!(served, "the budget came back");
    // A body larger than the whole budget can never fit: 413 at once (not
    // 503 `busy` "retry" after a wait), with its length stated or chunked.
    let huge = mutate(20_000);
    assert!(huge.len() > 1_000_000, "{}", huge.len());
    let (status, text) = s.request("POST", &super::mutate_many(Some("t")), Some(&huge));
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("body_too_large") && text.contains("--max-bodies-bytes"), "{text}");
    let mut chunked = format!(
        "POST /tables/t/mutate HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        s.addr
    )
    .into_bytes();
    for part in huge.as_bytes().chunks(100_000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (status, body) = rowsearch_tests::send_raw(&s.addr, &chunked);
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
}

/// A highlight looks through the first 1 MiB of a field's text: a word
/// only past it is found by the search but not marked; one before it is.
#[test]
fn http_a_highlight_marks_words_within_the_first_mib_of_a_field() {
    let (_t, s) = mail_server();
    let text = format!("quokka {} zebrafinch", "filler ".repeat(160_000));
    assert!(text.len() > 1 << 20);
    let body = serde_json::json!({"cells": [{"column": "b:text", "value": text}]}).to_string();
    let key = enc(r#"{"user":"zed-z","date":990000000000,"id":1}"#);
    let (status, answer) = s.request("PUT", &format!("/tables/mail/rows?key_fields={key}"), Some(&body));
    assert_eq!(status, 200, "{answer}");
    let highlight = |q: &str| {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q={q}&highlight=true&format=cells"));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["total"].as_u64(), Some(1), "{q}: found");
        v["hits"][0]["highlights"]["body"].as_str().map(str::to_owned)
    };
    let early = highlight("quokka").expect("a highlight of the early word");
    assert!(early.contains("<em>quokka</em>"), "{early}");
    assert_eq!(highlight("zebrafinch"), None, "past the first MiB: not marked");
}

/// A `mutate` is read and written in parts of a few thousand mutations,
/// all in one transaction: one that fails at its last mutation writes none
/// of the ones before it, in earlier parts; one that succeeds writes every
/// row and answers the feed position of the last.
#[test]
fn http_a_large_mutate_is_all_or_nothing_across_its_parts() {
    if super::embedded_only("all-or-nothing batches of many rows (HBase is atomic per row)") {
        return;
    }
    let t = super::dir();
    let out = t.run(&["create-table", "t", "--schema", r#"{"families":[{"name":"f"}]}"#]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    let s = t.serve(&["serve"]);
    let puts = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| serde_json::json!({"put": {"key": format!("r{i:06}"), "cells": [{"column": "f:q", "value": "v"}]}}))
            .collect()
    };
    let mut bad = puts(10_000);
    bad.push(serde_json::json!({"put": {"key": "last", "cells": [{"column": "nofamily:q", "value": "v"}]}}));
    let (status, text) =
        s.request("POST", "/tables/t/mutate", Some(&serde_json::json!({"mutations": bad}).to_string()));
    assert_eq!(status, 422, "{text}");
    let (_, count) = s.get_json("/tables/t/count");
    assert_eq!(count["count"], 0, "nothing of the earlier parts was written");
    let (status, v) = {
        let (status, text) = s.request(
            "POST",
            "/tables/t/mutate",
            Some(&serde_json::json!({"mutations": puts(10_000)}).to_string()),
        );
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    assert_eq!((status, v["rows"].as_u64()), (200, Some(10_000)), "{v}");
    let (_, count) = s.get_json("/tables/t/count");
    assert_eq!(count["count"], 10_000);
    assert_eq!(v["seq"].as_u64(), Some(10_000), "the last row's feed position: {v}");
}

/// A body refused before it is read (413 from its length) does not cost
/// its client the answer: the server reads and drops the rest of the body
/// for a moment after answering, so a client that writes the whole body
/// before reading gets its 413, not a connection reset (closing with
/// unread bytes resets the connection, and the reset discards the answer).
#[test]
fn http_a_refused_upload_reads_its_answer_not_a_reset() {
    use std::io::{Read, Write};
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    for round in 0..3 {
        let body = vec![b' '; (64 << 20) + 1];
        let mut stream = std::net::TcpStream::connect(&s.addr).unwrap();
        let head = format!(
            "PUT /tables/t/rows/a HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n",
            s.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body).unwrap_or_else(|e| panic!("round {round}: the body not taken: {e}"));
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap_or_else(|e| panic!("round {round}: no answer: {e}"));
        let (status, text) = rowsearch_tests::parse_response(&response);
        assert_eq!(status, 413, "round {round}: {}", String::from_utf8_lossy(&text));
        assert!(String::from_utf8_lossy(&text).contains("body_too_large"));
    }
}
