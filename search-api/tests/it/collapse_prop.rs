//! `collapse=thread` against grouping the plain hits of the same search:
//! random mail of random reply trees (parents missing or deleted, two
//! mailboxes, few words so scores tie often) put and deleted through a
//! second store handle between searches, so groups come from the index's
//! segments and the overlay's runs together; with the overlay off, every
//! search first brings the index current (new segments, deletes).
//!
//! For each search, sorted by relevance, newest or oldest, in pages of 1 to
//! 4 walked with cursors: the hits are the plain search's with each
//! thread's later hits left out (same scores or dates, in the same order;
//! threads whose best tie in thread-id order, API.md), each hit its
//! thread's first plain hit (of the thread's best hits, the one of
//! smallest row key, as plain hits order ties), with the number of its
//! thread's plain hits as `matched`; the total counts the threads.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch::indexer::{SortBy, mail_schema, open_store};
use rowsearch::store::{Delete, PutCell, Store};
use rowsearch::{DEFAULT_OVERLAY_MAX_ROWS, SearchRequest, Searcher};

const WORDS: [&str; 4] = ["gas", "power", "deal", "wombat"];
const USERS: [&str; 2] = ["ann", "bob"];

#[derive(Debug, Clone)]
enum Op {
    Put { user: usize, id: u64, parent: Option<u64>, words: Vec<usize> },
    Delete { user: usize, id: u64 },
    Search { user: Option<usize>, words: Vec<usize>, or: bool, sort: u8, page: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let words = |n| proptest::collection::vec(0..WORDS.len(), 1..n);
    prop_oneof![
        6 => (0..USERS.len(), 0..12u64, proptest::option::of(0..12u64), words(5))
            .prop_map(|(user, id, parent, words)| Op::Put { user, id, parent, words }),
        1 => (0..USERS.len(), 0..12u64).prop_map(|(user, id)| Op::Delete { user, id }),
        3 => (proptest::option::of(0..USERS.len()), words(3), any::<bool>(), 0..3u8, 1..5usize)
            .prop_map(|(user, words, or, sort, page)| Op::Search { user, words, or, sort, page }),
    ]
}

fn key_of(store: &Store, user: usize, id: u64) -> Vec<u8> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    rk.encode_json(&serde_json::json!({"user": USERS[user], "date": date_of(id), "id": id})).unwrap()
}

/// Dates repeat across mailboxes: newest and oldest tie too.
fn date_of(id: u64) -> u64 {
    990_000_000_000 + (id % 5) * 1000
}

fn put(writer: &Store, user: usize, id: u64, parent: Option<u64>, words: &[usize]) {
    let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
    let mut cells = vec![
        PutCell::new("m", "message_id", format!("<{user}.{id}@test>")),
        PutCell::new("m", "subject", format!("note {id}")),
        PutCell::new("m", "from", format!("{}@test", USERS[user])),
        PutCell::new("b", "text", text.join(" ")),
        PutCell::new("m", "date", date_of(id).to_string()),
    ];
    if let Some(parent) = parent.filter(|&p| p != id) {
        cells.push(PutCell::new("m", "in_reply_to", format!("<{user}.{parent}@test>")));
    }
    writer.put("mail", &key_of(writer, user, id), cells).unwrap();
}

/// One collapsed hit as the test compares it: thread, row key, value
/// (score or date), matched.
type Grouped = (String, Vec<u8>, f64, u64);

fn request(user: Option<usize>, words: &[usize], or: bool, sort: SortBy, limit: usize) -> SearchRequest {
    let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
    SearchRequest {
        query: text.join(if or { " OR " } else { " " }),
        partition: user.map(|u| USERS[u].as_bytes().to_vec()),
        sort,
        limit: Some(limit),
        ..SearchRequest::default()
    }
}

/// The plain hits with each thread's later hits left out (the first is
/// its best: of equal ones, the smallest key), threads whose best tie in
/// thread-id order: the collapsed search's hits, each with its thread's
/// matches.
fn grouped_plain(
    searcher: &Searcher,
    user: Option<usize>,
    words: &[usize],
    or: bool,
    sort: SortBy,
) -> Result<Vec<Grouped>, TestCaseError> {
    let plain = searcher
        .search("mail", &request(user, words, or, sort, 1000))
        .map_err(|e| TestCaseError::fail(format!("plain search: {e}")))?;
    prop_assert_eq!(plain.total as usize, plain.hits.len());
    let mut out: Vec<Grouped> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for hit in &plain.hits {
        let thread = String::from_utf8_lossy(hit.row.value("m", b"thread").unwrap_or_default()).into_owned();
        prop_assert!(!thread.is_empty(), "a row without a thread");
        let value = hit.score.unwrap_or_else(|| hit.date_ms.unwrap_or_default() as f64);
        match at.get(&thread) {
            Some(&i) => out[i].3 += 1,
            None => {
                at.insert(thread.clone(), out.len());
                out.push((thread, hit.row.key.clone(), value, 1));
            }
        }
    }
    let ahead = |a: f64, b: f64| if sort == SortBy::Oldest { a.total_cmp(&b) } else { b.total_cmp(&a) };
    out.sort_by(|a, b| ahead(a.2, b.2).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// A cursor walk of the collapsed search in pages of `page`.
fn walk(
    searcher: &Searcher,
    user: Option<usize>,
    words: &[usize],
    or: bool,
    sort: SortBy,
    page: usize,
) -> Result<(u64, Vec<Grouped>), TestCaseError> {
    let mut req = request(user, words, or, sort, page);
    req.collapse = Some("thread".into());
    let mut out = Vec::new();
    let mut total = None;
    loop {
        let got = searcher.search("mail", &req).map_err(|e| TestCaseError::fail(format!("{req:?}: {e}")))?;
        prop_assert!(total.is_none_or(|t| t == got.total), "the total changed within a walk");
        total = Some(got.total);
        for hit in &got.hits {
            let thread =
                hit.thread.as_ref().ok_or_else(|| TestCaseError::fail("a collapsed hit without a thread"))?;
            let value = hit.score.unwrap_or_else(|| hit.date_ms.unwrap_or_default() as f64);
            out.push((thread.id.clone(), hit.row.key.clone(), value, thread.matched));
        }
        match got.next_cursor {
            Some(cursor) => req.cursor = Some(cursor),
            None => break,
        }
        prop_assert!(out.len() <= got.total as usize, "the walk goes past its total");
    }
    Ok((total.unwrap_or_default(), out))
}

fn run(ops: &[Op], overlay_max_rows: usize) -> Result<usize, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(dir.path()).unwrap());
    store.create_table("mail", &mail_schema()).unwrap();
    let writer = open_store(dir.path()).unwrap();
    let searcher = Searcher::new(Arc::clone(&store)).with_overlay_max_rows(overlay_max_rows);
    let mut rows = 0usize;
    let mut compared = 0;
    for op in ops {
        match op {
            Op::Put { user, id, parent, words } => {
                put(&writer, *user, *id, *parent, words);
                rows += 1;
            }
            Op::Delete { user, id } => {
                writer.delete("mail", &key_of(&writer, *user, *id), Delete::Row { up_to: None }).unwrap();
            }
            Op::Search { user, words, or, sort, page } => {
                if rows == 0 {
                    continue;
                }
                let sort = [SortBy::Newest, SortBy::Oldest, SortBy::Relevance][*sort as usize];
                let want = grouped_plain(&searcher, *user, words, *or, sort)?;
                let (total, got) = walk(&searcher, *user, words, *or, sort, *page)?;
                let what = format!("{:?} {words:?} or={or} {sort:?} pages of {page}", user);
                prop_assert_eq!(total, want.len() as u64, "total of {}", what);
                prop_assert_eq!(got, want, "hits of {}", what);
                compared += 1;
            }
        }
    }
    Ok(compared)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn collapsed_searches_equal_grouping_the_plain_hits(ops in proptest::collection::vec(op(), 1..40)) {
        run(&ops, DEFAULT_OVERLAY_MAX_ROWS)?;
        run(&ops, 0)?;
    }
}
