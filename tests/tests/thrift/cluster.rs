//! A cluster of searchers over one HBase (issue 64, first part): searcher
//! processes started with the same `--hbase` and `--cluster` find each
//! other through rows in HBase and share the shards of a table's index by
//! leases taken with HBase's check-and-put: each holds its quota; a
//! searcher killed with SIGKILL loses its shards to the others once its
//! leases end (5 s) and a round passes; a searcher that joins is given its
//! share; one stopped with SIGTERM gives its leases back as it goes.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use rowsearch_tests::{Backend, Server, TestDir, stderr};
use serde_json::Value;

const SHARDS: usize = 6;

/// A searcher of cluster `c1` with its own data directory.
fn searcher(t: &TestDir, data: &TestDir) -> Server {
    let mut command = Command::new(rowsearch_tests::bin());
    command.arg("--data").arg(data.data()).env("ROWSEARCH_HBASE", t.hbase().unwrap()).args([
        "serve",
        "--create",
        "--cluster",
        "c1",
        "--listen",
        "127.0.0.1:0",
    ]);
    Server::spawn(command)
}

/// Who holds each shard, as `s` last read the cluster, and the live
/// searchers' ids.
fn holders(s: &Server) -> (BTreeMap<u64, String>, Vec<String>) {
    let (status, v) = s.get_json("/cluster");
    assert_eq!(status, 200, "{v}");
    let held = v["shards"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|sh| Some((sh["shard"].as_u64()?, sh["holder"].as_str()?.to_owned())))
        .collect();
    let live = v["searchers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["live"] == true)
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    (held, live)
}

/// Polls `s`'s view until every shard is held by one of `n` live
/// searchers, each holding its share; how long that took, and the view.
fn settled(s: &Server, n: usize, limit: Duration) -> (Duration, BTreeMap<u64, String>) {
    let started = Instant::now();
    loop {
        let (held, live) = holders(s);
        let mut counts: BTreeMap<&str, usize> = live.iter().map(|id| (id.as_str(), 0)).collect();
        for holder in held.values() {
            if let Some(c) = counts.get_mut(holder.as_str()) {
                *c += 1;
            }
        }
        let even = counts.values().all(|&c| c == SHARDS / n);
        if live.len() == n && held.len() == SHARDS && held.values().all(|h| live.contains(h)) && even {
            return (started.elapsed(), held);
        }
        assert!(
            started.elapsed() < limit,
            "not settled over {n} searchers after {limit:?}: {held:?} {live:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What `s` says it serves on `/health`.
fn serves(s: &Server) -> Vec<String> {
    let (_, v) = s.get_json("/health");
    let mut out: Vec<String> =
        v["cluster"]["serves"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_owned()).collect();
    out.sort();
    out
}

#[test]
fn thrift_searchers_share_shards_by_leases_in_hbase_and_take_over_a_killed_ones() {
    if rowsearch_tests::hbase("thrift::cluster").is_none() {
        return;
    }
    let t = TestDir::on(Backend::Hbase);
    let schema = format!(
        r#"{{"families":[{{"name":"f"}}],"search":{{"fields":[{{"name":"body","column":"f:body"}}],"shards":{SHARDS}}}}}"#
    );
    let out = t.run(&["create-table", "notes", "--schema", &schema]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dirs: Vec<TestDir> = (0..4).map(|_| TestDir::new()).collect();
    let a = searcher(&t, &dirs[0]);
    let mut b = Some(searcher(&t, &dirs[1]));
    let c = searcher(&t, &dirs[2]);
    let (took, held) = settled(&a, 3, Duration::from_secs(60));
    eprintln!("3 searchers share {SHARDS} shards after {took:?}: {held:?}");
    // Each says on /health what it serves: two shards each, all six.
    let mut all: Vec<String> = [&a, b.as_ref().unwrap(), &c].iter().flat_map(|s| serves(s)).collect();
    all.sort();
    let want: Vec<String> = (0..SHARDS).map(|i| format!("notes/{i}")).collect();
    assert_eq!(all, want, "every shard served once");
    // /metrics says what it holds and how many are live.
    let (_, metrics) = a.request("GET", "/metrics", None);
    let figure = |name: &str| {
        metrics.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok())
    };
    assert_eq!(figure("rowsearch_cluster_shards_held"), Some((SHARDS / 3) as u64), "{metrics}");
    assert_eq!(figure("rowsearch_cluster_searchers_live"), Some(3), "{metrics}");
    // Each searcher's heartbeat carries its index's lag per table.
    let started = Instant::now();
    loop {
        let (_, v) = a.get_json("/cluster");
        let lags: Vec<&Value> =
            v["searchers"].as_array().unwrap().iter().map(|m| &m["lag_ms"]["notes"]).collect();
        if lags.len() == 3 && lags.iter().all(|l| l.is_u64()) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no lag per searcher: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // b killed: its shards go to a and c once its leases end.
    let (_, b_id) = {
        let (_, v) = b.as_ref().unwrap().get_json("/cluster");
        ((), v["me"].as_str().unwrap().to_owned())
    };
    drop(b.take());
    let (took, held) = settled(&a, 2, Duration::from_secs(30));
    eprintln!("takeover of a killed searcher's shards: {took:?}");
    assert!(held.values().all(|h| *h != b_id), "{held:?}");
    assert!(took < Duration::from_secs(12), "takeover took {took:?} (leases last 5 s, rounds 1 s)");
    assert_eq!(serves(&a).len() + serves(&c).len(), SHARDS);

    // A fourth joins: it is given its share (the others give theirs up).
    let d = searcher(&t, &dirs[3]);
    let (took, _) = settled(&d, 3, Duration::from_secs(60));
    eprintln!("a joining searcher has its share after {took:?}");
    assert_eq!(serves(&d).len(), SHARDS / 3, "{:?}", d.get_json("/cluster").1);

    // c stopped with SIGTERM gives its leases back as it goes: the others
    // take its shards at their next round, not when the leases would end.
    let status = c.terminate();
    assert!(status.success(), "{status:?}");
    let (took, _) = settled(&a, 2, Duration::from_secs(30));
    eprintln!("takeover of a stopped searcher's shards: {took:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}: as if its leases had run out");
}

#[test]
fn thrift_cluster_flags_are_checked_and_a_lone_server_says_it_is_alone() {
    let t = TestDir::new();
    let out = t.run(&["serve", "--create", "--cluster", "c1", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--cluster needs --hbase"), "{}", stderr(&out));
    let out = t
        .command()
        .env("ROWSEARCH_HBASE", "127.0.0.1:1")
        .args(["serve", "--create", "--cluster", "bad name"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cluster name"), "{}", stderr(&out));
    // A member registers its listen address for the others to call: an
    // unspecified one would name no host they could reach.
    let out = t
        .command()
        .env("ROWSEARCH_HBASE", "127.0.0.1:1")
        .args(["serve", "--create", "--cluster", "c1", "--listen", "0.0.0.0:0"])
        .args(["--master-key", "a-master-key-of-32-bytes-or-so.."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not 0.0.0.0:0"), "{}", stderr(&out));
    let s = t.serve(&["serve", "--create"]);
    let (status, v) = s.get_json("/cluster");
    assert_eq!((status, v["cluster"].clone()), (200, Value::Null), "{v}");
    assert!(s.get_json("/health").1.get("cluster").is_none());
}
