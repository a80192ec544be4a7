//! Structured logs: `serve --log-format json` writes one JSON line per
//! request (method, route, status, duration, request id, the key's uid and
//! never the key), slow requests at WARN, jobs; the request id comes back
//! in `X-Request-Id` (the client's own when it sends a sane one).

use rowsearch_tests::{Server, raw_request};
use serde_json::{Value, json};

use super::indexed_fixture;
use super::keys::{MASTER, call, make_key};

/// The header `name` of a raw response.
fn header(response: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(response);
    let head = text.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

#[test]
fn http_json_logs_have_a_line_per_request_with_its_id_and_key_uid_never_the_key() {
    let t = indexed_fixture();
    let log = t.dir.path().join("server.log");
    let mut command = t.command();
    command.args([
        "serve",
        "--master-key",
        MASTER,
        "--log-format",
        "json",
        "--slow-ms",
        "0",
        "--listen",
        "127.0.0.1:0",
    ]);
    let s = Server::spawn_with_stderr(command, std::fs::File::create(&log).unwrap().into());
    let (uid, key) = make_key(&s, json!({"actions": ["search", "admin"]}));
    let auth = format!("Bearer {key}");
    // The client's request id comes back; one is made for a request
    // without one (and for one whose id is not sane).
    let given = raw_request(
        &s.addr,
        "GET",
        "/tables/mail/search?q=gas",
        &[("Authorization", &auth), ("X-Request-Id", "client-id-1")],
        None,
    );
    assert_eq!(header(&given, "x-request-id").as_deref(), Some("client-id-1"));
    let made = raw_request(
        &s.addr,
        "GET",
        "/tables/nope/search?q=gas",
        &[("Authorization", &auth), ("X-Request-Id", "bad id")],
        None,
    );
    let made_id = header(&made, "x-request-id").unwrap();
    assert!(made_id.len() == 16 && made_id != "bad id", "{made_id}");
    let (status, _) = call(&s, "POST", "/tables/mail/reindex?mode=full", Some(&key), None);
    assert_eq!(status, 202);
    // The job's end is logged; wait for it through the log itself.
    let lines = || -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    };
    let started = std::time::Instant::now();
    while !lines().iter().any(|l| l["message"] == "job done") {
        assert!(started.elapsed().as_secs() < 60, "no job line: {:?}", lines());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A request refused by the parameter check names its route.
    let refused = raw_request(
        &s.addr,
        "GET",
        "/tables/mail/search?q=gas&bogus=1",
        &[("Authorization", &auth), ("X-Request-Id", "refused-1")],
        None,
    );
    assert_eq!(rowsearch_tests::parse_response(&refused).0, 400);
    // A client that leaves before its answer (a long poll of the change
    // feed, the embedded store's) is logged.
    if !super::over_hbase() {
        use std::io::Write as _;
        let (_, page) = call(&s, "GET", "/tables/mail/changes?limit=1", Some(MASTER), None);
        let last = page["last_seq"].as_u64().unwrap();
        let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
        write!(
            c,
            "GET /tables/mail/changes?since={last}&wait_ms=30000 HTTP/1.1\r\nHost: {}\r\n\
             Authorization: Bearer {MASTER}\r\nX-Request-Id: leaver-1\r\n\r\n",
            s.addr
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(c);
    }
    let started = std::time::Instant::now();
    while !super::over_hbase() && !lines().iter().any(|l| l["request_id"] == "leaver-1") {
        assert!(started.elapsed().as_secs() < 20, "the client's leaving was not logged: {:?}", lines());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(s);
    // Every line is JSON: nothing printed around the log.
    let text = std::fs::read_to_string(&log).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(serde_json::from_str::<Value>(line).is_ok(), "a plain line in a JSON log: {line}");
    }
    let lines = lines();
    let request = |id: &str| {
        lines.iter().find(|l| l["request_id"] == id).cloned().unwrap_or_else(|| panic!("{id}: {lines:?}"))
    };
    let search = request("client-id-1");
    assert_eq!(search["method"], "GET");
    assert_eq!(search["route"], "search");
    assert_eq!(search["status"], 200);
    assert_eq!(search["key"].as_str(), Some(uid.as_str()));
    assert!(search["duration_ms"].as_f64().is_some());
    // --slow-ms 0: every request is slow, at WARN.
    assert_eq!((search["level"].as_str(), search["slow"].as_bool()), (Some("WARN"), Some(true)));
    let refused = request("refused-1");
    assert_eq!(
        (refused["route"].as_str(), refused["status"].as_u64()),
        (Some("search"), Some(400)),
        "{refused}"
    );
    if !super::over_hbase() {
        let leaver = request("leaver-1");
        assert_eq!(
            (leaver["route"].as_str(), leaver["status"].as_u64()),
            (Some("changes"), Some(499)),
            "{leaver}"
        );
    }
    let missing = request(&made_id);
    assert_eq!(missing["status"], 404);
    let job = lines.iter().find(|l| l["message"] == "job done").unwrap();
    assert_eq!((job["kind"].as_str(), job["table"].as_str()), (Some("reindex"), Some("mail")));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(&key) && !text.contains(MASTER), "a key in the log");
}
