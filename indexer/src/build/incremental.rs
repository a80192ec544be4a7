//! Incremental builds: the change feed applied to the serving generation
//! (see the module documentation of `build`).

use rowsearch_store::RowSource;
use std::sync::Arc;

use tantivy::index::SegmentId;
use tantivy::{Index, Term};

use super::options::{BuildRead, ReindexMode, ReindexOptions, ReindexProgress, ReindexReport};
use super::writer::{commit, writer};
use crate::changes::changed_rows;
use crate::doc::{CellDoc, DocSchema, register_cells};
use crate::error::{FailPoint, tantivy_err};
use crate::generation::indexed_next_seq;
use crate::pairs::PairList;
use crate::{Error, Result};

/// The rows of a table the change feed names past what its serving
/// generation absorbed, and the sequence after the feed's last entry read.
pub(crate) struct Changed {
    /// The distinct rows named, sorted.
    pub rows: Vec<Vec<u8>>,
    /// The sequence the commit records.
    pub next_seq: u64,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn incremental(
    store: &dyn RowSource,
    table: &str,
    schema: &DocSchema,
    generation: u64,
    index: Index,
    known: Option<Changed>,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let from_seq = indexed_next_seq(table, &index)?;
    let table_id = store.table_id(table)?;
    // Read the feed before the rows: the rows are then at least as new as
    // the feed entries, so nothing is missed (applying a newer state early
    // is harmless: the next run applies it again). A refresh round read it
    // already, before this.
    let Changed { rows: changed, next_seq } = match known {
        Some(known) => known,
        None => {
            let (rows, next_seq) = changed_rows(store, table, from_seq)?;
            Changed { rows, next_seq }
        }
    };

    register_cells(&index);
    let mut writer = writer(table, &index, options)?;
    // The generation's word pairs, for the rows it takes in (`pairs.rs`),
    // read under the writer's lock.
    let pairs = session_pairs(&index).map_err(tantivy_err(table, "read word pairs"))?;
    let total = changed.len() as u64;
    let (mut indexed, mut removed) = (0u64, 0u64);
    let view = store.view()?;
    let rtxn = &*view;
    for (i, row) in changed.iter().enumerate() {
        if options.fail_at == Some(FailPoint::MidIncremental) && i as u64 == total / 2 {
            return Err(Error::FailPoint(FailPoint::MidIncremental));
        }
        writer.delete_term(Term::from_field_bytes(schema.key, row));
        let cells = rtxn.row_keyword_cells(table, row)?;
        match CellDoc::from_cells_paired(schema, &cells, &pairs) {
            Some(doc) => {
                writer.add_document(doc).map_err(tantivy_err(table, "add document"))?;
                indexed += 1;
            }
            None => removed += 1,
        }
        if i.is_multiple_of(4096) {
            progress(&ReindexProgress { phase: "rows", done: i as u64, total, region_done: None });
        }
    }
    drop(view);
    progress(&ReindexProgress { phase: "rows", done: total, total, region_done: None });
    if next_seq != from_seq {
        commit(table, &mut writer, next_seq, table_id)?;
    }
    writer.wait_merging_threads().map_err(tantivy_err(table, "merge segments"))?;
    remember_pairs(&index, pairs);
    let reader = index.reader().map_err(tantivy_err(table, "open reader"))?;
    Ok(ReindexReport {
        table: table.to_owned(),
        mode: ReindexMode::Incremental,
        generation,
        docs: reader.searcher().num_docs(),
        rows_indexed: indexed,
        rows_removed: removed,
        cells_read: 0,
        read: BuildRead::KeywordRows,
        ranges: 0,
        readers: 0,
        next_seq,
        feed_trimmed: 0,
        removed_generations: Vec::new(),
        index_bytes: 0,
        seconds: 0.0,
        serving_seconds: 0.0,
    })
}

/// The pair lists of the last incremental runs, with the segments each
/// left its index with (segment ids are unique across indexes).
static SESSIONS: std::sync::Mutex<Vec<(Vec<SegmentId>, Arc<PairList>)>> = std::sync::Mutex::new(Vec::new());

/// Runs remembered.
const SESSIONS_KEPT: usize = 16;

/// The pairs an incremental run of `index` writes: those its segments hold
/// (`PairList::of_index`, ~4 ms on the mail corpus), or the last run's list
/// while the index has exactly the segments that run left it. Then no other
/// writer added or merged anything since, and that list is the index's, or
/// longer only by pairs that run's own merges took out of every segment,
/// which are in no live document and which every writer since (that run)
/// wrote: the pair field answers exactly either way.
pub(super) fn session_pairs(index: &Index) -> tantivy::Result<Arc<PairList>> {
    let mut segments = index.searchable_segment_ids()?;
    segments.sort_unstable();
    let sessions = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, pairs)) = sessions.iter().find(|(s, _)| *s == segments) {
        return Ok(Arc::clone(pairs));
    }
    drop(sessions);
    Ok(Arc::new(PairList::of_index(index)?))
}

/// Notes the list a run of `index` wrote with, for the next run.
pub(super) fn remember_pairs(index: &Index, pairs: Arc<PairList>) {
    let Ok(mut segments) = index.searchable_segment_ids() else { return };
    segments.sort_unstable();
    let mut sessions = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    sessions.retain(|(s, _)| *s != segments);
    if sessions.len() == SESSIONS_KEPT {
        sessions.remove(0);
    }
    sessions.push((segments, pairs));
}
