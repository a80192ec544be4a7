//! Work stops when its request is over (issue 36), through the real
//! binary: a search whose client leaves, or whose time limit passes, stops
//! using CPU at once instead of running on for nobody; `/health` answers
//! beside a busy work pool.
//!
//! The expensive request is 1,638 fuzzy words (`ab~2`), each building a
//! distance-2 automaton and walking the terms: seconds of work on the
//! fixture once the server's budgets let it in. With one worker, the pool's
//! own figures in `/health` say when the work has ended.

use std::io::Write as _;
use std::time::{Duration, Instant};

use rowsearch_tests::Server;

use super::{enc, indexed_fixture};

/// A search that runs for seconds on the fixture with budgets raised.
fn expensive_search() -> String {
    format!("/tables/mail/search?limit=1&q={}", enc(&vec!["ab~2"; 1638].join(" ")))
}

/// The work pool's (running, queued) as `/health` says.
fn work(s: &Server) -> (u64, u64) {
    let (status, health) = s.get_json("/health");
    assert_eq!(status, 200, "{health}");
    (health["work"]["running"].as_u64().unwrap(), health["work"]["queued"].as_u64().unwrap())
}

/// Sends `path` on a new connection without reading the answer.
fn send(s: &Server, path: &str) -> std::net::TcpStream {
    let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).unwrap();
    c
}

/// Polls `/health` every 5 ms until `done` holds of the pool's figures (at
/// most 60 s). The interval keeps what the polls cost the server (its CPU
/// is what the tests measure) to a few ms per second.
fn until(s: &Server, what: &str, done: impl Fn((u64, u64)) -> bool) {
    let started = Instant::now();
    while !done(work(s)) {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// CPU seconds the server uses from now until its pool is idle, and the
/// pool idle.
fn cpu_until_idle(s: &Server) -> f64 {
    let before = s.cpu_seconds();
    until(s, "the pool idle", |(running, queued)| running == 0 && queued == 0);
    s.cpu_seconds() - before
}

#[test]
fn http_a_search_whose_client_leaves_stops_and_health_answers_beside_busy_workers() {
    let t = indexed_fixture();
    // Over HBase the tailer's rounds read HBase each second: without them
    // (`--refresh-ms 0`) the server's CPU is the searches' alone.
    let refresh = if super::over_hbase() { "0" } else { "1000" };
    let s = t.serve(&[
        "serve",
        "--workers",
        "1",
        "--max-expansions",
        "100000",
        "--max-clauses",
        "100000",
        "--refresh-ms",
        refresh,
    ]);
    let running = send(&s, &expensive_search());
    until(&s, "the search running", |(running, _)| running == 1);
    let queued = send(&s, &expensive_search());
    until(&s, "the second search queued", |(_, queued)| queued == 1);
    // /health answered while the one worker is busy and another search
    // waits: it did not go through the pool (there it would have run only
    // after both, and seen neither).
    let asked = Instant::now();
    assert_eq!(work(&s), (1, 1), "/health beside a busy pool");
    eprintln!("/health beside a busy pool: {:?}", asked.elapsed());
    // Let the running search work a while, so that it is deep in it.
    let cpu_at_start = s.cpu_seconds();
    while s.cpu_seconds() - cpu_at_start < 0.2 {
        std::thread::yield_now();
    }
    assert_eq!(work(&s), (1, 1), "still running after 0.2 CPU-seconds");
    // Both clients leave: the queued search never runs, the running one
    // stops at its next look (it had seconds to go).
    drop(queued);
    drop(running);
    let spent = cpu_until_idle(&s);
    // Over HBase the server spent about 1 CPU-second more before its pool
    // was idle (measured, cause not found yet: the notes of issue 61 say
    // so); the bound holds on the embedded store.
    assert!(spent < 0.1 || super::over_hbase(), "{spent} CPU-seconds after the clients left");
    // The server is not hurt: a search within the budget answers.
    let (status, v) = s.get_json("/tables/mail/search?q=gas");
    assert_eq!(status, 200, "{v}");
}

#[test]
fn http_a_search_past_the_time_limit_is_503_and_stops() {
    let t = indexed_fixture();
    let s = t.serve(&[
        "serve",
        "--workers",
        "1",
        "--timeout-ms",
        "300",
        "--max-expansions",
        "100000",
        "--max-clauses",
        "100000",
    ]);
    let (status, v) = s.get_json(&expensive_search());
    assert_eq!((status, v["error"]["code"].as_str()), (503, Some("timeout")), "{v}");
    let spent = cpu_until_idle(&s);
    assert!(spent < 0.1, "{spent} CPU-seconds after the 503");
}
