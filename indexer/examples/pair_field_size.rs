//! Bytes of a word-pair field as tantivy keeps it: one document per line
//! of FILE (its pair tokens, one per occurrence, separated by spaces),
//! indexed with frequencies and no positions into one segment; prints the
//! segment's bytes by file kind. A measurement for planning (see
//! `bench/pairs_estimate.py`), not part of rowsearch.
//!
//!     cargo run --release -p rowsearch-indexer --example pair_field_size -- FILE [docs]
//!
//! With `docs`, the postings keep documents only (no frequencies). Then,
//! for each of the peer bench's two-word phrases, tantivy's part of
//! searching its pair as one term (top 10 by BM25 and the exact count,
//! p50 of 300 after 30 untimed), for comparing with the engine's phrase
//! path (`search-api/benches/engine.rs`).

use std::io::BufRead;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexWriter, TantivyDocument, Term};

/// The peer bench's two-word phrases, as pair tokens.
const PHRASES: [&str; 8] = [
    "natural_gas",
    "power_plant",
    "conference_call",
    "credit_risk",
    "press_release",
    "price_cap",
    "gas_storage",
    "board_meeting",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: pair_field_size FILE")?;
    let option = match std::env::args().nth(2).as_deref() {
        Some("docs") => IndexRecordOption::Basic,
        _ => IndexRecordOption::WithFreqs,
    };
    let mut schema = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer("whitespace")
        .set_index_option(option)
        .set_fieldnorms(false);
    let pairs = schema.add_text_field("pairs", TextOptions::default().set_indexing_options(indexing));
    let dir = tempfile::tempdir()?;
    let index = Index::create_in_dir(dir.path(), schema.build())?;
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 512 << 20)?;
    let mut docs = 0u64;
    for line in std::io::BufReader::new(std::fs::File::open(&path)?).lines() {
        let mut doc = TantivyDocument::default();
        doc.add_text(pairs, line?);
        writer.add_document(doc)?;
        docs += 1;
    }
    writer.commit()?;
    let ids = index.searchable_segment_ids()?;
    if ids.len() > 1 {
        writer.merge(&ids).wait()?;
    }
    writer.wait_merging_threads()?;
    let mut by_kind: std::collections::BTreeMap<String, u64> = Default::default();
    for entry in std::fs::read_dir(dir.path())? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((_, ext)) = name.rsplit_once('.')
            && !name.starts_with('.')
        {
            *by_kind.entry(ext.to_owned()).or_default() += entry.metadata()?.len();
        }
    }
    println!("{docs} documents; bytes by file kind: {by_kind:?}");
    println!("postings + terms: {}", by_kind.get("idx").unwrap_or(&0) + by_kind.get("term").unwrap_or(&0));
    let searcher = index.reader()?.searcher();
    for phrase in PHRASES {
        let query = TermQuery::new(Term::from_field_text(pairs, phrase), option);
        let mut times = Vec::with_capacity(300);
        let mut total = 0;
        for i in 0..330 {
            let start = std::time::Instant::now();
            let (top, count) = searcher.search(&query, &(TopDocs::with_limit(10).order_by_score(), Count))?;
            let took = start.elapsed();
            std::hint::black_box(top);
            total = count;
            if i >= 30 {
                times.push(took);
            }
        }
        times.sort();
        println!("{phrase}: {total} documents, p50 {:.1} us", times[times.len() / 2].as_secs_f64() * 1e6);
    }
    Ok(())
}
