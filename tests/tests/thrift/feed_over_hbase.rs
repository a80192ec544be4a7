//! The change feed for others and its consumers over HBase (issue 61):
//! `GET /tables/{t}/changes` names every client's writes (through HBase's
//! replication peer, `hbase/hbase.sh`), a backfill with an old timestamp
//! and a delete included; consumers live in HBase, so two servers over the
//! same HBase see and move the same ones; HBase's guarantees (sequences
//! are times, the feed keeps a day) are the ones the answers give.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rowsearch::store::PutCell;
use rowsearch::thrift::HbaseClient;
use rowsearch_tests::{Backend, Server, TestDir, stderr};
use serde_json::Value;

const TABLE: &str = "notes";

fn put(client: &mut HbaseClient, row: &str, body: &str, timestamp: Option<u64>) {
    let mut cell = PutCell::new("f", "body", body);
    cell.timestamp = timestamp;
    client.put_rows(TABLE, &[(row.as_bytes().to_vec(), vec![cell])]).unwrap();
}

fn changes(s: &Server, query: &str) -> (u16, Value) {
    s.get_json(&format!("/tables/{TABLE}/changes?{query}"))
}

/// Reads the feed after `since` (long polls) until every row of `want`
/// was named with the kind it wants; the last kind named for each row and
/// the cursor then. Fails after 30 s.
fn read_until(s: &Server, since: u64, want: &[(&str, &str)]) -> (BTreeMap<String, Value>, u64) {
    let started = Instant::now();
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    let mut cursor = since;
    loop {
        let done = want.iter().all(|(k, kind)| seen.get(*k).is_some_and(|c| c["kind"] == *kind));
        if done {
            return (seen, cursor);
        }
        assert!(started.elapsed() < Duration::from_secs(30), "after 30 s only {seen:?}");
        let (status, page) = changes(s, &format!("since={cursor}&wait_ms=2000&cells=true"));
        assert_eq!(status, 200, "{page}");
        let mut last_seq = cursor;
        for change in page["changes"].as_array().unwrap() {
            let seq = change["seq"].as_u64().unwrap();
            assert!(seq > cursor && seq >= last_seq, "in order, after the cursor: {page}");
            last_seq = seq;
            seen.insert(change["key"].as_str().unwrap().to_owned(), change.clone());
        }
        let next = page["cursor"].as_u64().unwrap();
        assert!(next >= cursor && next <= page["last_seq"].as_u64().unwrap(), "{page}");
        cursor = next;
    }
}

#[test]
fn thrift_the_change_feed_over_hbase_names_every_clients_writes_and_consumers_are_shared() {
    if rowsearch_tests::hbase("thrift::feed_over_hbase").is_none() {
        return;
    }
    let t = TestDir::on(Backend::Hbase);
    let out = t.run(&["create-table", TABLE, "--schema", r#"{"families":[{"name":"f","max_versions":3}]}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Two servers over the same HBase (and data directory).
    let a = t.serve(&["serve"]);
    let b = t.serve(&["serve"]);
    let (status, made) = a.get_json("/consumers/warehouse");
    assert_eq!((status, made["error"]["code"].as_str()), (404, Some("consumer_not_found")), "{made}");
    let (status, text) = a.request("PUT", "/consumers/warehouse", Some("{}"));
    assert_eq!(status, 201, "{text}");
    let made: Value = serde_json::from_str(&text).unwrap();
    let start = made["position"].as_u64().unwrap();
    // HBase's guarantee: the feed keeps a day, so a consumer holds it at
    // most that long.
    assert_eq!(made["retention_ms"].as_u64(), Some(rowsearch::hbase::FEED_KEEPS_MS), "{made}");

    // Another client writes straight into HBase: a row, a backfill dated
    // 1970, a row it then deletes; and rowsearch writes one (server a).
    let mut other = HbaseClient::new(t.hbase().unwrap(), Duration::from_secs(30));
    put(&mut other, "r1", "first", None);
    put(&mut other, "old", "backfilled", Some(1_000));
    put(&mut other, "r2", "gone soon", None);
    other.delete_row(TABLE, b"r2").unwrap();
    let (status, text) = a.request(
        "PUT",
        &format!("/tables/{TABLE}/rows/mine"),
        Some(r#"{"cells":[{"column":"f:body","value":"through rowsearch"}]}"#),
    );
    assert_eq!(status, 200, "{text}");
    // Server b reads them all from the consumer's position.
    let want = [("r1", "put"), ("old", "put"), ("r2", "delete"), ("mine", "put")];
    let (seen, cursor) = read_until(&b, start, &want);
    assert_eq!(seen["old"]["cells"][0]["value"], "backfilled", "{:?}", seen["old"]);
    assert!(seen["r2"].get("cells").is_none(), "a deleted row has no cells: {:?}", seen["r2"]);

    // b acknowledges; a sees the position (the consumer lives in HBase).
    let (status, text) =
        b.request("PUT", "/consumers/warehouse", Some(&format!(r#"{{"position":{cursor}}}"#)));
    assert_eq!(status, 200, "{text}");
    let (_, state) = a.get_json("/consumers/warehouse");
    assert_eq!(state["position"].as_u64(), Some(cursor), "{state}");
    assert_eq!((state["holding"].as_bool(), state["fell_behind"].as_bool()), (Some(true), Some(false)));
    // A change after it is pending, on either server, once settled.
    put(&mut other, "r3", "later", None);
    let started = Instant::now();
    while b.get_json("/consumers/warehouse").1["pending"].as_u64() == Some(0) {
        assert!(started.elapsed() < Duration::from_secs(30), "r3 never pending");
        std::thread::sleep(Duration::from_millis(100));
    }
    // ... and the consumer reads on through the other server (a row may
    // be named again: rowsearch's record of its write and HBase's
    // replication of it both name it; at least once).
    let (status, page) = changes(&a, "consumer=warehouse&wait_ms=10000");
    assert_eq!(status, 200, "{page}");
    let first = &page["changes"].as_array().unwrap()[0];
    assert!(first["seq"].as_u64().unwrap() > cursor, "after the position: {page}");
    read_until(&a, cursor, &[("r3", "put")]);

    // HBase's limits said as the embedded store says them: a position
    // older than the feed keeps is behind it (410, with where it starts);
    // one past now is past its end (400).
    let (status, behind) = changes(&b, "since=1");
    assert_eq!((status, behind["error"]["code"].as_str()), (410, Some("fell_behind")), "{behind}");
    let (status, past) = changes(&b, &format!("since={}", cursor + 3_600_000));
    assert_eq!((status, past["error"]["code"].as_str()), (400, Some("past_feed_end")), "{past}");
    let (status, text) = b.request("PUT", "/consumers/audit", Some(r#"{"retention_ms": 2592000000}"#));
    assert_eq!(status, 201, "{text}");
    let audit: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(audit["retention_ms"].as_u64(), Some(rowsearch::hbase::FEED_KEEPS_MS), "{audit}");

    // The CLI reads the same feed over HBase.
    let out = t.run(&["changes", TABLE, "--since", &start.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let keys: Vec<String> = rowsearch_tests::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_owned())
        .collect();
    for (k, _) in want {
        assert!(keys.iter().any(|got| got == k), "{k} not in {keys:?}");
    }

    // Deleted through one server, gone for the other.
    let (_, list) = a.get_json("/consumers");
    let names: Vec<&str> =
        list["consumers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["audit", "warehouse"], "{list}");
    assert_eq!(b.request("DELETE", "/consumers/warehouse", None).0, 200);
    assert_eq!(a.get_json("/consumers/warehouse").0, 404);
}
