//! Snapshot-consistent search against a brute-force model: random puts,
//! rewrites and deletes through a second store handle (as another process
//! would write), interleaved with random searches through the `Searcher`
//! on the first handle. Every search must equal a brute-force evaluation
//! over the rows as written so far: same keys, same order (date orders),
//! same total.
//!
//! Nothing refreshes the index here: after the first search builds it,
//! every later write reaches searches through the overlay (the changed
//! rows matched directly), and the test checks that the overlay answered
//! some of them. The same operations run a second time with the overlay
//! off (`overlay_max_rows` 0: the searcher brings the index current
//! first), and with `Consistency::Eventual` (the index as it stands) the
//! test fails at the first search after a write.
//!
//! Each search also counts the `user` and `folder` facets, which must
//! equal counts over the matching rows of the model.
//!
//! Queries covered: one or two bare words (ANDed, any field), `a OR b`,
//! `a -b`, `subject:a`, the phrase `subject:"a b"`, each optionally scoped
//! to a partition, newest, oldest and relevance (compared as sets), and
//! cursor walks in pages of 1 to 3 with a write between the first two
//! pages (the walk must equal the brute force at its start, no hit
//! skipped or repeated).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch::indexer::{SortBy, mail_schema, open_store};
use rowsearch::store::{Delete, PutCell, Store};
use rowsearch::{Consistency, DEFAULT_OVERLAY_MAX_ROWS, SearchRequest, Searcher};

const WORDS: [&str; 6] = ["gas", "power", "deal", "meeting", "quokka", "wombat"];
const USERS: [&str; 3] = ["ann", "bob", "cyd"];
/// A row's folder, by its id; counted in facets as the keyword lowercased.
const FOLDERS: [&str; 3] = ["Inbox", "Sent Items", "deals"];

#[derive(Debug, Clone)]
enum Op {
    Put {
        user: usize,
        id: u64,
        subject: Vec<usize>,
        body: Vec<usize>,
    },
    Delete {
        user: usize,
        id: u64,
    },
    Search {
        user: Option<usize>,
        query: Query,
        sort: u8,
    },
    /// A cursor walk in pages of `page`, with `write` (a put) done
    /// between its first and second page.
    Walk {
        user: Option<usize>,
        query: Query,
        sort: u8,
        page: usize,
        write: (usize, u64, Vec<usize>),
    },
}

/// The query forms, over word numbers.
#[derive(Debug, Clone)]
enum Query {
    /// Bare words, ANDed, any field.
    And(Vec<usize>),
    Or(usize, usize),
    /// `a -b`.
    Not(usize, usize),
    /// `subject:a`.
    Subject(usize),
    /// `subject:"a b"`.
    SubjectPhrase(usize, usize),
}

impl Query {
    fn text(&self) -> String {
        match self {
            Query::And(words) => text(words),
            Query::Or(a, b) => format!("{} OR {}", WORDS[*a], WORDS[*b]),
            Query::Not(a, b) => format!("{} -{}", WORDS[*a], WORDS[*b]),
            Query::Subject(a) => format!("subject:{}", WORDS[*a]),
            Query::SubjectPhrase(a, b) => format!("subject:\"{} {}\"", WORDS[*a], WORDS[*b]),
        }
    }

    /// Whether a row with these subject and body words matches.
    fn matches(&self, subject: &[usize], body: &[usize]) -> bool {
        let any = |w: &usize| subject.contains(w) || body.contains(w);
        match self {
            Query::And(words) => words.iter().all(any),
            Query::Or(a, b) => any(a) || any(b),
            Query::Not(a, b) => any(a) && !any(b),
            Query::Subject(a) => subject.contains(a),
            Query::SubjectPhrase(a, b) => subject.windows(2).any(|p| p[0] == *a && p[1] == *b),
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let words = |n| proptest::collection::vec(0..WORDS.len(), 0..n);
    prop_oneof![
        4 => (0..USERS.len(), 0..8u64, words(4), words(4))
            .prop_map(|(user, id, subject, body)| Op::Put { user, id, subject, body }),
        1 => (0..USERS.len(), 0..8u64).prop_map(|(user, id)| Op::Delete { user, id }),
        3 => (proptest::option::of(0..USERS.len()), query(), 0..3u8)
            .prop_map(|(user, query, sort)| Op::Search { user, query, sort }),
        1 => (proptest::option::of(0..USERS.len()), query(), 0..3u8, 1..4usize, (0..USERS.len(), 0..8u64, words(4)))
            .prop_map(|(user, query, sort, page, write)| Op::Walk { user, query, sort, page, write }),
    ]
}

fn query() -> impl Strategy<Value = Query> {
    let word = || 0..WORDS.len();
    prop_oneof![
        2 => proptest::collection::vec(word(), 1..3).prop_map(Query::And),
        1 => (word(), word()).prop_map(|(a, b)| Query::Or(a, b)),
        1 => (word(), word()).prop_filter("two words", |(a, b)| a != b).prop_map(|(a, b)| Query::Not(a, b)),
        1 => word().prop_map(Query::Subject),
        1 => (word(), word()).prop_map(|(a, b)| Query::SubjectPhrase(a, b)),
    ]
}

/// A row's unique date: no ties, so date orders are one order.
fn date_of(user: usize, id: u64) -> u64 {
    990_000_000_000 + id * 1000 + user as u64
}

fn key_of(store: &Store, user: usize, id: u64) -> Vec<u8> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    rk.encode_json(&serde_json::json!({"user": USERS[user], "date": date_of(user, id), "id": id})).unwrap()
}

fn text(words: &[usize]) -> String {
    words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ")
}

/// The rows as written: (user, id) -> the words of its subject and body.
type Model = BTreeMap<(usize, u64), (Vec<usize>, Vec<usize>)>;

fn put(writer: &Store, model: &mut Model, user: usize, id: u64, subject: &[usize], body: &[usize]) {
    let key = key_of(writer, user, id);
    writer
        .put(
            "mail",
            &key,
            vec![
                PutCell::new("m", "subject", text(subject)),
                PutCell::new("b", "text", text(body)),
                PutCell::new("m", "date", date_of(user, id).to_string()),
                PutCell::new("m", "folder", FOLDERS[id as usize % FOLDERS.len()]),
            ],
        )
        .unwrap();
    model.insert((user, id), (subject.to_vec(), body.to_vec()));
}

/// The keys a search must find, in its order (relevance: sorted by key).
fn brute_force(
    store: &Store,
    model: &Model,
    user: Option<usize>,
    query: &Query,
    sort: SortBy,
) -> Vec<Vec<u8>> {
    let mut want: Vec<(u64, Vec<u8>)> = model
        .iter()
        .filter(|((u, _), (subject, body))| {
            user.is_none_or(|want| want == *u) && query.matches(subject, body)
        })
        .map(|(&(u, id), _)| (date_of(u, id), key_of(store, u, id)))
        .collect();
    want.sort();
    if sort == SortBy::Newest {
        want.reverse();
    }
    let mut want: Vec<Vec<u8>> = want.into_iter().map(|(_, k)| k).collect();
    if sort == SortBy::Relevance {
        want.sort();
    }
    want
}

/// Runs `ops`; returns how many searches the overlay answered.
fn run(ops: &[Op], consistency: Consistency, overlay_max_rows: usize) -> Result<u64, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(dir.path()).unwrap());
    store.create_table("mail", &mail_schema()).unwrap();
    // The writer: another handle on the same directory.
    let writer = open_store(dir.path()).unwrap();
    let searcher = Searcher::new(Arc::clone(&store)).with_overlay_max_rows(overlay_max_rows);
    let mut model = Model::new();
    let mut overlaid = 0;
    for op in ops {
        match op {
            Op::Put { user, id, subject, body } => put(&writer, &mut model, *user, *id, subject, body),
            Op::Delete { user, id } => {
                writer.delete("mail", &key_of(&writer, *user, *id), Delete::Row { up_to: None }).unwrap();
                model.remove(&(*user, *id));
            }
            Op::Search { user, query, sort } => {
                let sort = [SortBy::Newest, SortBy::Oldest, SortBy::Relevance][*sort as usize];
                let request = SearchRequest {
                    query: query.text(),
                    partition: user.map(|u| USERS[u].as_bytes().to_vec()),
                    sort,
                    limit: Some(100),
                    consistency,
                    facets: vec!["user".into(), "folder".into()],
                    facet_limit: Some(10),
                    ..SearchRequest::default()
                };
                let got = match searcher.search("mail", &request) {
                    Ok(r) => r,
                    // Before any write there is nothing to index yet.
                    Err(_) if model.is_empty() => continue,
                    Err(e) => return Err(TestCaseError::fail(format!("{request:?}: {e}"))),
                };
                overlaid += u64::from(got.overlay_rows > 0);
                let want = brute_force(&store, &model, *user, query, sort);
                let mut keys: Vec<Vec<u8>> = got.hits.iter().map(|h| h.row.key.clone()).collect();
                if sort == SortBy::Relevance {
                    keys.sort();
                }
                prop_assert_eq!(got.total, want.len() as u64, "total of {:?}", request);
                prop_assert_eq!(keys, want, "hits of {:?}", request);
                prop_assert_eq!(got.dropped, 0);
                // Facets count every match, the overlay's included.
                let mut users = BTreeMap::<String, u64>::new();
                let mut folders = BTreeMap::<String, u64>::new();
                for ((u, id), (subject, body)) in &model {
                    if user.is_none_or(|want| want == *u) && query.matches(subject, body) {
                        *users.entry(USERS[*u].to_owned()).or_default() += 1;
                        let folder = FOLDERS[*id as usize % FOLDERS.len()].to_lowercase();
                        *folders.entry(folder).or_default() += 1;
                    }
                }
                let counted = |name: &str| -> BTreeMap<String, u64> {
                    got.facets
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| v.iter().cloned().collect())
                        .unwrap_or_default()
                };
                prop_assert_eq!(counted("user"), users, "user facet of {:?}", request);
                prop_assert_eq!(counted("folder"), folders, "folder facet of {:?}", request);
            }
            Op::Walk { user, query, sort, page, write } => {
                let sort = [SortBy::Newest, SortBy::Oldest, SortBy::Relevance][*sort as usize];
                let want = brute_force(&store, &model, *user, query, sort);
                let mut request = SearchRequest {
                    query: query.text(),
                    partition: user.map(|u| USERS[u].as_bytes().to_vec()),
                    sort,
                    limit: Some(*page),
                    consistency,
                    ..SearchRequest::default()
                };
                let mut keys: Vec<Vec<u8>> = Vec::new();
                let (mut written, mut answered) = (false, false);
                loop {
                    let got = match searcher.search("mail", &request) {
                        Ok(r) => r,
                        Err(_) if model.is_empty() => break,
                        Err(e) => return Err(TestCaseError::fail(format!("{request:?}: {e}"))),
                    };
                    answered = true;
                    overlaid += u64::from(got.overlay_rows > 0);
                    prop_assert_eq!(got.total, want.len() as u64, "total of {:?}", request);
                    keys.extend(got.hits.iter().map(|h| h.row.key.clone()));
                    if !written {
                        // A write between pages: the walk keeps its snapshot.
                        let (u, id, words) = write;
                        put(&writer, &mut model, *u, *id, words, words);
                        written = true;
                    }
                    match got.next_cursor {
                        Some(cursor) => request.cursor = Some(cursor),
                        None => break,
                    }
                    prop_assert!(keys.len() <= want.len(), "the walk of {:?} goes past its total", request);
                }
                if !written {
                    let (u, id, words) = write;
                    put(&writer, &mut model, *u, *id, words, words);
                }
                if answered {
                    if sort == SortBy::Relevance {
                        keys.sort();
                    }
                    prop_assert_eq!(keys, want, "the walk of {:?}", request);
                }
            }
        }
    }
    Ok(overlaid)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn snapshot_searches_equal_a_brute_force_over_the_rows_written(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let overlaid = run(&ops, Consistency::Snapshot, DEFAULT_OVERLAY_MAX_ROWS)?;
        run(&ops, Consistency::Snapshot, 0)?;
        // Whenever a search followed a write to an indexed table, the
        // overlay answered at least one.
        let write_then_search = ops.iter().skip_while(|o| !matches!(o, Op::Search { .. } | Op::Walk { .. }))
            .skip_while(|o| matches!(o, Op::Search { .. } | Op::Walk { .. }))
            .any(|o| matches!(o, Op::Search { .. } | Op::Walk { .. }));
        if write_then_search {
            prop_assert!(overlaid > 0, "no search was answered through the overlay");
        }
    }
}
