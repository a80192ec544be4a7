//! Keyword blocks split and merge against a model: columns of hundreds of
//! versions (a few words over many rows of two partitions), grown and
//! shrunk by random batches of puts, rewrites and deletes, read back cell
//! by cell, by lookups page by page, and counted, after every batch.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch_store::{
    Analyzer, Batch, Delete, FamilySchema, KeyField, KeyOrder, KeyType, KeyValue, KeywordQuery, PutCell,
    RowKeySchema, SearchField, SearchSchema, Store, TableSchema,
};

/// Splits on spaces; dates are decimal milliseconds.
#[derive(Debug)]
struct Words;

impl Analyzer for Words {
    fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
        for (i, w) in text.split(' ').filter(|w| !w.is_empty()).enumerate() {
            sink(w, i as u32);
        }
    }

    fn date_ms(&self, value: &[u8]) -> Option<u64> {
        std::str::from_utf8(value).ok()?.parse().ok()
    }
}

const WORDS: [&str; 3] = ["gas", "deal", "power"];
const USERS: [&str; 2] = ["ann", "bob"];
const ROWS: u16 = 700;

fn schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("m")])
        .row_key(RowKeySchema::new([
            KeyField::new("user", KeyType::String, KeyOrder::Asc),
            KeyField::new("id", KeyType::U16, KeyOrder::Asc),
        ]))
        .search(
            SearchSchema::new([SearchField::text("body", "m:text")]).partition("user").date_column("m:date"),
        )
}

fn key(user: usize, id: u16) -> Vec<u8> {
    schema().row_key.unwrap().encode(&[KeyValue::String(USERS[user].into()), KeyValue::U16(id)]).unwrap()
}

/// One batch: rows `first..first + count` of a user put with words and a
/// date, or deleted.
#[derive(Debug, Clone)]
enum Step {
    Put { user: usize, first: u16, count: u16, words: Vec<usize>, date: u64, stride: u16 },
    Delete { user: usize, first: u16, count: u16 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..2usize, 0..ROWS, 1..400u16, prop::collection::vec(0..3usize, 1..4), 0..5_000u64, 1..4u16)
            .prop_map(|(user, first, count, words, date, stride)| Step::Put { user, first, count, words, date, stride }),
        1 => (0..2usize, 0..ROWS, 1..500u16).prop_map(|(user, first, count)| Step::Delete { user, first, count }),
    ]
}

/// (user, id) -> (date, words).
type Rows = BTreeMap<(usize, u16), (u64, Vec<usize>)>;

/// A keyword cell: (partition, term, date, key, positions).
type Cell = (Vec<u8>, String, u64, Vec<u8>, Vec<u32>);

/// Every keyword cell the rows should have: (partition, term, date, key,
/// positions), in the store's order (partition, term, newest first, key).
fn expected(rows: &Rows) -> Vec<Cell> {
    let mut out = Vec::new();
    for (&(user, id), (date, words)) in rows {
        let mut by_term: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (i, &w) in words.iter().enumerate() {
            by_term.entry(WORDS[w]).or_default().push(i as u32);
        }
        for (term, positions) in by_term {
            out.push((USERS[user].as_bytes().to_vec(), term.to_owned(), *date, key(user, id), positions));
        }
    }
    out.sort_by(|a, b| {
        (&a.0, &a.1, std::cmp::Reverse(a.2), &a.3).cmp(&(&b.0, &b.1, std::cmp::Reverse(b.2), &b.3))
    });
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn blocks_split_and_merge_and_read_back_like_the_model(
        steps in prop::collection::vec(step(), 1..8),
        page in 1usize..200,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::builder().analyzer(Arc::new(Words)).open(dir.path()).unwrap();
        store.create_table("t", &schema()).unwrap();
        let mut rows = Rows::new();
        for step in &steps {
            let mut batch = Batch::new();
            match step {
                Step::Put { user, first, count, words, date, stride } => {
                    for id in (*first..first.saturating_add(*count).min(ROWS)).step_by(usize::from(*stride)) {
                        // Dates repeat and go both ways, so versions tie on
                        // the date and land between existing ones.
                        let date = date + u64::from(id % 97) * 13;
                        let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                        batch.put("t", key(*user, id), vec![
                            PutCell::new("m", "text", text.join(" ")),
                            PutCell::new("m", "date", date.to_string()),
                        ]);
                        rows.insert((*user, id), (date, words.clone()));
                    }
                }
                Step::Delete { user, first, count } => {
                    for id in *first..first.saturating_add(*count).min(ROWS) {
                        batch.delete("t", key(*user, id), Delete::Row { up_to: None });
                        rows.remove(&(*user, id));
                    }
                }
            }
            store.apply(&batch).unwrap();

            let want = expected(&rows);
            let rtxn = store.begin_read().unwrap();
            let mut got = Vec::new();
            rtxn.for_each_keyword_cell("t", None, &mut |c| {
                got.push((c.partition.to_vec(), c.term.to_owned(), c.date_ms, c.key.to_vec(), c.positions().collect()));
                Ok(())
            }).unwrap();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(rtxn.keyword_cell_count("t").unwrap(), want.len() as u64);
            // A row has a number exactly while it has cells.
            let with_cells: std::collections::BTreeSet<&Vec<u8>> = want.iter().map(|c| &c.3).collect();
            prop_assert_eq!(rtxn.keyword_numbered_rows("t").unwrap(), with_cells.len() as u64);
            // Blocks hold many versions each, and no column of more than one
            // block has a block under the merge threshold but its last: the
            // store holds far fewer entries than cells once columns are long.
            let blocks = rtxn.keyword_block_count("t").unwrap();
            prop_assert!(blocks <= want.len() as u64, "{} blocks, {} cells, count {}", blocks, want.len(), rtxn.keyword_cell_count("t").unwrap());
            if want.len() > 600 {
                prop_assert!(blocks * 20 < want.len() as u64, "{} blocks for {} cells", blocks, want.len());
            }
            drop(rtxn);
            // Lookups, page by page, against the model.
            for (user, name) in USERS.iter().enumerate() {
                for terms in [vec!["gas"], vec!["deal", "power"], vec!["power", "gas", "deal"]] {
                    let mut hits = Vec::new();
                    let mut cursor = None;
                    loop {
                        let query = KeywordQuery {
                            partition: name.as_bytes().to_vec(),
                            terms: terms.iter().map(|t| (*t).to_owned()).collect(),
                            limit: Some(page),
                            cursor,
                        };
                        let result = store.keyword_lookup("t", &query).unwrap();
                        hits.extend(result.hits.into_iter().map(|h| (h.date_ms, h.key)));
                        match result.next_cursor {
                            Some(c) => cursor = Some(c),
                            None => break,
                        }
                    }
                    let mut brute: Vec<(u64, Vec<u8>)> = rows
                        .iter()
                        .filter(|((u, _), (_, w))| *u == user && terms.iter().all(|t| w.iter().any(|&i| WORDS[i] == *t)))
                        .map(|(&(u, id), (date, _))| (*date, key(u, id)))
                        .collect();
                    brute.sort_by(|a, b| (std::cmp::Reverse(a.0), &a.1).cmp(&(std::cmp::Reverse(b.0), &b.1)));
                    prop_assert_eq!(&hits, &brute, "user {} terms {:?}", user, terms);
                }
            }
        }
    }
}
