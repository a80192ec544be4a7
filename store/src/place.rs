//! Where tables live: the one seam between rowsearch and the place its
//! tables are kept. [`RowSource`] is its read half (what the indexer and
//! the searcher read); [`TableStore`] adds what the HTTP routes, the
//! commands and the ingest need beside it: pages of scans, counts, table
//! state, and the write half (create and drop tables, put and delete
//! rows, read every version for an export).
//!
//! The embedded [`Store`] implements it with its transactions; a place
//! elsewhere (an Apache HBase cluster, in the server crate) with that
//! place's own operations, giving the same answers where it can and saying
//! where it cannot (secondary indexes too: the store keeps them in its
//! transactions, HBase in index tables). What only the embedded store
//! keeps (the change feed and its consumers, backups, all-or-nothing
//! batches of many rows) is reached through [`TableStore::store`]: `None` elsewhere,
//! which the callers check in one place each and answer with a reason.

use crate::Result;
use crate::cell::{PutCell, Row};
use crate::read::ReadOptions;
use crate::schema::{IndexSchema, TableSchema};
use crate::secondary::{IndexPage, IndexQuery, IndexState, IndexTerm, IndexVerifyReport};
use crate::source::RowSource;
use crate::store::Store;
use crate::stream::{KeyPage, SetOp};
use crate::{Batch, Delete};

/// How a place follows the writes other clients make straight to it (a
/// place elsewhere: HBase), for `GET /tables/{t}` and `/health`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Following {
    /// `replication` (every write reaches the change feed through the
    /// place's own replication) or `tailer` (time-range scans).
    pub by: &'static str,
    /// How far behind the place's writes the feed is, when measured (ms).
    pub lag_ms: Option<u64>,
    /// What is wrong, when the way that should work does not.
    pub trouble: Option<String>,
    /// Why it is followed this way, in a sentence.
    pub detail: String,
}

/// What kind of place tables live in, for answers and messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceInfo {
    /// `store` (the embedded store) or `hbase`.
    pub kind: &'static str,
    /// Where: the data directory, or the HBase gateway's `HOST:PORT`.
    pub at: String,
}

impl std::fmt::Display for PlaceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            "store" => write!(f, "the store at {}", self.at),
            "hbase" => write!(f, "HBase at {}", self.at),
            kind => write!(f, "{kind} at {}", self.at),
        }
    }
}

/// The refusal of a place that keeps no secondary indexes.
fn no_indexes(table: &str) -> crate::Error {
    crate::ErrorKind::InvalidSchema {
        table: table.to_owned(),
        reason: "secondary indexes are not kept where this table lives".into(),
    }
    .into()
}

/// Where tables live, read, administered and written (see the module
/// docs).
pub trait TableStore: RowSource + crate::ChangeFeed {
    /// What and where the place is.
    fn place(&self) -> PlaceInfo;

    /// The embedded store itself, for what only it keeps (secondary
    /// indexes, the change feed, backups, atomic batches of many rows,
    /// prepared batches); `None` for a place elsewhere.
    fn store(&self) -> Option<&Store> {
        None
    }

    /// How writes other clients make straight to the place are followed;
    /// `None` for the store (no other client writes it).
    fn following(&self) -> Option<Following> {
        None
    }

    /// Whether the place answers (the store: always; HBase: one call).
    ///
    /// # Errors
    /// The place's own failure to answer.
    fn ping(&self) -> Result<()> {
        Ok(())
    }

    /// A page of `scan` over `table`, stopped when `cancel` fires.
    ///
    /// # Errors
    /// As [`crate::ReadTxn::scan`]; the source's own failures.
    fn scan_page(&self, table: &str, scan: &crate::Scan, cancel: &crate::Cancel) -> Result<crate::ScanPage>;

    /// The rows `scan` selects (as [`crate::ReadTxn::count_until`]).
    ///
    /// # Errors
    /// As [`Self::scan_page`].
    fn count(&self, table: &str, scan: &crate::Scan, cancel: &crate::Cancel) -> Result<u64>;

    /// Row `key` of `table` as `read` selects it (columns, versions, time
    /// ranges), `None` when it holds no such cells: by default a scan of
    /// the one key (HBase reads it so, every read option pushed down); the
    /// store reads it in one snapshot.
    ///
    /// # Errors
    /// As [`Self::scan_page`].
    fn get(&self, table: &str, key: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        let scan = crate::Scan::new()
            .start(key.to_vec())
            .stop([key, &[0u8][..]].concat())
            .read(read.clone())
            .limit(1);
        Ok(self.scan_page(table, &scan, &crate::Cancel::never())?.rows.pop())
    }

    /// Enables or disables `table` (HBase's `enable` and `disable`);
    /// whether its state changed.
    ///
    /// # Errors
    /// `UnknownTable`; the source's own failures.
    fn set_table_enabled(&self, table: &str, enabled: bool) -> Result<bool>;

    /// Sets the fields a searchable table's documents carry by default
    /// ([`TableSchema::with_display`]); whether it changed.
    ///
    /// # Errors
    /// As [`TableSchema::with_display`]; `UnknownTable`; the source's own.
    fn set_display(&self, table: &str, display: Option<Vec<String>>) -> Result<bool>;

    /// Sets how many shards a cluster of searchers splits a searchable
    /// table's index into ([`TableSchema::with_shards`]); whether it
    /// changed.
    ///
    /// # Errors
    /// As [`TableSchema::with_shards`]; `UnknownTable`; the source's own.
    fn set_shards(&self, table: &str, shards: u32) -> Result<bool>;

    /// Creates `table` with `schema` (its keyword rows and threads kept
    /// from then on); `false` when an identical one exists.
    ///
    /// # Errors
    /// As [`Store::create_table`]; a schema the place cannot keep (HBase:
    /// secondary indexes, until they are kept there).
    fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool>;

    /// Drops `table`, its rows and what rowsearch keeps of it.
    ///
    /// # Errors
    /// `UnknownTable`; the place's own failures.
    fn drop_table(&self, table: &str) -> Result<()>;

    /// Writes `rows` of `table` (each its cells onto what the row holds,
    /// a cell without a timestamp at the write's time) with their keyword
    /// rows and threads. The store writes them in one transaction; HBase
    /// row by row. Returns the write's sequence (the store's feed; HBase's
    /// clock, ms), for a read that must see it (`min_seq`).
    ///
    /// # Errors
    /// As [`Store::apply`]; the place's own failures.
    fn put_rows(&self, table: &str, rows: &[(Vec<u8>, Vec<PutCell>)]) -> Result<u64>;

    /// Deletes what `whats` names of row `key` of `table` (the row, a
    /// family, columns, one version; its keyword rows put right; a row
    /// left with no cells leaves its ids as ghosts in their threads). The
    /// store in one transaction, without tombstones; HBase with its own
    /// deletes (tombstones: a later put with an older timestamp stays
    /// hidden). Returns the write's sequence.
    ///
    /// # Errors
    /// As [`Self::put_rows`].
    fn delete(&self, table: &str, key: &[u8], whats: &[Delete]) -> Result<u64>;

    /// The rows of `table` from `start` on (inclusive), in key order, each
    /// with every version of its cells, to `f`, after `opened` got the
    /// table's schema and, from the store, the last sequence of the
    /// snapshot they are read from (HBase: `None`, it has no snapshot).
    ///
    /// # Errors
    /// `UnknownTable`; the place's own failures; what `opened` or `f`
    /// return.
    fn each_version(
        &self,
        table: &str,
        start: Option<&[u8]>,
        opened: &mut dyn FnMut(TableSchema, Option<u64>) -> Result<()>,
        f: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()>;

    /// A table's secondary indexes: schema, whether being built, entries
    /// (as [`Store::indexes`]). A place without them: none.
    ///
    /// # Errors
    /// `UnknownTable`; the place's own failures.
    fn indexes(&self, table: &str) -> Result<Vec<IndexState>> {
        self.schema(table).map(|_| Vec::new())
    }

    /// Adds an index, marked building; writes maintain it from then on
    /// (as [`Store::start_index`]); false when it exists alike.
    ///
    /// # Errors
    /// `UnknownTable`, `IndexConflict`, `InvalidSchema`; the place's own.
    fn start_index(&self, table: &str, _index: IndexSchema) -> Result<bool> {
        Err(no_indexes(table))
    }

    /// Empties an index and marks it building again.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`; the place's own.
    fn start_index_rebuild(&self, table: &str, _index: &str) -> Result<()> {
        Err(no_indexes(table))
    }

    /// Builds an index marked building from the rows, then marks it ready;
    /// `progress(done, total)` as it goes.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`; the place's own.
    fn finish_index_build(
        &self,
        table: &str,
        _index: &str,
        _progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        Err(no_indexes(table))
    }

    /// Removes an index and its entries.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`; the place's own.
    fn drop_index(&self, table: &str, _index: &str) -> Result<()> {
        Err(no_indexes(table))
    }

    /// A page of an index lookup (as [`Store::index_lookup`]).
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `IndexBuilding`, `InvalidIndexQuery`,
    /// `InvalidCursor`; the place's own.
    fn index_lookup(&self, table: &str, _index: &str, _query: &IndexQuery) -> Result<IndexPage> {
        Err(no_indexes(table))
    }

    /// A page of an index lookup with its matches' rows (cells `read`
    /// selects), one per hit (`None`: the row is gone). The store reads
    /// both in one snapshot; elsewhere a row read after the lookup that no
    /// longer has the hit's values is `None` too.
    ///
    /// # Errors
    /// As [`Self::index_lookup`].
    fn index_rows(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
        read: &ReadOptions,
    ) -> Result<(IndexPage, Vec<Option<Row>>)> {
        let page = self.index_lookup(table, index, query)?;
        let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
        let rows = self.rows(table, &keys, read)?;
        Ok((page, rows))
    }

    /// Row keys of index lookups combined (as
    /// [`crate::ReadTxn::index_combine`]).
    ///
    /// # Errors
    /// As [`Self::index_lookup`].
    fn index_combine(
        &self,
        table: &str,
        _terms: &[IndexTerm],
        _op: SetOp,
        _after: Option<&[u8]>,
        _limit: Option<usize>,
    ) -> Result<KeyPage> {
        Err(no_indexes(table))
    }

    /// An index against its rows (as [`Store::verify_index`]).
    ///
    /// # Errors
    /// As [`Self::index_lookup`].
    fn verify_index(&self, table: &str, _index: &str) -> Result<IndexVerifyReport> {
        Err(no_indexes(table))
    }
}

impl TableStore for Store {
    fn place(&self) -> PlaceInfo {
        PlaceInfo { kind: "store", at: self.path().display().to_string() }
    }

    fn store(&self) -> Option<&Store> {
        Some(self)
    }

    fn scan_page(&self, table: &str, scan: &crate::Scan, cancel: &crate::Cancel) -> Result<crate::ScanPage> {
        let rtxn = self.begin_read()?;
        rtxn.scan(table, scan)?.cancel_on(cancel.clone()).into_page()
    }

    fn count(&self, table: &str, scan: &crate::Scan, cancel: &crate::Cancel) -> Result<u64> {
        self.begin_read()?.count_until(table, scan, cancel)
    }

    fn get(&self, table: &str, key: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        self.begin_read()?.get(table, key, read)
    }

    fn set_table_enabled(&self, table: &str, enabled: bool) -> Result<bool> {
        Store::set_table_enabled(self, table, enabled)
    }

    fn set_display(&self, table: &str, display: Option<Vec<String>>) -> Result<bool> {
        Store::set_display(self, table, display)
    }

    fn set_shards(&self, table: &str, shards: u32) -> Result<bool> {
        Store::set_shards(self, table, shards)
    }

    fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        Store::create_table(self, table, schema)
    }

    fn drop_table(&self, table: &str) -> Result<()> {
        Store::drop_table(self, table)
    }

    fn put_rows(&self, table: &str, rows: &[(Vec<u8>, Vec<PutCell>)]) -> Result<u64> {
        let mut batch = Batch::new();
        for (key, cells) in rows {
            batch.put(table, key.clone(), cells.clone());
        }
        let info = self.apply(&batch)?;
        Ok(info.last_seq.unwrap_or(0))
    }

    fn delete(&self, table: &str, key: &[u8], whats: &[Delete]) -> Result<u64> {
        let mut batch = Batch::new();
        for what in whats {
            batch.delete(table, key.to_vec(), what.clone());
        }
        Ok(self.apply(&batch)?.last_seq.unwrap_or(0))
    }

    fn each_version(
        &self,
        table: &str,
        start: Option<&[u8]>,
        opened: &mut dyn FnMut(TableSchema, Option<u64>) -> Result<()>,
        f: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let rtxn = self.begin_read()?;
        opened(rtxn.schema(table)?, Some(rtxn.next_seq()?.saturating_sub(1)))?;
        let mut scan = crate::Scan::new().read(ReadOptions::default().versions(crate::ALL_VERSIONS));
        if let Some(start) = start {
            scan = scan.start(start.to_vec());
        }
        for row in rtxn.scan(table, &scan)? {
            f(row?)?;
        }
        Ok(())
    }

    fn indexes(&self, table: &str) -> Result<Vec<IndexState>> {
        Store::indexes(self, table)
    }

    fn start_index(&self, table: &str, index: IndexSchema) -> Result<bool> {
        Store::start_index(self, table, index)
    }

    fn start_index_rebuild(&self, table: &str, index: &str) -> Result<()> {
        Store::start_index_rebuild(self, table, index)
    }

    fn finish_index_build(&self, table: &str, index: &str, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        Store::finish_index_build(self, table, index, progress)
    }

    fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        Store::drop_index(self, table, index)
    }

    fn index_lookup(&self, table: &str, index: &str, query: &IndexQuery) -> Result<IndexPage> {
        Store::index_lookup(self, table, index, query)
    }

    fn index_rows(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
        read: &ReadOptions,
    ) -> Result<(IndexPage, Vec<Option<Row>>)> {
        let rtxn = self.begin_read()?;
        let page = rtxn.index_lookup(table, index, query)?;
        let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
        let rows = rtxn.multi_get(table, &keys, read)?;
        Ok((page, rows))
    }

    fn index_combine(
        &self,
        table: &str,
        terms: &[IndexTerm],
        op: SetOp,
        after: Option<&[u8]>,
        limit: Option<usize>,
    ) -> Result<KeyPage> {
        self.begin_read()?.index_combine(table, terms, op, after, limit)
    }

    fn verify_index(&self, table: &str, index: &str) -> Result<IndexVerifyReport> {
        Store::verify_index(self, table, index)
    }
}
