//! The store's one error type.
//!
//! [`Error`] is opaque: match on [`Error::kind`]. Kinds split into user errors
//! (bad names, unknown tables, keys too long, schema conflicts: the caller can
//! fix the input) and internal ones (LMDB, I/O, corruption).

use std::path::PathBuf;

/// Result alias for the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from the store. Inspect it with [`Error::kind`].
#[derive(Debug)]
pub struct Error {
    kind: Box<ErrorKind>,
}

/// What went wrong, with the objects involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The directory exists but does not hold a rowsearch store.
    #[error("not a rowsearch store: {path}: {detail}")]
    NotAStore {
        /// The directory given to open.
        path: PathBuf,
        /// Why it was rejected.
        detail: String,
    },
    /// The store was written by an incompatible format version.
    #[error("unsupported store format in {path}: found {found:?}, expected {expected:?}")]
    UnsupportedFormat {
        /// The store directory.
        path: PathBuf,
        /// The format marker found.
        found: String,
        /// The format marker this build writes.
        expected: String,
    },
    /// The same directory is already open in this process.
    #[error("store already open in this process: {path}")]
    AlreadyOpen {
        /// The store directory.
        path: PathBuf,
    },
    /// Another process (or a repack) has the store open, and the operation
    /// needs it alone.
    #[error("store in use: {path}: {detail}")]
    InUse {
        /// The store directory.
        path: PathBuf,
        /// Who has it and what to do.
        detail: String,
    },
    /// An I/O error outside LMDB.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// LMDB reported an error.
    #[error("lmdb error during {operation}: {source}")]
    Lmdb {
        /// What the store was doing.
        operation: &'static str,
        /// The underlying error.
        source: heed::Error,
    },
    /// No table of that name exists.
    #[error("unknown table: {table:?}")]
    UnknownTable {
        /// The table name asked for.
        table: String,
    },
    /// The table has no family of that name.
    #[error("unknown family {family:?} in table {table:?}")]
    UnknownFamily {
        /// The table.
        table: String,
        /// The family asked for.
        family: String,
    },
    /// A table or family name breaks the naming rules.
    #[error("invalid {what} name {name:?}: {reason}")]
    InvalidName {
        /// `"table"` or `"family"`.
        what: &'static str,
        /// The name given.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A schema that cannot be used as given.
    #[error("invalid schema for table {table:?}: {reason}")]
    InvalidSchema {
        /// The table.
        table: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Key field values that do not fit the table's typed row key, or bytes
    /// that are not a key of it.
    #[error("invalid row key: {detail}")]
    InvalidRowKey {
        /// What does not fit.
        detail: String,
    },
    /// The table has no index of that name.
    #[error("unknown index {index:?} of table {table:?}")]
    UnknownIndex {
        /// The table.
        table: String,
        /// The index asked for.
        index: String,
    },
    /// An index lookup that does not fit the index.
    #[error("invalid lookup in index {index:?}: {reason}")]
    InvalidIndexQuery {
        /// The index.
        index: String,
        /// What does not fit.
        reason: String,
    },
    /// A keyword lookup that cannot run as given.
    #[error("invalid keyword lookup: {reason}")]
    InvalidKeywordQuery {
        /// What is wrong with it.
        reason: String,
    },
    /// The table has no `search` section, so no keyword rows.
    #[error("table {table:?} is not searchable: its schema has no search section")]
    NotSearchable {
        /// The table.
        table: String,
    },
    /// The table keeps no threads: its schema has no threads section.
    #[error("table {table:?} keeps no threads: its schema has no threads section")]
    NotThreaded {
        /// The table.
        table: String,
    },
    /// A searchable table was written through a store opened without an
    /// analyzer.
    #[error(
        "table {table:?} has a search section, but the store was opened without an analyzer (open it with rowsearch_indexer::open_store, or StoreBuilder::analyzer)"
    )]
    NoAnalyzer {
        /// The table.
        table: String,
    },
    /// A filter string that does not parse.
    #[error("invalid filter at byte {position}: expected {expected}, found {found}")]
    InvalidFilter {
        /// Byte offset in the filter string.
        position: usize,
        /// What the parser expected there.
        expected: String,
        /// What it found.
        found: String,
    },
    /// A serialized filter (HBase's protobuf `Filter`) that is not one, or
    /// names a filter or comparator rowsearch does not run.
    #[error("serialized filter: {message}")]
    FilterBytes {
        /// What is wrong, naming the filter.
        message: String,
    },
    /// A region index past the table's last region.
    #[error("table {table:?} has {regions} regions; there is no region {region}")]
    UnknownRegion {
        /// The table.
        table: String,
        /// The index asked for.
        region: usize,
        /// How many regions the table has.
        regions: usize,
    },
    /// A table of that name exists with a different schema.
    #[error("table {table:?} already exists with a different schema")]
    SchemaConflict {
        /// The table.
        table: String,
    },
    /// An index of that name exists on the table with other columns.
    #[error("index {index:?} of table {table:?} already exists with other columns")]
    IndexConflict {
        /// The table.
        table: String,
        /// The index.
        index: String,
    },
    /// The index's entries are still being built from the table's rows.
    #[error("index {index:?} of table {table:?} is being built; lookups wait until it is ready")]
    IndexBuilding {
        /// The table.
        table: String,
        /// The index.
        index: String,
    },
    /// The row key is empty.
    #[error("empty row key in table {table:?}")]
    EmptyRowKey {
        /// The table.
        table: String,
    },
    /// The row key exceeds [`crate::MAX_ROW_KEY_BYTES`].
    #[error("row key too long: {len} bytes, max {max} (key starts {preview})")]
    RowKeyTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
        /// The first bytes, escaped.
        preview: String,
    },
    /// The qualifier exceeds [`crate::MAX_QUALIFIER_BYTES`].
    #[error("qualifier too long: {len} bytes, max {max} (family {family:?})")]
    QualifierTooLong {
        /// The family.
        family: String,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A key the store builds from the data (an index entry, a keyword
    /// cell) is longer than LMDB's 511 bytes; nothing of the write was
    /// stored.
    #[error("{operation}: a key built from the data is longer than LMDB's 511-byte limit")]
    KeyTooLarge {
        /// What was being written.
        operation: &'static str,
    },
    /// The work was cancelled before it ended (`Cancel`, `cancel.rs`).
    #[error("cancelled: {reason}")]
    Cancelled {
        /// Why.
        reason: CancelReason,
    },
    /// A scan cursor token that this store did not produce.
    #[error("invalid scan cursor: {reason}")]
    InvalidCursor {
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A well-formed scan cursor that does not apply to this scan (it
    /// comes from a scan in the other direction).
    #[error("scan cursor does not apply: {reason}")]
    CursorMismatch {
        /// Why.
        reason: &'static str,
    },
    /// A read or write of rows of a disabled table (HBase's
    /// `TableNotEnabledException`).
    #[error("table {table:?} is disabled: enable it to read or write its rows")]
    TableDisabled {
        /// The table.
        table: String,
    },
    /// An increment of a cell that does not hold a counter (8 bytes, a
    /// big-endian signed integer, as HBase's `Increment` keeps them), or
    /// one that would overflow it.
    #[error("cannot increment {family}:{qualifier} of row {row} in table {table:?}: {detail}")]
    NotACounter {
        /// The table.
        table: String,
        /// The row key, escaped.
        row: String,
        /// The family.
        family: String,
        /// The qualifier, escaped.
        qualifier: String,
        /// Why.
        detail: String,
    },
    /// A change-feed consumer that does not exist.
    #[error("no change-feed consumer {name:?}")]
    UnknownConsumer {
        /// The name given.
        name: String,
    },
    /// A read of the change feed after a sequence whose following entries
    /// were trimmed: the reader (or consumer) fell behind the feed.
    #[error(
        "the change feed no longer holds the changes after sequence {since}: it starts at {oldest}; read the table again (export) and follow from its sequence"
    )]
    FellBehind {
        /// The sequence asked after.
        since: u64,
        /// The oldest sequence the feed holds (the next one when empty).
        oldest: u64,
    },
    /// A read of the change feed after a sequence it has not reached.
    #[error("the change feed has not reached sequence {since}: its last is {last}")]
    PastFeedEnd {
        /// The sequence asked after.
        since: u64,
        /// The last sequence committed (0 for none).
        last: u64,
    },
    /// Bytes in the store that do not decode.
    #[error("corrupted data in database {db:?} at key {key}: {detail}")]
    Corrupted {
        /// The LMDB database name.
        db: String,
        /// The key, escaped.
        key: String,
        /// What did not decode.
        detail: String,
    },
    /// The memory map is full and could not grow.
    #[error("store is full: the memory map could not grow past {map_size_bytes} bytes: {reason}")]
    MapFull {
        /// The current map size.
        map_size_bytes: usize,
        /// Why growth failed.
        reason: String,
    },
    /// The LMDB environment has no room for another database (one per family).
    #[error(
        "too many families in the store: max_dbs {max_dbs} reached (raise it with StoreBuilder::max_dbs)"
    )]
    TooManyDatabases {
        /// The configured limit.
        max_dbs: u32,
    },
    /// LMDB could not restore a consistent state after a failed commit
    /// (`MDB_PANIC`): the environment refuses every transaction until the
    /// store is reopened.
    #[error("store is poisoned by an earlier failed commit; reopen it")]
    Poisoned,
    /// A write failed because the file system holding the store is full.
    /// Nothing of the write was applied; writes succeed again once there is
    /// room (free space, or delete data: freed pages are reused).
    #[error("disk full: the file system of {path} has {available_bytes} bytes free; nothing was written")]
    DiskFull {
        /// The store's directory.
        path: PathBuf,
        /// Bytes free when the write failed.
        available_bytes: u64,
    },
    /// A caller's callback stopped an iteration with its own error
    /// ([`Error::callback`]; get it back with [`Error::into_callback`]).
    #[error(transparent)]
    Callback {
        /// The caller's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Why work was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The request's time limit passed.
    TimeLimit,
    /// Whoever asked for the work has gone (an HTTP client disconnected).
    Abandoned,
}

impl std::fmt::Display for CancelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CancelReason::TimeLimit => "the request's time limit passed",
            CancelReason::Abandoned => "the client has gone",
        })
    }
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error, returning its kind.
    pub fn into_kind(self) -> ErrorKind {
        *self.kind
    }

    /// True for errors the caller caused and can fix by changing the input
    /// (names, keys, schemas, cursors). False for LMDB, I/O and corruption.
    pub fn is_user_error(&self) -> bool {
        matches!(
            *self.kind,
            ErrorKind::UnknownTable { .. }
                | ErrorKind::UnknownFamily { .. }
                | ErrorKind::InvalidName { .. }
                | ErrorKind::InvalidSchema { .. }
                | ErrorKind::InvalidRowKey { .. }
                | ErrorKind::UnknownRegion { .. }
                | ErrorKind::UnknownIndex { .. }
                | ErrorKind::InvalidIndexQuery { .. }
                | ErrorKind::InvalidFilter { .. }
                | ErrorKind::FilterBytes { .. }
                | ErrorKind::InvalidKeywordQuery { .. }
                | ErrorKind::NotSearchable { .. }
                | ErrorKind::NotThreaded { .. }
                | ErrorKind::SchemaConflict { .. }
                | ErrorKind::IndexConflict { .. }
                | ErrorKind::IndexBuilding { .. }
                | ErrorKind::TooManyDatabases { .. }
                | ErrorKind::EmptyRowKey { .. }
                | ErrorKind::RowKeyTooLong { .. }
                | ErrorKind::QualifierTooLong { .. }
                | ErrorKind::KeyTooLarge { .. }
                | ErrorKind::InvalidCursor { .. }
                | ErrorKind::CursorMismatch { .. }
                | ErrorKind::NotACounter { .. }
                | ErrorKind::TableDisabled { .. }
                | ErrorKind::UnknownConsumer { .. }
                | ErrorKind::FellBehind { .. }
                | ErrorKind::PastFeedEnd { .. }
        )
    }

    /// True when a table, family or other named object does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(
            *self.kind,
            ErrorKind::UnknownTable { .. }
                | ErrorKind::UnknownFamily { .. }
                | ErrorKind::UnknownRegion { .. }
                | ErrorKind::UnknownConsumer { .. }
        )
    }

    /// Stored bytes that do not decode: `key` of database `db` (shown as a
    /// preview), and what is wrong with them.
    pub(crate) fn corrupted(db: &str, key: &[u8], detail: impl Into<String>) -> Error {
        ErrorKind::Corrupted { db: db.to_owned(), key: preview(key), detail: detail.into() }.into()
    }

    /// Wraps a caller's own error so that a callback can stop an iteration
    /// with it (for example [`crate::ReadTxn::for_each_keyword_cell`]).
    pub fn callback(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        ErrorKind::Callback { source: source.into() }.into()
    }

    /// The caller's error back, if this is a [`Error::callback`] one of
    /// type `E`; otherwise the error itself.
    ///
    /// # Errors
    /// `self` when it does not hold an `E`.
    pub fn into_callback<E: std::error::Error + 'static>(self) -> std::result::Result<E, Error> {
        match *self.kind {
            ErrorKind::Callback { source } => match source.downcast::<E>() {
                Ok(inner) => Ok(*inner),
                Err(source) => Err(ErrorKind::Callback { source }.into()),
            },
            kind => Err(Error { kind: Box::new(kind) }),
        }
    }

    pub(crate) fn lmdb(operation: &'static str, source: heed::Error) -> Error {
        if let heed::Error::Mdb(heed::MdbError::BadValSize) = source {
            return ErrorKind::KeyTooLarge { operation }.into();
        }
        ErrorKind::Lmdb { operation, source }.into()
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            ErrorKind::Io { source, .. } => Some(source),
            ErrorKind::Lmdb { source, .. } => Some(source),
            ErrorKind::Callback { source } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind: Box::new(kind) }
    }
}

/// Escapes bytes for error messages: printable ASCII as is, others as `\xNN`,
/// cut at 32 bytes.
pub(crate) fn preview(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes.iter().take(32) {
        if b.is_ascii_graphic() || b == b' ' {
            if b == b'\\' {
                out.push_str("\\\\");
            } else {
                out.push(b as char);
            }
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > 32 {
        out.push_str("...");
    }
    out
}

impl ErrorKind {
    /// One error of every kind, for tests that must cover them all (such
    /// as the HTTP layer's status table). A new kind does not compile until
    /// it is added here.
    #[doc(hidden)]
    pub fn examples() -> Vec<Error> {
        let path = PathBuf::from("data");
        let kinds = vec![
            ErrorKind::NotAStore { path: path.clone(), detail: "x".into() },
            ErrorKind::UnsupportedFormat { path: path.clone(), found: "a".into(), expected: "b".into() },
            ErrorKind::AlreadyOpen { path: path.clone() },
            ErrorKind::InUse { path: path.clone(), detail: "x".into() },
            ErrorKind::Io { path, source: std::io::Error::other("x") },
            ErrorKind::Lmdb { operation: "x", source: heed::Error::Mdb(heed::MdbError::Panic) },
            ErrorKind::UnknownTable { table: "t".into() },
            ErrorKind::UnknownFamily { table: "t".into(), family: "f".into() },
            ErrorKind::InvalidName { what: "table", name: "..".into(), reason: "x" },
            ErrorKind::InvalidSchema { table: "t".into(), reason: "x".into() },
            ErrorKind::InvalidRowKey { detail: "x".into() },
            ErrorKind::UnknownIndex { table: "t".into(), index: "i".into() },
            ErrorKind::InvalidIndexQuery { index: "i".into(), reason: "x".into() },
            ErrorKind::InvalidKeywordQuery { reason: "x".into() },
            ErrorKind::NotSearchable { table: "t".into() },
            ErrorKind::NotThreaded { table: "t".into() },
            ErrorKind::NoAnalyzer { table: "t".into() },
            ErrorKind::InvalidFilter { position: 0, expected: "x".into(), found: "y".into() },
            ErrorKind::FilterBytes { message: "x".into() },
            ErrorKind::UnknownRegion { table: "t".into(), region: 9, regions: 1 },
            ErrorKind::SchemaConflict { table: "t".into() },
            ErrorKind::IndexConflict { table: "t".into(), index: "i".into() },
            ErrorKind::IndexBuilding { table: "t".into(), index: "i".into() },
            ErrorKind::EmptyRowKey { table: "t".into() },
            ErrorKind::RowKeyTooLong { len: 999, max: 160, preview: "x".into() },
            ErrorKind::QualifierTooLong { family: "f".into(), len: 999, max: 80 },
            ErrorKind::KeyTooLarge { operation: "x" },
            ErrorKind::InvalidCursor { reason: "x" },
            ErrorKind::CursorMismatch { reason: "x" },
            ErrorKind::Cancelled { reason: CancelReason::TimeLimit },
            ErrorKind::Corrupted { db: "d".into(), key: "k".into(), detail: "x".into() },
            ErrorKind::MapFull { map_size_bytes: 1, reason: "x".into() },
            ErrorKind::TooManyDatabases { max_dbs: 1 },
            ErrorKind::NotACounter {
                table: "t".into(),
                row: "r".into(),
                family: "f".into(),
                qualifier: "q".into(),
                detail: "it holds 3 bytes".into(),
            },
            ErrorKind::TableDisabled { table: "t".into() },
            ErrorKind::UnknownConsumer { name: "c".into() },
            ErrorKind::FellBehind { since: 1, oldest: 5 },
            ErrorKind::PastFeedEnd { since: 9, last: 5 },
            ErrorKind::Poisoned,
            ErrorKind::DiskFull { path: "d".into(), available_bytes: 0 },
            ErrorKind::Callback { source: "x".into() },
        ];
        kinds.iter().for_each(listed);
        kinds.into_iter().map(Error::from).collect()
    }
}

/// Lists every kind without a wildcard: a new kind fails to compile here,
/// which points at [`ErrorKind::examples`].
fn listed(kind: &ErrorKind) {
    match kind {
        ErrorKind::NotAStore { .. }
        | ErrorKind::UnsupportedFormat { .. }
        | ErrorKind::AlreadyOpen { .. }
        | ErrorKind::InUse { .. }
        | ErrorKind::Io { .. }
        | ErrorKind::Lmdb { .. }
        | ErrorKind::UnknownTable { .. }
        | ErrorKind::UnknownFamily { .. }
        | ErrorKind::InvalidName { .. }
        | ErrorKind::InvalidSchema { .. }
        | ErrorKind::InvalidRowKey { .. }
        | ErrorKind::UnknownIndex { .. }
        | ErrorKind::InvalidIndexQuery { .. }
        | ErrorKind::InvalidKeywordQuery { .. }
        | ErrorKind::NotSearchable { .. }
        | ErrorKind::NotThreaded { .. }
        | ErrorKind::NoAnalyzer { .. }
        | ErrorKind::InvalidFilter { .. }
        | ErrorKind::FilterBytes { .. }
        | ErrorKind::UnknownRegion { .. }
        | ErrorKind::SchemaConflict { .. }
        | ErrorKind::IndexConflict { .. }
        | ErrorKind::IndexBuilding { .. }
        | ErrorKind::EmptyRowKey { .. }
        | ErrorKind::RowKeyTooLong { .. }
        | ErrorKind::QualifierTooLong { .. }
        | ErrorKind::KeyTooLarge { .. }
        | ErrorKind::InvalidCursor { .. }
        | ErrorKind::CursorMismatch { .. }
        | ErrorKind::NotACounter { .. }
        | ErrorKind::TableDisabled { .. }
        | ErrorKind::UnknownConsumer { .. }
        | ErrorKind::FellBehind { .. }
        | ErrorKind::PastFeedEnd { .. }
        | ErrorKind::Cancelled { .. }
        | ErrorKind::Corrupted { .. }
        | ErrorKind::MapFull { .. }
        | ErrorKind::TooManyDatabases { .. }
        | ErrorKind::Poisoned
        | ErrorKind::DiskFull { .. }
        | ErrorKind::Callback { .. } => {}
    }
}
