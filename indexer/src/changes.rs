//! What changed since a generation: the rows the store's change feed
//! names after the sequence the generation absorbed. Read by incremental
//! builds and by `verify`.

use rowsearch_store::Store;
use tantivy::Index;

use crate::Result;
use crate::error::tantivy_err;
use crate::generation::{IndexDir, indexed_next_seq};

const FEED_CHUNK: usize = 50_000;

/// The distinct rows of `table` the change feed names from `from_seq` on,
/// sorted, and the sequence after the last entry read.
pub(crate) fn changed_rows(store: &Store, table: &str, from_seq: u64) -> Result<(Vec<Vec<u8>>, u64)> {
    let mut changed: Vec<Vec<u8>> = Vec::new();
    let mut next_seq = from_seq;
    loop {
        let chunk = store.feed_since(next_seq, FEED_CHUNK)?;
        let Some(last) = chunk.last() else { break };
        next_seq = last.seq + 1;
        changed.extend(chunk.into_iter().filter(|e| e.table == table).map(|e| e.row));
    }
    changed.sort_unstable();
    changed.dedup();
    Ok((changed, next_seq))
}

/// How many distinct rows of `table` the change feed names from
/// `from_seq` on, and the sequence after the last entry read: what an
/// index that absorbed the feed up to `from_seq` is missing.
///
/// # Errors
/// `Store`.
pub fn pending_changes(store: &Store, table: &str, from_seq: u64) -> Result<(usize, u64)> {
    let (rows, next_seq) = changed_rows(store, table, from_seq)?;
    Ok((rows.len(), next_seq))
}

/// Trims the change feed up to what every indexed table has absorbed.
pub(crate) fn trim_feed(store: &Store) -> Result<u64> {
    let mut lowest: Option<u64> = None;
    for table in store.tables()? {
        let Ok(schema) = store.schema(&table) else { continue };
        if schema.search.is_none() {
            continue;
        }
        let dir = IndexDir::new(store.path(), &table);
        let Some(n) = dir.current()? else { continue };
        let index = Index::open_in_dir(dir.generation_path(n)).map_err(tantivy_err(&table, "open index"))?;
        let next = indexed_next_seq(&table, &index)?;
        lowest = Some(lowest.map_or(next, |l| l.min(next)));
    }
    match lowest {
        Some(next) if next > 1 => Ok(store.trim_feed(next - 1)?),
        _ => Ok(0),
    }
}
