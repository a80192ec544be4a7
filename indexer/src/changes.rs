//! What changed since a generation: the rows the store's change feed
//! names after the sequence the generation absorbed. Read by incremental
//! builds and by `verify`.

use std::collections::HashMap;

use rowsearch_store::{RowSource, RowView, Store};

use crate::Result;
use crate::generation::{IndexDir, indexed_next_seq};

const FEED_CHUNK: usize = 50_000;

/// The distinct rows of `table` the change feed names from `from_seq` on,
/// sorted, and the sequence after the last entry read.
pub(crate) fn changed_rows(store: &dyn RowSource, table: &str, from_seq: u64) -> Result<(Vec<Vec<u8>>, u64)> {
    let changes = changes_in(&*store.tail_view()?, table, from_seq)?;
    Ok((changes.rows, changes.next_seq))
}

/// What the change feed of one snapshot says about a table past a
/// sequence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableChanges {
    /// The distinct rows of the table named, sorted.
    pub rows: Vec<Vec<u8>>,
    /// The sequence after the last entry read (of any table).
    pub next_seq: u64,
    /// The sequence of the first entry naming the table (0 for none).
    pub first_seq: u64,
    /// The sequence of the last entry naming the table (0 for none): two
    /// reads with the same start and the same `last_seq` name the same
    /// rows in the same states.
    pub last_seq: u64,
}

impl TableChanges {
    /// How long ago (ms, by the store's clock as of `rtxn`) the first of
    /// these changes was committed: the age of the oldest write an index
    /// that absorbed the feed up to their start lacks. `None` without
    /// changes, or when the store kept no time for it.
    ///
    /// # Errors
    /// `Store`.
    pub fn age_ms(&self, rtxn: &dyn RowView) -> Result<Option<u64>> {
        if self.first_seq == 0 {
            return Ok(None);
        }
        Ok(rtxn.feed_time(self.first_seq)?.map(|t| rtxn.now_ms().saturating_sub(t)))
    }
}

/// The rows of `table` the change feed of `rtxn`'s snapshot names from
/// `from_seq` on.
///
/// # Errors
/// `Store`.
pub fn changes_in(rtxn: &dyn RowView, table: &str, from_seq: u64) -> Result<TableChanges> {
    crate::io_counts::feed_read();
    let mut changes = TableChanges { next_seq: from_seq, ..TableChanges::default() };
    loop {
        let chunk = rtxn.feed_since(changes.next_seq, FEED_CHUNK)?;
        let Some(last) = chunk.last() else { break };
        changes.next_seq = last.seq + 1;
        for entry in chunk {
            if entry.table == table {
                if changes.first_seq == 0 {
                    changes.first_seq = entry.seq;
                }
                changes.last_seq = entry.seq;
                changes.rows.push(entry.row);
            }
        }
    }
    changes.next_seq = settled(rtxn, from_seq, changes.next_seq.max(rtxn.next_seq()?))?;
    changes.rows.sort_unstable();
    changes.rows.dedup();
    Ok(changes)
}

/// Where a reader of the feed from `from_seq` that read it to its end,
/// `read_to` (exclusive: past the last entry, and at least the view's own
/// next sequence, so a feed of times (HBase's) moves on when no entry came)
/// may say it has absorbed: no further than the view's settled sequence. The store's is always past its feed's end; a source
/// whose sequences are clock times (HBase) holds the last moments back,
/// so a write stamped a little in the past by a lagging clock is read by
/// the next pass (a row read twice is harmless; one skipped is not).
fn settled(rtxn: &dyn RowView, from_seq: u64, read_to: u64) -> Result<u64> {
    Ok(read_to.min(rtxn.settled_seq()?).max(from_seq))
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

/// One read of the change feed for every table (a refresh round's): per
/// table, the rows named and the sequence of each naming.
#[derive(Debug, Default)]
pub(crate) struct FeedRead {
    /// The sequence after the last entry read.
    pub next_seq: u64,
    named: HashMap<String, Vec<(u64, Vec<u8>)>>,
}

impl FeedRead {
    /// Reads the feed of `rtxn`'s snapshot from `from_seq` on.
    pub fn read(rtxn: &dyn RowView, from_seq: u64) -> Result<FeedRead> {
        crate::io_counts::feed_read();
        let mut read = FeedRead { next_seq: from_seq, named: HashMap::new() };
        loop {
            let chunk = rtxn.feed_since(read.next_seq, FEED_CHUNK)?;
            let Some(last) = chunk.last() else { break };
            read.next_seq = last.seq + 1;
            for entry in chunk {
                read.named.entry(entry.table).or_default().push((entry.seq, entry.row));
            }
        }
        read.next_seq = settled(rtxn, from_seq, read.next_seq.max(rtxn.next_seq()?))?;
        Ok(read)
    }

    /// The distinct rows of `table` named from `from_seq` on, sorted (as
    /// [`changes_in`] from that sequence would read them).
    pub fn rows_since(&self, table: &str, from_seq: u64) -> Vec<Vec<u8>> {
        let mut rows: Vec<Vec<u8>> = self
            .named
            .get(table)
            .into_iter()
            .flatten()
            .filter(|(seq, _)| *seq >= from_seq)
            .map(|(_, row)| row.clone())
            .collect();
        rows.sort_unstable();
        rows.dedup();
        rows
    }
}

/// Trims `store`'s change feed up to what every indexed table (its index
/// under `data`) has absorbed.
pub(crate) fn trim_feed(store: &dyn RowSource, data: &std::path::Path) -> Result<u64> {
    let mut lowest: Option<u64> = None;
    for table in store.tables()? {
        let Ok(schema) = store.schema(&table) else { continue };
        if schema.search.is_none() {
            continue;
        }
        let dir = IndexDir::new(data, &table);
        let Some(n) = dir.current()? else { continue };
        let index = dir.open_index(n)?;
        let next = indexed_next_seq(&table, &index)?;
        lowest = Some(lowest.map_or(next, |l| l.min(next)));
    }
    match lowest {
        Some(next) if next > 1 => Ok(store.trim_feed(next - 1)?),
        _ => Ok(0),
    }
}
