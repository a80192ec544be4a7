//! What a key confined to one mailbox receives is computed inside it: two
//! stores hold the same mailbox `ann` and different contents in mailbox
//! `bob` (random words from one small vocabulary of near neighbours, so
//! corrections and completions have candidates in both), and every answer
//! to a search confined to `ann` (words, OR, prefixes, fuzzy words,
//! `typos=auto`, phrases, facets, `did_you_mean`, suggestions; totals,
//! keys, scores) must be the same in both. A third store has `bob`'s
//! second contents written after the index was built, so they reach
//! searches through the overlay: the same again.

use std::sync::Arc;

use proptest::prelude::*;
use rowsearch::indexer::{ReindexOptions, SortBy, mail_schema, open_store, reindex};
use rowsearch::store::{Delete, PutCell, Store};
use rowsearch::{SearchRequest, Searcher, SuggestRequest};

const WORDS: [&str; 10] =
    ["gas", "gallon", "power", "powder", "tower", "deal", "dealer", "meeting", "meting", "quokka"];
const FOLDERS: [&str; 2] = ["Inbox", "deals"];

/// A mailbox: rows of (subject words, body words).
type Mailbox = Vec<(Vec<usize>, Vec<usize>)>;

fn mailbox(max: usize) -> impl Strategy<Value = Mailbox> {
    let words = || proptest::collection::vec(0..WORDS.len(), 0..4);
    proptest::collection::vec((words(), words()), 0..max)
}

fn key_of(store: &Store, user: &str, id: usize) -> Vec<u8> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    rk.encode_json(&serde_json::json!({"user": user, "date": date_of(user, id), "id": id})).unwrap()
}

fn date_of(user: &str, id: usize) -> u64 {
    990_000_000_000 + id as u64 * 86_400_000 * 7 + u64::from(user == "bob")
}

fn text(words: &[usize]) -> String {
    words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ")
}

fn write(store: &Store, user: &str, rows: &Mailbox) {
    for (id, (subject, body)) in rows.iter().enumerate() {
        let cells = vec![
            PutCell::new("m", "subject", text(subject)),
            PutCell::new("b", "text", text(body)),
            PutCell::new("m", "date", date_of(user, id).to_string()),
            PutCell::new("m", "folder", FOLDERS[id % FOLDERS.len()]),
        ];
        store.put("mail", &key_of(store, user, id), cells).unwrap();
    }
}

/// A store with `ann` and `bob`'s mail; `later` is written over `bob`'s
/// (its rows replaced) after the index is built.
fn store(ann: &Mailbox, bob: &Mailbox, later: Option<&Mailbox>) -> (tempfile::TempDir, Searcher) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    store.create_table("mail", &mail_schema()).unwrap();
    write(&store, "ann", ann);
    write(&store, "bob", bob);
    reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {}).unwrap();
    if let Some(later) = later {
        for id in 0..bob.len() {
            store.delete("mail", &key_of(&store, "bob", id), Delete::Row { up_to: None }).unwrap();
        }
        write(&store, "bob", later);
    }
    (dir, Searcher::new(Arc::new(store)))
}

/// What a confined key receives, made comparable: hits as (score, key)
/// sorted (ties in score may come in either order), the rest as is.
fn answer(searcher: &Searcher, query: &str, typos: bool, sort: SortBy) -> String {
    let request = SearchRequest {
        query: query.to_owned(),
        scope: Some(vec![b"ann".to_vec()]),
        sort,
        limit: Some(1000),
        typos,
        facets: vec!["folder".into(), "month".into(), "user".into()],
        ..SearchRequest::default()
    };
    match searcher.search("mail", &request) {
        Ok(r) => {
            let mut hits: Vec<(String, Vec<u8>)> =
                r.hits.iter().map(|h| (format!("{:?}", h.score), h.row.key.clone())).collect();
            hits.sort();
            format!("total {} hits {hits:?} facets {:?} did_you_mean {:?}", r.total, r.facets, r.did_you_mean)
        }
        Err(e) => format!("error {e}"),
    }
}

fn suggestions(searcher: &Searcher, prefix: &str) -> String {
    let request = SuggestRequest {
        query: prefix.to_owned(),
        scope: Some(vec![b"ann".to_vec()]),
        ..SuggestRequest::default()
    };
    format!("{:?}", searcher.suggest("mail", &request).map(|s| s.suggestions))
}

/// The confined queries asked of every store.
fn queries() -> Vec<(String, bool, SortBy)> {
    let mut out = Vec::new();
    for w in WORDS {
        out.push((w.to_owned(), false, SortBy::Relevance));
    }
    for q in [
        "gas OR power",
        "gas deal",
        "pow*",
        "dea*",
        "powr~1",
        "galon~1",
        "subject:\"power deal\"",
        "\"gas po\"*",
        "gallox OR enrn",
        "gallox",
        "powdr",
        "meetign",
        "dealr tower",
    ] {
        out.push((q.to_owned(), false, SortBy::Relevance));
    }
    out.push(("powdr".into(), true, SortBy::Relevance));
    out.push(("dealr".into(), true, SortBy::Relevance));
    out.push(("gas".into(), false, SortBy::Newest));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn a_confined_keys_answers_do_not_depend_on_other_mailboxes(
        ann in mailbox(12),
        bob in mailbox(12),
        other in mailbox(12),
    ) {
        // `ann` holds something, so a search has an index to answer from.
        let mut ann = ann;
        ann.push((vec![0], vec![2]));
        let (_a, first) = store(&ann, &bob, None);
        let (_b, second) = store(&ann, &other, None);
        let (_c, overlaid) = store(&ann, &bob, Some(&other));
        for (query, typos, sort) in queries() {
            let want = answer(&first, &query, typos, sort);
            prop_assert_eq!(&answer(&second, &query, typos, sort), &want, "{} (bob's mail differs)", query);
            prop_assert_eq!(&answer(&overlaid, &query, typos, sort), &want, "{} (bob's rewritten)", query);
        }
        for prefix in ["g", "ga", "po", "de", "me", "q"] {
            let want = suggestions(&first, prefix);
            prop_assert_eq!(&suggestions(&second, prefix), &want, "suggest {}", prefix);
            prop_assert_eq!(&suggestions(&overlaid, prefix), &want, "suggest {} (overlay)", prefix);
        }
    }
}
