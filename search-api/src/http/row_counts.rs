//! The row counts `GET /tables/{t}` gives for the embedded store, kept
//! between calls.
//!
//! A table's rows are counted by a keys-only scan (exact, and linear in the
//! table: ~0.1 s for the full mail corpus). A count stays exact while no
//! row has changed since: every commit that touches a row takes the next
//! change-feed sequence (which live search relies on too), and a table
//! made again (dropped and created, or given more search fields) has a new
//! table id. So a count is kept with the snapshot's table id and next
//! sequence, and given again while a new snapshot shows the same two
//! (commits that touch no row, such as a consumer's acknowledgement or a
//! display setting, leave it). A table with a TTL is counted each time:
//! its cells expire with no commit at all.

use std::collections::HashMap;
use std::sync::Mutex;

use rowsearch_store::{Cancel, Scan, Store};

/// What a kept count was counted in: the table's id and the change-feed's
/// next sequence of that snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counted {
    table_id: u64,
    next_seq: u64,
}

/// The last count of each table, with what it was counted in.
#[derive(Debug, Default)]
pub(crate) struct RowCounts {
    kept: Mutex<HashMap<String, (Counted, u64)>>,
}

impl RowCounts {
    /// The rows of `table` in a snapshot of `store` taken now: the count
    /// kept from an earlier call when nothing was committed since, else
    /// counted (and kept).
    ///
    /// # Errors
    /// The store's (an unknown table, a disabled one, LMDB).
    pub(crate) fn rows(&self, store: &Store, table: &str) -> rowsearch_store::Result<u64> {
        let snapshot = store.begin_read()?;
        let at = Counted { table_id: snapshot.table_id(table)?, next_seq: snapshot.next_seq()? };
        let expires = snapshot.schema(table)?.families.iter().any(|f| f.ttl_seconds.is_some());
        if !expires
            && let Some(&(counted, rows)) = self.lock().get(table)
            && counted == at
        {
            return Ok(rows);
        }
        let rows = snapshot.count_until(table, &Scan { keys_only: true, ..Scan::new() }, &Cancel::never())?;
        if !expires {
            self.lock().insert(table.to_owned(), (at, rows));
        }
        Ok(rows)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Counted, u64)>> {
        // A panic elsewhere while holding it leaves only a cache behind.
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
