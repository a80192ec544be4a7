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

use std::sync::Arc;

use rowsearch_store::RowView;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TokenizerManager;
use tantivy::{IndexBuilder, ReloadPolicy, Term};

use crate::changes::TableChanges;
use crate::doc::{CellDoc, CellTokenizer, DocSchema, KEYWORD_TOKENIZER, TOKENIZER};
use crate::error::tantivy_err;
use crate::{Error, Result};

/// Memory the in-memory segment's writer starts with (its term hash table
/// is sized from it); the few documents of an overlay fit well inside.
const WRITER_BUDGET: usize = 256 << 10;

/// Up to this many changed rows, the generation's documents of them are
/// hidden by a union of term queries on `_key`; past it, by one term set
/// (which builds an automaton of the keys: about 0.2 ms whatever their
/// number, measured with the `overlay_cost` example).
const HIDE_BY_TERMS: usize = 64;

/// Most layers an overlay has: extending one that has as many rebuilds it
/// as one layer (so a search runs the query on at most this many
/// in-memory segments).
const MAX_LAYERS: usize = 8;

/// The changed rows of one snapshot, indexed in memory (see the module
/// documentation), in layers: each [`Overlay::extend`] adds the rows
/// written since as a layer of their own, so a search after each write
/// indexes that write's rows only. A row in a later layer hides its
/// document in the earlier ones, as the overlay hides it in the
/// generation.
pub struct Overlay {
    /// The rows hidden from the generation's answer: every row of the
    /// table the feed names past `from_seq`, sorted.
    rows: Vec<Vec<u8>>,
    hide: Box<dyn Query>,
    layers: Vec<Arc<Layer>>,
    /// Per layer, the query matching the rows of the later layers (`None`
    /// for the last).
    later: Vec<Option<Box<dyn Query>>>,
    /// The first feed sequence the overlay covers.
    pub from_seq: u64,
    /// The feed sequence after the last entry it covers.
    pub next_seq: u64,
    /// The last feed entry naming its table (see [`TableChanges::last_seq`]).
    pub last_seq: u64,
}

/// Rows changed in one stretch of the feed, as one snapshot has them.
struct Layer {
    rows: Vec<Vec<u8>>,
    /// The rows that exist and have terms, in memory; `None` when none.
    searcher: Option<tantivy::Searcher>,
    docs: u64,
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("rows", &self.rows.len())
            .field("layers", &self.layers.len())
            .field("from_seq", &self.from_seq)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

impl Overlay {
    /// Whether it matches exactly the changes the feed names past `from`
    /// whose last entry is `last_seq` (so a search reuses it as it is).
    pub(crate) fn covers(&self, from: u64, last_seq: u64) -> bool {
        self.from_seq == from && self.last_seq == last_seq
    }

    /// Indexes `changes` (read from `rtxn`'s feed past `from_seq`) as
    /// `rtxn`'s snapshot has the rows, in one layer.
    ///
    /// # Errors
    /// `Store` (reading the rows), `Tantivy`.
    pub fn build(
        rtxn: &dyn RowView,
        schema: &DocSchema,
        from_seq: u64,
        changes: TableChanges,
    ) -> Result<Overlay> {
        let layer = Layer::build(rtxn, schema, changes.rows)?;
        Ok(Overlay::of_layers(schema, vec![Arc::new(layer)], from_seq, changes.next_seq, changes.last_seq))
    }

    /// This overlay brought forward to `rtxn`'s snapshot: `tail` (read
    /// from its feed past [`Self::next_seq`]) added as a new layer, or,
    /// past 8 layers, every changed row in one layer again.
    ///
    /// # Errors
    /// As [`Self::build`].
    pub fn extend(&self, rtxn: &dyn RowView, schema: &DocSchema, tail: TableChanges) -> Result<Overlay> {
        let last_seq = if tail.rows.is_empty() { self.last_seq } else { tail.last_seq };
        if self.layers.len() >= MAX_LAYERS {
            let mut rows = self.rows.clone();
            rows.extend(tail.rows);
            rows.sort_unstable();
            rows.dedup();
            let layer = Layer::build(rtxn, schema, rows)?;
            return Ok(Overlay::of_layers(
                schema,
                vec![Arc::new(layer)],
                self.from_seq,
                tail.next_seq,
                last_seq,
            ));
        }
        let mut layers = self.layers.clone();
        if !tail.rows.is_empty() {
            layers.push(Arc::new(Layer::build(rtxn, schema, tail.rows)?));
        }
        Ok(Overlay::of_layers(schema, layers, self.from_seq, tail.next_seq, last_seq))
    }

    fn of_layers(
        schema: &DocSchema,
        layers: Vec<Arc<Layer>>,
        from_seq: u64,
        next_seq: u64,
        last_seq: u64,
    ) -> Overlay {
        let mut later = Vec::with_capacity(layers.len());
        let mut after: Vec<Vec<u8>> = Vec::new();
        for layer in layers.iter().rev() {
            later.push((!after.is_empty()).then(|| hide_query(schema, &after)));
            after.extend(layer.rows.iter().cloned());
            after.sort_unstable();
            after.dedup();
        }
        later.reverse();
        Overlay { hide: hide_query(schema, &after), rows: after, layers, later, from_seq, next_seq, last_seq }
    }

    /// The rows hidden from the generation (every changed row), sorted.
    pub fn rows(&self) -> &[Vec<u8>] {
        &self.rows
    }

    /// The documents the overlay holds (changed rows that exist and have
    /// terms; a row changed again in a later layer counts in each).
    pub fn docs(&self) -> u64 {
        self.layers.iter().map(|l| l.docs).sum()
    }

    /// The layers.
    pub fn layers(&self) -> usize {
        self.layers.len()
    }

    /// The query matching every changed row in the generation.
    pub(crate) fn hide(&self) -> &dyn Query {
        &*self.hide
    }

    /// Each layer holding documents: its searcher, and the query matching
    /// the rows later layers hold (to hide them in this one).
    pub(crate) fn segments(&self) -> impl Iterator<Item = (&tantivy::Searcher, Option<&dyn Query>)> {
        self.layers
            .iter()
            .zip(&self.later)
            .filter_map(|(layer, later)| Some((layer.searcher.as_ref()?, later.as_deref())))
    }
}

impl Layer {
    fn build(rtxn: &dyn RowView, schema: &DocSchema, rows: Vec<Vec<u8>>) -> Result<Layer> {
        let table = schema.table.as_str();
        let mut docs = Vec::new();
        for row in &rows {
            let cells = rtxn.row_keyword_cells(table, row)?;
            if let Some(doc) = CellDoc::from_cells(schema, &cells) {
                docs.push(doc);
            }
        }
        let searcher = if docs.is_empty() { None } else { Some(index_in_memory(schema, docs.iter())?) };
        Ok(Layer { rows, searcher, docs: docs.len() as u64 })
    }
}

/// A query matching the documents of `rows` (sorted).
fn hide_query(schema: &DocSchema, rows: &[Vec<u8>]) -> Box<dyn Query> {
    let terms = rows.iter().map(|k| Term::from_field_bytes(schema.key, k));
    if rows.len() <= HIDE_BY_TERMS {
        let term = |t| -> (Occur, Box<dyn Query>) {
            (Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::Basic)))
        };
        Box::new(BooleanQuery::new(terms.map(term).collect()))
    } else {
        Box::new(TermSetQuery::new(terms))
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
    tokenizers.register(KEYWORD_TOKENIZER, CellTokenizer);
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

/// BM25 statistics of a generation and an overlay's layers together:
/// what one index holding them all would count (the hidden rows' stale
/// documents included, as an index counts deleted documents until they
/// merge away).
pub(crate) struct Combined<'a> {
    pub searchers: Vec<&'a tantivy::Searcher>,
}

impl Bm25StatisticsProvider for Combined<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.total_num_tokens(field)).sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.total_num_docs()).sum()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.doc_freq(term)).sum()
    }
}
