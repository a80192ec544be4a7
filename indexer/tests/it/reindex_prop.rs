//! Incremental reindexing against a full one: after random puts,
//! overwrites and deletes with incremental reindexes in between, every
//! search gives the same keys as a full reindex of the same data, and as
//! the keyword rows.

use std::collections::BTreeSet;

use proptest::prelude::*;
use rowsearch_indexer::store::{
    Delete, FamilySchema, KeywordQuery, PutCell, SearchField, SearchSchema, Store, TableSchema,
};
use rowsearch_indexer::{ReindexMode, ReindexOptions, SortBy, TableIndex, open_store, reindex};

const WORDS: [&str; 6] = ["gas", "Gas", "deal", "power", "enron", "x\u{e9}"];
const USERS: [&str; 3] = ["ann", "bob", "cy"];

fn schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("m").max_versions(2), FamilySchema::new("b")]).search(
        SearchSchema::new([SearchField::text("subject", "m:subject"), SearchField::text("body", "b:text")])
            .partition("m:user")
            .date_column("m:date"),
    )
}

#[derive(Debug, Clone)]
enum Op {
    Put { id: u8, user: usize, subject: String, body: Option<String>, date: u64 },
    DeleteRow { id: u8 },
    DeleteBody { id: u8 },
    Incremental,
}

/// Row `id`'s key: half of them longer than the indexer keeps inline while
/// grouping, and alike in their first 40 bytes.
fn key(id: u8) -> Vec<u8> {
    if id < 6 {
        vec![b'r', id]
    } else {
        let mut key = vec![b'r'; 40];
        key.push(id);
        key
    }
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..4).prop_map(|w| w.join(" "))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..12, 0usize..3, text(), prop::option::of(text()), 1u64..50).prop_map(
            |(id, user, subject, body, date)| Op::Put { id, user, subject, body, date: date * 1000 }
        ),
        1 => (0u8..12).prop_map(|id| Op::DeleteRow { id }),
        1 => (0u8..12).prop_map(|id| Op::DeleteBody { id }),
        1 => Just(Op::Incremental),
    ]
}

fn apply(store: &Store, op: &Op) {
    let options = ReindexOptions { threads: 1, memory_budget_bytes: 16 << 20, ..ReindexOptions::default() };
    match op {
        Op::Put { id, user, subject, body, date } => {
            let mut cells = vec![
                PutCell::new("m", "user", USERS[*user]),
                PutCell::new("m", "subject", subject.as_str()),
                PutCell::new("m", "date", date.to_string()),
            ];
            if let Some(body) = body {
                cells.push(PutCell::new("b", "text", body.as_str()));
            }
            store.put("t", &key(*id), cells).unwrap();
        }
        Op::DeleteRow { id } => {
            store.delete("t", &key(*id), Delete::Row { up_to: None }).unwrap();
        }
        Op::DeleteBody { id } => {
            store.delete("t", &key(*id), Delete::Family { family: "b".into(), up_to: None }).unwrap();
        }
        Op::Incremental => {
            let report = reindex(
                store,
                "t",
                &ReindexOptions { mode: ReindexMode::Incremental, ..options },
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(report.mode, ReindexMode::Incremental);
        }
    }
}

fn queries() -> Vec<String> {
    let mut out: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    for a in ["gas", "deal", "power"] {
        for b in ["deal", "enron", "x\u{e9}"] {
            out.push(format!("{a} {b}"));
        }
    }
    out.extend(["\"gas deal\"".into(), "subject:gas".into(), "body:power".into(), "gas OR power".into()]);
    out.push("date:[1970-01-01T00:00:10Z TO 1970-01-01T00:00:30Z]".into());
    out
}

/// (query, user, total, keys).
type Answer = (String, Option<usize>, u64, BTreeSet<Vec<u8>>);

/// Every query, unscoped and per user: total and the set of keys.
fn results(store: &Store) -> Vec<Answer> {
    let index = TableIndex::open(store, "t").unwrap();
    let generation = index.generation().unwrap();
    let mut out = Vec::new();
    for q in queries() {
        for user in [None, Some(0), Some(1), Some(2)] {
            let hits = generation
                .search_keys(&q, user.map(|u| USERS[u].as_bytes()), SortBy::Newest, 0, 1000)
                .unwrap();
            out.push((q.clone(), user, hits.total, hits.keys.into_iter().map(|(k, _)| k).collect()));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn incremental_reindex_equals_a_full_one(initial in prop::collection::vec(op(), 0..12),
                                             changes in prop::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path()).unwrap();
        store.create_table("t", &schema()).unwrap();
        for op in &initial {
            if !matches!(op, Op::Incremental) {
                apply(&store, op);
            }
        }
        let full = ReindexOptions { mode: ReindexMode::Full, threads: 1, memory_budget_bytes: 16 << 20, ..ReindexOptions::default() };
        reindex(&store, "t", &full, &mut |_| {}).unwrap();
        for op in &changes {
            apply(&store, op);
        }
        apply(&store, &Op::Incremental);
        let incremental = results(&store);

        // Ground truth for single terms and pairs: the keyword rows.
        for (q, user, total, keys) in &incremental {
            if let Some(u) = user && !q.contains([':', '"', '[']) && !q.contains(" OR ") {
                let query = KeywordQuery {
                    partition: USERS[*u].as_bytes().to_vec(),
                    terms: q.split(' ').map(str::to_owned).collect(),
                    limit: Some(1000),
                    cursor: None,
                };
                let want: BTreeSet<Vec<u8>> =
                    store.keyword_lookup("t", &query).unwrap().hits.into_iter().map(|h| h.key).collect();
                prop_assert_eq!(keys, &want, "{} in {}", q, USERS[*u]);
                prop_assert_eq!(*total, want.len() as u64);
            }
        }

        let report = reindex(&store, "t", &full, &mut |_| {}).unwrap();
        prop_assert_eq!(report.generation, 2);
        let rebuilt = results(&store);
        prop_assert_eq!(incremental, rebuilt);
    }
}
