//! The tantivy writer of a build and its commit, which records the feed
//! sequence the generation absorbed and the id of the table it indexes.

use tantivy::{Index, IndexWriter};

use super::options::{MIN_BUFFER_PER_THREAD, ReindexOptions};
use crate::Result;
use crate::doc::CellDoc;
use crate::error::tantivy_err;
use crate::generation::commit_payload;

/// The budget's share for tantivy's indexing arena: 5/8 (the grouping of
/// cells into documents takes 1/4, the documents queued for tantivy 1/8).
pub(super) fn writer(table: &str, index: &Index, options: &ReindexOptions) -> Result<IndexWriter<CellDoc>> {
    let threads = options.threads.max(1);
    let budget = (options.memory_budget_bytes / 8 * 5).max(threads * MIN_BUFFER_PER_THREAD);
    index.writer_with_num_threads(threads, budget).map_err(tantivy_err(table, "open writer"))
}

/// The budget's share for documents queued for tantivy (see [`writer`]).
pub(super) fn in_flight_budget(memory_budget_bytes: usize) -> usize {
    (memory_budget_bytes / 8).max(4 << 20)
}

pub(super) fn commit(
    table: &str,
    writer: &mut IndexWriter<CellDoc>,
    next_seq: u64,
    table_id: u64,
) -> Result<()> {
    let payload = commit_payload(next_seq, table_id);
    let mut prepared = writer.prepare_commit().map_err(tantivy_err(table, "prepare commit"))?;
    prepared.set_payload(&payload);
    prepared.commit().map_err(tantivy_err(table, "commit"))?;
    Ok(())
}
