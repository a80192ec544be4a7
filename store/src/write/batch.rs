//! Writes: puts and deletes, grouped into atomic batches.

use serde::{Deserialize, Serialize};

use crate::cell::PutCell;

/// What a delete removes from a row. Timestamps are inclusive upper bounds;
/// `None` removes every version whatever its timestamp.
///
/// Unlike HBase there are no tombstones: a delete removes the cells it
/// matches, and a later put with an older timestamp is visible again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delete {
    /// Every cell of the row (with timestamp <= `up_to`).
    Row {
        /// Inclusive upper bound on timestamps.
        up_to: Option<u64>,
    },
    /// Every cell of one family (with timestamp <= `up_to`).
    Family {
        /// The family.
        family: String,
        /// Inclusive upper bound on timestamps.
        up_to: Option<u64>,
    },
    /// Every version of one column (with timestamp <= `up_to`).
    Column {
        /// The family.
        family: String,
        /// The qualifier.
        qualifier: Vec<u8>,
        /// Inclusive upper bound on timestamps.
        up_to: Option<u64>,
    },
    /// Exactly one version of one column.
    Version {
        /// The family.
        family: String,
        /// The qualifier.
        qualifier: Vec<u8>,
        /// The version's timestamp.
        timestamp: u64,
    },
}

/// One mutation of one row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// Writes cells into a row.
    Put {
        /// The table.
        table: String,
        /// The row key.
        row: Vec<u8>,
        /// The cells.
        cells: Vec<PutCell>,
    },
    /// Removes cells from a row.
    Delete {
        /// The table.
        table: String,
        /// The row key.
        row: Vec<u8>,
        /// What to remove.
        what: Delete,
    },
}

impl Mutation {
    /// The table this mutation writes.
    pub fn table(&self) -> &str {
        match self {
            Mutation::Put { table, .. } | Mutation::Delete { table, .. } => table,
        }
    }

    /// The row this mutation writes.
    pub fn row(&self) -> &[u8] {
        match self {
            Mutation::Put { row, .. } | Mutation::Delete { row, .. } => row,
        }
    }
}

/// Mutations over any rows and tables that commit together or not at all.
///
/// ```
/// use rowsearch_store::{Batch, Delete, PutCell};
/// let mut batch = Batch::new();
/// batch.put("mail", b"row-1", vec![PutCell::new("m", "subject", "hello")]);
/// batch.delete("mail", b"row-0", Delete::Row { up_to: None });
/// assert_eq!(batch.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// The mutations, applied in order.
    pub mutations: Vec<Mutation>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Adds a put.
    pub fn put(
        &mut self,
        table: impl Into<String>,
        row: impl Into<Vec<u8>>,
        cells: Vec<PutCell>,
    ) -> &mut Batch {
        self.mutations.push(Mutation::Put { table: table.into(), row: row.into(), cells });
        self
    }

    /// Adds a delete.
    pub fn delete(&mut self, table: impl Into<String>, row: impl Into<Vec<u8>>, what: Delete) -> &mut Batch {
        self.mutations.push(Mutation::Delete { table: table.into(), row: row.into(), what });
        self
    }

    /// Number of mutations.
    pub fn len(&self) -> usize {
        self.mutations.len()
    }

    /// True when the batch holds no mutation.
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty()
    }
}
