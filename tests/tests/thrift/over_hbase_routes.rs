//! The table routes `serve --hbase` serves beside search: scans (every
//! option but a filter), counts, regions, disable and enable, answered as
//! the embedded store answers them, request by request, against a real
//! HBase and against rowsearch's own `--thrift2` standing in for it; filters
//! pushed down to HBase give the store's rows; one HBase's language lacks is
//! a 400 naming it, never ignored.

use rowsearch_tests::{Server, TestDir};
use serde_json::{Value, json};

/// Rows over three regions, several versions, two families.
fn fill(s: &Server, table: &str) {
    let schema = json!({"families": [{"name": "m", "max_versions": 3}, {"name": "b"}],
        "splits": ["g", "p"]});
    let (status, body) = s.request("PUT", &format!("/tables/{table}"), Some(&schema.to_string()));
    assert!(status < 300, "create: {body}");
    for (i, key) in ["a1", "a2", "b1", "g", "g0", "h5", "p", "pz", "q1", "zz"].iter().enumerate() {
        for version in 1..=2u64 {
            let cells = json!({"cells": [
                {"column": "m:s", "value": format!("{key} v{version}"), "timestamp": 1000 * version + i as u64},
                {"column": "b:n", "value": format!("{i}"), "timestamp": 1000 * version + i as u64},
            ]});
            let (status, body) =
                s.request("PUT", &format!("/tables/{table}/rows/{key}"), Some(&cells.to_string()));
            assert!(status < 300, "put {key}: {body}");
        }
    }
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    s.get_json(path)
}

fn routes_suite(addr: &str, table: &str) {
    let embedded = TestDir::new();
    let local = TestDir::new();
    let es = embedded.serve(&["serve", "--create"]);
    let hs = local.serve(&["--hbase", addr, "serve"]);
    let _ = hs.request("DELETE", &format!("/tables/{table}"), None);
    fill(&es, table);
    fill(&hs, table);
    let t = format!("/tables/{table}");
    let mut asked = vec![
        format!("{t}/regions"),
        format!("{t}/scan"),
        format!("{t}/scan?limit=3"),
        format!("{t}/scan?start=b&stop=q"),
        format!("{t}/scan?prefix=a"),
        format!("{t}/scan?prefix=p&keys_only=true"),
        format!("{t}/scan?reverse=true"),
        format!("{t}/scan?reverse=true&start=b1&stop=q1&limit=2"),
        format!("{t}/scan?columns=m:s&versions=3"),
        format!("{t}/scan?columns=b&min_ts=2000"),
        // Time ranges over the three-version family only: HBase keeps a
        // one-version family's older versions until a compaction, where
        // the store keeps what the family allows (docs/hbase.md).
        format!("{t}/scan?columns=m&max_ts=2000&versions=2"),
        format!("{t}/scan?offset=2&limit=3"),
        format!("{t}/scan?region=1"),
        format!("{t}/scan?region=3"),
        format!("{t}/scan?columns=nofamily:x"),
        format!("{t}/count"),
        format!("{t}/count?prefix=g"),
        format!("{t}/count?start=h&reverse=false&limit=4"),
    ];
    // Walks by cursor, forward and back: the same pages on both sides.
    for reverse in [false, true] {
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut path = format!("{t}/scan?limit=3&reverse={reverse}");
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let (e, h) = (get(&es, &path), get(&hs, &path));
            assert_eq!(h, e, "{path}");
            pages += 1;
            match e.1["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(pages, 4, "10 rows, 3 a page");
    }
    for path in asked.drain(..) {
        let (e, h) = (get(&es, &path), get(&hs, &path));
        assert_eq!(h.0, e.0, "{path}: {} vs {}", h.1, e.1);
        if e.0 == 200 {
            assert_eq!(h.1, e.1, "{path}");
        } else {
            assert_eq!(h.1["error"]["code"], e.1["error"]["code"], "{path}: {} vs {}", h.1, e.1);
        }
    }
    // HBase's own disable and enable: a disabled table's rows are refused.
    for s in [&es, &hs] {
        let (status, body) = s.request("POST", &format!("{t}/disable"), None);
        assert_eq!(status, 200, "{body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["changed"], true);
        let (status, again) = s.request("POST", &format!("{t}/disable"), None);
        assert_eq!(
            (status, serde_json::from_str::<Value>(&again).unwrap()["changed"].clone()),
            (200, json!(false))
        );
        let (status, refused) = get(s, &format!("{t}/scan"));
        assert_eq!((status, refused["error"]["code"].clone()), (409, json!("table_disabled")), "{refused}");
        let (status, body) = s.request("POST", &format!("{t}/enable"), None);
        assert_eq!(status, 200, "{body}");
        let (status, _) = get(s, &format!("{t}/scan"));
        assert_eq!(status, 200);
    }
    // Filters, pushed down to HBase: the same rows as the store's own
    // evaluation. (`PageFilter` and `WhileMatchFilter` end per region in
    // HBase, over the whole scan in the store: docs/hbase.md.)
    for filter in [
        "PrefixFilter('g')",
        "ValueFilter(=, 'substring:V2')",
        "SingleColumnValueFilter('b', 'n', >=, 'binary:5')",
        "SingleColumnValueFilter('b', 'n', =, 'binary:3', true, true) AND KeyOnlyFilter()",
        "QualifierFilter(=, 'binary:s') OR RowFilter(>, 'binary:q')",
        "FirstKeyOnlyFilter() AND RowFilter(!=, 'regexstring:^[ap]')",
        "TimestampsFilter(1003, 2004)",
        "ColumnRangeFilter('a', true, 'n', false)",
        "SKIP ValueFilter(!=, 'binaryprefix:a')",
    ] {
        let q = crate::http::enc(filter);
        for path in [
            format!("{t}/scan?filter={q}"),
            format!("{t}/scan?filter={q}&versions=all&reverse=true&limit=4"),
            format!("{t}/count?filter={q}"),
        ] {
            let (e, h) = (get(&es, &path), get(&hs, &path));
            assert_eq!(h, e, "{path}");
        }
    }
    // One HBase's filter language lacks: refused up front, not ignored.
    let path = format!("{t}/scan?filter={}", crate::http::enc("FuzzyRowFilter('a?', '01')"));
    let (status, refused) = get(&hs, &path);
    assert_eq!((status, refused["error"]["code"].clone()), (400, json!("invalid_filter")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("FuzzyRowFilter"), "{refused}");
    // `mutate`: HBase is atomic per row. One row's batch is served as the
    // store serves it; a batch of rows asking to be all or nothing (the
    // default) is a 422 that writes nothing; with atomic=false each row is
    // applied and the rows end as the store's; a bad mutation anywhere
    // writes nothing.
    let rows_of = |s: &Server| get(s, &format!("{t}/scan?prefix=m&versions=all")).1;
    let put = |key: &str, v: &str| json!({"put": {"key": key, "cells": [{"column": "m:s", "value": v, "timestamp": 5}]}});
    let one = json!({"mutations": [put("m1", "one"), put("m1", "more")]}).to_string();
    let many =
        json!({"mutations": [put("m2", "two"), put("m3", "three"), {"delete": {"key": "a1"}}]}).to_string();
    for (body, why) in [
        (json!({"mutations": [put("m4", "x"), {"delete": {"key": "m4"}}]}), "both put and deleted"),
        (json!({"mutations": [put("m6", "x"), {"put": {"key": "m7", "cells": []}}]}), "at least one cell"),
    ] {
        let (status, refused) =
            hs.request("POST", &format!("{t}/mutate?atomic=false"), Some(&body.to_string()));
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(refused.contains(why), "{body}: {refused}");
    }
    let (status, refused) = hs.request("POST", &format!("{t}/mutate"), Some(&many));
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (422, json!("not_atomic_over_hbase")),
        "{refused}"
    );
    assert_eq!(rows_of(&hs)["rows"], json!([]), "a refused batch writes nothing");
    for s in [&es, &hs] {
        let (status, body) = s.request("POST", &format!("{t}/mutate"), Some(&one));
        assert_eq!(status, 200, "{body}");
        let (status, body) = s.request("POST", &format!("{t}/mutate?atomic=false"), Some(&many));
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        let kind = if std::ptr::eq(s, &hs) { "row" } else { "batch" };
        assert_eq!(answer["atomicity"], kind, "{answer}");
    }
    assert_eq!(rows_of(&hs), rows_of(&es), "the rows a mutate leaves");
    assert_eq!(get(&hs, &format!("{t}/rows/a1")), get(&es, &format!("{t}/rows/a1")));
    assert_eq!(get(&hs, &format!("{t}/rows/a1")).0, 404);
    // Secondary indexes are served over HBase (`indexes_over_hbase.rs`),
    // and the change feed (`feed_over_hbase.rs`); what is not says why
    // (route_table's `Needs::Store`).
    assert_eq!(get(&hs, &format!("{t}/indexes")), get(&es, &format!("{t}/indexes")));
    let (status, page) = get(&hs, &format!("{t}/changes"));
    assert_eq!(status, 200, "{page}");
    let (status, refused) = get(&hs, "/backups");
    assert_eq!((status, refused["error"]["code"].clone()), (501, json!("not_over_hbase")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("snapshot"), "{refused}");
    let (status, body) = hs.request("DELETE", &t, None);
    assert!(status < 300, "{body}");
}

#[test]
fn table_routes_over_a_real_hbase_answer_as_embedded() {
    let Some(hbase) = rowsearch_tests::hbase(
        "thrift::over_hbase_routes::table_routes_over_a_real_hbase_answer_as_embedded",
    ) else {
        return;
    };
    routes_suite(&hbase.thrift2, "routes_over_hbase");
}

#[test]
fn table_routes_over_rowsearchs_own_gateway_answer_as_embedded() {
    let (_t, _s, thrift2) = super::thrift2_server();
    routes_suite(&thrift2, "routes_over_gateway");
}
