//! Where an ingest writes rows when they do not go to the embedded store:
//! a narrow interface a second place rows live (an HBase cluster)
//! implements. The store itself is written through its own prepared
//! batches (keyword cells computed while the batch before is written).

use rowsearch_store::{PutCell, Row, TableSchema};

/// A place rows are written to (see the module docs).
pub trait RowSink: Send + Sync + std::fmt::Debug {
    /// The table's schema (`UnknownTable` when there is none).
    ///
    /// # Errors
    /// `UnknownTable`; the sink's own failures.
    fn schema(&self, table: &str) -> rowsearch_store::Result<TableSchema>;

    /// Creates `table` with `schema`.
    ///
    /// # Errors
    /// A refused schema; the sink's own failures.
    fn create_table(&self, table: &str, schema: &TableSchema) -> rowsearch_store::Result<()>;

    /// Each of `keys` of `table` that is a row, with its cells (for
    /// dropping duplicates and folding copies), in order.
    ///
    /// # Errors
    /// The sink's own failures.
    fn rows(&self, table: &str, keys: &[&[u8]]) -> rowsearch_store::Result<Vec<Option<Row>>>;

    /// Writes `rows` (sorted by key) with their keyword rows, as one batch
    /// where the sink can; an error that [`rowsearch_store::Error::is_user_error`]
    /// says is the input's makes the caller write the rows one by one to
    /// name the bad one.
    ///
    /// # Errors
    /// The sink's own failures.
    fn put_rows(&self, table: &str, rows: Vec<(Vec<u8>, Vec<PutCell>)>) -> rowsearch_store::Result<()>;

    /// What to call it in messages (`HBase at HOST:PORT`).
    fn name(&self) -> String;
}
