//! The facade's one error type.

/// Result alias for the facade.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a search or a request the facade handles itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store refused.
    #[error(transparent)]
    Store(#[from] rowsearch_store::Error),
    /// The indexer refused (no index yet, a query that does not parse...).
    #[error(transparent)]
    Indexer(#[from] rowsearch_indexer::Error),
    /// A request that is malformed (a bad parameter, a bad cursor).
    #[error("{0}")]
    BadRequest(String),
    /// A search cursor from a generation that no longer serves.
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
    /// The caller may not see or do this (a partition its key is not
    /// confined to).
    #[error("{0}")]
    Forbidden(String),
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
}

impl Error {
    /// Whether the caller can fix it by changing the request (exit status
    /// 2, a 4xx), as opposed to a failure of the store or the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Store(e) => e.is_user_error(),
            Error::Indexer(e) => e.is_usage(),
            Error::BadRequest(_) | Error::StaleCursor { .. } | Error::Forbidden(_) => true,
            Error::NotFresh { .. } => false,
        }
    }
}
