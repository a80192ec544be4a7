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
    fn direct_segment_equals_the_index_writers(rows in rows(&schema()), parts in 1usize..4, threads in 1usize..3) {
        let schema = schema();
        let cells = cells(&rows);

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
        let meta = super::write(&direct, gathered, threads).unwrap().unwrap();

        // Through tantivy's index writer: the documents in doc id order
        // (partition, newest first, key), each built from its cells.
        let dir2 = tempfile::tempdir().unwrap();
        let written = Index::create_in_dir(dir2.path(), schema.schema.clone()).unwrap();
        register_cells(&written);
        let mut docs: Vec<CellDoc> = Vec::new();
        for (partition, f, term, date, key, positions) in &cells {
            let cell = KeywordCellRef::from_parts(partition, *f, &schema.names[*f], term, *date, key, positions).unwrap();
            let doc = match docs.iter_mut().find(|d| d.key == *key) {
                Some(doc) => doc,
                None => {
                    let mut doc = CellDoc::new(&schema);
                    doc.key.clone_from(key);
                    doc.partition.clone_from(partition);
                    doc.date_ms = *date;
                    docs.push(doc);
                    docs.last_mut().unwrap()
                }
            };
            doc.texts[*f].push(term, cell.positions());
            doc.add_facet_term(*f, term);
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

fn schema() -> DocSchema {
    let search = crate::mail::mail_schema().search.unwrap();
    DocSchema::for_search("mail", &search).unwrap()
}
