//! Index entries kept outside the store (an index of a table that lives in
//! HBase, kept in an HBase table of its own): the store's entry bytes
//! (`entry.rs`, the one owner of the layout) in region 0, so entries sort
//! by values, then row key, and one query gives the same bounds, cut
//! values, checks and cursors as the store's lookups.

use super::entry::{StoredValue, entry_parts, push_value, query_bounds};
use super::lookup::{decode_cursor, encode_cursor, query_matches, validate};
use super::query::IndexQuery;
use crate::cell::Row;
use crate::error::{ErrorKind, Result};
use crate::key::push_escaped;
use crate::schema::{FamilySchema, TableSchema};

/// Region 0: entries outside the store have no regions of their own.
const REGION: [u8; 2] = [0, 0];

/// An index's entries as bytes, for a table's schema.
#[derive(Debug, Clone)]
pub struct EntryCodec {
    name: String,
    /// The indexed columns with their families' schemas.
    columns: Vec<(FamilySchema, Vec<u8>)>,
}

/// What one entry holds: the row key, and the values as the entry has them
/// (a cut value only its first bytes: check it against the row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryParts {
    /// The row key.
    pub key: Vec<u8>,
    /// The values, in column order.
    pub values: Vec<Vec<u8>>,
    /// Whether a value was cut (too long): only the row has it whole.
    pub cut: bool,
}

impl EntryCodec {
    /// The entries of index `index` of a table of `schema`.
    ///
    /// # Errors
    /// `UnknownIndex`; `InvalidSchema` (a column of no family).
    pub fn new(table: &str, schema: &TableSchema, index: &str) -> Result<EntryCodec> {
        let found = schema
            .indexes
            .iter()
            .find(|i| i.name == index)
            .ok_or_else(|| ErrorKind::UnknownIndex { table: table.to_owned(), index: index.to_owned() })?;
        let parsed = found
            .parsed_columns()
            .map_err(|reason| ErrorKind::InvalidSchema { table: table.to_owned(), reason })?;
        let mut columns = Vec::with_capacity(parsed.len());
        for (family, qualifier) in parsed {
            let f = schema.families.iter().find(|f| f.name == family).ok_or_else(|| {
                ErrorKind::InvalidSchema {
                    table: table.to_owned(),
                    reason: format!("index {index:?}: no family {family:?}"),
                }
            })?;
            columns.push((f.clone(), qualifier));
        }
        Ok(EntryCodec { name: index.to_owned(), columns })
    }

    /// The index's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The indexed columns: family and qualifier, in order.
    pub fn columns(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.columns.iter().map(|(f, q)| (f.name.as_str(), q.as_slice()))
    }

    /// The entry of `row` (its cells, newest version of each column first
    /// as reads give them) and its expiry (ms; `u64::MAX` for never);
    /// `None` when it lacks an indexed column or one has expired.
    pub fn entry(&self, row: &Row, now_ms: u64) -> Option<(Vec<u8>, u64)> {
        let mut newest: Vec<(u64, &[u8])> = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            let cell = row
                .cells
                .iter()
                .filter(|c| *c.family == *family.name && c.qualifier == *qualifier)
                .max_by_key(|c| c.timestamp)?;
            newest.push((cell.timestamp, &cell.value));
        }
        let mut out = REGION.to_vec();
        let mut expiry = u64::MAX;
        for ((family, _), (ts, value)) in self.columns.iter().zip(&newest) {
            if !family.is_live(*ts, now_ms) {
                return None;
            }
            if let Some(ttl) = family.ttl_ms() {
                expiry = expiry.min(ts.saturating_add(ttl));
            }
            push_value(&mut out, value, newest.len());
        }
        push_escaped(&mut out, &row.key);
        Some((out, expiry))
    }

    /// What `entry` holds.
    ///
    /// # Errors
    /// `Corrupted` (not an entry of this index).
    pub fn parts(&self, entry: &[u8]) -> Result<EntryParts> {
        let (parts, key) = entry_parts(&self.name, entry, self.columns.len())?;
        let cut = parts.iter().any(|p| matches!(p, StoredValue::Cut(_)));
        let values = parts
            .into_iter()
            .map(|p| match p {
                StoredValue::Whole(v) | StoredValue::Cut(v) => v,
            })
            .collect();
        Ok(EntryParts { key, values, cut })
    }

    /// The entry bounds of `query` (inclusive lower, exclusive upper; none:
    /// to the end), after its cursor.
    ///
    /// # Errors
    /// `InvalidIndexQuery`, `InvalidCursor`.
    pub fn bounds(&self, query: &IndexQuery) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        validate(&self.name, self.columns.len(), query)?;
        let after = match &query.cursor {
            None => None,
            Some(token) => Some(decode_cursor(token)?),
        };
        let (lo, hi) = query_bounds(query, after.as_deref(), self.columns.len());
        let hi = match hi {
            Some(h) => Some([&REGION[..], &h].concat()),
            None => Some(vec![0, 1]),
        };
        Ok(([&REGION[..], &lo].concat(), hi))
    }

    /// Whether full `values` (one per column, as the row has them) answer
    /// `query` (a widened bound or a cut value's hash may take in others).
    pub fn matches(query: &IndexQuery, values: &[Vec<u8>]) -> bool {
        query_matches(query, values)
    }

    /// The cursor that resumes a lookup after `entry`.
    pub fn cursor(entry: &[u8]) -> String {
        encode_cursor(entry.strip_prefix(&REGION[..]).unwrap_or(entry))
    }
}
