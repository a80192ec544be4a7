//! Pages of the change feed for others, as `GET /tables/{t}/changes` and
//! `rowsearch changes` show them: each change a row key with its kind and,
//! when asked, the row's cells as they stand when the page is read.

use rowsearch_store::{ReadOptions, TableStore};
use serde_json::{Value, json};

use crate::json::{Encoding, key_json_in, row_json_in};

/// Changes in a page when no limit is given.
pub const DEFAULT_LIMIT: usize = 1000;

/// What a page of changes asks.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest<'a> {
    /// The table.
    pub table: &'a str,
    /// The changes after this sequence.
    pub since: u64,
    /// At most this many changes.
    pub limit: usize,
    /// Each changed row's cells (as it stands now).
    pub cells: bool,
    /// How byte strings are written.
    pub encoding: Encoding,
}

/// A page of changes.
#[derive(Debug, Clone)]
pub struct ChangesPage {
    /// The changes, in sequence order: `seq`, `kind` (`put`: the row
    /// exists when the page is read; `delete`: it does not), `key`,
    /// `key_fields` for a typed key, and `cells` when asked.
    pub changes: Vec<Value>,
    /// The last sequence looked at (of any table): the next page starts
    /// after it.
    pub cursor: u64,
    /// The last sequence committed when the page was read.
    pub last_seq: u64,
}

impl ChangesPage {
    /// The page as the HTTP API answers it.
    pub fn to_json(&self) -> Value {
        json!({"changes": self.changes, "cursor": self.cursor, "last_seq": self.last_seq})
    }
}

/// Which rows a reader may see, by key.
pub type Sees<'f, E> = dyn Fn(&[u8]) -> Result<bool, E> + 'f;

/// Reads a page of `request.table`'s changes from where `tables` live (the
/// store's feed, or HBase's: `rowsearch_store::ChangeFeed`), the changed
/// rows read as they stand then; `sees` says which rows the reader may see
/// (an access key's partitions).
///
/// # Errors
/// `FellBehind` when changes after `since` are gone, `PastFeedEnd`,
/// `UnknownTable`, what `sees` returns; the place's own failures.
pub fn read_page<E: From<rowsearch_store::Error>>(
    tables: &dyn TableStore,
    request: &PageRequest<'_>,
    sees: &Sees<'_, E>,
) -> Result<ChangesPage, E> {
    let PageRequest { table, since, limit, cells, encoding } = *request;
    let schema = tables.schema(table)?;
    // Entries of other tables are passed over without counting against
    // the page, but a page looks at a bounded number of them.
    let look_at = limit.saturating_mul(16).max(4096);
    let read = tables.changes_after(since, look_at)?;
    let mut cursor = since;
    let mut picked = Vec::new();
    let mut whole = read.whole;
    for entry in &read.entries {
        // A full page ends between sequences: changes that share one
        // (HBase's) are never split between pages.
        if picked.len() >= limit && entry.seq != cursor {
            whole = false;
            break;
        }
        cursor = entry.seq;
        if entry.table == table && sees(&entry.row)? {
            picked.push(entry);
        }
    }
    let keys: Vec<&[u8]> = picked.iter().map(|e| e.row.as_slice()).collect();
    let rows =
        if keys.is_empty() { Vec::new() } else { tables.rows(table, &keys, &ReadOptions::default())? };
    let changes = picked
        .iter()
        .zip(rows)
        .map(|(entry, row)| {
            let mut change = match (&row, cells) {
                (Some(row), true) => row_json_in(row, schema.row_key.as_ref(), encoding),
                _ => key_json_in(&entry.row, schema.row_key.as_ref(), encoding),
            };
            change["seq"] = json!(entry.seq);
            change["kind"] = json!(if row.is_some() { "put" } else { "delete" });
            change
        })
        .collect();
    // Past the read's last entry nothing is left to look at up to the
    // feed's last sequence.
    if whole {
        cursor = cursor.max(read.last_seq);
    }
    Ok(ChangesPage { changes, cursor, last_seq: read.last_seq })
}
