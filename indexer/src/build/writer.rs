//! The tantivy writer of a build and its commit, which records the feed
//! sequence the generation absorbed and the id of the table it indexes.

use tantivy::{Index, IndexWriter};

use super::options::{MIN_BUFFER_PER_THREAD, ReindexOptions};
use crate::Result;
use crate::doc::CellDoc;
use crate::error::tantivy_err;
use crate::generation::commit_payload;

pub(super) fn writer(table: &str, index: &Index, options: &ReindexOptions) -> Result<IndexWriter<CellDoc>> {
    let threads = options.threads.max(1);
    let budget = (options.memory_budget_bytes / 4 * 3).max(threads * MIN_BUFFER_PER_THREAD);
    index.writer_with_num_threads(threads, budget).map_err(tantivy_err(table, "open writer"))
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
