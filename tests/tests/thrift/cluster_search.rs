//! Searches through a cluster of searchers (issue 64): the sample mail in
//! a real HBase, its table split into six shards by mailbox, three
//! searcher processes each building and serving its share, against one
//! server with one index of the whole table over the same HBase. Through
//! every searcher, the peer query set (plain and collapsed by thread, with
//! facets; a mailbox's newest) answers the same totals, facets, keys,
//! order, documents and scores (to 1e-6) as the one index, and a cursor's
//! next page too; a mailbox's search runs on one shard, any other on
//! every shard (`/metrics`). A searcher killed with SIGKILL under a
//! steady load of searches: no answer is wrong or silently partial (each
//! is the one index's, or a 503 naming what is missing) and the others
//! serve every shard again; a fourth searcher joins and answers the same.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rowsearch_tests::{Server, TestDir, stderr, stdout};
use serde_json::Value;

use super::over_hbase_sample::{comparable, difference, long_tie, queries, sample, search};

const SHARDS: u64 = 6;
const TABLE: &str = "cluster_sample";
const CLUSTER: &str = "cs";

/// A searcher of the cluster with its own data directory.
fn searcher(thrift2: &str, data: &TestDir) -> Server {
    let mut command = Command::new(rowsearch_tests::bin());
    command.arg("--data").arg(data.data()).args([
        "--hbase",
        thrift2,
        "serve",
        "--create",
        "--cluster",
        CLUSTER,
        "--listen",
        "127.0.0.1:0",
    ]);
    Server::spawn(command)
}

/// Waits until `s` sees every shard of the table held by one of `n` live
/// searchers; how long that took.
fn settled(s: &Server, n: usize, shards: u64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (status, v) = s.get_json("/cluster");
        assert_eq!(status, 200, "{v}");
        let live: Vec<&str> = v["searchers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["live"] == true)
            .filter_map(|m| m["id"].as_str())
            .collect();
        let holders: Vec<&str> = v["shards"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|sh| sh["table"] == TABLE)
            .filter_map(|sh| sh["holder"].as_str())
            .filter(|h| live.contains(h))
            .collect();
        // Each live searcher holds its share.
        let even =
            live.iter().all(|id| holders.iter().filter(|h| *h == id).count() as u64 >= shards / n as u64);
        if live.len() == n && holders.len() as u64 == shards && even {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not settled over {n} searchers after {limit:?}: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The sum over `searchers` of the figure `name` of their `/metrics`.
fn metric(searchers: &[&Server], name: &str) -> u64 {
    searchers
        .iter()
        .map(|s| {
            let (_, text) = s.request("GET", "/metrics", None);
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {name} in {text}"))
        })
        .sum()
}

/// `answer` as the one index answered `path` (`want`), comparable.
fn same(path: &str, answer: &Value, want: &Value, reference: &Server) {
    if long_tie(reference, path) {
        let cut = |a: &Value| {
            let mut c = comparable(a);
            let hits = c["hits"].as_array_mut().unwrap();
            let last = hits.last().map(|h| h[1].clone());
            hits.retain(|h| Some(&h[1]) != last.as_ref());
            c
        };
        assert_eq!(cut(answer), cut(want), "{path}");
    } else {
        let (got, want) = (comparable(answer), comparable(want));
        assert!(got == want, "{path}: the cluster and one index differ\n{}", difference(&got, &want));
    }
}

/// Searches sent one after another, alternating between searchers, each
/// answer checked against the one index's: the same, or a 503 saying
/// which shard is missing; never another answer.
struct Loader {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<(Instant, u16, String)>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Loader {
    fn start(addrs: Vec<String>, load: Vec<(String, Value)>) -> Loader {
        let stop = Arc::new(AtomicBool::new(false));
        let seen: Arc<Mutex<Vec<(Instant, u16, String)>>> = Arc::default();
        let thread = {
            let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
            std::thread::spawn(move || {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let (path, want) = &load[i % load.len()];
                    let raw = rowsearch_tests::raw_request(&addrs[i % addrs.len()], "GET", path, &[], None);
                    let (status, body) = rowsearch_tests::parse_response(&raw);
                    let text = String::from_utf8_lossy(&body).into_owned();
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let verdict = match status {
                        200 if comparable(&body) == comparable(want) => "same".to_owned(),
                        200 => format!("WRONG {path}: {}", difference(&comparable(&body), &comparable(want))),
                        _ => format!("{} {text:.300}", body["error"]["code"].as_str().unwrap_or("?")),
                    };
                    seen.lock().unwrap().push((Instant::now(), status, verdict));
                    i += 1;
                }
            })
        };
        Loader { stop, seen, thread }
    }

    /// When the last search was refused, if one was.
    fn last_refused(&self) -> Option<Instant> {
        self.seen.lock().unwrap().iter().rev().find(|(_, status, _)| *status != 200).map(|(at, ..)| *at)
    }

    /// Stops; every search sent, checked: none wrong, each refusal a 503
    /// naming the missing shard (or the time limit a shard's build ran
    /// past).
    fn stop(self) -> Vec<(Instant, u16, String)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        let wrong: Vec<&String> = seen.iter().map(|(_, _, v)| v).filter(|v| v.starts_with("WRONG")).collect();
        assert!(wrong.is_empty(), "wrong answers: {wrong:?}");
        for (_, status, verdict) in seen.iter().filter(|(_, status, _)| *status != 200) {
            assert!(
                *status == 503
                    && (verdict.starts_with("shard_unavailable") || verdict.starts_with("timeout")),
                "{status} {verdict}"
            );
        }
        seen
    }
}

#[test]
fn thrift_a_cluster_of_searchers_answers_as_one_index_and_survives_a_kill() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::cluster_search") else { return };
    let unpacked = tempfile::tempdir().unwrap();
    let mail = sample(unpacked.path());
    let local = TestDir::new();
    let over = |args: &[&str]| {
        let mut all = vec!["--hbase", hbase.thrift2.as_str()];
        all.extend_from_slice(args);
        local.run(&all)
    };
    let _ = over(&["drop-table", TABLE]);
    let out = over(&["ingest", mail.to_str().unwrap(), "--table", TABLE, "--shards", &SHARDS.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1406 stored"), "{}", stdout(&out));
    // An existing table keeps its count: another is refused, nothing lost.
    let out = over(&["ingest", mail.to_str().unwrap(), "--table", TABLE, "--shards", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("exists with 6 shard(s)"), "{}", stderr(&out));
    // Past HBase's 2 s clock margin every index built holds every row.
    std::thread::sleep(Duration::from_millis(2_500));

    // One server with one index of the whole table: the reference.
    let one = local.serve(&["--hbase", &hbase.thrift2, "serve"]);
    let paths = queries(TABLE);
    let wanted: Vec<Value> = paths.iter().map(|p| search(&one, p)).collect();

    let dirs: Vec<TestDir> = (0..4).map(|_| TestDir::new()).collect();
    let a = searcher(&hbase.thrift2, &dirs[0]);
    let mut b = Some(searcher(&hbase.thrift2, &dirs[1]));
    let c = searcher(&hbase.thrift2, &dirs[2]);
    let took = settled(&a, 3, SHARDS, Duration::from_secs(60));
    eprintln!("3 searchers hold the {SHARDS} shards after {took:?}");

    // Every searcher answers every query as the one index (the first
    // searches wait for the shards' first builds).
    for s in [&a, b.as_ref().unwrap(), &c] {
        for (path, want) in paths.iter().zip(&wanted) {
            same(path, &search(s, path), want, &one);
        }
    }

    // A cursor made through one searcher pages on through another.
    let first = search(&a, &format!("/tables/{TABLE}/search?q=gas&limit=5"));
    let cursor = first["next_cursor"].as_str().unwrap();
    let next = search(&c, &format!("/tables/{TABLE}/search?q=gas&limit=5&cursor={cursor}"));
    let want = search(&one, &format!("/tables/{TABLE}/search?q=gas&limit=5&offset=5"));
    assert_eq!(comparable(&next), comparable(&want), "a cursor's next page");

    // A mailbox's suggestions come from its shard, here or passed on to
    // its holder; across mailboxes a cluster does not suggest (yet).
    for (prefix, user) in [("mee", "cash-m"), ("ga", "badeer-r"), ("con", "brawner-s")] {
        let path = format!("/tables/{TABLE}/suggest?q={prefix}&user={user}&limit=10");
        let want = search(&one, &path)["suggestions"].clone();
        assert!(want.as_array().is_some_and(|s| !s.is_empty()), "{path}: {want}");
        for s in [&a, b.as_ref().unwrap(), &c] {
            assert_eq!(search(s, &path)["suggestions"], want, "{path}");
        }
    }
    let (status, v) = a.get_json(&format!("/tables/{TABLE}/suggest?q=mee"));
    assert_eq!((status, v["error"]["code"].as_str()), (501, Some("cluster_unsupported")), "{v}");

    // A mailbox's search runs on its shard alone, any other on every one.
    let all = [&a, b.as_ref().unwrap(), &c];
    let shard_searches = || metric(&all, "rowsearch_cluster_shard_searches");
    let before = shard_searches();
    search(b.as_ref().unwrap(), &format!("/tables/{TABLE}/search?q=meeting&user=kaminski-v"));
    assert_eq!(shard_searches() - before, 1, "a mailbox's search touches one shard");
    let before = shard_searches();
    search(&a, &format!("/tables/{TABLE}/search?q=meeting"));
    assert_eq!(shard_searches() - before, SHARDS, "a search of every mailbox touches every shard");

    // Calls between searchers need the cluster's secret; a server of no
    // cluster has no such route.
    let json = ("content-type", "application/json");
    for secret in [None, Some("wrong")] {
        let headers: Vec<(&str, &str)> =
            std::iter::once(json).chain(secret.map(|s| ("x-rowsearch-cluster", s))).collect();
        let (status, body) = a.raw("POST", "/cluster/shard", &headers, Some(b"{}"));
        assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    }
    let (status, body) = one.raw("POST", "/cluster/shard", &[json], Some(b"{}"));
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("not_in_a_cluster"));

    // b killed under a steady load of searches through a and c.
    let load: Vec<(String, Value)> = paths.iter().cloned().zip(wanted.iter().cloned()).take(24).collect();
    let loader = Loader::start(vec![a.addr.clone(), c.addr.clone()], load.clone());
    std::thread::sleep(Duration::from_secs(2));
    let killed = Instant::now();
    drop(b.take());
    let took = settled(&a, 2, SHARDS, Duration::from_secs(30));
    eprintln!("the killed searcher's shards held by the others after {took:?}");
    // Until every answer is the one index's again for 3 s (the shards
    // taken are built meanwhile).
    let recovered = loop {
        std::thread::sleep(Duration::from_millis(200));
        let last_bad = loader.last_refused().unwrap_or(killed).max(killed);
        if last_bad.elapsed() > Duration::from_secs(3) {
            break last_bad.duration_since(killed);
        }
        assert!(killed.elapsed() < Duration::from_secs(90), "not answering again");
    };
    let seen = loader.stop();
    let refused = seen.iter().filter(|(_, status, _)| *status != 200).count();
    eprintln!(
        "under the kill: {} searches, {refused} refused (503), none wrong; every answer right again {recovered:?} after the kill",
        seen.len()
    );

    // A fourth searcher joins under the same load, takes its share (the
    // others hand theirs over: a shard given up answers a few seconds
    // more, searches that asked its old holder ask again) and answers
    // the same; no search fails meanwhile.
    let loader = Loader::start(vec![a.addr.clone(), c.addr.clone()], load);
    let d = searcher(&hbase.thrift2, &dirs[3]);
    let took = settled(&d, 3, SHARDS, Duration::from_secs(60));
    eprintln!("a fourth searcher has its share after {took:?}");
    for (path, want) in paths.iter().zip(&wanted).step_by(3) {
        same(path, &search(&d, path), want, &one);
        same(path, &search(&a, path), want, &one);
    }
    let seen = loader.stop();
    let refused: Vec<_> = seen.iter().filter(|(_, status, _)| *status != 200).collect();
    eprintln!("during the join: {} searches, {} refused", seen.len(), refused.len());
    assert!(refused.is_empty(), "searches failed while a searcher joined: {refused:?}");
    // The shard count changed by a reindex: the searchers build the
    // shards of the new count and answer the same.
    let out = over(&["reindex", "--table", TABLE, "--shards", "4"]);
    assert!(out.status.success() && stdout(&out).contains("now 4 shard(s)"), "{}", stderr(&out));
    let took = settled(&d, 3, 4, Duration::from_secs(60));
    // The leases show the new shards as soon as they are built; a
    // searcher reads the new count from its catalog within a second (till
    // then it asks for the old shards, which nobody serves now: 503, try
    // again), so the searchers asked below are waited for.
    for s in [&d, &c] {
        let path = &paths[0];
        let until = Instant::now() + Duration::from_secs(10);
        while s.get_json(path).0 == 503 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    eprintln!("4 shards held after {took:?}");
    for (path, want) in paths.iter().zip(&wanted).step_by(3) {
        same(path, &search(&d, path), want, &one);
        same(path, &search(&c, path), want, &one);
    }
    let (_, v) = a.get_json("/cluster");
    let shards = v["shards"].as_array().unwrap().iter().filter(|s| s["table"] == TABLE).count();
    assert_eq!(shards, 4, "{v}");
    drop((a, c, d, one));
    assert!(over(&["drop-table", TABLE]).status.success());
}
