//! rowsearch over tables in HBase (`--hbase`): one end-to-end suite run
//! against a real Apache HBase and against rowsearch's own `--thrift2`
//! gateway standing in for it, each side by side with the embedded store
//! holding the same mail: ingest (rows and keyword rows), keyword lookups,
//! reindex full (region by region, in parallel) and incremental, `verify`,
//! and over HTTP (`serve --hbase`) the same searches giving the same keys,
//! totals and order, documents, facets and suggestions; a write through
//! rowsearch searchable at once; a row put into HBase by another client
//! found by the tailer; a row deleted by another client never a hit.

use std::time::{Duration, Instant};

use crate::http::{enc, fixture};
use rowsearch::store::PutCell;
use rowsearch::thrift::HbaseClient;
use rowsearch_tests::{Server, TestDir, stderr, stdout};
use serde_json::{Value, json};

/// A search's hits as `(order value, key)` with ties of the order value
/// sorted by key: the two sides build their segments in different orders,
/// so hits of equal score (or date) may come in either order.
fn hits(answer: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = answer["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {answer}"))
        .iter()
        .map(|h| {
            let order = match h.get("score").and_then(Value::as_f64) {
                Some(s) => format!("{:.4}", s),
                None => h["key_fields"]["date"].to_string(),
            };
            (order, h["key"].as_str().unwrap().to_owned())
        })
        .collect();
    // Stable: the order values keep their sequence, ties by key.
    let mut start = 0;
    while start < out.len() {
        let end = (start..out.len()).find(|&i| out[i].0 != out[start].0).unwrap_or(out.len());
        out[start..end].sort();
        start = end;
    }
    out
}

fn documents(answer: &Value) -> Vec<(String, Value)> {
    let mut docs: Vec<(String, Value)> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["key"].as_str().unwrap().to_owned(), h["document"].clone()))
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    docs
}

fn search(s: &Server, table: &str, query: &str) -> Value {
    let (status, body) = s.get_json(&format!("/tables/{table}/search?{query}"));
    assert_eq!(status, 200, "{query}: {body}");
    body
}

/// Waits for `done` up to `limit` (polling, no fixed sleep); how long it took.
fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

fn suite(addr: &str, table: &str) {
    let embedded = TestDir::new();
    let local = TestDir::new();
    let over = |args: &[&str]| {
        let mut all = vec!["--hbase", addr];
        all.extend_from_slice(args);
        local.run(&all)
    };
    let _ = over(&["drop-table", table]);
    // The mail table, threads, secondary index and all.
    let schema = serde_json::to_value(rowsearch::indexer::mail_schema()).unwrap().to_string();
    let out = embedded.run(&["create-table", table, "--schema", &schema]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = over(&["create-table", table, "--schema", &schema]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Ingest: the same summary on both sides.
    let out = embedded.run(&["ingest", &fixture(), "--table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    let want = stdout(&out);
    let out = over(&["ingest", &fixture(), "--table", table]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = stdout(&out);
    let counts = |s: &str| s.split(" in ").next().unwrap_or_default().to_owned();
    assert_eq!(counts(&got), counts(&want), "ingest summaries differ");
    assert!(got.contains(" stored"), "{got}");
    // Ingesting again stores nothing new (rows found in HBase).
    let out = over(&["ingest", &fixture(), "--table", table]);
    assert!(stdout(&out).contains(" 0 stored"), "{}", stdout(&out));

    // Secondary index lookups (the index kept in HBase), alike: every
    // sender's keys in index order, a prefix, and an intersection.
    for args in [
        vec!["index", "lookup", table, "by_from", "--prefix", ""],
        vec!["index", "lookup", table, "by_from", "--prefix", "r", "--rows"],
        vec!["index", "verify", table, "by_from"],
    ] {
        let (e, h) = (embedded.run(&args), over(&args));
        assert!(e.status.success() && h.status.success(), "{args:?}: {} / {}", stderr(&e), stderr(&h));
        assert_eq!(stdout(&h), stdout(&e), "{args:?}");
        assert!(!stdout(&h).is_empty(), "{args:?}");
    }

    // Keyword lookups from the keyword rows, alike on both sides.
    for (user, terms) in
        [("badeer-r", vec!["gas"]), ("badeer-r", vec!["gas", "price"]), ("nobody", vec!["gas"])]
    {
        let mut args = vec!["keywords", "--table", table, "--user", user];
        args.extend(terms.iter().copied());
        let e = embedded.run(&args);
        let h = over(&args);
        assert!(e.status.success() && h.status.success(), "{} / {}", stderr(&e), stderr(&h));
        assert_eq!(stdout(&h), stdout(&e), "keywords {user} {terms:?}");
        assert_eq!(stdout(&h).is_empty(), user == "nobody", "keywords {user} {terms:?}");
    }

    // Reindex: full, reading the keyword rows' regions two at a time.
    assert!(embedded.run(&["reindex", "--table", table]).status.success());
    let out = over(&["reindex", "--table", table, "--full", "--parallel", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = stdout(&out);
    assert!(summary.contains("on 2 threads"), "{summary}");
    let out = over(&["verify", "--table", table]);
    assert!(out.status.success(), "verify: {}\n{}", stdout(&out), stderr(&out));

    // The CLI's search, alike.
    let args = ["search", "--table", table, "gas", "--sort", "newest", "--limit", "20"];
    let (e, h) = (embedded.run(&args), over(&args));
    assert!(h.status.success(), "{}", stderr(&h));
    assert_eq!(stdout(&h), stdout(&e));

    // Over HTTP.
    let es = embedded.serve(&["serve"]);
    let hs = local.serve(&["--hbase", addr, "serve", "--refresh-ms", "200"]);
    let queries = [
        "q=gas&limit=50",
        "q=gas+price&limit=20&sort=newest",
        "q=%22natural+gas%22&limit=20",
        "q=gas&user=badeer-r&limit=10&sort=oldest",
        "q=meeting&limit=5&offset=3",
        "q=subject:gas&limit=10&facets=user,folder,year",
        "q=enron&limit=0&facets=from",
    ];
    for q in queries {
        let (e, h) = (search(&es, table, q), search(&hs, table, q));
        assert_eq!(h["total"], e["total"], "{q}");
        let (hh, eh) = (hits(&h), hits(&e));
        assert_eq!(hh.len(), eh.len(), "{q}");
        // Which of the hits tied at a page's first or last value make the
        // page depends on segment order: the ties at the edges are left out.
        let edges: Vec<String> = eh.first().into_iter().chain(eh.last()).map(|(o, _)| o.clone()).collect();
        let inner = |v: &[(String, String)]| -> Vec<(String, String)> {
            v.iter().filter(|(o, _)| !edges.contains(o)).cloned().collect()
        };
        assert_eq!(inner(&hh), inner(&eh), "{q}");
        let inner_docs = |answer: &Value| -> Vec<(String, Value)> {
            let keep: Vec<String> = inner(&hits(answer)).into_iter().map(|(_, k)| k).collect();
            documents(answer).into_iter().filter(|(k, _)| keep.contains(k)).collect()
        };
        assert_eq!(inner_docs(&h), inner_docs(&e), "{q}");
        assert_eq!(h["facets"], e["facets"], "{q}");
    }
    // Conversations, as embedded: hits collapsed by thread carry the same
    // thread (its matches, messages and participants), and each thread's
    // view is the same tree of the same documents.
    for q in ["q=gas&limit=20&collapse=thread", "q=meeting&limit=10&collapse=thread&sort=newest"] {
        let (e, h) = (search(&es, table, q), search(&hs, table, q));
        assert_eq!(h["total"], e["total"], "{q}");
        let threads = |a: &Value| -> std::collections::BTreeMap<String, Value> {
            a["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x["key"].as_str().unwrap().to_owned(), x["thread"].clone()))
                .collect()
        };
        let (ht, et) = (threads(&h), threads(&e));
        let common: Vec<&String> = ht.keys().filter(|k| et.contains_key(*k)).collect();
        assert!(!common.is_empty(), "{q}: {h} / {e}");
        for k in common {
            assert!(ht[k]["id"].is_string(), "{q}: {h}");
            assert_eq!(ht[k], et[k], "{q}: the thread of {k}");
        }
        for thread in et.values().filter_map(|t| t["id"].as_str()) {
            let path = format!("/tables/{table}/threads/{thread}");
            let ((es_status, ev), (hs_status, hv)) = (es.get_json(&path), hs.get_json(&path));
            assert_eq!((hs_status, es_status), (200, 200), "{path}: {hv}");
            assert_eq!(hv, ev, "{path}");
        }
    }
    // Display settings over HBase, as embedded: documents carry the named
    // fields only; a name no document carries is a 422 on both.
    for s in [&es, &hs] {
        let (status, body) =
            s.request("PUT", &format!("/tables/{table}/display"), Some(r#"{"display":["subject"]}"#));
        assert_eq!(status, 200, "{body}");
        let (status, body) =
            s.request("PUT", &format!("/tables/{table}/display"), Some(r#"{"display":["nope"]}"#));
        assert_eq!(status, 422, "{body}");
    }
    let q = "q=gas&limit=5&sort=newest";
    let (e, h) = (search(&es, table, q), search(&hs, table, q));
    // (Hits tied at the page's edge may differ: the documents of the keys
    // both pages hold are compared.)
    let (hd, ed) = (documents(&h), documents(&e));
    let common: Vec<&(String, Value)> = hd.iter().filter(|d| ed.iter().any(|x| x.0 == d.0)).collect();
    assert!(!common.is_empty(), "{h} / {e}");
    for d in common {
        assert!(ed.contains(d), "{d:?} / {e}");
    }
    assert!(
        documents(&h).iter().all(|(_, d)| d.as_object().is_some_and(|o| o.keys().all(|k| k == "subject"))),
        "{h}"
    );
    for s in [&es, &hs] {
        let (status, body) =
            s.request("PUT", &format!("/tables/{table}/display"), Some(r#"{"display":["*"]}"#));
        assert_eq!(status, 200, "{body}");
    }
    for path in [format!("/tables/{table}/suggest?q=natural+ga"), format!("/tables/{table}/suggest?q=mee")] {
        let (_, e) = es.get_json(&path);
        let (status, h) = hs.get_json(&path);
        assert_eq!(status, 200, "{h}");
        assert_eq!(h["suggestions"], e["suggestions"], "{path}");
    }
    let path = format!("/tables/{table}/keywords?user=badeer-r&terms=gas&limit=5");
    assert_eq!(hs.get_json(&path).1["keys"], es.get_json(&path).1["keys"]);
    let (_, described) = hs.get_json(&format!("/tables/{table}"));
    assert_eq!(described["guarantee"]["kind"], "read_your_writes", "{described}");
    assert_eq!(described["source"]["kind"], "hbase", "{described}");
    // /metrics names HBase's tables (their index figures, read from the
    // tables HBase holds, not from the empty local store).
    let (status, metrics) = hs.request("GET", "/metrics", None);
    assert_eq!(status, 200);
    let generation = format!("rowsearch_index_generation{{table=\"{table}\"}}");
    assert!(metrics.contains(&generation), "no {generation} in {metrics}");
    assert!(!metrics.contains(&format!("rowsearch_store_cells{{table=\"{table}\"}}")), "{metrics}");
    // Secondary indexes over HBase: listed, looked up and combined as
    // embedded.
    for path in [
        format!("/tables/{table}/indexes"),
        format!("/tables/{table}/indexes/by_from?prefix=r&limit=7"),
        format!("/tables/{table}/indexes/by_from?prefix=r&limit=3&rows=true"),
        format!("/tables/{table}/indexes:intersect?q=by_from:prefix:r&q=by_from_date:prefix:r&limit=5"),
    ] {
        let ((es_status, ev), (hs_status, hv)) = (es.get_json(&path), hs.get_json(&path));
        assert_eq!((hs_status, es_status), (200, 200), "{path}: {hv}");
        assert_eq!(hv, ev, "{path}");
    }
    // Where they differ, as API.md says: an index over HBase is one range.
    let (status, body) = hs.get_json(&format!("/tables/{table}/indexes/by_from?prefix=r&region=0"));
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_index_query")), "{body}");
    // Scans are served: the mail's rows as HBase holds them.
    let (status, body) = hs.get_json(&format!("/tables/{table}/scan?limit=1&keys_only=true"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rows"].as_array().map(Vec::len), Some(1), "{body}");

    // A write through rowsearch: searchable at once, a keyword lookup too.
    let key = enc(r#"{"user":"zz-probe","date":1000,"id":1}"#);
    let row = json!({"cells": [{"column": "m:subject", "value": "quokkaword arrives"},
                               {"column": "m:date", "value": "1000"}]});
    let (status, body) =
        hs.request("PUT", &format!("/tables/{table}/rows?key_fields={key}"), Some(&row.to_string()));
    assert_eq!(status, 200, "{body}");
    assert_eq!(search(&hs, table, "q=quokkaword")["total"], 1);
    // The write's own sequence as `min_seq`, eventual and snapshot: the
    // index reflects it once HBase's clock margin has passed (a feed of
    // times with no later entry moved on: it waited to the time limit).
    let seq = serde_json::from_str::<Value>(&body).unwrap()["seq"].as_u64().unwrap();
    for consistency in ["eventual", "snapshot"] {
        let answer = search(&hs, table, &format!("q=quokkaword&min_seq={seq}&consistency={consistency}"));
        assert_eq!(answer["total"], 1, "{consistency}: {answer}");
    }
    let path = format!("/tables/{table}/keywords?user=zz-probe&terms=quokkaword");
    assert_eq!(hs.get_json(&path).1["keys"].as_array().map(Vec::len), Some(1));

    // Another HBase client writes a row: the tailer finds it.
    let schema = rowsearch::indexer::mail_schema();
    let other_key =
        rowsearch::json::key_from_fields(&schema, table, r#"{"user":"zz-other","date":2000,"id":2}"#)
            .unwrap();
    let mut other = HbaseClient::new(addr, Duration::from_secs(30));
    other
        .put_rows(
            table,
            &[(
                other_key.clone(),
                vec![
                    PutCell::new("m", "subject", "wombatword from elsewhere"),
                    PutCell::new("m", "date", "2000"),
                ],
            )],
        )
        .unwrap();
    let took = wait_for(Duration::from_secs(30), "the tailer finding another client's row", || {
        search(&hs, table, "q=wombatword")["total"] == 1
    });
    eprintln!("another client's row found after {took:?}");
    // A full reindex from the keyword rows keeps it (it has no keyword
    // cells of rowsearch's: made from its text).
    let out = over(&["reindex", "--table", table, "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = over(&["search", "--table", table, "wombatword"]);
    assert!(stdout(&out).contains("wombatword from elsewhere"), "{}\n{}", stdout(&out), stderr(&out));

    // A reindex job over HTTP: the rows read from HBase, the index built
    // in the server's data directory; searches answer as before.
    let before = search(&hs, table, "q=gas&limit=20");
    let (status, body) = hs.request("POST", &format!("/tables/{table}/reindex?mode=full"), None);
    assert_eq!(status, 202, "{body}");
    let job = serde_json::from_str::<Value>(&body).unwrap()["job"].as_str().unwrap().to_owned();
    let mut state = Value::Null;
    wait_for(Duration::from_secs(60), "the reindex job", || {
        state = hs.get_json(&format!("/jobs/{job}")).1;
        state["state"] != "running" && state["state"] != "queued"
    });
    assert_eq!(state["state"], "done", "{state}");
    assert!(state["report"]["rows_indexed"].as_u64().unwrap_or(0) > 0, "{state}");
    let after = search(&hs, table, "q=gas&limit=20");
    assert_eq!((after["total"].clone(), hits(&after)), (before["total"].clone(), hits(&before)));

    // Another client deletes a row that is a hit: never shown again.
    let before = search(&hs, table, "q=gas&user=badeer-r&limit=1000");
    let victim = before["hits"][0]["key"].as_str().unwrap().to_owned();
    let victim_key = rowsearch::wire::decode(&victim).unwrap();
    other.delete_row(table, &victim_key).unwrap();
    for _ in 0..3 {
        let after = search(&hs, table, "q=gas&user=badeer-r&limit=1000");
        assert!(
            after["hits"].as_array().unwrap().iter().all(|h| h["key"] != victim.as_str()),
            "{victim} shown"
        );
    }

    // Incremental reindex from the CLI (the server's tailer may hold the
    // index's lock a moment: the CLI waits for it), then verify.
    let out = over(&["reindex", "--table", table, "--incremental"]);
    assert!(out.status.success(), "{}", stderr(&out));
    drop(hs);
    drop(es);
    assert!(over(&["drop-table", table]).status.success());
}

#[test]
fn the_suite_runs_over_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::over_hbase::the_suite_runs_over_a_real_hbase") else {
        return;
    };
    suite(&hbase.thrift2, "mail_over_hbase");
}

#[test]
fn the_suite_runs_over_rowsearchs_own_gateway() {
    let (_t, _s, thrift2) = super::thrift2_server();
    suite(&thrift2, "mail_over_gateway");
}
