//! The overlay of a snapshot search: the rows the change feed names past
//! what a generation absorbed, indexed in memory, so that one search
//! answers as if the index held exactly the store's snapshot.
//!
//! A search over a generation and an overlay runs its query twice: on the
//! generation with the changed rows hidden (their indexed state is stale:
//! a `_key` term set excluded), and on the overlay, which holds those rows
//! as the snapshot has them (a deleted row, or one left without terms, is
//! simply absent). Both runs score with the statistics of the two together
//! (BM25's document count, document frequencies and field lengths), so
//! their scores compare; the two top lists merge by score or date, and the
//! total is the sum of the two counts. See [`crate::Generation::search_overlaid`].
//!
//! The overlay's documents come from the rows' keyword cells as the
//! snapshot computes them ([`ReadTxn::row_keyword_cells`]), the same cells
//! an incremental reindex would write, so a row matches here exactly as it
//! will once the index absorbs it.

use rowsearch_store::ReadTxn;
use tantivy::query::{Bm25StatisticsProvider, TermSetQuery};
use tantivy::schema::Field;
use tantivy::tokenizer::TokenizerManager;
use tantivy::{IndexBuilder, ReloadPolicy, Term};

use crate::changes::TableChanges;
use crate::doc::{CellDoc, CellTokenizer, DocSchema, TOKENIZER};
use crate::error::tantivy_err;
use crate::{Error, Result};

/// Memory the in-memory segment's writer starts with (its term hash table
/// is sized from it); the few documents of an overlay fit well inside.
const WRITER_BUDGET: usize = 4 << 20;

/// The changed rows of one snapshot, indexed in memory (see the module
/// documentation).
pub struct Overlay {
    /// The rows hidden from the generation's answer: every row of the
    /// table the feed names past `from_seq`, sorted.
    rows: Vec<Vec<u8>>,
    hide: TermSetQuery,
    /// The overlay's own documents: the rows that exist in the snapshot
    /// and have terms. `None` when none does.
    searcher: Option<tantivy::Searcher>,
    docs: u64,
    /// The first feed sequence the overlay covers.
    pub from_seq: u64,
    /// The feed sequence after the last entry it covers.
    pub next_seq: u64,
    /// The last feed entry naming its table (see [`TableChanges::last_seq`]).
    pub last_seq: u64,
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("rows", &self.rows.len())
            .field("docs", &self.docs)
            .field("from_seq", &self.from_seq)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

impl Overlay {
    /// Indexes `changes` (read from `rtxn`'s feed past `from_seq`) as
    /// `rtxn`'s snapshot has the rows.
    ///
    /// # Errors
    /// `Store` (reading the rows), `Tantivy`.
    pub fn build(
        rtxn: &ReadTxn<'_>,
        schema: &DocSchema,
        from_seq: u64,
        changes: TableChanges,
    ) -> Result<Overlay> {
        let table = schema.table.as_str();
        let mut docs = Vec::new();
        for row in &changes.rows {
            let cells = rtxn.row_keyword_cells(table, row)?;
            if let Some(doc) = CellDoc::from_cells(schema, &cells) {
                docs.push(doc);
            }
        }
        let searcher = if docs.is_empty() { None } else { Some(index_in_memory(schema, docs.iter())?) };
        let hide = TermSetQuery::new(changes.rows.iter().map(|k| Term::from_field_bytes(schema.key, k)));
        Ok(Overlay {
            hide,
            searcher,
            docs: docs.len() as u64,
            rows: changes.rows,
            from_seq,
            next_seq: changes.next_seq,
            last_seq: changes.last_seq,
        })
    }

    /// The rows hidden from the generation (every changed row), sorted.
    pub fn rows(&self) -> &[Vec<u8>] {
        &self.rows
    }

    /// The documents the overlay holds (changed rows that exist and have
    /// terms).
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// The query matching every changed row in the generation.
    pub(crate) fn hide(&self) -> &TermSetQuery {
        &self.hide
    }

    /// The in-memory segment's searcher, if it holds any document.
    pub(crate) fn searcher(&self) -> Option<&tantivy::Searcher> {
        self.searcher.as_ref()
    }
}

/// One in-memory segment holding `docs` (their [`crate::doc::CellText`]
/// read by the cell tokenizer), built on this thread.
fn index_in_memory<'a>(
    schema: &DocSchema,
    docs: impl Iterator<Item = &'a CellDoc>,
) -> Result<tantivy::Searcher> {
    let table = schema.table.as_str();
    let tokenizers = TokenizerManager::default();
    tokenizers.register(TOKENIZER, CellTokenizer);
    let mut writer = IndexBuilder::new()
        .schema(schema.schema.clone())
        .tokenizers(tokenizers)
        .single_segment_index_writer::<CellDoc>(tantivy::directory::RamDirectory::create(), WRITER_BUDGET)
        .map_err(tantivy_err(table, "open overlay writer"))?;
    for doc in docs {
        writer.add_document(doc.clone()).map_err(tantivy_err(table, "add overlay document"))?;
    }
    let index = writer.finalize().map_err(tantivy_err(table, "finish overlay"))?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(tantivy_err(table, "open overlay reader"))?;
    let searcher = reader.searcher();
    if searcher.segment_readers().len() > 1 {
        return Err(Error::Schema {
            table: table.to_owned(),
            reason: "overlay built more than one segment".into(),
        });
    }
    Ok(searcher)
}

/// BM25 statistics of a generation and an overlay together: what one
/// index holding both would count (the hidden rows' stale documents
/// included, as an index counts deleted documents until they merge away).
pub(crate) struct Combined<'a> {
    pub main: &'a tantivy::Searcher,
    pub overlay: &'a tantivy::Searcher,
}

impl Bm25StatisticsProvider for Combined<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.main.total_num_tokens(field)? + self.overlay.total_num_tokens(field)?)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.main.total_num_docs()? + self.overlay.total_num_docs()?)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.main.doc_freq(term)? + self.overlay.doc_freq(term)?)
    }
}
