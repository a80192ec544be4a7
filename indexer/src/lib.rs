//! rowsearch-indexer: builds tantivy index generations from the store's
//! keyword rows.
//!
//! Not built yet: the analyzer, mail ingest, index generations, full and
//! incremental reindex and verify come with the ingest and indexer issues
//! (see DESIGN.md). The crate exists now so the dependency direction
//! `rowsearch -> rowsearch-indexer -> rowsearch-store` is fixed from the start.

#![warn(missing_docs)]

pub use rowsearch_store as store;
