//! Live search through the real binaries: writes from another process (the
//! CLI) are searchable by the server's next search, with no reindex run;
//! `seq`, `min_seq` and `consistency=eventual`.

use serde_json::Value;

use super::{enc, fixture, indexed_fixture};
use rowsearch_tests::{stderr, stdout};

fn total(v: &Value) -> u64 {
    v["total"].as_u64().unwrap_or_else(|| panic!("no total in {v}"))
}

/// The feed `seq` a CLI `put` or `delete` printed (`ok (feed seq N)`).
fn seq_of(out: &std::process::Output) -> u64 {
    assert!(out.status.success(), "{}", stderr(out));
    let text = stdout(out);
    text.trim()
        .strip_prefix("ok (feed seq ")
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no seq in {text:?}"))
}

/// The `Server-Timing` header of a GET of `path`.
fn timing(s: &rowsearch_tests::Server, path: &str) -> String {
    let response = rowsearch_tests::raw_request(&s.addr, "GET", path, &[], None);
    let head = String::from_utf8_lossy(&response);
    let head = head.split("\r\n\r\n").next().unwrap_or_default().to_ascii_lowercase();
    head.lines().filter_map(|l| l.strip_prefix("server-timing: ")).collect::<Vec<_>>().join(", ")
}

/// A key of the mail table for `user` (typed: user, date, id).
fn new_key(user: &str, id: u64) -> String {
    format!("--key-fields={{\"user\":\"{user}\",\"date\":990000000000,\"id\":{id}}}")
}

#[test]
fn http_a_row_written_by_the_cli_is_found_by_the_servers_next_search() {
    let t = indexed_fixture();
    // A long interval: what follows is the searches' doing, not a tick's.
    let s = t.serve(&["serve", "--refresh-ms", "600000"]);
    let search = |q: &str| s.get_json(&format!("/tables/mail/search?q={}", enc(q)));
    let (status, v) = search("quokka");
    assert_eq!((status, total(&v)), (200, 0), "{v}");

    // Over HBase, a search with no write since the last is answered while
    // its feed read confirms the snapshot (`feed` beside the other steps).
    // HBase's replication names each write in the feed a second time when
    // it ships it (up to seconds later, `FeedEndpoint`): a search that meets
    // that entry is answered again, so "held" is once the feed is quiet.
    let path = "/tables/mail/search?q=quokka";
    let speculated = |timing: &str| timing.contains("feed;dur=");
    let held_once_quiet = || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let timing = timing(&s, path);
            if speculated(&timing) {
                return true;
            }
            if !super::over_hbase() || std::time::Instant::now() > deadline {
                return false;
            }
        }
    };
    assert_eq!(held_once_quiet(), super::over_hbase(), "{}", timing(&s, path));

    let key = new_key("zed-z", 1);
    let put = t.run(&["put", "mail", &key, "m:subject=quokka sighting", "b:text=a quokka in the garden"]);
    let seq = seq_of(&put);
    // A write since: the feed names a row the snapshot lacks, so the page
    // is answered again from a fresh one (no `feed` step), and finds it.
    let after = timing(&s, path);
    assert!(!speculated(&after), "{after}");
    assert_eq!(held_once_quiet(), super::over_hbase(), "then held again");
    let (status, v) = search("quokka");
    assert_eq!((status, total(&v)), (200, 1), "the next search finds it: {v}");
    // (Over HBase an answer's `seq` is HBase's settled clock, 2 s behind
    // the writes it holds: it says what is final, not what was seen.)
    if !super::over_hbase() {
        assert!(v["seq"].as_u64().unwrap() >= seq, "the answer says it reflects the write: {v}");
    }
    assert_eq!(v["hits"][0]["key_fields"]["user"], "zed-z");

    // Rewritten: no longer found for its old words.
    let seq = seq_of(&t.run(&["put", "mail", &key, "m:subject=wombat den", "b:text=no marsupials here"]));
    let (_, v) = search("quokka");
    assert_eq!(total(&v), 0, "{v}");
    let (_, v) = search("wombat");
    assert!(super::over_hbase() || v["seq"].as_u64().unwrap() >= seq);
    assert!(super::keys(&v, "hits").len() == 1 || total(&v) >= 1, "{v}");
    let wombats = total(&v);

    // Deleted: neither returned nor counted.
    let out = t.run(&["delete", "mail", &key]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, v) = search("wombat");
    assert_eq!(total(&v), wombats - 1, "{v}");
}

/// The mail table's cells carry the message's date as their time, and some
/// mail is dated years ahead (the Enron corpus holds four messages of
/// 2043-2044): over HBase, where a cell's time is HBase's timestamp, such a
/// row is found by the next search and by an incremental reindex as any
/// other (a read bounded by the moment of the search missed it: never found
/// until a full rebuild).
#[test]
fn http_a_message_dated_years_ahead_is_found_live_and_after_an_incremental_reindex() {
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--refresh-ms", "600000"]);
    let box_dir = t.dir.path().join("ahead/zed-z/inbox/cur");
    std::fs::create_dir_all(&box_dir).unwrap();
    std::fs::write(
        box_dir.join("1.eml"),
        "Message-ID: <ahead-1@example.com>\r\nDate: Mon, 4 Jan 2044 22:48:58 +0000\r\n\
         From: zed@example.com\r\nTo: ann@example.com\r\nSubject: zeitreise plans\r\n\r\n\
         The zeitreise leaves at noon.\r\n",
    )
    .unwrap();
    let out = t.run(&["ingest", "--format", "maildir", t.dir.path().join("ahead").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, v) = s.get_json("/tables/mail/search?q=zeitreise");
    assert_eq!((status, total(&v)), (200, 1), "the next search finds it: {v}");
    assert_eq!(v["hits"][0]["document"]["date"], "2044-01-04T22:48:58Z", "{v}");

    // Absorbed by an incremental reindex (another process): the index as it
    // stands holds it.
    let out = t.run(&["reindex", "--incremental"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, v) = s.get_json("/tables/mail/search?q=zeitreise&consistency=eventual");
    assert_eq!((status, total(&v)), (200, 1), "the index holds it: {v}");

    // Deleted: gone, whatever its cells' time.
    let key = v["hits"][0]["key"].as_str().unwrap().to_owned();
    let out = t.run(&["delete", "mail", &key]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, v) = s.get_json("/tables/mail/search?q=zeitreise");
    assert_eq!((status, total(&v)), (200, 0), "a deleted row is no hit: {v}");
    let out = t.run(&["get", "mail", &key]);
    assert!(!out.status.success() || stdout(&out).trim() == "null", "{}", stdout(&out));
}

#[test]
fn http_a_cli_ingest_is_searchable_the_moment_it_exits() {
    let t = super::dir();
    let s = t.serve(&["serve", "--create", "--refresh-ms", "600000"]);
    let out = t.run(&["ingest", &fixture()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // No reindex was run: the server's search answers from an index it
    // brought current on the way.
    let (status, live) = s.get_json("/tables/mail/search?q=enron&limit=1");
    assert_eq!(status, 200, "{live}");
    let (_, by_user) = s.get_json("/tables/mail/search?q=enron&user=cash-m&limit=1");
    drop(s);
    // The same totals as an explicit full rebuild gives.
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = t.serve(&["serve", "--refresh-ms", "0"]);
    let (_, rebuilt) = s.get_json("/tables/mail/search?q=enron&limit=1&consistency=eventual");
    assert!(total(&rebuilt) > 100, "{rebuilt}");
    assert_eq!(total(&live), total(&rebuilt));
    let (_, rebuilt) = s.get_json("/tables/mail/search?q=enron&user=cash-m&limit=1&consistency=eventual");
    assert_eq!(total(&by_user), total(&rebuilt));
}

#[test]
fn http_eventual_searches_answer_from_the_index_as_it_stands_and_min_seq_waits() {
    if super::embedded_only(
        "sequences and lag exact per write: over HBase they are HBase's clock, settled 2 s behind (min_seq over HBase: `thrift::over_hbase`)",
    ) {
        return;
    }
    let t = indexed_fixture();
    // No background refresh at all: only searches that must be current
    // bring the index current.
    let s = t.serve(&["serve", "--refresh-ms", "0"]);
    let seq = seq_of(&t.run(&["put", "mail", &new_key("zed-z", 2), "m:subject=numbat"]));
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&consistency=eventual");
    assert_eq!((status, total(&v)), (200, 0), "the index has not absorbed it: {v}");
    assert!(v["seq"].as_u64().unwrap() < seq, "and says so: {v}");
    // The table's figures and the metrics say how far behind it is.
    let (_, table) = s.get_json("/tables/mail");
    let fresh = &table["freshness"];
    assert_eq!(fresh["store_seq"].as_u64(), Some(seq), "{table}");
    assert_eq!(fresh["lag_rows"].as_u64(), Some(1), "{table}");
    assert!(fresh["index_seq"].as_u64().unwrap() < seq, "{table}");
    // The lag's age: at least the time since the write was acknowledged.
    let lag_ms = fresh["lag_ms"].as_u64().unwrap();
    assert!(lag_ms < 600_000, "{table}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (_, table) = s.get_json("/tables/mail");
    assert!(table["freshness"]["lag_ms"].as_u64().unwrap() >= lag_ms + 300, "{table}");
    let (_, metrics) = s.request("GET", "/metrics", None);
    assert!(metrics.contains("rowsearch_index_lag_rows{table=\"mail\"} 1"), "{metrics}");
    assert!(metrics.contains("rowsearch_index_lag_seconds{table=\"mail\"} "), "{metrics}");
    // A snapshot search finds the row through the overlay, without
    // bringing the index current: the lag stays.
    let (_, v) = s.get_json("/tables/mail/search?q=numbat");
    assert_eq!(total(&v), 1, "{v}");
    assert_eq!(v["seq"].as_u64(), Some(seq), "{v}");
    let (_, table) = s.get_json("/tables/mail");
    assert_eq!(table["freshness"]["lag_rows"].as_u64(), Some(1), "the overlay answered: {table}");
    let (_, v) = s.get_json(&format!("/tables/mail/search?q=numbat&consistency=eventual&min_seq={seq}"));
    assert_eq!(total(&v), 1, "min_seq waited for it: {v}");
    assert!(v["seq"].as_u64().unwrap() >= seq);
    let (_, table) = s.get_json("/tables/mail");
    assert_eq!(table["freshness"]["lag_rows"].as_u64(), Some(0), "{table}");
    assert_eq!(table["freshness"]["index_seq"].as_u64(), Some(seq), "{table}");
    // A write that has not happened is not waited for: a 400 at once
    // (it held a worker until the time limit, issue 36).
    let s2 = t.serve(&["serve", "--refresh-ms", "0", "--timeout-ms", "30000"]);
    for past in [seq + 1000, u64::MAX - 1] {
        let (status, v) =
            s2.get_json(&format!("/tables/mail/search?q=numbat&consistency=eventual&min_seq={past}"));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("past the store's last write"), "{v}");
    }
    let (status, v) = s2.get_json("/tables/mail/search?q=numbat&consistency=sometimes");
    assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
}

#[test]
fn http_a_server_killed_during_background_refreshes_catches_up_on_restart() {
    let t = indexed_fixture();
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("seed {seed}");
    let mut rng = rowsearch_tests::Rng(seed);
    let mut written = 0u64;
    for round in 0..6 {
        // Refreshing every 5 ms: the kill below lands before, during or
        // after one of the incremental commits the writes cause.
        let s = t.serve(&["serve", "--refresh-ms", "5"]);
        for _ in 0..=rng.below(3) {
            written += 1;
            let key = new_key("kiwi-k", written);
            let out = t.run(&["put", "mail", &key, &format!("m:subject=kiwi round {round}")]);
            assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
        }
        std::thread::sleep(std::time::Duration::from_micros(rng.below(20_000) as u64));
        // Dropping the server kills it with SIGKILL.
        drop(s);
    }
    let s = t.serve(&["serve"]);
    let (status, v) = s.get_json("/tables/mail/search?q=kiwi&limit=100");
    assert_eq!((status, total(&v)), (200, written), "seed {seed}: every write found after the restart: {v}");
    // And the index itself catches up: the refresher absorbs every write.
    let (_, table) = s.get_json("/tables/mail");
    let store_seq = table["freshness"]["store_seq"].as_u64().unwrap();
    let (status, v) =
        s.get_json(&format!("/tables/mail/search?q=kiwi&consistency=eventual&min_seq={store_seq}"));
    assert_eq!((status, total(&v)), (200, written), "seed {seed}: {v}");
    // Over HBase the index claims only what is past HBase's 2 s clock
    // margin: the last writes count as lag until the margin has passed and
    // a round has run.
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_secs(if super::over_hbase() { 10 } else { 0 });
    let mut table = s.get_json("/tables/mail").1;
    while table["freshness"]["lag_rows"].as_u64() != Some(0) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        table = s.get_json("/tables/mail").1;
    }
    assert_eq!(table["freshness"]["lag_rows"].as_u64(), Some(0), "seed {seed}: {table}");
    drop(s);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["pending"], 0, "seed {seed}: {report}");
    // (Over HBase the sequences are times: the index's is its last round's
    // settled time, the store's the time of the check.)
    if !super::over_hbase() {
        assert_eq!(report["index_seq"], report["store_seq"], "seed {seed}: the index caught up: {report}");
    }
}

#[test]
fn http_a_cursor_walk_across_background_refreshes_never_skips_or_repeats() {
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--refresh-ms", "5"]);
    let path = "/tables/mail/search?q=enron&sort=newest&limit=7";
    // The whole answer at the walk's start, in one page.
    let (_, all) = s.get_json("/tables/mail/search?q=enron&sort=newest&limit=1000");
    let expected = super::keys(&all, "hits");
    assert!(expected.len() > 50, "{}", expected.len());
    let (_, mut page) = s.get_json(path);
    let mut walked = super::keys(&page, "hits");
    let mut n = 0u64;
    while let Some(cursor) = page["next_cursor"].as_str().map(str::to_owned) {
        // Between pages: new matching mail, and a row of the walk deleted,
        // each absorbed by a background refresh or by the next search.
        n += 1;
        let out = t.run(&["put", "mail", &new_key("walk-w", n), "m:subject=enron news"]);
        assert!(out.status.success(), "{}", stderr(&out));
        if n.is_multiple_of(3) {
            let gone = super::keys(&page, "hits").pop().unwrap();
            assert!(t.run(&["delete", "mail", &gone]).status.success());
        }
        let (status, next) = s.get_json(&format!("{path}&cursor={cursor}"));
        assert_eq!(status, 200, "{next}");
        walked.extend(super::keys(&next, "hits"));
        page = next;
    }
    assert_eq!(walked, expected, "the walk is the snapshot it began on: nothing skipped or repeated");
    // A new search sees the writes made during the walk.
    let (_, now) = s.get_json("/tables/mail/search?q=enron&sort=newest&limit=1000");
    assert_eq!(total(&now), total(&all) + n - n / 3, "{}", total(&now));
}
