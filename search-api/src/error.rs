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
    /// The caller may not see or do this (a partition its key is not
    /// confined to).
    #[error("{0}")]
    Forbidden(String),
    /// A search needs a shard no searcher of its cluster serves now (one
    /// stopped, and its lease has not ended or been taken yet): the
    /// search is refused rather than answered without it.
    #[error(
        "shard {shard} of table {table:?} is not served by any searcher of the cluster now ({reason}); try again in a few seconds"
    )]
    ShardUnavailable {
        /// The table.
        table: String,
        /// The shard.
        shard: u32,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// Whether the caller can fix it by changing the request (exit status
    /// 2, a 4xx), as opposed to a failure of the store or the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Store(e) => e.is_user_error(),
            Error::Indexer(e) => e.is_usage(),
            Error::BadRequest(_) | Error::Forbidden(_) => true,
            Error::ShardUnavailable { .. } => false,
        }
    }
}
