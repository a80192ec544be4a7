//! The indexer's one error type.

use std::path::PathBuf;

/// Result alias for the indexer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with the objects involved. Files that cannot be read
/// or parsed during an ingest are not errors: they are skipped and listed in
/// the [`crate::IngestReport`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store refused an operation.
    #[error(transparent)]
    Store(#[from] rowsearch_store::Error),
    /// An input path that does not exist or cannot be listed.
    #[error("cannot read input {path}: {source}")]
    Input {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The target table exists but cannot take this input.
    #[error("table {table:?} cannot take {format} input: {reason}")]
    TableMismatch {
        /// The table.
        table: String,
        /// The input format.
        format: &'static str,
        /// Why not.
        reason: String,
    },
    /// Writing the report file failed.
    #[error("cannot write report {path}: {source}")]
    Report {
        /// The report file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// Whether the caller can fix it by changing the input or options (exit
    /// status 2), as opposed to a failure of the store or the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Input { .. } | Error::TableMismatch { .. } => true,
            Error::Store(e) => e.is_user_error(),
            Error::Report { .. } => false,
        }
    }
}
