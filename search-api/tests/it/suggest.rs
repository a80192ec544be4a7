//! Suggestions and `did_you_mean` against a brute force over the fixture
//! mail's keyword cells (each row's terms per field, read from the store,
//! not the index): the completions of a word's start are the terms with
//! that start, ranked by the rows holding them (ties by term), in any
//! field or in one, in one partition or a key's confinement; a word
//! written a moment ago is suggested at once; and a query that finds
//! nothing is offered a correction (one or two edits, computed here) that
//! finds something.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rowsearch::store::{PutCell, Scan, Store};
use rowsearch::{Error, SearchRequest, Searcher, SuggestRequest};

/// Per row: its partition and its (field, term) pairs.
type Rows = Vec<(String, BTreeSet<(String, String)>)>;

fn rows(store: &Store) -> Rows {
    let keys = store.scan("mail", &Scan { keys_only: true, ..Scan::new() }).unwrap().rows;
    let rtxn = store.begin_read().unwrap();
    keys.iter()
        .map(|row| {
            let cells = rtxn.row_keyword_cells("mail", &row.key).unwrap();
            let user =
                cells.first().map(|c| String::from_utf8_lossy(&c.partition).into_owned()).unwrap_or_default();
            (user, cells.into_iter().map(|c| (c.field, c.term)).collect())
        })
        .collect()
}

/// The `limit` terms starting with `prefix` (in `field`, or any), with
/// the rows of `users` (all when empty) holding them, most first.
fn brute(rows: &Rows, field: Option<&str>, prefix: &str, users: &[&str], limit: usize) -> Vec<(String, u64)> {
    let mut docs: BTreeMap<String, u64> = BTreeMap::new();
    for (user, terms) in rows {
        if !users.is_empty() && !users.contains(&user.as_str()) {
            continue;
        }
        let held: BTreeSet<&String> = terms
            .iter()
            .filter(|(f, t)| field.is_none_or(|want| want == f) && t.starts_with(prefix))
            .map(|(_, t)| t)
            .collect();
        for term in held {
            *docs.entry(term.clone()).or_default() += 1;
        }
    }
    let mut out: Vec<(String, u64)> = docs.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(limit);
    out
}

fn suggest(
    searcher: &Searcher,
    query: &str,
    user: Option<&str>,
    scope: Option<&[&str]>,
) -> Vec<(String, u64)> {
    let request = SuggestRequest {
        query: query.into(),
        partition: user.map(|u| u.as_bytes().to_vec()),
        scope: scope.map(|s| s.iter().map(|u| u.as_bytes().to_vec()).collect()),
        limit: Some(20),
    };
    searcher.suggest("mail", &request).unwrap().suggestions.into_iter().map(|s| (s.text, s.docs)).collect()
}

fn with_head(head: &str, terms: Vec<(String, u64)>) -> Vec<(String, u64)> {
    terms.into_iter().map(|(t, n)| (format!("{head}{t}"), n)).collect()
}

/// The completions of `prefix` after the words `head` as phrases: every
/// completion that follows the words somewhere in a field of a row, with
/// the rows holding that phrase, the 20 most first.
fn brute_phrases(store: &Store, head: &[&str], prefix: &str) -> Vec<(String, u64)> {
    let all = rows(store);
    let wanted: Vec<String> =
        brute(&all, None, prefix, &[], usize::MAX).into_iter().map(|(t, _)| t).collect();
    let keys = store.scan("mail", &Scan { keys_only: true, ..Scan::new() }).unwrap().rows;
    let rtxn = store.begin_read().unwrap();
    let mut docs: BTreeMap<String, u64> = BTreeMap::new();
    for row in &keys {
        // field -> term -> positions
        let mut at: BTreeMap<String, BTreeMap<String, BTreeSet<u32>>> = BTreeMap::new();
        for cell in rtxn.row_keyword_cells("mail", &row.key).unwrap() {
            at.entry(cell.field).or_default().entry(cell.term).or_default().extend(cell.positions);
        }
        for term in &wanted {
            let found = at.values().any(|terms| {
                let Some(first) = terms.get(head[0]) else { return false };
                first.iter().any(|&p| {
                    let mut words: Vec<&str> = head[1..].to_vec();
                    words.push(term);
                    words
                        .iter()
                        .enumerate()
                        .all(|(i, w)| terms.get(*w).is_some_and(|ps| ps.contains(&(p + 1 + i as u32))))
                })
            });
            if found {
                *docs.entry(term.clone()).or_default() += 1;
            }
        }
    }
    let mut out: Vec<(String, u64)> = docs.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(20);
    out
}

#[test]
fn completions_after_words_are_phrases_that_occur_with_their_own_counts() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    // The issue's shapes: a completion rare among the prefix's terms but
    // common after the words ("power p", "the ca") is found.
    for (typed, head, prefix) in [
        ("natural ga", vec!["natural"], "ga"),
        ("Gas pri", vec!["gas"], "pri"),
        ("power p", vec!["power"], "p"),
        ("the ca", vec!["the"], "ca"),
        ("gas p", vec!["gas"], "p"),
    ] {
        let want = brute_phrases(&store, &head, prefix);
        assert!(!want.is_empty(), "{typed}");
        let got = suggest(&searcher, typed, None, None);
        let head_text = &typed[..typed.len() - prefix.len()];
        assert_eq!(got, with_head(head_text, want), "{typed}");
    }
}

#[test]
fn completions_equal_the_terms_of_the_rows() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    let rows = rows(&store);
    for prefix in ["e", "en", "gas", "me", "pri", "phillip.", "zz"] {
        let want = brute(&rows, None, prefix, &[], 20);
        assert_eq!(suggest(&searcher, prefix, None, None), want, "{prefix}");
        // Upper case is read as typed words are, and the words before
        // the last are kept.
        let typed = format!("Gas -{}", prefix.to_uppercase());
        assert_eq!(suggest(&searcher, &typed, None, None), with_head("Gas -", want), "{typed}");
    }
    assert!(!brute(&rows, None, "en", &[], 20).is_empty());
    for (field, prefix) in [("subject", "re"), ("from", "k"), ("folder", "in")] {
        let want = with_head(&format!("{field}:"), brute(&rows, Some(field), prefix, &[], 20));
        assert!(!want.is_empty(), "{field}:{prefix}");
        assert_eq!(suggest(&searcher, &format!("{field}:{prefix}"), None, None), want);
    }
    // One partition, and a key confined to two: counts within them, and
    // no word of another partition, exactly (also past SCOPED_CANDIDATES
    // terms overall: "e").
    for prefix in ["gas", "mee", "pri", "wh", "e"] {
        let want = brute(&rows, None, prefix, &["cash-m"], 20);
        assert!(!want.is_empty());
        assert_eq!(suggest(&searcher, prefix, Some("cash-m"), None), want, "{prefix} in cash-m");
        let want = brute(&rows, None, prefix, &["cash-m", "gay-r"], 20);
        assert_eq!(suggest(&searcher, prefix, None, Some(&["cash-m", "gay-r"])), want, "{prefix} confined");
    }
    assert!(brute(&rows, None, "e", &[], 1000).len() > rowsearch::suggest::SCOPED_CANDIDATES);
    let err = searcher
        .suggest(
            "mail",
            &SuggestRequest {
                query: "gas".into(),
                partition: Some(b"gay-r".to_vec()),
                scope: Some(vec![b"cash-m".to_vec()]),
                limit: None,
            },
        )
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    for bad in [
        SuggestRequest { query: " ".into(), ..Default::default() },
        SuggestRequest { query: "e".into(), limit: Some(0), ..Default::default() },
    ] {
        assert!(matches!(searcher.suggest("mail", &bad), Err(Error::BadRequest(_))), "{bad:?}");
    }
}

#[test]
fn a_new_word_is_suggested_at_once() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    assert!(suggest(&searcher, "zyzzo", None, None).is_empty());
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    for id in 1..=2u64 {
        let key = rk
            .encode_json(&serde_json::json!({"user": "zed", "date": 990_000_000_000u64, "id": id}))
            .unwrap();
        store
            .put("mail", &key, vec![PutCell::new("m", "subject", format!("zyzzogeton{id} zyzzogeton"))])
            .unwrap();
    }
    assert_eq!(
        suggest(&searcher, "zyzzo", None, None),
        [("zyzzogeton".to_owned(), 2), ("zyzzogeton1".to_owned(), 1), ("zyzzogeton2".to_owned(), 1)]
    );
    assert_eq!(suggest(&searcher, "zyzzo", Some("zed"), None).len(), 3);
    assert!(suggest(&searcher, "zyzzo", Some("cash-m"), None).is_empty(), "not in cash-m");
    // A word whose only row is deleted is no longer offered, and the
    // others are counted without that row (also after a reindex, whose
    // segments still hold the deleted document's terms).
    let key =
        rk.encode_json(&serde_json::json!({"user": "zed", "date": 990_000_000_000u64, "id": 2})).unwrap();
    store.delete("mail", &key, rowsearch::store::Delete::Row { up_to: None }).unwrap();
    let want = [("zyzzogeton".to_owned(), 1), ("zyzzogeton1".to_owned(), 1)];
    assert_eq!(suggest(&searcher, "zyzzo", None, None), want);
    let options = rowsearch::indexer::ReindexOptions {
        mode: rowsearch::indexer::ReindexMode::Incremental,
        ..Default::default()
    };
    rowsearch::indexer::reindex(&store, "mail", &options, &mut |_| {}).unwrap();
    assert_eq!(suggest(&searcher, "zyzzo", None, None), want);
}

#[test]
fn a_query_that_finds_nothing_is_offered_the_nearest_held_words() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    let rows = rows(&store);
    let search = |q: &str| {
        searcher
            .search("mail", &SearchRequest { query: q.into(), limit: Some(0), ..SearchRequest::default() })
            .unwrap()
    };
    for (typo, max) in
        [("enrn", 1), ("meetign", 1), ("prics", 1), ("powr", 1), ("trnsmision", 2), ("califrnai", 2)]
    {
        let got = search(typo);
        assert_eq!(got.total, 0, "{typo} finds nothing");
        // The brute force: the held term within `max` edits in most rows.
        let mut best: Option<(u64, String)> = None;
        let mut docs: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, terms) in &rows {
            let held: BTreeSet<&str> = terms.iter().map(|(_, t)| t.as_str()).collect();
            for t in held {
                if common::edits(t, typo) <= max {
                    *docs.entry(t).or_default() += 1;
                }
            }
        }
        for (t, n) in docs {
            if best.as_ref().is_none_or(|(m, b)| n > *m || (n == *m && t < b.as_str())) {
                best = Some((n, t.to_owned()));
            }
        }
        let (_, want) = best.expect("the fixture holds a near word");
        assert_eq!(got.did_you_mean.as_deref(), Some(want.as_str()), "{typo}");
        assert!(search(&want).total > 0);
    }
    // Each unknown word of several is corrected, the rest kept as typed.
    let got = search("Gas enrn -meetign");
    let fixed = got.did_you_mean.expect("a correction");
    assert!(fixed.starts_with("Gas ") && fixed.contains(" -"), "{fixed}");
    assert!(search(&fixed).total > 0);
    // None when something is found, or nothing near is held.
    assert_eq!(search("enron").did_you_mean, None);
    assert_eq!(search("qqqqzzzz").did_you_mean, None);
}

/// The first keystrokes are answered from the generation's cached most
/// frequent completions plus the overlay: still every term of the rows
/// with its exact documents, when a write adds a new word, and when it
/// lifts a rare word (outside what the cache keeps) into the first 20.
#[test]
fn short_prefixes_from_the_cache_equal_the_terms_of_the_rows_across_writes() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    let before = rows(&store);
    // A one-letter prefix with more terms than the cache keeps.
    let prefix = ["c", "s", "e", "p"]
        .into_iter()
        .find(|p| brute(&before, None, p, &[], usize::MAX).len() > rowsearch::indexer::CACHED_TERMS)
        .expect("a prefix with more terms than the cache keeps");
    let all = brute(&before, None, prefix, &[], usize::MAX);
    let rare = all.last().unwrap().0.clone();
    for round in 0..2 {
        // Twice: computed, then from the cache.
        assert_eq!(
            suggest(&searcher, prefix, None, None),
            brute(&before, None, prefix, &[], 20),
            "round {round}"
        );
    }
    // A prefix no term has yet: its cached completions are complete.
    let fresh = format!("{prefix}qq");
    assert!(suggest(&searcher, &fresh, None, None).is_empty());
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let put = |id: u64, subject: String| {
        let key = rk
            .encode_json(&serde_json::json!({"user": "zed", "date": 990_000_000_000u64, "id": id}))
            .unwrap();
        store.put("mail", &key, vec![PutCell::new("m", "subject", subject)]).unwrap();
    };
    // A new word, in more rows than the 20th completion has.
    let twentieth = brute(&before, None, prefix, &[], 20).last().unwrap().1;
    let new_word = format!("{prefix}qqxnewword");
    for id in 0..=twentieth {
        put(id, new_word.clone());
    }
    let rows_now = rows(&store);
    let want = brute(&rows_now, None, prefix, &[], 20);
    assert!(want.iter().any(|(t, _)| *t == new_word), "{want:?}");
    assert_eq!(suggest(&searcher, prefix, None, None), want);
    assert_eq!(suggest(&searcher, &fresh, None, None), [(new_word.clone(), twentieth + 1)]);
    // The rare word, lifted past the new one.
    for id in 1000..=1000 + twentieth + 2 {
        put(id, rare.clone());
    }
    let rows_now = rows(&store);
    let want = brute(&rows_now, None, prefix, &[], 20);
    assert!(want.iter().any(|(t, _)| *t == rare), "{rare} in {want:?}");
    assert_eq!(suggest(&searcher, prefix, None, None), want);
}
