//! Bare phrases over an `_all` that keeps no positions (matched field by
//! field, scored over `_all`) against an index whose `_all` keeps them (as
//! every index built before did): exact phrases and phrase prefixes find
//! the same documents with the same scores; a sloppy phrase finds the
//! documents one of whose fields holds it (a brute force over positions).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch_indexer::doc::{CellDoc, DocSchema, register_analyzer, register_cells};
use rowsearch_indexer::pairs::PairList;
use rowsearch_indexer::query::ParseOptions;
use rowsearch_indexer::store::{SearchField, SearchSchema};
use rowsearch_indexer::{PositionFiles, TextAnalyzer};
use tantivy::collector::TopDocs;
use tantivy::schema::Value;
use tantivy::{Index, IndexWriter, TantivyDocument};

/// Words sharing prefixes (`ga`), so phrase prefixes have several
/// completions, some in one field only.
const WORDS: [&str; 6] = ["gas", "gate", "game", "oil", "pipe", "gasket"];
/// Text fields, then a keyword field (whose values `_all` holds too).
const FIELDS: [&str; 4] = ["subject", "body", "to", "tag"];

/// Per document, per field, its words (positions 0, 1, ...).
type Docs = Vec<Vec<Vec<usize>>>;

fn search_schema() -> SearchSchema {
    SearchSchema {
        partition: None,
        fields: vec![
            SearchField::text("subject", "m:subject"),
            SearchField::text("body", "b:text"),
            SearchField::text("to", "m:to"),
            SearchField::keyword("tag", "m:tag"),
        ],
        date_column: None,
        display: None,
        shards: None,
    }
}

fn build(schema: &DocSchema, docs: &Docs) -> Index {
    build_paired(schema, docs, &PairList::default())
}

/// [`build`], each document with its word pairs of `pairs`.
fn build_paired(schema: &DocSchema, docs: &Docs, pairs: &PairList) -> Index {
    let index = Index::create_in_ram(schema.schema.clone());
    register_cells(&index);
    let mut writer: IndexWriter<CellDoc> = index.writer_with_num_threads(1, 15_000_000).unwrap();
    for (n, fields) in docs.iter().enumerate() {
        let mut doc = CellDoc::new(schema);
        doc.key = (n as u32).to_be_bytes().to_vec();
        let mut cells = Vec::new();
        for (f, words) in fields.iter().enumerate() {
            // A row's cells: each term once, with its positions.
            let mut terms: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
            for (position, &w) in words.iter().enumerate() {
                terms.entry(WORDS[w]).or_default().push(position as u32);
            }
            for (term, positions) in terms {
                doc.texts[f].push(term, positions.iter().copied());
                cells.push((f, term, positions));
            }
        }
        pairs.occurrences(cells.iter().map(|(f, t, p)| (*f, *t, p.as_slice())), &mut doc.pairs);
        writer.add_document(doc).unwrap();
        if n % 7 == 6 {
            writer.commit().unwrap();
        }
    }
    writer.commit().unwrap();
    register_analyzer(&index, Arc::new(TextAnalyzer));
    index
}

/// Each document `query` finds, by key, with its score (its phrases
/// reading the positions they open themselves).
fn found(index: &Index, schema: &DocSchema, query: &str) -> BTreeMap<u32, f32> {
    let parsed = rowsearch_indexer::query::parse(query, schema, &TextAnalyzer).unwrap();
    found_by(index, schema, parsed)
}

/// As [`found`], the segments' positions opened once beforehand (as a
/// generation opens them).
fn found_opened(index: &Index, schema: &DocSchema, query: &str) -> BTreeMap<u32, f32> {
    let positions = PositionFiles::open(&index.reader().unwrap().searcher()).unwrap();
    let options = ParseOptions::default();
    let parsed =
        rowsearch_indexer::query::parse_over(query, schema, &TextAnalyzer, &options, &positions).unwrap();
    found_by(index, schema, parsed)
}

fn found_by(index: &Index, schema: &DocSchema, parsed: Box<dyn tantivy::query::Query>) -> BTreeMap<u32, f32> {
    let searcher = index.reader().unwrap().searcher();
    let top = searcher.search(&parsed, &TopDocs::with_limit(1000).order_by_score()).unwrap();
    top.into_iter()
        .map(|(score, addr)| {
            let doc: TantivyDocument = searcher.doc(addr).unwrap();
            let key = doc.get_first(schema.key).and_then(|v| v.as_bytes()).unwrap();
            (u32::from_be_bytes(key.try_into().unwrap()), score)
        })
        .collect()
}

fn same(want: &BTreeMap<u32, f32>, got: &BTreeMap<u32, f32>) -> bool {
    want.len() == got.len()
        && want.iter().zip(got).all(|((a, x), (b, y))| a == b && (x - y).abs() <= 1e-5 * x.abs().max(1.0))
}

/// Whether `field` holds `phrase` within `slop` (Lucene's sloppy
/// distance): some choice of distinct positions, one per word of the
/// phrase, whose positions less the words' places lie within `slop`
/// (every choice tried).
fn window(field: &[usize], phrase: &[usize], slop: u32) -> bool {
    fn go(field: &[usize], phrase: &[usize], slop: u32, chosen: &mut Vec<usize>) -> bool {
        let place = chosen.len();
        if place == phrase.len() {
            let shifted: Vec<i64> = chosen.iter().enumerate().map(|(i, &p)| p as i64 - i as i64).collect();
            let (low, high) = (shifted.iter().min().unwrap(), shifted.iter().max().unwrap());
            return high - low <= i64::from(slop);
        }
        for (position, &word) in field.iter().enumerate() {
            if word == phrase[place] && !chosen.contains(&position) {
                chosen.push(position);
                if go(field, phrase, slop, chosen) {
                    return true;
                }
                chosen.pop();
            }
        }
        false
    }
    go(field, phrase, slop, &mut Vec::new())
}

fn docs() -> impl Strategy<Value = Docs> {
    let field = prop::collection::vec(0usize..WORDS.len(), 0..10);
    prop::collection::vec(prop::collection::vec(field, FIELDS.len()), 1..30)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn bare_phrases_answer_as_from_an_all_with_positions(
        docs in docs(),
        phrase in prop::collection::vec(0usize..WORDS.len(), 2..4),
        slop in 1u32..4,
        prefix_len in 2usize..4,
    ) {
        let search = search_schema();
        let now = DocSchema::for_search("t", &search).unwrap();
        let before = DocSchema::for_search_with_all_positions("t", &search).unwrap();
        prop_assert!(!now.all_positions && before.all_positions);
        let (now_index, before_index) = (build(&now, &docs), build(&before, &docs));
        let words: Vec<&str> = phrase.iter().map(|&w| WORDS[w]).collect();
        let last = words[words.len() - 1];
        let prefix = &last[..prefix_len.min(last.len())];
        let exact = format!("\"{}\"", words.join(" "));
        let prefixed = format!("\"{} {prefix}\"*", words[..words.len() - 1].join(" "));
        // Every pair of two different words kept (`pairs.rs`): a phrase of
        // two answers from its pair's postings. And an index from before
        // `_pairs` answers from positions.
        let every = (0..WORDS.len()).flat_map(|a| (0..WORDS.len()).map(move |b| (a, b)));
        let list = PairList::new(every.map(|(a, b)| rowsearch_indexer::pairs::text(WORDS[a], WORDS[b])));
        let paired_index = build_paired(&now, &docs, &list);
        let old = DocSchema::for_search_without_pairs("t", &search).unwrap();
        prop_assert!(now.pairs.is_some() && old.pairs.is_none());
        let old_index = build(&old, &docs);
        for query in [&exact, &prefixed] {
            let (want, got) = (found(&before_index, &before, query), found(&now_index, &now, query));
            prop_assert!(same(&want, &got), "{}: {:?} before, {:?} now", query, want, got);
            let opened = found_opened(&now_index, &now, query);
            prop_assert!(same(&want, &opened), "{}: {:?} before, {:?} positions opened", query, want, opened);
            let paired = found_opened(&paired_index, &now, query);
            prop_assert!(same(&want, &paired), "{}: {:?} before, {:?} from pairs", query, want, paired);
            let old_answer = found_opened(&old_index, &old, query);
            prop_assert!(same(&want, &old_answer), "{}: {:?} before, {:?} before pairs", query, want, old_answer);
        }
        // Sloppy: the documents some field holds the phrase in, each scored.
        let sloppy = format!("\"{}\"~{slop}", words.join(" "));
        let got = found(&now_index, &now, &sloppy);
        prop_assert_eq!(&found_opened(&now_index, &now, &sloppy), &got, "{}", sloppy);
        let want: Vec<u32> = (0..docs.len() as u32)
            .filter(|&n| docs[n as usize].iter().any(|field| window(field, &phrase, slop)))
            .collect();
        prop_assert_eq!(got.keys().copied().collect::<Vec<_>>(), want, "{}", sloppy);
        prop_assert!(got.values().all(|s| *s > 0.0));
    }
}
