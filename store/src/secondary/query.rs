//! What a secondary-index lookup asks and answers.

use serde::Serialize;

/// A lookup in one index: equality on leading columns, then optionally a
/// prefix or a range on the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexQuery {
    /// Values the leading columns must equal, in column order.
    pub eq: Vec<Vec<u8>>,
    /// The next column starts with this.
    pub prefix: Option<Vec<u8>>,
    /// The next column is at least this.
    pub start: Option<Vec<u8>>,
    /// The next column is below this.
    pub stop: Option<Vec<u8>>,
    /// Most keys returned.
    pub limit: Option<usize>,
    /// Resume after this token (from [`IndexPage::next_cursor`]).
    pub cursor: Option<String>,
    /// Only entries of rows in this region; `None` merges every region.
    pub region: Option<usize>,
}

/// One match of an index lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexHit {
    /// The indexed values, in column order.
    pub values: Vec<Vec<u8>>,
    /// The row key.
    pub key: Vec<u8>,
}

/// A page of index matches, in index order (values, then row key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPage {
    /// The matches.
    pub hits: Vec<IndexHit>,
    /// Present when the limit cut the lookup short.
    pub next_cursor: Option<String>,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IndexVerifyReport {
    /// Entries checked.
    pub entries: u64,
    /// Rows whose entry is missing from the index (row keys, first 100).
    pub missing: Vec<Vec<u8>>,
    /// Entries the data does not justify (entry keys, first 100).
    pub extra: Vec<Vec<u8>>,
    /// Counts, beyond the samples.
    pub missing_count: u64,
    /// Counts, beyond the samples.
    pub extra_count: u64,
}

/// An index as [`crate::Store::indexes`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexState {
    /// Its name and columns.
    pub schema: crate::schema::IndexSchema,
    /// Its entries are still being built from the rows; lookups answer
    /// `IndexBuilding` meanwhile.
    pub building: bool,
    /// Live entries (entries past their TTL included until compaction).
    pub entries: u64,
}

impl IndexVerifyReport {
    /// No difference found.
    pub fn is_clean(&self) -> bool {
        self.missing_count == 0 && self.extra_count == 0
    }
}

/// One lookup of a combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTerm {
    /// The index.
    pub index: String,
    /// The lookup (its limit and cursor are ignored).
    pub query: IndexQuery,
}
