//! The HTTP layer's own answers (issue 19): requests hyper cannot parse,
//! wrong methods, chunked and oversized bodies, slow bodies and idle
//! keep-alive connections, each answered in the JSON error shape or
//! closed, through the real binary.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rowsearch_tests::parse_response;
use serde_json::Value;

/// Sends `bytes` on a fresh connection and reads until the server closes it.
fn exchange(addr: &str, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The server may answer and close before reading it all.
    let _ = stream.write_all(bytes);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response
}

/// Status, the error code of a JSON error body, and the raw head.
fn error_of(response: &[u8]) -> (u16, String, String) {
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a head");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let (status, body) = parse_response(response);
    let error: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {}", String::from_utf8_lossy(&body)));
    assert!(error["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{error}");
    (status, error["error"]["code"].as_str().unwrap_or_default().to_owned(), head)
}

#[test]
fn http_layer_errors_have_the_json_shape() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create", "--max-body", "1000"]);
    let host = format!("Host: {}\r\n", s.addr);
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("not HTTP", b"GARBAGE\r\n\r\n".to_vec(), 400, "bad_request"),
        (
            "a bad Content-Length",
            format!("GET /health HTTP/1.1\r\n{host}Content-Length: abc\r\n\r\n").into_bytes(),
            400,
            "bad_request",
        ),
        (
            "headers of 500 KB",
            format!("GET /health HTTP/1.1\r\n{host}X-Big: {}\r\n\r\n", "a".repeat(500_000)).into_bytes(),
            431,
            "headers_too_large",
        ),
        (
            "a request line of 100 KB",
            format!("GET /{} HTTP/1.1\r\n{host}\r\n", "a".repeat(100_000)).into_bytes(),
            414,
            "uri_too_long",
        ),
        (
            "a Content-Length over --max-body",
            format!(
                "PUT /tables/t HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
            )
            .into_bytes(),
            413,
            "body_too_large",
        ),
        (
            "a chunked body over --max-body",
            format!(
                "PUT /tables/t HTTP/1.1\r\n{host}Connection: close\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n{}",
                "200\r\n".to_owned() + &"x".repeat(512) + "\r\n" + "200\r\n" + &"x".repeat(512) + "\r\n0\r\n\r\n"
            )
            .into_bytes(),
            413,
            "body_too_large",
        ),
    ];
    for (what, request, status, code) in cases {
        let response = exchange(&s.addr, &request);
        let (got, got_code, _) = error_of(&response);
        assert_eq!((got, got_code.as_str()), (status, code), "{what}");
        let (status, health) = s.get_json("/health");
        assert_eq!((status, health["status"].as_str()), (200, Some("ok")), "after {what}");
    }

    // A method the path does not take: 405 with Allow.
    let response =
        exchange(&s.addr, format!("PATCH /tables/t HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes());
    let (status, code, head) = error_of(&response);
    assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
    assert!(head.contains("\r\nallow: delete, get, head, put"), "{head}");
    let response =
        exchange(&s.addr, format!("POST /health HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes());
    let (status, _, head) = error_of(&response);
    assert_eq!(status, 405);
    assert!(head.contains("\r\nallow: get, head"), "{head}");
}

/// HEAD is answered wherever GET is: the same status and headers
/// (`Content-Length` of the GET's body), no body; a path without GET is
/// still a 405.
#[test]
fn http_head_answers_like_get_without_the_body() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    for path in ["/", "/health", "/page.js", "/tables", "/tables/nope"] {
        let get = exchange(
            &s.addr,
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let head = exchange(
            &s.addr,
            format!("HEAD {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let split = |r: &[u8]| {
            let at = r.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
            (String::from_utf8_lossy(&r[..at]).to_ascii_lowercase(), r.len() - at)
        };
        let ((get_head, get_body), (head_head, head_body)) = (split(&get), split(&head));
        assert_eq!(get_head.lines().next(), head_head.lines().next(), "{path}: same status");
        assert!(get_body > 0 && head_body == 0, "{path}: GET body {get_body} bytes, HEAD body {head_body}");
        let length = |h: &str| h.lines().find(|l| l.starts_with("content-length:")).map(str::to_owned);
        if let Some(l) = length(&get_head) {
            assert_eq!(length(&head_head), Some(l), "{path}");
        }
    }
    let response =
        exchange(&s.addr, b"HEAD /tables/t/mutate HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with(b"HTTP/1.1 405"), "{}", String::from_utf8_lossy(&response));
}

/// Chunked bodies are taken within the size limit, like sized ones.
#[test]
fn http_chunked_bodies_are_accepted() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create"]);
    let schema = r#"{"families":[{"name":"n"}]}"#;
    let chunked = |path: &str, body: &str| {
        let (a, b) = body.split_at(body.len() / 2);
        let request = format!(
            "PUT {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
            s.addr,
            a.len(),
            b.len()
        );
        parse_response(&exchange(&s.addr, request.as_bytes()))
    };
    assert_eq!(chunked("/tables/notes", schema).0, 201);
    let (status, body) =
        chunked("/tables/notes/rows/r1", r#"{"cells":[{"column":"n:q","value":"chunked"}]}"#);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(s.get_json("/tables/notes/rows/r1").1["cells"][0]["value"], "chunked");
}

/// A body sent too slowly is answered 408; a keep-alive connection left
/// idle is closed.
#[test]
fn http_slow_bodies_and_idle_keep_alive_connections_end() {
    let t = super::dir();
    let s = t.serve(&[
        "serve",
        "--create",
        "--body-timeout-ms",
        "300",
        "--header-timeout-ms",
        "300",
        "--timeout-ms",
        "300",
    ]);
    // Headers promise 100 bytes; one comes, then nothing.
    let mut slow = TcpStream::connect(&s.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "PUT /tables/notes HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{",
        s.addr
    );
    slow.write_all(head.as_bytes()).unwrap();
    let mut response = vec![0u8; 4096];
    let n = slow.read(&mut response).expect("answered, not timed out");
    let (status, code, _) = error_of(&response[..n]);
    assert_eq!((status, code.as_str()), (408, "body_timeout"));
    assert_eq!(s.get_json("/tables/notes").0, 404, "nothing was created");

    // One request on a keep-alive connection, then silence: closed.
    let mut idle = TcpStream::connect(&s.addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    idle.write_all(format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).as_bytes()).unwrap();
    let mut response = Vec::new();
    idle.read_to_end(&mut response).expect("closed by the server, not timed out");
    assert_eq!(parse_response(&response).0, 200);
}
