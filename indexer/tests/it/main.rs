//! The indexer's integration tests: one test binary (one link), one module
//! per area.

mod ingest;
mod overlay;
mod query;
mod refresh;
mod reindex;
mod reindex_prop;
mod suggest;
