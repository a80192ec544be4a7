//! A segment written straight from keyword cells (gathered in one to three
//! parts, as readers gather them) against the one tantivy's index writer
//! makes of the same rows, handed over in the same order as documents (as
//! the full build did before): every file byte for byte.

use proptest::prelude::*;
use rowsearch_store::KeywordCellRef;
use tantivy::index::SegmentComponent;
use tantivy::{Index, IndexWriter};

use super::Part;
use crate::doc::{CellDoc, DocSchema, register_cells};
use crate::pairs::PairList;

/// A row: partition, date, per search field its terms with positions.
#[derive(Debug, Clone)]
struct Row {
    partition: u8,
    date_ms: u64,
    fields: Vec<Vec<(String, Vec<u32>)>>,
}

const WORDS: &[&str] = &["gas", "price", "a@b.com", "enron", "x", "zeta", "ürün", "risk", "c@d.org", "1999"];

fn term() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => proptest::sample::select(WORDS).prop_map(str::to_owned),
        // tantivy leaves out tokens past its limit (and does not count them).
        1 => Just("l".repeat(tantivy::tokenizer::MAX_TOKEN_LEN + 1)),
    ]
}

fn field(keyword: bool) -> impl Strategy<Value = Vec<(String, Vec<u32>)>> {
    let positions = if keyword {
        Just(vec![0u32]).boxed()
    } else {
        proptest::collection::btree_set(0u32..40, 1..4).prop_map(|s| s.into_iter().collect()).boxed()
    };
    proptest::collection::btree_map(term(), positions, 0..4).prop_map(|m| m.into_iter().collect())
}

fn rows(schema: &DocSchema) -> impl Strategy<Value = Vec<Row>> {
    let kinds: Vec<bool> = schema.kinds.iter().map(|k| *k == rowsearch_store::FieldKind::Keyword).collect();
    let row = (0u8..3, 0u64..4, kinds.into_iter().map(field).collect::<Vec<_>>())
        .prop_map(|(partition, date_ms, fields)| Row { partition, date_ms, fields })
        .prop_filter("a row has cells", |r| r.fields.iter().any(|f| !f.is_empty()));
    proptest::collection::vec(row, 1..40)
}

fn key(i: usize) -> Vec<u8> {
    // Not in number order, so key order is not add order.
    format!("k{:03}", (i * 37) % 1000).into_bytes()
}

fn leb128(positions: &[u32]) -> Vec<u8> {
    let (mut out, mut last) = (Vec::new(), 0u32);
    for &p in positions {
        let mut n = p - last;
        last = p;
        loop {
            let b = (n & 0x7F) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }
    out
}

/// A keyword cell: partition, field index, term, date, key, positions.
type Cell = (Vec<u8>, usize, String, u64, Vec<u8>, Vec<u8>);

/// The rows' keyword cells in the order the store lends them: by
/// partition, field, term, then newest first and by key.
fn cells(rows: &[Row]) -> Vec<Cell> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for (f, terms) in row.fields.iter().enumerate() {
            for (term, positions) in terms {
                out.push((
                    vec![b'p', row.partition],
                    f,
                    term.clone(),
                    row.date_ms,
                    key(i),
                    leb128(positions),
                ));
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.0, a.1, &a.2, std::cmp::Reverse(a.3), &a.4).cmp(&(&b.0, b.1, &b.2, std::cmp::Reverse(b.3), &b.4))
    });
    out
}

fn files(index: &Index, meta: tantivy::SegmentMeta) -> Vec<(String, Vec<u8>)> {
    let segment = index.segment(meta);
    use SegmentComponent::*;
    [Postings, Positions, FastFields, FieldNorms, Terms, Store]
        .into_iter()
        .map(|c| {
            let name = format!("{c:?}");
            let bytes = segment.open_read(c).map(|f| f.read_bytes().unwrap().as_slice().to_vec());
            (name, bytes.unwrap_or_default())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn direct_segment_equals_the_index_writers(
        rows in rows(&schema()),
        parts in 1usize..4,
        threads in 1usize..3,
        pairs in proptest::sample::subsequence(every_pair(), 0..=16),
    ) {
        let schema = schema();
        let cells = cells(&rows);
        let pairs = PairList::new(pairs);

        // Directly.
        let dir = tempfile::tempdir().unwrap();
        let direct = Index::create_in_dir(dir.path(), schema.schema.clone()).unwrap();
        register_cells(&direct);
        // Partition `p` in part `p % parts` (as readers take ranges).
        let part_of = |partition: &[u8]| usize::from(partition[1]) % parts;
        let mut gathered: Vec<Part> = (0..parts).map(|_| Part::new(&schema)).collect();
        for (partition, f, term, date, key, positions) in &cells {
            let cell = KeywordCellRef::from_parts(partition, *f, &schema.names[*f], term, *date, key, positions).unwrap();
            gathered[part_of(partition)].add(&cell);
        }
        // (One thread: each field's postings straight into the files.)
        let meta = super::write(&direct, gathered, threads, &pairs).unwrap().unwrap();

        // Through tantivy's index writer: the documents in doc id order
        // (partition, newest first, key), each built from its cells.
        let dir2 = tempfile::tempdir().unwrap();
        let written = Index::create_in_dir(dir2.path(), schema.schema.clone()).unwrap();
        register_cells(&written);
        let mut docs: Vec<CellDoc> = Vec::new();
        let mut cells_of: Vec<Vec<(usize, String, Vec<u32>)>> = Vec::new();
        for (partition, f, term, date, key, positions) in &cells {
            let cell = KeywordCellRef::from_parts(partition, *f, &schema.names[*f], term, *date, key, positions).unwrap();
            let at = match docs.iter().position(|d| d.key == *key) {
                Some(at) => at,
                None => {
                    let mut doc = CellDoc::new(&schema);
                    doc.key.clone_from(key);
                    doc.partition.clone_from(partition);
                    doc.date_ms = *date;
                    docs.push(doc);
                    cells_of.push(Vec::new());
                    docs.len() - 1
                }
            };
            docs[at].texts[*f].push(term, cell.positions());
            docs[at].add_facet_term(*f, term);
            cells_of[at].push((*f, term.clone(), cell.positions().collect()));
        }
        for (doc, cells) in docs.iter_mut().zip(&cells_of) {
            pairs.occurrences(cells.iter().map(|(f, t, p)| (*f, t.as_str(), p.as_slice())), &mut doc.pairs);
        }
        let order = |d: &CellDoc| (part_of(&d.partition), d.partition.clone(), std::cmp::Reverse(d.date_ms), d.key.clone());
        docs.sort_by_key(order);
        let mut writer: IndexWriter<CellDoc> = written.writer_with_num_threads(1, 50_000_000).unwrap();
        for doc in docs {
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        let metas = written.searchable_segment_metas().unwrap();
        prop_assert_eq!(metas.len(), 1);
        prop_assert_eq!(meta.max_doc(), metas[0].max_doc());
        let (ours, theirs) = (files(&direct, meta), files(&written, metas[0].clone()));
        for ((name, a), (_, b)) in ours.iter().zip(&theirs) {
            prop_assert!(a == b, "{} differs: {} bytes against {}", name, a.len(), b.len());
        }
    }
}

/// Every pair of two different words of [`WORDS`].
fn every_pair() -> Vec<String> {
    let mut out = Vec::new();
    for a in WORDS {
        for b in WORDS.iter().filter(|b| *b != a) {
            out.push(crate::pairs::text(a, b));
        }
    }
    out
}

fn schema() -> DocSchema {
    let search = crate::mail::mail_schema().search.unwrap();
    DocSchema::for_search("mail", &search).unwrap()
}

/// Rows of the mail schema's first text field only, over four words at
/// close positions, so two words often stand side by side.
fn dense_rows() -> impl Strategy<Value = Vec<Vec<(String, Vec<u32>)>>> {
    let words = proptest::sample::select(&WORDS[..4]).prop_map(str::to_owned);
    let positions = proptest::collection::btree_set(0u32..8, 1..4).prop_map(|s| s.into_iter().collect());
    let row = proptest::collection::btree_map(words, positions, 1..4).prop_map(|m| m.into_iter().collect());
    proptest::collection::vec(row, 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A generation's phrases of two words answer from the pair field as
    /// from positions (the same documents, the same scores), when the full
    /// build wrote the pairs and a later writer (an incremental reindex)
    /// added rows with the pairs it read back and deleted some.
    #[test]
    fn phrases_from_pairs_answer_as_from_positions(
        first in dense_rows(),
        later in dense_rows(),
        deleted in proptest::collection::vec(any::<bool>(), 24),
        pairs in proptest::sample::subsequence(every_pair()[..12].to_vec(), 0..=12),
    ) {
        use rowsearch_store::KeywordCell;
        use tantivy::collector::{Count, TopDocs};
        use tantivy::Term;
        use crate::sloppy_phrase::SloppyPhrase;

        let schema = schema();
        let field = schema.fields.iter().position(|_| true).unwrap();
        let name = schema.names[field].clone();
        let keyword_cells = |i: usize, row: &[(String, Vec<u32>)]| -> Vec<KeywordCell> {
            row.iter()
                .map(|(term, positions)| KeywordCell {
                    partition: b"p0".to_vec(),
                    field: name.clone(),
                    term: term.clone(),
                    date_ms: 0,
                    key: key(i),
                    positions: positions.clone(),
                })
                .collect()
        };
        let list = PairList::new(pairs);
        let dir = tempfile::tempdir().unwrap();
        let index = Index::create_in_dir(dir.path(), schema.schema.clone()).unwrap();
        register_cells(&index);
        // The full build: its rows' cells in the store's order.
        let mut part = Part::new(&schema);
        let mut cells: Vec<KeywordCell> = first.iter().enumerate().flat_map(|(i, r)| keyword_cells(i, r)).collect();
        cells.sort_by(|a, b| (&a.term, &a.key).cmp(&(&b.term, &b.key)));
        for c in &cells {
            let encoded = leb128(&c.positions);
            part.add(&KeywordCellRef::from_parts(&c.partition, field, &name, &c.term, 0, &c.key, &encoded).unwrap());
        }
        let meta = super::write(&index, vec![part], 1, &list).unwrap().unwrap();
        super::commit(&index, vec![meta], "").unwrap();
        // A later writer: some rows deleted, others added with the pairs
        // the generation holds.
        let held = PairList::of_index(&index).unwrap();
        let mut writer: IndexWriter<CellDoc> = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (i, gone) in deleted.iter().enumerate().take(first.len()) {
            if *gone {
                writer.delete_term(Term::from_field_bytes(schema.key, &key(i)));
            }
        }
        for (i, row) in later.iter().enumerate() {
            let doc = CellDoc::from_cells_paired(&schema, &keyword_cells(100 + i, row), &held).unwrap();
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();

        let searcher = index.reader().unwrap().searcher();
        let files = crate::word_cursor::PositionFiles::open(&searcher).unwrap();
        let cancel = rowsearch_store::Cancel::default();
        for text in every_pair().iter().take(12) {
            let (a, b) = crate::pairs::split(text).unwrap();
            let words = vec![(0, Term::from_field_text(schema.all, a)), (1, Term::from_field_text(schema.all, b))];
            let positions = SloppyPhrase::across(words, schema.fields.clone(), 0, &cancel).reading(&files);
            let pair = Term::from_field_text(schema.pairs.unwrap(), text);
            let paired = positions.clone().with_pair(pair.clone());
            let top = || TopDocs::with_limit(100).order_by_score();
            let (want, want_n) = searcher.search(&positions, &(top(), Count)).unwrap();
            let (got, got_n) = searcher.search(&paired, &(top(), Count)).unwrap();
            prop_assert_eq!(&got, &want, "{:?}", text);
            prop_assert_eq!(got_n, want_n);
            // The pair field answers exactly when the full build wrote the
            // pair (it is listed and a first row holds it) and a segment
            // still holds its term: the full build's, unless its every row
            // was deleted (tantivy drops such a segment; a deleted row's
            // terms stay in one that lives on), or the later writer's, which
            // wrote the pair for its rows as the list it read held it.
            let side_by_side = |row: &Vec<(String, Vec<u32>)>| {
                let at = |w: &str| row.iter().find(|(t, _)| t == w).map(|(_, p)| p.clone()).unwrap_or_default();
                let (pa, pb) = (at(a), at(b));
                pa.iter().any(|p| pb.contains(&(p + 1)))
            };
            let segment_lives = deleted.iter().take(first.len()).any(|gone| !gone);
            let written = list.texts().contains(text)
                && first.iter().any(side_by_side)
                && (segment_lives || later.iter().any(side_by_side));
            prop_assert_eq!(crate::pair_phrase::held(&searcher, &pair).unwrap(), written, "{:?}", text);
        }
    }
}

/// A keyword cell of the first field: partition, term, key, positions.
type PlainCell = (Vec<u8>, String, Vec<u8>, Vec<u32>);

/// `cells` (sorted as the store lends them) gathered in `parts` parts, a
/// partition in part (its second byte) % `parts`.
fn gather<'s>(schema: &'s DocSchema, cells: &[PlainCell], parts: usize) -> Vec<Part<'s>> {
    let mut gathered: Vec<Part> = (0..parts).map(|_| Part::new(schema)).collect();
    for (partition, term, key, positions) in cells {
        let encoded = leb128(positions);
        let cell =
            KeywordCellRef::from_parts(partition, 0, &schema.names[0], term, 0, key, &encoded).unwrap();
        gathered[usize::from(partition[1]) % parts].add(&cell);
    }
    gathered
}

/// A build's pair selection: a pair standing side by side in enough
/// documents is kept, one of a word among the most frequent is not, nor
/// one in too few documents, whatever the parts the rows fall in.
#[test]
fn a_build_keeps_the_pairs_standing_side_by_side_often() {
    use crate::pairs::{COMMON_WORDS, MIN_DOCS, text};
    let schema = schema();
    let docs = 4 * MIN_DOCS as usize;
    // Per document: the common words at 0.. (their pairs stand in every
    // document), then "gas price" (every other document), and "risk zeta"
    // in few documents.
    let mut cells: Vec<PlainCell> = Vec::new();
    for d in 0..docs {
        let (partition, key) = (format!("p{}", d % 7).into_bytes(), key(d));
        let mut words: Vec<String> = (0..COMMON_WORDS).map(|w| format!("common{w}")).collect();
        if d % 2 == 0 {
            words.extend(["gas".into(), "price".into()]);
        }
        if d % 50 == 0 {
            words.extend(["risk".into(), "zeta".into()]);
        }
        for (p, w) in words.into_iter().enumerate() {
            cells.push((partition.clone(), w, key.clone(), vec![p as u32]));
        }
    }
    cells.sort();
    for parts in [1usize, 3] {
        let list = super::direct_pairs::select(&mut gather(&schema, &cells, parts), 2);
        assert_eq!(list.texts(), [text("gas", "price")], "{parts} parts");
    }
}

/// An incremental run takes the pairs the index's segments hold, or the
/// last run's list while the index has exactly the segments that run left
/// it; a segment another writer adds makes it read them again.
#[test]
fn a_run_reuses_the_last_runs_pairs_only_on_the_segments_it_left() {
    use std::sync::Arc;

    use rowsearch_store::KeywordCell;

    use crate::build::incremental::{remember_pairs, session_pairs};
    use crate::pairs::text;
    let schema = schema();
    let name = schema.names[0].clone();
    let cells = |key: Vec<u8>, words: &[&str]| -> Vec<KeywordCell> {
        let mut cells: Vec<KeywordCell> = words
            .iter()
            .enumerate()
            .map(|(p, w)| KeywordCell {
                partition: b"p0".to_vec(),
                field: name.clone(),
                term: (*w).to_owned(),
                date_ms: 0,
                key: key.clone(),
                positions: vec![p as u32],
            })
            .collect();
        cells.sort_by(|a, b| a.term.cmp(&b.term));
        cells
    };
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create_in_dir(dir.path(), schema.schema.clone()).unwrap();
    register_cells(&index);
    let mut part = Part::new(&schema);
    for c in cells(key(1), &["gas", "price", "risk"]) {
        let encoded = leb128(&c.positions);
        part.add(&KeywordCellRef::from_parts(&c.partition, 0, &name, &c.term, 0, &c.key, &encoded).unwrap());
    }
    let kept = PairList::new([text("gas", "price"), text("price", "risk")]);
    let meta = super::write(&index, vec![part], 1, &kept).unwrap().unwrap();
    super::commit(&index, vec![meta], "").unwrap();
    assert_eq!(session_pairs(&index).unwrap().texts(), kept.texts());
    // A run left these segments with this list: the next run takes it.
    let remembered = Arc::new(PairList::new([text("gas", "price")]));
    remember_pairs(&index, Arc::clone(&remembered));
    assert!(Arc::ptr_eq(&session_pairs(&index).unwrap(), &remembered));
    // Another writer adds a segment: the segments' own pairs again.
    let mut writer: IndexWriter<CellDoc> = index.writer_with_num_threads(1, 15_000_000).unwrap();
    let doc = CellDoc::from_cells_paired(&schema, &cells(key(2), &["gas", "price"]), &kept).unwrap();
    writer.add_document(doc).unwrap();
    writer.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    assert_eq!(session_pairs(&index).unwrap().texts(), kept.texts());
}

/// The kept pairs' postings stay within their share of the words': many
/// pairs standing side by side in every document keep the first ones only.
#[test]
fn a_build_keeps_pairs_within_their_share_of_the_postings() {
    use crate::pairs::{COMMON_WORDS, MIN_DOCS};
    let schema = schema();
    let docs = 4 * MIN_DOCS as usize;
    let mut cells: Vec<PlainCell> = Vec::new();
    for d in 0..docs {
        // The common words apart from each other in every document; then,
        // in three of four, 20 words in a row: 19 pairs.
        let mut words: Vec<(String, u32)> =
            (0..COMMON_WORDS).map(|w| (format!("common{w:02}"), 2 * w as u32)).collect();
        if d % 4 != 3 {
            words.extend((0..20).map(|w| (format!("w{w:02}"), 1000 + w)));
        }
        for (w, p) in words {
            cells.push((b"p0".to_vec(), w, key(d), vec![p]));
        }
    }
    cells.sort();
    let list = super::direct_pairs::select(&mut gather(&schema, &cells, 1), 1);
    // The words' postings: 50 x 400 + 20 x 300 = 26,000, a fifth 5,200;
    // each pair's, as every 4th document estimates them, 4 x 100: 13 pairs.
    assert_eq!(list.len(), 13, "{:?}", list.texts());
}
