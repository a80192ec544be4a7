//! rowsearch-indexer: the analyzer shared by ingest, keyword rows and
//! queries; mail ingest from files; the tantivy index generations built
//! from the store's keyword rows (full and incremental reindex), their
//! readers, and the check of store, keyword rows and index against each
//! other.
//!
//! ```
//! use rowsearch_indexer::{IngestOptions, ingest, open_store};
//! let dir = tempfile::tempdir()?;
//! let mail = dir.path().join("maildir/ann/inbox");
//! std::fs::create_dir_all(&mail)?;
//! std::fs::write(mail.join("1."), "Message-ID: <1@x>\nDate: Mon, 14 May 2001 16:39:00 -0700\nSubject: Gas prices\n\nCall me about the gas deal.\n")?;
//! let store = open_store(dir.path().join("data"))?;
//! let report = ingest(&store, &[dir.path().join("maildir")], &IngestOptions::default(), &mut |_| {})?;
//! assert_eq!((report.stored, report.duplicates), (1, 0));
//! let hits = store.keyword_lookup("mail", &rowsearch_indexer::store::KeywordQuery {
//!     partition: b"ann".to_vec(), terms: vec!["gas".into(), "deal".into()], ..Default::default()
//! })?;
//! assert_eq!(hits.hits.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod analyzer;
mod backup;
mod build;
mod cancellable;
mod changes;
mod collapse;
mod completion_cache;
mod correct;
// The tantivy field set and documents from keyword cells: public for the
// benches' raw-tantivy baseline (the same fields), not part of the API.
#[doc(hidden)]
pub mod doc;
mod error;
mod expand;
pub mod facets;
mod generation;
mod held;
mod inflight;
mod ingest;
// Counts of this thread's feed reads and index opens: public for the tests
// of what a search reads, not part of the API.
#[doc(hidden)]
pub mod io_counts;
mod live;
pub mod mail;
mod overlay;
mod pair_phrase;
pub mod pairs;
mod phrase_prefix;
mod place;
mod priority;
pub mod query;
mod reader;
mod refresh;
mod scoped_stats;
mod shard;
mod shard_stats;
mod sloppy_phrase;
mod snapshot;
mod suggest;
mod term_walk;
mod ties;
mod top_ties;
mod typos;
pub use completion_cache::{CACHED_PREFIX_CHARS, CACHED_TERMS};
mod verify;
mod word_cursor;

use std::path::Path;
use std::sync::Arc;

pub use analyzer::{TextAnalyzer, crop, highlight, normalize, parse_date_ms};
pub use backup::{
    BackupEntry, BackupFile, BackupOptions, BackupProgress, BackupReport, BackupTable, MANIFEST, Manifest,
    RestoreReport, backup, backup_into, list_backups, read_manifest, restore,
};
pub use build::{
    BuildRead, DEFAULT_MEMORY_BUDGET_BYTES, RegionDone, ReindexMode, ReindexOptions, ReindexProgress,
    ReindexReport, reindex,
};
pub use changes::{TableChanges, changes_in, pending_changes};
pub use error::{Error, FailPoint, Result};
pub use expand::QueryWords;
pub use generation::IndexDir;
pub use ingest::{
    DEFAULT_INGEST_NICE, DEFAULT_MAX_MESSAGE_BYTES, Format, IngestOptions, IngestProgress, IngestReport,
    MIN_INGEST_MEMORY_MB, Skipped, ingest,
};
pub use live::{
    Consistency, DEFAULT_OVERLAY_MAX_ROWS, Freshness, LiveIndex, LiveIndexes, Snapshot, Speculation,
    WALK_KEEP, Want,
};
pub use mail::{MAIL_DISPLAY, MailMessage, mail_schema, parse_message};
pub use overlay::Overlay;
pub use place::{Home, Place};
pub use priority::lower_thread_priority;
pub use reader::{Generation, KeyHits, SortBy, TableIndex};
pub use refresh::{EARLY_ROUND_WRITES, RefreshOptions, RefreshStatus, Refresher};
pub use rowsearch_store as store;
pub use shard::ShardSource;
pub use shard_stats::ShardStats;
pub use snapshot::{Completions, ParsedQuery, SCOPED_CANDIDATES};
pub use verify::{Mismatches, VerifyOptions, VerifyReport, verify};
pub use word_cursor::PositionFiles;

/// Drops a table of `place`: its rows, keyword rows and secondary indexes
/// (wherever it lives), then its search index generations (in the data
/// directory).
///
/// # Errors
/// As [`rowsearch_store::TableStore::drop_table`]; `Io` when the index
/// directory cannot be removed.
pub fn drop_table<'a>(place: impl Into<Place<'a>>, table: &str) -> Result<()> {
    let place = place.into();
    place.tables.drop_table(table)?;
    generation::IndexDir::new(place.data, table).remove_all()
}

/// Store options with the default analyzer, for callers that set more.
pub fn store_builder() -> rowsearch_store::StoreBuilder {
    rowsearch_store::Store::builder().analyzer(Arc::new(TextAnalyzer))
}

/// Opens (or creates) a store with the default analyzer, so searchable
/// tables keep their keyword rows.
///
/// # Errors
/// As [`rowsearch_store::StoreBuilder::open`].
pub fn open_store(dir: impl AsRef<Path>) -> Result<rowsearch_store::Store> {
    Ok(store_builder().open(dir)?)
}
