//! Read transactions: a snapshot of every table, and every read the store
//! offers in it (rows, scans, index and keyword lookups, checks).

use std::ops::Bound;
use std::sync::Arc;

use heed::{RoTxn, WithoutTls};

use super::options::{ReadOptions, Scan};
use super::scan::{ScanIter, ScanPage, get_row, get_rows};
use crate::cell::Row;
use crate::db::env::ReadGuard;
use crate::db::feed::Feed;
use crate::error::{Error, Result};
use crate::key::range::cell_bounds;
use crate::keyword::{KeywordCell, KeywordCellRef, KeywordPage, KeywordQuery};
use crate::schema::TableSchema;
use crate::secondary::{IndexPage, IndexQuery, IndexState, IndexTerm, IndexVerifyReport};
use crate::stream::{KeyPage, SetOp, combine};
use crate::table::{Catalog, Region, RegionStats, TableHandle, Tables};

/// A read-only snapshot of the whole store. Dropping it ends the transaction.
///
/// Everything it returns is owned, so nothing borrows the memory map after
/// the transaction ends.
pub struct ReadTxn<'s> {
    // Field order matters: the LMDB transaction must end before the resize
    // guard is released.
    txn: RoTxn<'s, WithoutTls>,
    catalog: &'s Catalog,
    /// The tables of the catalog version this snapshot sees.
    tables: Arc<Tables>,
    feed: Feed,
    now_ms: u64,
    _resize_guard: std::sync::RwLockReadGuard<'s, ()>,
}

impl std::fmt::Debug for ReadTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTxn").field("now_ms", &self.now_ms).finish_non_exhaustive()
    }
}

impl<'s> ReadTxn<'s> {
    /// A snapshot over `read` (a transaction of the store's environment),
    /// resolving tables through `catalog`.
    pub(crate) fn new(
        read: ReadGuard<'s>,
        catalog: &'s Catalog,
        tables: Arc<Tables>,
        feed: Feed,
        now_ms: u64,
    ) -> ReadTxn<'s> {
        ReadTxn { txn: read.txn, catalog, tables, feed, now_ms, _resize_guard: read.guard }
    }

    /// A table of this snapshot.
    pub(crate) fn handle(&self, table: &str) -> Result<Arc<TableHandle>> {
        self.tables.table(table)
    }

    /// A table of this snapshot whose rows may be read: `TableDisabled`
    /// for a disabled one.
    fn rows_of(&self, table: &str) -> Result<Arc<TableHandle>> {
        let handle = self.handle(table)?;
        handle.check_enabled()?;
        Ok(handle)
    }

    /// Whether a table is enabled in this snapshot (see
    /// [`crate::Store::set_table_enabled`]).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn is_enabled(&self, table: &str) -> Result<bool> {
        Ok(!self.handle(table)?.disabled)
    }

    /// Names of the tables in this snapshot, sorted.
    pub fn table_names(&self) -> Vec<String> {
        self.tables.names()
    }

    /// A table's schema in this snapshot.
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn schema(&self, table: &str) -> Result<TableSchema> {
        Ok(TableSchema::clone(&self.handle(table)?.schema))
    }

    /// A table's id in this snapshot (see [`crate::Store::table_id`]).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn table_id(&self, table: &str) -> Result<u64> {
        Ok(self.handle(table)?.id)
    }

    /// A table's indexes in this snapshot (see [`crate::Store::indexes`]).
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn indexes(&self, table: &str) -> Result<Vec<IndexState>> {
        let handle = self.handle(table)?;
        let mut out = Vec::with_capacity(handle.indexes.len());
        for index in &handle.indexes {
            let stat = |db: &crate::db::BytesDb| {
                db.stat(&self.txn).map(|s| s.entries as u64).map_err(|e| Error::lmdb("index stat", e))
            };
            let runs = index.runs(&self.txn)?.len() as u64;
            let entries = stat(&index.db)? + stat(&index.pending)?.saturating_sub(runs);
            out.push(IndexState { schema: index.schema.clone(), building: index.building, entries });
        }
        Ok(out)
    }

    /// The partition (of the keyword rows) that row key `row` of `table`
    /// belongs to, when the key alone tells it: `Ok(None)` for a table
    /// partitioned by a column, or without a search section.
    ///
    /// # Errors
    /// `UnknownTable`; `InvalidRowKey` for a key its typed key does not
    /// decode.
    pub fn key_partition(&self, table: &str, row: &[u8]) -> Result<Option<Vec<u8>>> {
        match &self.handle(table)?.search {
            Some(search) => search.key_partition(row),
            None => Ok(None),
        }
    }

    /// The members of thread `thread` of `table` (its ids, each with the
    /// row carrying it, or none for an id only referred to).
    ///
    /// # Errors
    /// `UnknownTable`; `NotThreaded` for a table without threads.
    pub fn thread_members(&self, table: &str, thread: u64) -> Result<Vec<crate::ThreadMember>> {
        let handle = self.handle(table)?;
        let threads = handle
            .threads
            .as_ref()
            .ok_or_else(|| crate::ErrorKind::NotThreaded { table: table.to_owned() })?;
        crate::threads::members_of(&self.txn, threads, thread)
    }

    /// A table's regions in this snapshot (see [`crate::Store::regions`]).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn regions(&self, table: &str) -> Result<Vec<Region>> {
        Ok(self.handle(table)?.regions())
    }

    pub(crate) fn raw(&self) -> &RoTxn<'s, WithoutTls> {
        &self.txn
    }

    /// The change-feed sequence the next commit after this snapshot gets:
    /// everything below it is in the snapshot.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn next_seq(&self) -> Result<u64> {
        self.feed.next_seq(&self.txn)
    }

    /// Change-feed entries with `seq >= from_seq` in this snapshot, at most
    /// `limit`, in order (as [`crate::Store::feed_since`], but in the same
    /// snapshot as this transaction's rows).
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<crate::FeedEntry>> {
        self.feed.since(&self.txn, from_seq, limit)
    }

    /// The oldest sequence the change feed holds in this snapshot (the next
    /// one when it holds none): every change below it was trimmed.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn feed_oldest(&self) -> Result<u64> {
        self.feed.oldest(&self.txn)
    }

    /// Change-feed entries after `since` (`seq > since`), at most `limit`,
    /// in order, checking first that the feed still holds every one of
    /// them.
    ///
    /// # Errors
    /// `FellBehind` when entries after `since` were trimmed; `PastFeedEnd`
    /// when `since` is past the last sequence of this snapshot;
    /// `Corrupted`, `Lmdb`.
    pub fn changes_after(&self, since: u64, limit: usize) -> Result<Vec<crate::FeedEntry>> {
        self.feed.check_after(&self.txn, since)?;
        self.feed.since(&self.txn, since.saturating_add(1), limit)
    }

    /// When the commit that wrote feed sequence `seq` was made (ms of the
    /// store's clock); `None` when the store kept no time for it.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn feed_time(&self, seq: u64) -> Result<Option<u64>> {
        self.feed.time_of(&self.txn, seq)
    }

    /// The id of the write transaction whose commit this snapshot sees
    /// (LMDB's transaction id): two snapshots with the same id read the
    /// same store.
    pub fn version(&self) -> u64 {
        self.txn.id() as u64
    }

    /// The tables of this snapshot.
    pub(crate) fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    /// The store clock's time when this snapshot began (ms).
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Reads one row: the selected cells, or `None` when none is selected.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownFamily` (in `read.columns`), `Corrupted`, `Lmdb`.
    pub fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        let handle = self.rows_of(table)?;
        get_row(&self.txn, self.now_ms, &handle, row, read)
    }

    /// [`ReadTxn::get`] of a table enabled or not: the indexer's read,
    /// which keeps a disabled table's index in step with the rows written
    /// before it was disabled.
    pub(crate) fn get_enabled_or_not(
        &self,
        table: &str,
        row: &[u8],
        read: &ReadOptions,
    ) -> Result<Option<Row>> {
        let handle = self.handle(table)?;
        get_row(&self.txn, self.now_ms, &handle, row, read)
    }

    /// Reads several rows from this snapshot, in the order asked.
    ///
    /// # Errors
    /// As [`ReadTxn::get`].
    pub fn multi_get(&self, table: &str, rows: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        let handle = self.rows_of(table)?;
        get_rows(&self.txn, self.now_ms, &handle, rows, read)
    }

    /// Starts a streaming scan: rows come one at a time and memory stays flat
    /// however many rows the scan walks. Offset and limit apply; the cursor
    /// of the last row is [`ScanIter::cursor`].
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownFamily`, `InvalidCursor` (a cursor from a scan
    /// in the other direction), `Lmdb`.
    pub fn scan<'t>(&'t self, table: &str, scan: &Scan) -> Result<ScanIter<'t>> {
        let handle = self.rows_of(table)?;
        ScanIter::new(&self.txn, self.now_ms, handle, scan)
    }

    /// Runs a scan up to its limit; `next_cursor` is set when more rows follow.
    ///
    /// # Errors
    /// As [`ReadTxn::scan`].
    pub fn scan_page(&self, table: &str, scan: &Scan) -> Result<ScanPage> {
        self.scan(table, scan)?.into_page()
    }

    /// Looks rows up in a secondary index of `table`.
    ///
    /// # Errors
    /// As [`crate::Store::index_lookup`].
    pub fn index_lookup(&self, table: &str, index: &str, query: &IndexQuery) -> Result<IndexPage> {
        let handle = self.rows_of(table)?;
        crate::secondary::lookup(&self.txn, handle.ready_index(index)?, query, self.now_ms)
    }

    /// Row keys in every lookup (`Intersect`) or any (`Union`), in row-key
    /// order, after `after`, at most `limit`. Lookups with equality on every
    /// column of their index stream in row-key order and the intersection
    /// leapfrogs between them (seeking), so it reads little of long lists;
    /// other lookups are read whole and sorted first.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `InvalidIndexQuery`, `Lmdb`.
    pub fn index_combine(
        &self,
        table: &str,
        terms: &[IndexTerm],
        op: SetOp,
        after: Option<&[u8]>,
        limit: Option<usize>,
    ) -> Result<KeyPage> {
        let handle = self.rows_of(table)?;
        let raw: &RoTxn<'_> = &self.txn;
        let mut streams = Vec::with_capacity(terms.len());
        for term in terms {
            let index = handle.ready_index(&term.index)?;
            streams.push(crate::secondary::key_stream(raw, index, &term.query, self.now_ms)?);
        }
        combine(streams, op, after, limit)
    }

    /// The rows of an index lookup's matches, in index order, read in this
    /// snapshot (a match whose row has no selected cell is skipped).
    ///
    /// # Errors
    /// As [`ReadTxn::index_lookup`] and [`ReadTxn::get`].
    pub fn index_rows(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
        read: &ReadOptions,
    ) -> Result<(Vec<Row>, Option<String>)> {
        let page = self.index_lookup(table, index, query)?;
        let handle = self.rows_of(table)?;
        let keys: Vec<&[u8]> = page.hits.iter().map(|hit| hit.key.as_slice()).collect();
        let rows = get_rows(&self.txn, self.now_ms, &handle, &keys, read)?.into_iter().flatten().collect();
        Ok((rows, page.next_cursor))
    }

    /// The rows of partition `query.partition` holding every term of
    /// `query.terms`, newest first (by the date column, then row key),
    /// read straight from the keyword rows: a streaming intersection of the
    /// terms' version lists that seeks past versions it does not need and
    /// stops after `limit` hits.
    ///
    /// ```
    /// use rowsearch_store::{FamilySchema, KeywordQuery, PutCell, SearchField, SearchSchema, Store, TableSchema};
    /// # #[derive(Debug)] struct Words;
    /// # impl rowsearch_store::Analyzer for Words {
    /// #     fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
    /// #         for (i, w) in text.split_whitespace().enumerate() { sink(&w.to_lowercase(), i as u32) }
    /// #     }
    /// #     fn date_ms(&self, v: &[u8]) -> Option<u64> { std::str::from_utf8(v).ok()?.parse().ok() }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::builder().analyzer(std::sync::Arc::new(Words)).open(dir.path())?;
    /// let search = SearchSchema::new([SearchField::text("subject", "m:subject")])
    ///     .partition("m:user")
    ///     .date_column("m:date");
    /// store.create_table("mail", &TableSchema::new([FamilySchema::new("m")]).search(search))?;
    /// for (key, date, subject) in [("a", "1", "gas prices"), ("b", "3", "Gas deal"), ("c", "2", "power deal")] {
    ///     let cells = vec![PutCell::new("m", "user", "ann"), PutCell::new("m", "date", date), PutCell::new("m", "subject", subject)];
    ///     store.put("mail", key.as_bytes(), cells)?;
    /// }
    /// let query = KeywordQuery { partition: b"ann".to_vec(), terms: vec!["deal".into()], ..Default::default() };
    /// let page = store.keyword_lookup("mail", &query)?;
    /// let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
    /// assert_eq!(keys, [b"b", b"c"]); // newest first
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `NoAnalyzer`, `InvalidKeywordQuery`
    /// (no terms after analysis, an unknown `field:`, a bad cursor), `Lmdb`.
    pub fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        let handle = self.rows_of(table)?;
        let search = handle.search()?;
        let analyzer = self.catalog.analyzer_for(table)?;
        crate::keyword::lookup(&self.txn, search, analyzer, query)
    }

    /// Calls `f` with every keyword cell of `partition` (of every partition
    /// when `None`) in key order: partition, field, term, then newest first.
    /// The cell is lent, borrowing from the store's pages, so a scan of
    /// millions of cells copies and allocates nothing per cell;
    /// [`KeywordCellRef::to_cell`] copies what you keep.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Corrupted`, `Lmdb`, and whatever
    /// `f` returns.
    pub fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let handle = self.handle(table)?;
        crate::keyword::for_each_cell(&self.txn, handle.search()?, partition, f)
    }

    /// Like [`ReadTxn::for_each_keyword_cell`], over the partitions
    /// `from <= p < to` (`None`: unbounded), e.g. between two of
    /// [`ReadTxn::keyword_partition_splits`].
    ///
    /// # Errors
    /// As [`ReadTxn::for_each_keyword_cell`].
    pub fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let handle = self.handle(table)?;
        crate::keyword::for_each_cell_between(&self.txn, handle.search()?, from, to, f)
    }

    /// Calls `f` with the keyword cells of every row with a key in
    /// `[from, to)` (`None`: unbounded), made from the rows' stored values
    /// with the store's analyzer as they are scanned: each row's cells
    /// together, in key order, the rows in key order. What a full build
    /// reads where it builds from the rows' text instead of the keyword
    /// rows.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `NoAnalyzer`, `Lmdb`, and whatever
    /// `f` returns.
    pub fn for_each_row_keyword_cells(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let schema = self.schema(table)?;
        let analyzer = self.catalog.analyzer_for(table)?;
        let scan = Scan { start: from.map(<[u8]>::to_vec), stop: to.map(<[u8]>::to_vec), ..Scan::default() };
        for row in self.scan(table, &scan)? {
            crate::keyword::for_each_keyword_cell_of(table, &schema, analyzer, &row?, f)?;
        }
        Ok(())
    }

    /// Partitions that cut the table's keyword rows where its region splits
    /// cut its rows, ascending: reading between consecutive ones reads whole
    /// partitions, and, when the partition is the row key's leading string
    /// field (as in the mail table), exactly one region's keyword rows. Empty
    /// for a table without splits.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Corrupted`, `Lmdb`.
    pub fn keyword_partition_splits(&self, table: &str) -> Result<Vec<Vec<u8>>> {
        let handle = self.handle(table)?;
        crate::keyword::partition_splits(&self.txn, handle.search()?, &handle.splits)
    }

    /// How many keyword cells the table holds (all partitions), read from
    /// the count every write keeps, without a scan: a total for progress
    /// reports.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Lmdb`.
    pub fn keyword_cell_count(&self, table: &str) -> Result<u64> {
        let handle = self.handle(table)?;
        crate::keyword::read_counter(&self.txn, handle.search()?)
    }

    /// How many rows the table's keyword blocks refer to by number: the
    /// rows that have keyword cells (format 5 numbers them; a row's number
    /// goes with its last cell).
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Lmdb`.
    pub fn keyword_numbered_rows(&self, table: &str) -> Result<u64> {
        let handle = self.handle(table)?;
        crate::keyword::numbered_rows(&self.txn, handle.search()?)
    }

    /// What does not hold in how the table's keyword blocks refer to its
    /// rows by number (format 5): each problem with the row key concerned
    /// (empty when there is none). Empty for a sound store.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Lmdb`, `Corrupted` (a block that
    /// does not decode).
    pub fn check_keyword_numbers(&self, table: &str) -> Result<Vec<(Vec<u8>, String)>> {
        let handle = self.handle(table)?;
        crate::keyword::check_numbers(&self.txn, handle.search()?)
    }

    /// How many LMDB entries (blocks) hold the table's keyword cells.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Lmdb`.
    pub fn keyword_block_count(&self, table: &str) -> Result<u64> {
        let handle = self.handle(table)?;
        let stat = handle.search()?.db.stat(&self.txn).map_err(|e| Error::lmdb("stat", e))?;
        // Less the counter's entry; and the pending runs' blocks.
        let counter = u64::from(crate::keyword::read_counter(&self.txn, handle.search()?)? > 0);
        let pending = crate::keyword::pending_block_count(&self.txn, handle.search()?)?;
        Ok((stat.entries as u64).saturating_sub(counter) + pending)
    }

    /// The keyword cells that row `row` should have, computed from its
    /// stored values with the store's analyzer (for checks and reindexing
    /// one row), in key order.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `NoAnalyzer`, `InvalidRowKey`, `Lmdb`.
    pub fn row_keyword_cells(&self, table: &str, row: &[u8]) -> Result<Vec<KeywordCell>> {
        let handle = self.handle(table)?;
        let search = handle.search()?;
        let analyzer = self.catalog.analyzer_for(table)?;
        let values = search.values(&self.txn, &handle.stored_key(row))?;
        let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        search
            .entries(analyzer, row, &values)?
            .iter()
            .map(|(k, v)| crate::keyword::decode_cell(search, k, v))
            .collect()
    }

    /// Compares an index with the data in this snapshot.
    ///
    /// # Errors
    /// As [`crate::Store::verify_index`].
    pub fn verify_index(&self, table: &str, index: &str) -> Result<IndexVerifyReport> {
        let handle = self.handle(table)?;
        let ix = handle.ready_index(index)?;
        // What the data says, in entry order.
        let mut expected = Vec::new();
        for row in self.scan(table, &Scan::new().keys_only(true))? {
            let row = row?;
            let stored = handle.stored_key(&row.key);
            if let Some((k, _)) = ix.entry(&self.txn, &row.key, &stored, self.now_ms)? {
                expected.push(k);
            }
        }
        expected.sort_unstable();
        // The main entries and the runs'; a live key in two places is one
        // extra entry.
        let actual = ix.live_entries(&self.txn, self.now_ms)?;
        let mut report = IndexVerifyReport { entries: actual.len() as u64, ..IndexVerifyReport::default() };
        let (mut i, mut j) = (0, 0);
        while i < expected.len() || j < actual.len() {
            let ord = match (expected.get(i), actual.get(j)) {
                (Some(e), Some(a)) => e.cmp(a),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
                std::cmp::Ordering::Less => {
                    report.missing_count += 1;
                    if report.missing.len() < 100 {
                        let (_, row) =
                            crate::secondary::entry_row(&ix.db_name, &expected[i], ix.columns.len())?;
                        report.missing.push(row);
                    }
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    report.extra_count += 1;
                    if report.extra.len() < 100 {
                        report.extra.push(actual[j].clone());
                    }
                    j += 1;
                }
            }
        }
        Ok(report)
    }

    /// Rows, cells and bytes stored in one region of `table`.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownRegion`, `Corrupted`, `Lmdb`.
    pub fn region_stats(&self, table: &str, region: &Region) -> Result<RegionStats> {
        let handle = self.handle(table)?;
        let (lo, hi) = cell_bounds(&handle.region_range(region.index)?);
        let lower = lo.as_deref().map_or(Bound::Unbounded, Bound::Included);
        let upper = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let (mut cells, mut bytes) = (0u64, 0u64);
        for family in &handle.families {
            for item in
                family.db.range(&self.txn, &(lower, upper)).map_err(|e| Error::lmdb("region stats", e))?
            {
                let (k, v) = item.map_err(|e| Error::lmdb("region stats", e))?;
                cells += 1;
                bytes += (k.len() + v.len()) as u64;
            }
        }
        let rows = self.count(table, &Scan::new().region(region.index))?;
        Ok(RegionStats { region: region.clone(), rows, cells, bytes })
    }

    /// Counts the rows a scan selects, ignoring its limit but not its offset.
    ///
    /// # Errors
    /// As [`ReadTxn::scan`].
    pub fn count(&self, table: &str, scan: &Scan) -> Result<u64> {
        self.count_until(table, scan, &crate::Cancel::never())
    }

    /// [`Self::count`] that gives up with `Cancelled` once `cancel` fires.
    ///
    /// # Errors
    /// As [`ReadTxn::scan`], and `Cancelled`.
    pub fn count_until(&self, table: &str, scan: &Scan, cancel: &crate::Cancel) -> Result<u64> {
        let mut scan = scan.clone();
        scan.limit = None;
        scan.keys_only = true;
        let mut n = 0;
        for row in self.scan(table, &scan)?.cancel_on(cancel.clone()) {
            row?;
            n += 1;
        }
        Ok(n)
    }
}
