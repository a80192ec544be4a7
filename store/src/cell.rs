//! What reads return: rows of cells.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One cell version: (family, qualifier, timestamp) -> value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// The column family (shared between the cells of one read).
    pub family: Arc<str>,
    /// The qualifier (column name within the family), any bytes.
    pub qualifier: Vec<u8>,
    /// The version, milliseconds.
    pub timestamp: u64,
    /// The value (empty for keys-only reads).
    pub value: Vec<u8>,
}

/// A row: its key and its cells in HBase order (family name, then qualifier
/// ascending, then timestamp descending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The row key.
    pub key: Vec<u8>,
    /// The cells, never empty for a row returned by a read.
    pub cells: Vec<Cell>,
}

impl Row {
    /// The newest value of `family:qualifier` in this row, if read.
    pub fn value(&self, family: &str, qualifier: &[u8]) -> Option<&[u8]> {
        self.cells
            .iter()
            .find(|c| &*c.family == family && c.qualifier == qualifier)
            .map(|c| c.value.as_slice())
    }
}

/// A cell to write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutCell {
    /// The column family; must be declared in the table's schema.
    pub family: String,
    /// The qualifier, at most [`crate::MAX_QUALIFIER_BYTES`].
    pub qualifier: Vec<u8>,
    /// The version; `None` means the store's clock at commit time.
    pub timestamp: Option<u64>,
    /// The value.
    pub value: Vec<u8>,
}

impl PutCell {
    /// A cell stamped with the commit time.
    pub fn new(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> PutCell {
        PutCell { family: family.into(), qualifier: qualifier.into(), timestamp: None, value: value.into() }
    }

    /// Sets an explicit timestamp.
    pub fn at(mut self, timestamp: u64) -> PutCell {
        self.timestamp = Some(timestamp);
        self
    }
}
