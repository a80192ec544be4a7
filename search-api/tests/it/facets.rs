//! Facets against a brute force over the fixture mail: for several
//! queries, every value's count of the user, from, to, folder, month and
//! year facets equals a count over the matching rows, each row's values
//! read from its stored columns here (addresses picked out of `m:from` and
//! `m:to` by this file's own rule, the month from `m:date` by jiff), not
//! from the index. Also: a partition and a key's confinement narrow the
//! counts, `facet_limit` keeps the largest, a row written after the index
//! was built is counted at once, and unknown or unfaceted names are
//! refused.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::common;

use rowsearch::indexer::SortBy;
use rowsearch::store::{PutCell, ReadOptions, Scan, Store};
use rowsearch::{Error, SearchRequest, Searcher};

const FACETS: [&str; 6] = ["user", "from", "to", "folder", "month", "year"];

/// A row's facet values, from its columns.
#[derive(Debug, Clone)]
struct Values {
    key: Vec<u8>,
    by_facet: BTreeMap<&'static str, BTreeSet<String>>,
}

/// The email addresses in a header value: chunks between spaces and
/// punctuation that hold `local@domain.tld`, lowercased.
fn addresses(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || "<>,;\"'()[]:/\\".contains(c))
        .map(|chunk| chunk.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|chunk| {
            chunk.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && chunk.len() <= 40
            })
        })
        .collect()
}

fn fixture() -> (tempfile::TempDir, Arc<Store>, Vec<Values>) {
    let (dir, store) = common::fixture_store();
    let rows = store.scan("mail", &Scan { read: ReadOptions::default(), ..Scan::new() }).unwrap().rows;
    let schema = store.schema("mail").unwrap();
    let row_key = schema.row_key.unwrap();
    let values = rows
        .iter()
        .map(|row| {
            let text = |q: &[u8]| String::from_utf8_lossy(row.value("m", q).unwrap_or_default()).into_owned();
            let fields = row_key.decode_json(&row.key).unwrap();
            let user = fields["user"].as_str().unwrap().to_owned();
            let date = rowsearch::indexer::parse_date_ms(text(b"date").as_bytes()).unwrap_or(0);
            let day =
                jiff::Timestamp::from_millisecond(date as i64).unwrap().to_zoned(jiff::tz::TimeZone::UTC);
            // A folded message's folders, one per line: each counts.
            let folders: BTreeSet<String> =
                text(b"folder").lines().map(|f| f.trim().to_lowercase()).filter(|f| !f.is_empty()).collect();
            let mut by_facet = BTreeMap::new();
            by_facet.insert("user", BTreeSet::from([user]));
            by_facet.insert("from", addresses(&text(b"from")));
            by_facet.insert("to", addresses(&text(b"to")));
            by_facet.insert("folder", folders);
            by_facet.insert("month", BTreeSet::from([day.strftime("%Y-%m").to_string()]));
            by_facet.insert("year", BTreeSet::from([day.strftime("%Y").to_string()]));
            Values { key: row.key.clone(), by_facet }
        })
        .collect();
    (dir, store, values)
}

fn request(query: &str, facets: &[&str], limit: usize) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        limit: Some(0),
        sort: SortBy::Newest,
        facets: facets.iter().map(|f| f.to_string()).collect(),
        facet_limit: Some(limit),
        ..SearchRequest::default()
    }
}

/// The keys a query matches (every one, newest first).
fn matching(searcher: &Searcher, query: &str, partition: Option<&str>) -> BTreeSet<Vec<u8>> {
    let mut keys = BTreeSet::new();
    let mut req = SearchRequest {
        query: query.into(),
        limit: Some(1000),
        sort: SortBy::Newest,
        partition: partition.map(|p| p.as_bytes().to_vec()),
        ..SearchRequest::default()
    };
    loop {
        let page = searcher.search("mail", &req).unwrap();
        keys.extend(page.hits.iter().map(|h| h.row.key.clone()));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return keys,
        }
    }
}

fn brute(rows: &[Values], keys: &BTreeSet<Vec<u8>>, facet: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for row in rows.iter().filter(|r| keys.contains(&r.key)) {
        for value in &row.by_facet[facet] {
            *counts.entry(value.clone()).or_default() += 1;
        }
    }
    counts
}

fn counted(results: &rowsearch::SearchResults, facet: &str) -> BTreeMap<String, u64> {
    let (_, values) = results.facets.iter().find(|(n, _)| n == facet).expect("the facet is answered");
    values.iter().cloned().collect()
}

#[test]
fn facet_counts_equal_counts_over_the_matching_rows() {
    let (_dir, store, rows) = fixture();
    let searcher = Searcher::new(Arc::clone(&store));
    assert!(rows.len() > 200, "{} rows", rows.len());
    for query in ["*", "gas", "enron", "meeting OR power", "subject:re", "date:2001"] {
        let keys = matching(&searcher, query, None);
        assert!(!keys.is_empty(), "{query} matches something");
        let got = searcher.search("mail", &request(query, &FACETS, 1000)).unwrap();
        assert_eq!(got.total as usize, keys.len(), "{query}");
        assert!(got.hits.is_empty(), "limit 0: no hits");
        for facet in FACETS {
            assert_eq!(counted(&got, facet), brute(&rows, &keys, facet), "{facet} of {query}");
        }
        // The answer keeps the order asked for.
        let names: Vec<&str> = got.facets.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, FACETS);
    }
    // Not every from value is one address: the from facet holds addresses
    // only, and rows with several recipients count once per recipient.
    let all = matching(&searcher, "*", None);
    let to = brute(&rows, &all, "to");
    assert!(to.values().sum::<u64>() > all.len() as u64, "rows with several recipients");

    // A facet_limit keeps the largest, most first, ties by value.
    let got = searcher.search("mail", &request("*", &["from"], 3)).unwrap();
    let mut want: Vec<(String, u64)> = brute(&rows, &all, "from").into_iter().collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    want.truncate(3);
    assert_eq!(got.facets[0].1, want);
}

#[test]
fn facets_follow_the_partition_the_confinement_and_new_rows() {
    let (_dir, store, rows) = fixture();
    let searcher = Searcher::new(Arc::clone(&store));
    // One partition.
    let keys = matching(&searcher, "gas", Some("cash-m"));
    let got = searcher
        .search(
            "mail",
            &SearchRequest { partition: Some(b"cash-m".to_vec()), ..request("gas", &FACETS, 1000) },
        )
        .unwrap();
    for facet in FACETS {
        assert_eq!(counted(&got, facet), brute(&rows, &keys, facet), "{facet} in cash-m");
    }
    assert_eq!(counted(&got, "user").keys().collect::<Vec<_>>(), ["cash-m"]);
    // A key confined to two partitions counts only theirs.
    let scope = vec![b"cash-m".to_vec(), b"gay-r".to_vec()];
    let got = searcher
        .search("mail", &SearchRequest { scope: Some(scope), ..request("*", &["user", "from"], 1000) })
        .unwrap();
    assert_eq!(counted(&got, "user").keys().collect::<Vec<_>>(), ["cash-m", "gay-r"]);
    let mut keys = matching(&searcher, "*", Some("cash-m"));
    keys.extend(matching(&searcher, "*", Some("gay-r")));
    assert_eq!(counted(&got, "from"), brute(&rows, &keys, "from"));

    // A row written after the index was built is counted at once.
    let before = searcher.search("mail", &request("*", &["folder", "from"], 1000)).unwrap();
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let key =
        rk.encode_json(&serde_json::json!({"user": "zed", "date": 990_000_000_000u64, "id": 1})).unwrap();
    store
        .put(
            "mail",
            &key,
            vec![
                PutCell::new("m", "subject", "quokka report"),
                PutCell::new("m", "from", "Zed <Zed.Q@Example.org>"),
                PutCell::new("m", "folder", " Brand New "),
                PutCell::new("m", "date", "990000000000"),
            ],
        )
        .unwrap();
    let after = searcher.search("mail", &request("*", &["folder", "from", "user"], 1000)).unwrap();
    assert!(after.overlay_rows > 0, "answered through the overlay, not a reindex");
    assert_eq!(after.total, before.total + 1);
    assert_eq!(counted(&after, "folder").get("brand new"), Some(&1));
    assert_eq!(counted(&after, "from").get("zed.q@example.org"), Some(&1));
    assert_eq!(counted(&after, "user").get("zed"), Some(&1));
    let got = searcher.search("mail", &request("folder:\"brand new\"", &["user"], 10)).unwrap();
    assert_eq!(got.total, 1, "a keyword field matches its whole value");
}

#[test]
fn unknown_or_unfaceted_names_are_refused() {
    let (_dir, store, _rows) = fixture();
    let searcher = Searcher::new(store);
    for (facets, says) in [
        (vec!["sender"], "no facet \"sender\""),
        (vec!["body"], "no facet column"),
        (vec!["user", "user"], "twice"),
    ] {
        match searcher.search("mail", &request("gas", &facets, 10)) {
            Err(Error::BadRequest(reason)) => assert!(reason.contains(says), "{facets:?}: {reason}"),
            other => panic!("{facets:?}: {other:?}"),
        }
    }
    match searcher.search("mail", &request("gas", &["user"], 0)) {
        Err(Error::BadRequest(reason)) => assert!(reason.contains("facet_limit"), "{reason}"),
        other => panic!("{other:?}"),
    }
}
