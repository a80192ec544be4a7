//! rowsearch: a wide-row store made searchable by keyword.
//!
//! This crate is the facade. It re-exports the store ([`store`]) and the
//! indexer ([`indexer`]) and holds the `rowsearch` command-line program. The
//! searcher and the HTTP server arrive with later work (see the README).
//!
//! ```
//! use rowsearch::store::{FamilySchema, PutCell, ReadOptions, Store, TableSchema};
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path())?;
//! store.create_table("notes", &TableSchema::new([FamilySchema::new("n")]))?;
//! store.put("notes", b"2026-11-22", vec![PutCell::new("n", "text", "hello")])?;
//! assert!(store.get("notes", b"2026-11-22", &ReadOptions::default())?.is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod error;
pub mod http;
pub mod json;
mod searcher;

pub use error::{Error, Result};
pub use rowsearch_indexer as indexer;
pub use rowsearch_store as store;
pub use searcher::{DEFAULT_LIMIT, MAX_LIMIT, SearchHit, SearchRequest, SearchResults, Searcher};

/// Binary strings (API.md, "Byte strings"), shared with the store's schema JSON.
pub use rowsearch_store::binstr as wire;
