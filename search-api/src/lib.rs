//! rowsearch: a wide-row store made searchable by keyword.
//!
//! This crate is the facade: [`Rowsearch`] opens a data directory and gives
//! the store ([`store`], HBase's data model on LMDB), reindexing
//! ([`indexer`]: tantivy index generations built from the keyword rows) and
//! the [`Searcher`] (queries resolved back against the store). [`http`] is
//! the HTTP API of the `rowsearch serve` command.
//!
//! ```
//! use rowsearch::Rowsearch;
//! let dir = tempfile::tempdir()?;
//! let rs = Rowsearch::open(dir.path())?;
//! let mail = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
//! rs.ingest(&[mail])?;                       // the "mail" table, keyword rows included
//! rs.reindex("mail")?;                        // the search index, from the keyword rows
//! let found = rs.search("mail", "\"natural gas\" price")?;
//! assert!(found.total > 0);
//! for hit in &found.hits {
//!     assert!(hit.row.value("m", b"subject").is_some());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod client_slots;
pub mod cluster;
mod cursor;
pub mod document;
mod error;
mod facade;
pub mod feed;
pub mod hbase;
pub mod http;
pub mod json;
pub mod keys;
mod request;
mod searcher;
pub mod suggest;
pub mod threads;
pub mod thrift;
pub mod transfer;

pub use error::{Error, Result};
pub use facade::Rowsearch;
pub use rowsearch_indexer as indexer;
pub use rowsearch_store as store;
pub use searcher::{
    Asked, Consistency, DEFAULT_FACET_LIMIT, DEFAULT_FRESHNESS_WAIT, DEFAULT_LIMIT, DEFAULT_OVERLAY_MAX_ROWS,
    FindKeys, Freshness, MAX_FACET_LIMIT, MAX_HIGHLIGHT_TEXT_BYTES, MAX_LIMIT, MAX_RESULT_WINDOW, SearchHit,
    SearchRequest, SearchResults, SearchSteps, Searcher, UnknownUser,
};
pub use suggest::{SuggestRequest, Suggestion, Suggestions};

/// Binary strings (API.md, "Byte strings"), shared with the store's schema JSON.
pub use rowsearch_store::binstr as wire;
