//! An open secondary index: its schema, databases and resolved columns.

use std::sync::Arc;

use crate::db::BytesDb;
use crate::db::family::FamilyHandle;
use crate::schema::IndexSchema;

/// An open index of a table.
#[derive(Debug)]
pub(crate) struct IndexHandle {
    pub schema: IndexSchema,
    /// The table's name (for errors) and region splits (stored keys):
    /// an entry starts with its row's region.
    pub table: String,
    pub splits: Vec<Vec<u8>>,
    pub db_name: String,
    pub db: BytesDb,
    /// The pending runs (see the module documentation).
    pub pending: BytesDb,
    /// The indexed columns, resolved.
    pub columns: Vec<(Arc<FamilyHandle>, Vec<u8>)>,
    /// Its entries are still being built from the rows (writes maintain it
    /// meanwhile; lookups are refused until it is ready).
    pub building: bool,
    /// The table's typed row key, for the stored key of a row (salted).
    pub row_key: Option<crate::key::rowkey::RowKeySchema>,
}
