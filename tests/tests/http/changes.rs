//! The change feed for others: `GET /tables/{t}/changes` (pages, long
//! poll, cursors, confinement), consumers whose positions hold the feed
//! from trimming, and a property test of a consumer following writes from
//! two processes.

use proptest::prelude::*;
use rowsearch_tests::{Server, TestDir};
use serde_json::{Value, json};

use super::{enc, mail_server};

/// Writes row `id` of mailbox `user` over HTTP; its sequence.
fn http_put(s: &Server, user: &str, id: u64) -> u64 {
    let fields = format!(r#"{{"user":"{user}","date":1000000000000,"id":{id}}}"#);
    let body = format!(r#"{{"cells":[{{"column":"m:subject","value":"feedword {id}"}}]}}"#);
    let (status, answer) =
        s.request("PUT", &format!("/tables/mail/rows?key_fields={}", enc(&fields)), Some(&body));
    assert_eq!(status, 200, "{answer}");
    serde_json::from_str::<Value>(&answer).unwrap()["seq"].as_u64().unwrap()
}

/// The store of `t` opened by this process (a second writer beside the
/// server's).
fn library_store(t: &TestDir) -> rowsearch::store::Store {
    rowsearch::indexer::open_store(t.data()).unwrap()
}

/// Writes row `id` of mailbox `user` through the library; its sequence.
fn library_put(store: &rowsearch::store::Store, user: &str, id: u64) -> u64 {
    let key = store.schema("mail").unwrap().row_key.unwrap();
    let row =
        key.encode_json(&serde_json::json!({"user": user, "date": 1_000_000_000_000u64, "id": id})).unwrap();
    let cell = rowsearch::store::PutCell::new("m", b"subject", format!("feedword {id}").into_bytes());
    store.put("mail", &row, vec![cell]).unwrap().last_seq.unwrap()
}

fn changes(s: &Server, query: &str) -> (u16, Value) {
    s.get_json(&format!("/tables/mail/changes?{query}"))
}

#[test]
fn http_changes_pages_long_polls_and_consumers_hold_the_feed() {
    if super::embedded_only(
        "sequences a write answers, a second writer through the library and trimming are the embedded store's \
         (over HBase sequences are times and the feed keeps a day: thrift::feed_over_hbase)",
    ) {
        return;
    }
    let (t, s) = mail_server();
    // A consumer made now starts at the feed's end.
    let (status, made) = {
        let (status, text) = s.request("PUT", "/consumers/warehouse", Some("{}"));
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    assert_eq!(status, 201, "{made}");
    let start = made["position"].as_u64().unwrap();
    let seqs: Vec<u64> = (1..=5).map(|id| http_put(&s, "feed-user", id)).collect();
    assert!(seqs.iter().all(|&q| q > start));
    // Pages of 2 after the consumer's position, in order, each a put with
    // its key fields; the cursor chains them.
    let (status, page) = changes(&s, "consumer=warehouse&limit=2");
    assert_eq!(status, 200, "{page}");
    let got: Vec<u64> =
        page["changes"].as_array().unwrap().iter().map(|c| c["seq"].as_u64().unwrap()).collect();
    assert_eq!(got, seqs[..2]);
    assert_eq!(page["changes"][0]["kind"], "put");
    assert_eq!(page["changes"][0]["key_fields"]["id"], 1);
    assert!(page["changes"][0].get("cells").is_none(), "cells only when asked");
    let cursor = page["cursor"].as_u64().unwrap();
    let (_, rest) = changes(&s, &format!("since={cursor}&cells=true"));
    let got: Vec<u64> =
        rest["changes"].as_array().unwrap().iter().map(|c| c["seq"].as_u64().unwrap()).collect();
    assert_eq!(got, seqs[2..]);
    assert_eq!(rest["changes"][0]["cells"][0]["value"], "feedword 3");
    // A deleted row is a delete.
    let key = enc(r#"{"user":"feed-user","date":1000000000000,"id":5}"#);
    let (status, _) = s.request("DELETE", &format!("/tables/mail/rows?key_fields={key}"), None);
    assert_eq!(status, 200);
    let last = rest["cursor"].as_u64().unwrap();
    let (_, deleted) = changes(&s, &format!("since={last}"));
    assert_eq!(deleted["changes"][0]["kind"], "delete", "{deleted}");
    let end = deleted["cursor"].as_u64().unwrap();
    // A long poll at the end waits for the next write, from another
    // process, and answers it.
    std::thread::scope(|scope| {
        let poll = scope.spawn(|| changes(&s, &format!("since={end}&wait_ms=20000")));
        // The poll is parked before the write: it is answered by the write
        // (were it answered before, it would hold no change).
        std::thread::sleep(std::time::Duration::from_millis(200));
        let seq = library_put(&library_store(&t), "feed-user", 6);
        let (status, page) = poll.join().unwrap();
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["changes"][0]["seq"].as_u64(), Some(seq), "{page}");
    });
    // With nothing new, a long poll answers empty at its deadline.
    let (_, now) = changes(&s, "limit=10000");
    let end = now["cursor"].as_u64().unwrap();
    let (status, empty) = changes(&s, &format!("since={end}&wait_ms=100"));
    assert_eq!((status, empty["changes"].as_array().map(Vec::len)), (200, Some(0)), "{empty}");
    // Ahead of the feed: 400; the consumer holds the feed from trimming
    // (the refresher trims what the index absorbed): its position's next
    // change is still there after the server's refreshes.
    let (status, past) = changes(&s, &format!("since={}", end + 100));
    assert_eq!((status, past["error"]["code"].as_str()), (400, Some("past_feed_end")), "{past}");
    let store = library_store(&t);
    store.trim_feed(u64::MAX).unwrap();
    let (status, held) = changes(&s, "consumer=warehouse&limit=1");
    assert_eq!(status, 200, "{held}");
    assert_eq!(held["changes"][0]["seq"].as_u64(), Some(seqs[0]), "{held}");
    let (_, state) = s.get_json("/consumers/warehouse");
    assert_eq!(
        (state["fell_behind"].as_bool(), state["holding"].as_bool()),
        (Some(false), Some(true)),
        "{state}"
    );
    // Acknowledging lets the trim go on; a reader from before it fell
    // behind (410) and says where the feed starts.
    let (status, acked) =
        s.request("PUT", "/consumers/warehouse", Some(&format!(r#"{{"position":{}}}"#, seqs[3])));
    assert_eq!(status, 200, "{acked}");
    store.trim_feed(u64::MAX).unwrap();
    let (status, behind) = changes(&s, &format!("since={start}"));
    assert_eq!((status, behind["error"]["code"].as_str()), (410, Some("fell_behind")), "{behind}");
    let (_, next) = changes(&s, "consumer=warehouse&limit=1");
    assert_eq!(next["changes"][0]["seq"].as_u64(), Some(seqs[4]), "{next}");
    // Bad names and unknown consumers are clear errors; delete removes it.
    let (status, bad) = s.request("PUT", "/consumers/bad%20name", Some("{}"));
    assert_eq!(status, 400, "{bad}");
    assert_eq!(s.get_json("/consumers/nobody").0, 404);
    assert_eq!(changes(&s, "consumer=nobody").0, 404);
    let (_, list) = s.get_json("/consumers");
    assert_eq!(list["consumers"][0]["name"], "warehouse");
    assert_eq!(s.request("DELETE", "/consumers/warehouse", None).0, 200);
    assert_eq!(s.request("DELETE", "/consumers/warehouse", None).0, 404);
}

#[test]
fn http_changes_need_the_changes_action_and_keep_a_keys_partitions() {
    use super::keys::{MASTER, call, keyed_server, make_key};
    let (_t, s) = keyed_server();
    let reader = make_key(&s, json!({"actions": ["read", "search"]})).1;
    let follower = make_key(&s, json!({"actions": ["changes"], "partitions": ["feed-a"]})).1;
    let elsewhere = make_key(&s, json!({"actions": ["changes"], "tables": ["notes"]})).1;
    let (status, start) = call(&s, "GET", "/tables/mail/changes?limit=1", Some(MASTER), None);
    assert_eq!(status, 200, "{start}");
    let start = start["last_seq"].as_u64().unwrap();
    for (user, id) in [("feed-a", 1), ("feed-b", 2), ("feed-a", 3)] {
        let fields = format!(r#"{{"user":"{user}","date":1000000000000,"id":{id}}}"#);
        let body = format!(r#"{{"cells":[{{"column":"m:subject","value":"x {id}"}}]}}"#);
        let path = format!("/tables/mail/rows?key_fields={}", enc(&fields));
        let (status, answer) = call(&s, "PUT", &path, Some(MASTER), Some(&body));
        assert_eq!(status, 200, "{answer}");
    }
    let path = format!("/tables/mail/changes?since={start}");
    // Over HBase a change is in the feed once settled (2 s): the master
    // reads the three first.
    let started = std::time::Instant::now();
    loop {
        let (status, page) = call(&s, "GET", &path, Some(MASTER), None);
        assert_eq!(status, 200, "{page}");
        let mut ids: Vec<u64> = page["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["key_fields"]["user"].as_str().is_some_and(|u| u.starts_with("feed-")))
            .map(|c| c["key_fields"]["id"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids == [1, 2, 3] {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{page}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (status, _) = call(&s, "GET", &path, Some(&reader), None);
    assert_eq!(status, 403, "reading rows is not reading the feed");
    let (status, _) = call(&s, "GET", &path, Some(&elsewhere), None);
    assert_eq!(status, 403, "a key limited to other tables");
    let (status, page) = call(&s, "GET", &path, Some(&follower), None);
    assert_eq!(status, 200, "{page}");
    let mut ids: Vec<u64> =
        page["changes"].as_array().unwrap().iter().map(|c| c["key_fields"]["id"].as_u64().unwrap()).collect();
    // Over HBase a row may be named twice (rowsearch's own record of its
    // write, and HBase's replication of it): at least once.
    ids.dedup();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, [1, 3], "a confined key sees its partition's changes only: {page}");
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Step {
    /// Writes of rows by the server's process (HTTP) and this one.
    Write { http: u8, library: u8 },
    /// The consumer reads a page of up to `limit` and handles it.
    Read { limit: u16 },
    /// The consumer acknowledges `handled` changes of what it handled.
    Ack { handled: u8 },
    /// The consumer restarts: what it handled but did not acknowledge is
    /// lost, it goes on from its position.
    Restart,
    /// This process trims the feed as far as it may.
    Trim,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..4, 0u8..4).prop_map(|(http, library)| Step::Write { http, library }),
        3 => (1u16..6).prop_map(|limit| Step::Read { limit }),
        2 => (0u8..5).prop_map(|handled| Step::Ack { handled }),
        1 => Just(Step::Restart),
        1 => Just(Step::Trim),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, max_shrink_iters: 0, ..ProptestConfig::default() })]

    /// Random writes from two processes; a consumer that follows with
    /// random acknowledgements and restarts sees every change exactly once
    /// in sequence order (what it acknowledged, then what it reads after),
    /// and the feed is trimmed only past its position.
    #[test]
    fn http_a_consumer_sees_every_change_of_two_writers_once_in_order(steps in prop::collection::vec(step(), 10..40)) {
        if super::embedded_only("a second writer through the library and sequences a write answers are the embedded store's (over HBase each change is named at least once: thrift::feed_over_hbase)") {
            return Ok(());
        }
        let (t, s) = mail_server();
        let store = library_store(&t);
        let (status, made) = s.request("PUT", "/consumers/follower", Some("{}"));
        prop_assert_eq!(status, 201, "{}", made);
        // Every write acknowledged: seq -> row id.
        let mut written = std::collections::BTreeMap::new();
        let mut id = 0u64;
        // What the consumer committed (acknowledged), and handled since.
        let mut committed: Vec<(u64, u64)> = Vec::new();
        let mut handled: Vec<(u64, u64)> = Vec::new();
        let mut cursor = serde_json::from_str::<Value>(&made).unwrap()["position"].as_u64().unwrap();
        let follow = |handled: &mut Vec<(u64, u64)>, cursor: &mut u64, limit: u16| -> Result<usize, TestCaseError> {
            let (status, page) = changes(&s, &format!("since={cursor}&limit={limit}"));
            prop_assert_eq!(status, 200, "{}", page);
            let list = page["changes"].as_array().unwrap();
            for c in list {
                let id = c["key_fields"]["id"].as_u64().unwrap();
                handled.push((c["seq"].as_u64().unwrap(), id));
            }
            *cursor = page["cursor"].as_u64().unwrap();
            Ok(list.len())
        };
        for step in steps {
            match step {
                Step::Write { http, library } => {
                    for _ in 0..http {
                        id += 1;
                        written.insert(http_put(&s, "prop-user", id), id);
                    }
                    for _ in 0..library {
                        id += 1;
                        written.insert(library_put(&store, "prop-user", id), id);
                    }
                }
                Step::Read { limit } => { follow(&mut handled, &mut cursor, limit)?; }
                Step::Ack { handled: n } => {
                    let n = usize::from(n).min(handled.len());
                    if n == 0 && !handled.is_empty() {
                        continue;
                    }
                    // The n-th handled change, or when all are, the cursor
                    // (the other changes it passed need no handling).
                    let position = if n == handled.len() { cursor } else { handled[n - 1].0 };
                    committed.extend(handled.drain(..n));
                    let body = format!(r#"{{"position":{position}}}"#);
                    let (status, text) = s.request("PUT", "/consumers/follower", Some(&body));
                    prop_assert_eq!(status, 200, "{}", text);
                }
                Step::Restart => {
                    handled.clear();
                    let (_, state) = s.get_json("/consumers/follower");
                    prop_assert_eq!(state["fell_behind"].as_bool(), Some(false), "{}", state);
                    cursor = state["position"].as_u64().unwrap();
                }
                Step::Trim => {
                    store.trim_feed(u64::MAX).unwrap();
                    let position = store.consumer("follower").unwrap().position;
                    // Nothing after the position was trimmed.
                    let read = store.begin_read().unwrap();
                    prop_assert!(read.changes_after(position, 1).is_ok(), "trimmed past the consumer at {}", position);
                }
            }
        }
        // Drain: read to the end, acknowledge everything.
        while follow(&mut handled, &mut cursor, 1000)? > 0 {}
        committed.append(&mut handled);
        let want: Vec<(u64, u64)> = written.into_iter().collect();
        prop_assert_eq!(committed, want);
    }
}
