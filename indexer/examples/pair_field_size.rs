//! Bytes of a word-pair field as tantivy keeps it: one document per line
//! of FILE (its pair tokens, one per occurrence, separated by spaces),
//! indexed with frequencies and no positions into one segment; prints the
//! segment's bytes by file kind. A measurement for planning (see
//! `bench/pairs_estimate.py`), not part of rowsearch.
//!
//!     cargo run --release -p rowsearch-indexer --example pair_field_size -- FILE [docs]
//!
//! With `docs`, the postings keep documents only (no frequencies).

use std::io::BufRead;

use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexWriter, TantivyDocument};

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
    Ok(())
}
