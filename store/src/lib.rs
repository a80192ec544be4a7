//! rowsearch-store: an embedded wide-row store with HBase's data model on LMDB.
//!
//! A store holds tables; a table declares column families; a cell is addressed
//! by (row key, family, qualifier, timestamp) and holds bytes. Reads return
//! cells in HBase order: row key bytewise ascending, then family, then
//! qualifier ascending, then timestamp descending.
//!
//! Guarantees:
//! - a [`Batch`] of mutations over any rows and tables commits atomically and
//!   durably in one LMDB write transaction, with its change-feed entries;
//! - readers see consistent snapshots and never block the writer;
//! - the memory map grows on demand: `MDB_MAP_FULL` never reaches a caller
//!   (the write is retried on a larger map);
//! - scans stream, row by row: memory does not grow with the rows walked;
//! - versions past a family's `max_versions` are purged on write; cells past
//!   its `ttl_seconds` are never returned and are purged by
//!   [`Store::compact`] (and on write to their column);
//! - a table may declare a typed row key ([`RowKeySchema`]: fields that sort
//!   as tuples, `desc` fields, salting that reads and writes as if unsalted)
//!   and `splits` that cut it into regions ([`Store::for_each_region`]);
//! - scans take HBase's filters ([`Filter`], or its filter language through
//!   [`Filter::parse`]); range-bounding filters seek, scan-ending filters stop.
//!
//! Limits: row keys 1 to [`MAX_ROW_KEY_BYTES`] bytes, qualifiers at most
//! [`MAX_QUALIFIER_BYTES`], table names at most [`MAX_TABLE_NAME_BYTES`],
//! family names at most [`MAX_FAMILY_NAME_BYTES`] (ASCII letters, digits,
//! `_ - .`), and at most [`DEFAULT_MAX_DBS`] LMDB databases for tables
//! (one per family, two per secondary index, one per searchable table's
//! keyword rows) unless [`StoreBuilder::max_dbs`] says otherwise.
//!
//! ```
//! use rowsearch_store::{Batch, FamilySchema, PutCell, Scan, Store, TableSchema};
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path())?;
//! store.create_table("users", &TableSchema::new([FamilySchema::new("info").max_versions(3)]))?;
//! let mut batch = Batch::new();
//! for name in ["ann", "bob", "cid"] {
//!     batch.put("users", name, vec![PutCell::new("info", "name", name.to_uppercase())]);
//! }
//! store.apply(&batch)?;
//! let page = store.scan("users", &Scan::new().start("b").limit(1))?;
//! assert_eq!(page.rows[0].key, b"bob");
//! let next = store.scan("users", &Scan::new().start("b").limit(1).cursor(page.next_cursor.unwrap()))?;
//! assert_eq!(next.rows[0].key, b"cid");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod binstr;
mod cancel;
mod cell;
mod changes;
mod clock;
mod counters;
mod cursor;
mod db;
mod error;
mod filter;
mod key;
mod keyword;
mod place;
mod read;
mod schema;
mod secondary;
mod source;
mod store;
mod stream;
mod table;
mod threads;
mod upgrade;
mod write;

pub use cancel::Cancel;
pub use cell::{Cell, PutCell, Row};
pub use changes::{ChangeFeed, FeedRead};
pub use clock::{Clock, ManualClock, SystemClock};
pub use db::backup::CopyFacts;
pub use db::consumers::{
    Consumer, ConsumerState, DEFAULT_RETENTION_MS, MAX_CONSUMER_NAME, MAX_RETENTION_MS, name_in_scope,
    scoped_name, validate_name as validate_consumer_name, validate_stored as validate_stored_consumer_name,
};
pub use db::durability::Durability;
pub use db::feed::{CommitInfo, FeedEntry};
pub use db::keys::KeyRecord;
pub use db::repack::{
    LOOSE_MIN_BYTES, LOOSE_RATIO, Packing, RepackReport, RepackedDatabase, pack_when_loose, repack,
};
pub use db::{FORMAT, UPGRADES_FROM};
pub use error::{CancelReason, Error, ErrorKind, Result};
pub use filter::lang::{MAX_FILTER_BYTES, MAX_FILTER_DEPTH};
pub use filter::{Comparator, CompareOp, Filter, FuzzyKey, ListOp, MultiRowRange, RegexComparator};
pub use key::rowkey::{
    KeyField, KeyOrder, KeyType, KeyValue, MAX_SALT_BUCKETS, RowKeySchema, compare_tuples,
};
pub use key::{MAX_QUALIFIER_BYTES, MAX_ROW_KEY_BYTES, prefix_successor};
pub use keyword::{
    KeywordCell, KeywordCellRef, KeywordHit, KeywordPage, KeywordQuery, Positions,
    for_each_kept_keyword_cell_of, for_each_keyword_cell_of, key_partition_of, keyword_cells_of,
    position_gaps, required_terms,
};
pub use place::{Following, PlaceInfo, TableStore};
pub use read::{ALL_VERSIONS, ReadOptions, ReadTxn, Scan, ScanCursor, ScanIter, ScanPage};
pub use schema::{
    Analyzer, CATALOG_TABLE, Column, Compression, DATE_NAME, DEFAULT_SUBJECT_WINDOW_MS, FamilySchema,
    FieldKind, IndexSchema, KEYWORDS_SUFFIX, MAX_FAMILIES, MAX_FAMILY_NAME_BYTES, MAX_INDEXES,
    MAX_SEARCH_FIELDS, MAX_SHARDS, MAX_TABLE_NAME_BYTES, SearchField, SearchSchema, THREADS_SUFFIX,
    TableSchema, ThreadSchema,
};
pub use secondary::{
    EntryCodec, EntryParts, IndexHit, IndexPage, IndexQuery, IndexState, IndexTerm, IndexVerifyReport,
};
pub use source::{RowSource, RowView};
pub use store::{DEFAULT_MAP_SIZE_BYTES, DEFAULT_MAX_DBS, INDEX_BUILD_STEP_ROWS, Store, StoreBuilder};
pub use stream::{KeyPage, SetOp};
pub use table::{Region, RegionStats, TableStats};
pub use threads::{
    MovedRow, ThreadEntries, ThreadMember, ghost_row, normalize_subject, parse_thread_id, thread_id_text,
    thread_members_in, thread_partition_prefixes, thread_rows,
};
pub use upgrade::UpgradeProgress;
pub use write::RepairedIndex;
pub use write::{
    Batch, CellReader, CompactReport, Decide, Delete, IndexBuildStep, Mutation, PreparedBatch, Produce,
};
