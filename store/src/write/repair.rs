//! Indexes an opening repairs: those a build's earlier upgrade left
//! holding pending runs in their main database.

use super::derived::{BuildCursor, build_chunk};
use crate::db::meta::Meta;
use crate::error::{Error, Result};
use crate::table::TableHandle;

/// A secondary index an opening found broken and rebuilt from its table's
/// rows, in the opening transaction: one whose main database held pending
/// runs moved there as they were (by the format 3 to 4 upgrade of the
/// build before the fix, which left every lookup of the index empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedIndex {
    /// The table.
    pub table: String,
    /// The index.
    pub index: String,
    /// The entries it holds after the rebuild.
    pub entries: u64,
}

/// Rebuilds, in `wtxn`, every index of `handle` whose main database holds
/// moved pending runs ([`crate::secondary`]'s `holds_moved_runs`); returns
/// the handle and what was rebuilt (built `step_rows` rows at a time).
pub(crate) fn repair_moved_runs(
    wtxn: &mut heed::RwTxn,
    meta: &Meta,
    handle: TableHandle,
    step_rows: usize,
    now_ms: u64,
) -> Result<(TableHandle, Vec<RepairedIndex>)> {
    let mut repaired = Vec::new();
    for index in &handle.indexes {
        if !index.holds_moved_runs(wtxn)? {
            continue;
        }
        index.clear(wtxn)?;
        meta.delete_index_build(wtxn, &handle.name, &index.schema.name)?;
        let mut cursor = Some(BuildCursor::default());
        while let Some(at) = cursor {
            cursor = build_chunk(wtxn, &handle, &index.schema.name, &at, step_rows, now_ms)?.1;
        }
        let entries = index.db.len(wtxn).map_err(|e| Error::lmdb("index repair", e))?;
        repaired.push(RepairedIndex {
            table: handle.name.clone(),
            index: index.schema.name.clone(),
            entries,
        });
    }
    Ok((handle, repaired))
}
