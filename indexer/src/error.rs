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
    /// A table's search section cannot be indexed as declared.
    #[error("table {table:?} cannot be indexed: {reason}")]
    Schema {
        /// The table.
        table: String,
        /// Why not.
        reason: String,
    },
    /// The table has no index yet (run a full reindex).
    #[error("table {table:?} has no index yet: run a full reindex")]
    NoIndex {
        /// The table.
        table: String,
    },
    /// Another reindex of the table is running.
    #[error("another reindex of table {table:?} is running")]
    Busy {
        /// The table.
        table: String,
    },
    /// A query that does not parse.
    #[error("query {query:?} does not parse: {reason}")]
    Query {
        /// The query.
        query: String,
        /// What is wrong with it.
        reason: String,
        /// The byte where it goes wrong, when known.
        position: Option<usize>,
    },
    /// tantivy failed.
    #[error("index of table {table:?}: {op}: {source}")]
    Tantivy {
        /// The table.
        table: String,
        /// What was being done.
        op: &'static str,
        /// The underlying error.
        source: tantivy::TantivyError,
    },
    /// A new generation failed its check before being switched to.
    #[error("new generation {generation} of table {table:?} failed its check: {detail}")]
    Check {
        /// The table.
        table: String,
        /// The generation.
        generation: u64,
        /// What did not match.
        detail: String,
    },
    /// A file of the index directory is not what it should be.
    #[error("{path}: {detail}")]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A file operation on the index directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A search cursor from a snapshot that no longer serves.
    #[error(
        "cursor is from index generation {cursor_generation}, and the index has changed since \
         (generation {serving} serves): restart the walk without a cursor"
    )]
    StaleCursor {
        /// The generation the cursor was made on.
        cursor_generation: u64,
        /// The serving one.
        serving: u64,
    },
    /// The index did not reflect the writes a search must see within the
    /// request's time limit.
    #[error(
        "the index of table {table:?} did not reflect write {wanted} within the time limit \
         (it reflects writes up to {reflects}); try again, or ask with consistency=eventual"
    )]
    NotFresh {
        /// The table.
        table: String,
        /// The write (feed seq) the answer had to reflect.
        wanted: u64,
        /// The last write the index reflected.
        reflects: u64,
    },
    /// A search asked to reflect a write that has not happened yet.
    #[error("min_seq {min_seq} is past the store's last write (seq {last})")]
    FutureSeq {
        /// The sequence asked for.
        min_seq: u64,
        /// The store's last write.
        last: u64,
    },
    /// A backup that cannot be taken or restored as asked: the destination
    /// holds something, the backup is partial, corrupt or from a newer
    /// build.
    #[error("{path}: {detail}")]
    Backup {
        /// The backup or store directory, or the file at fault.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A planned failure (tests only).
    #[error("failpoint {0:?} reached")]
    FailPoint(FailPoint),
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
            Error::Input { .. }
            | Error::TableMismatch { .. }
            | Error::Schema { .. }
            | Error::NoIndex { .. }
            | Error::Busy { .. }
            | Error::Query { .. }
            | Error::StaleCursor { .. }
            | Error::FutureSeq { .. }
            | Error::Backup { .. } => true,
            Error::Store(e) => e.is_user_error(),
            Error::Report { .. }
            | Error::Tantivy { .. }
            | Error::Check { .. }
            | Error::Corrupted { .. }
            | Error::Io { .. }
            | Error::NotFresh { .. }
            | Error::FailPoint(_) => false,
        }
    }
}

/// A planned failure, for tests of what a failed reindex leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailPoint {
    /// Full: after the documents are added, before the tantivy commit.
    BeforeCommit,
    /// Full: after the commit, before the pointer switch.
    BeforeSwitch,
    /// Incremental: after half of the changed rows, before the commit.
    MidIncremental,
}

/// Maps a tantivy error of operation `op` on `table`'s index.
pub(crate) fn tantivy_err(
    table: &str,
    op: &'static str,
) -> impl FnOnce(tantivy::TantivyError) -> Error + use<> {
    let table = table.to_owned();
    move |source| Error::Tantivy { table, op, source }
}

impl Error {
    /// One error of every kind (store errors as one of them), for tests
    /// that must cover them all, such as the HTTP layer's status table. A
    /// new kind does not compile until it is added here.
    #[doc(hidden)]
    pub fn examples() -> Vec<Error> {
        let path = PathBuf::from("x");
        let io = || std::io::Error::other("x");
        let errors = vec![
            Error::Store(rowsearch_store::ErrorKind::Poisoned.into()),
            Error::Input { path: path.clone(), source: io() },
            Error::TableMismatch { table: "t".into(), format: "mail", reason: "x".into() },
            Error::Schema { table: "t".into(), reason: "x".into() },
            Error::NoIndex { table: "t".into() },
            Error::Busy { table: "t".into() },
            Error::Query { query: "q".into(), reason: "x".into(), position: None },
            Error::Tantivy {
                table: "t".into(),
                op: "x",
                source: tantivy::TantivyError::InternalError("x".into()),
            },
            Error::Check { table: "t".into(), generation: 1, detail: "x".into() },
            Error::Corrupted { path: path.clone(), detail: "x".into() },
            Error::Io { path: path.clone(), source: io() },
            Error::StaleCursor { cursor_generation: 1, serving: 2 },
            Error::NotFresh { table: "t".into(), wanted: 2, reflects: 1 },
            Error::FutureSeq { min_seq: 9, last: 8 },
            Error::FailPoint(FailPoint::BeforeCommit),
            Error::Backup { path: path.clone(), detail: "x".into() },
            Error::Report { path, source: io() },
        ];
        for e in &errors {
            match e {
                Error::Store(_)
                | Error::Input { .. }
                | Error::TableMismatch { .. }
                | Error::Schema { .. }
                | Error::NoIndex { .. }
                | Error::Busy { .. }
                | Error::Query { .. }
                | Error::Tantivy { .. }
                | Error::Check { .. }
                | Error::Corrupted { .. }
                | Error::Io { .. }
                | Error::StaleCursor { .. }
                | Error::NotFresh { .. }
                | Error::FutureSeq { .. }
                | Error::Backup { .. }
                | Error::FailPoint(_)
                | Error::Report { .. } => {}
            }
        }
        errors
    }
}
