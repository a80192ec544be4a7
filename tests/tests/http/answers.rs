//! Answers waiting to be sent hold at most the server's budget (issue 36),
//! through the real binary: clients that ask for a large answer and never
//! read it (HTTP/1.1 connections that do not read their socket) cannot
//! hold more than `--max-answers-bytes` of the server's memory; past it
//! they get a 503 `busy`, and the budget comes back once answers are read.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use rowsearch_tests::{Server, TestDir};
use serde_json::{Value, json};

/// Rows of the table and bytes of each one's value: a scan of all of them
/// answers about 16 MB.
const ROWS: usize = 160;
const VALUE_BYTES: usize = 100_000;

/// A table of [`ROWS`] rows of [`VALUE_BYTES`] each.
fn big_rows() -> TestDir {
    let t = super::dir();
    let out = t.run(&["create-table", "big", "--schema", r#"{"families":[{"name":"f"}]}"#]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    let s = t.serve(&["serve"]);
    for part in 0..ROWS / 40 {
        let mutations: Vec<Value> = (part * 40..part * 40 + 40)
            .map(|i| json!({"put": {"key": format!("r{i:04}"), "cells": [{"column": "f:q", "value": "x".repeat(VALUE_BYTES)}]}}))
            .collect();
        let (status, text) = s.request(
            "POST",
            &super::mutate_many(Some("big")),
            Some(&json!({"mutations": mutations}).to_string()),
        );
        assert_eq!(status, 200, "{text}");
    }
    t
}

const SCAN: &str = "/tables/big/scan?limit=1000";

/// Scan requests answered so far (every status), from `/metrics`.
fn scans_answered(s: &Server) -> u64 {
    let (_, metrics) = s.request("GET", "/metrics", None);
    metrics
        .lines()
        .filter(|l| l.starts_with("rowsearch_http_requests_total{") && l.contains("route=\"scan\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A connection that asks for the scan with a small receive buffer and
/// does not read (yet).
fn unread_scan(addr: &str) -> std::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let stream = runtime.block_on(socket.connect(addr.parse().unwrap())).unwrap().into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    let mut stream = stream;
    write!(stream, "GET {SCAN} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    stream
}

#[test]
fn http_clients_that_never_read_hold_at_most_the_answer_budget() {
    let t = big_rows();
    let budget: u64 = 40_000_000;
    // The time limit is not what is tested: 24 answers of 16 MB built on
    // two workers of a test build, on a loaded machine, may take longer
    // than the default 30 s in all.
    // mimalloc told to give freed memory back at once (as a batch job with
    // a budget runs, `search-api/src/alloc.rs`): resident memory is then
    // what is held, not also what the allocator keeps of the answers the
    // server built meanwhile (over HBase, with the Thrift replies they
    // were read from, that alone passed the bound once).
    let mut command = t.command();
    command
        .args(["serve", "--max-answers-bytes", &budget.to_string(), "--timeout-ms", "300000"])
        .args(["--listen", "127.0.0.1:0"])
        .envs([("MIMALLOC_ARENA_EAGER_COMMIT", "0"), ("MIMALLOC_PURGE_DELAY", "0")]);
    let s = rowsearch_tests::Server::spawn(command);
    // One answer read whole: its size.
    let (status, one) = s.raw("GET", SCAN, &[], None);
    assert_eq!(status, 200);
    assert!(one.len() > 16_000_000, "{}", one.len());
    // Every worker builds such an answer once (the memory a worker's
    // allocator keeps after building one is there before and after).
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| assert_eq!(s.raw("GET", SCAN, &[], None).0, 200));
        }
    });
    let before_kb = s.memory_kb("VmRSS");
    let clients = 24;
    let mut held: Vec<std::net::TcpStream> = (0..clients).map(|_| unread_scan(&s.addr)).collect();
    let started = Instant::now();
    while scans_answered(&s) < clients + 5 {
        assert!(started.elapsed() < Duration::from_secs(120), "the scans were never answered");
        std::thread::yield_now();
    }
    let grown_mb = (s.memory_kb("VmRSS").saturating_sub(before_kb)) as f64 / 1024.0;
    eprintln!("{clients} unread 16 MB answers: VmRSS +{grown_mb:.0} MB (budget {} MB)", budget / 1_000_000);
    // Two answers fit the budget; the rest were refused (the statuses below
    // show it exactly). Resident memory also holds what the allocator keeps
    // of answers built meanwhile, which varies by machine, so it is checked
    // only against what holding every answer would take (bench/attacks.py
    // measures it).
    let unbounded_mb = (clients as usize * one.len()) as f64 / 1e6;
    assert!(
        grown_mb < unbounded_mb / 2.0,
        "VmRSS grew {grown_mb:.0} MB: as if the {unbounded_mb:.0} MB were held"
    );
    // Read every answer: the ones held are whole, the others are 503 busy.
    let (mut whole, mut busy) = (0, 0);
    for c in &mut held {
        let mut answer = Vec::new();
        c.read_to_end(&mut answer).unwrap();
        let (status, body) = rowsearch_tests::parse_response(&answer);
        match status {
            200 => {
                assert!(body == one, "a held answer arrives whole: {} of {} bytes", body.len(), one.len());
                whole += 1;
            }
            503 => {
                let v: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(v["error"]["code"], "busy", "{v}");
                assert!(v["error"]["message"].as_str().unwrap().contains("--max-answers-bytes"), "{v}");
                busy += 1;
            }
            other => panic!("status {other}"),
        }
    }
    assert!((1..=2).contains(&whole) && whole + busy == clients, "{whole} whole, {busy} busy");
    // Read, the answers gave their budget back.
    let (status, again) = s.raw("GET", SCAN, &[], None);
    assert_eq!((status, again.len()), (200, one.len()));
}

/// HTTP/2 clients whose flow window stays shut: the server cannot send a
/// byte of any answer's body, and holds at most the budget of them.
#[test]
fn http2_streams_with_a_shut_window_hold_at_most_the_answer_budget() {
    let t = big_rows();
    let budget: u64 = 40_000_000;
    // The time limit is not what is tested: 24 answers of 16 MB built on
    // two workers of a test build, on a loaded machine, may take longer
    // than the default 30 s in all.
    let s = t.serve(&["serve", "--max-answers-bytes", &budget.to_string(), "--timeout-ms", "300000"]);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| assert_eq!(s.raw("GET", SCAN, &[], None).0, 200));
        }
    });
    let before_kb = s.memory_kb("VmRSS");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (connections, streams) = (3, 16);
    let statuses = runtime.block_on(async {
        let mut held = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..connections {
            let tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
            let (mut client, connection) =
                h2::client::Builder::new().initial_window_size(0).handshake::<_, bytes::Bytes>(tcp).await.unwrap();
            held.push(tokio::spawn(connection));
            for _ in 0..streams {
                client = client.ready().await.unwrap();
                let request = http::Request::get(format!("http://{}{SCAN}", s.addr)).body(()).unwrap();
                let (answer, _) = client.send_request(request, true).unwrap();
                answers.push(answer);
            }
            held.push(tokio::spawn(async move {
                // The client lives as long as the connection.
                let _client = client;
                std::future::pending::<()>().await;
                Ok::<(), h2::Error>(())
            }));
        }
        // The heads arrive (they are not flow-controlled); the bodies cannot.
        // Kept: a response dropped unread resets its stream.
        let mut kept = Vec::new();
        for answer in answers {
            kept.push(answer.await.unwrap());
        }
        let statuses: Vec<u16> = kept.iter().map(|r| r.status().as_u16()).collect();
        let grown_mb = (s.memory_kb("VmRSS").saturating_sub(before_kb)) as f64 / 1024.0;
        eprintln!(
            "{connections} HTTP/2 connections x {streams} shut streams of 16 MB: VmRSS +{grown_mb:.0} MB (budget {} MB)",
            budget / 1_000_000
        );
        // The statuses show the budget exactly; resident memory (which also
        // holds what the allocator keeps of answers built meanwhile, and
        // varies by machine: +139 MB on one CI run) only against holding
        // every answer.
        let unbounded_mb = (connections * streams * 16) as f64;
        assert!(grown_mb < unbounded_mb / 2.0, "VmRSS grew {grown_mb:.0} MB: as if the {unbounded_mb:.0} MB were held");
        drop(kept);
        for task in held {
            task.abort();
        }
        statuses
    });
    let whole = statuses.iter().filter(|&&s| s == 200).count();
    let busy = statuses.iter().filter(|&&s| s == 503).count();
    assert!((1..=2).contains(&whole) && whole + busy == connections * streams, "{statuses:?}");
    // The connections gone (the server notices as it reads the closes),
    // their answers give the budget back.
    drop(runtime);
    let started = Instant::now();
    while s.raw("GET", SCAN, &[], None).0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(30), "the budget never came back");
    }
}
