//! The row source: what the indexer and the searcher need from a table's
//! rows, as a narrow interface, so that a second place rows live (an
//! Apache HBase cluster reached through its Thrift gateway) can stand
//! where the embedded [`Store`] stands.
//!
//! Five things: a table's schema and id, its regions (the key ranges a
//! full build reads in parallel), rows by key read at one point in time
//! (a search's hits resolved), and the change feed (what an index has not
//! absorbed yet, and where the next change will go). The store implements
//! it with its full guarantees: one LMDB snapshot per call, a feed that
//! names every committed row in commit order.
//!
//! What must be read together goes through a [`RowView`], one consistent
//! view ([`RowSource::view`]): a build's keyword rows and the feed position
//! it records, the overlay's changed rows and the feed tail that names
//! them, verify's rows and index. The indexer reads rows through these two
//! traits only; the store's view is an LMDB read transaction
//! ([`ReadTxn`]). A source without multi-row snapshots (HBase) gives a
//! view that reads as of one timestamp.

use std::sync::Arc;

use crate::Result;
use crate::cell::Row;
use crate::db::feed::FeedEntry;
use crate::keyword::{KeywordCell, KeywordCellRef, KeywordPage, KeywordQuery};
use crate::read::{ReadOptions, ReadTxn};
use crate::schema::Analyzer;
use crate::schema::TableSchema;
use crate::store::Store;
use crate::table::Region;

/// Where a table's rows are read from (see the module docs).
pub trait RowSource: Send + Sync + std::fmt::Debug {
    /// The table's schema.
    ///
    /// # Errors
    /// `UnknownTable`; the source's own failures.
    fn schema(&self, table: &str) -> Result<TableSchema>;

    /// The table's id: a table dropped and created again under its name
    /// gets another, so an index built for the old one is not used.
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn table_id(&self, table: &str) -> Result<u64>;

    /// The table's regions, in key order, covering every key.
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn regions(&self, table: &str) -> Result<Vec<Region>>;

    /// The rows of `keys`, in the order asked, all read at one point in
    /// time: `None` for a row the table does not hold, and a row with no
    /// cells for one that holds none of the columns `read` selects.
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn rows(&self, table: &str, keys: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>>;

    /// Change-feed entries (every table's) with `seq >= from_seq`, at most
    /// `limit`, in order.
    ///
    /// # Errors
    /// The source's own failures.
    fn changes_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>>;

    /// The sequence the next change will get.
    ///
    /// # Errors
    /// The source's own failures.
    fn next_seq(&self) -> Result<u64>;

    /// One consistent view of every table's rows, keyword rows and feed.
    ///
    /// # Errors
    /// The source's own failures.
    fn view(&self) -> Result<Box<dyn RowView + '_>>;

    /// A view whose feed names every change, however it was made, for the
    /// readers that bring an index current (the refresher's rounds,
    /// incremental builds). The store's is [`Self::view`] (the default); a
    /// source whose cheap view names only the changes made through
    /// rowsearch (HBase: writes by other clients are found by scanning
    /// every table) gives the full one here.
    ///
    /// # Errors
    /// The source's own failures.
    fn tail_view(&self) -> Result<Box<dyn RowView + '_>> {
        self.view()
    }

    /// Whether each read is a round trip to another process (HBase), so
    /// that reads worth overlapping are run at once (a search reads the
    /// change feed while it reads its page's rows). The store's: false.
    fn remote(&self) -> bool {
        false
    }

    /// The names of every table, sorted.
    ///
    /// # Errors
    /// The source's own failures.
    fn tables(&self) -> Result<Vec<String>>;

    /// Whether `table` takes reads and writes (a disabled one does not).
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn is_enabled(&self, table: &str) -> Result<bool>;

    /// `table`'s schema, store id and whether it is enabled (what a search
    /// checks first), in one snapshot where the source has snapshots.
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn table_state(&self, table: &str) -> Result<(Arc<TableSchema>, u64, bool)> {
        let (schema, id) = {
            let view = self.view()?;
            (Arc::new(view.schema(table)?), view.table_id(table)?)
        };
        Ok((schema, id, self.is_enabled(table)?))
    }

    /// A number that changes with every write committed to the source,
    /// read without a view: a view whose [`RowView::version`] is the same
    /// reads what a new one would (the store's last LMDB transaction id).
    /// `None` (the default) for a source without one (HBase).
    fn version(&self) -> Option<u64> {
        None
    }

    /// The analyzer that makes keyword cells and analyzes queries.
    fn analyzer(&self) -> Option<Arc<dyn Analyzer>>;

    /// The rows of a partition holding every term of `query`, newest first
    /// (as [`ReadTxn::keyword_lookup`]).
    ///
    /// # Errors
    /// As [`ReadTxn::keyword_lookup`]; the source's own failures.
    fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage>;

    /// The members of thread `thread` of `table`, in id order (as
    /// [`ReadTxn::thread_members`]).
    ///
    /// # Errors
    /// `UnknownTable`, `NotThreaded`; the source's own failures.
    fn thread_members(&self, table: &str, thread: u64) -> Result<Vec<crate::ThreadMember>>;

    /// Forgets change-feed entries with `seq <= upto` (every index has
    /// absorbed them); how many. A source whose feed is not its own to
    /// trim (HBase's timestamps) keeps everything: the default.
    ///
    /// # Errors
    /// The source's own failures.
    fn trim_feed(&self, upto: u64) -> Result<u64> {
        let _ = upto;
        Ok(0)
    }
}

/// One consistent view of a source (see the module docs): every read
/// through it sees the same point in time.
pub trait RowView {
    /// The table's schema.
    ///
    /// # Errors
    /// `UnknownTable`; the source's own failures.
    fn schema(&self, table: &str) -> Result<TableSchema>;

    /// The table's id (as [`RowSource::table_id`]).
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn table_id(&self, table: &str) -> Result<u64>;

    /// The sequence the next change after this view will get.
    ///
    /// # Errors
    /// The source's own failures.
    fn next_seq(&self) -> Result<u64>;

    /// The sequence up to which (exclusive) this view's feed is final: no
    /// change below it can appear later. The store's is its next sequence
    /// (the default); a source whose sequences are clock times holds back
    /// a margin for clocks that lag (HBase).
    ///
    /// # Errors
    /// The source's own failures.
    fn settled_seq(&self) -> Result<u64> {
        self.next_seq()
    }

    /// Feed entries with `seq >= from_seq` in this view, at most `limit`.
    ///
    /// # Errors
    /// The source's own failures.
    fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>>;

    /// When the change with sequence `seq` was made (ms), if kept.
    ///
    /// # Errors
    /// The source's own failures.
    fn feed_time(&self, seq: u64) -> Result<Option<u64>>;

    /// The source's [`RowSource::version`] this view reads, where it has
    /// one (the default: none).
    fn version(&self) -> Option<u64> {
        None
    }

    /// The source clock's time when this view began (ms).
    fn now_ms(&self) -> u64;

    /// One row, as [`ReadTxn::get`].
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>>;

    /// Partitions cutting the keyword rows where the regions cut the rows
    /// (as [`ReadTxn::keyword_partition_splits`]).
    ///
    /// # Errors
    /// `NotSearchable`; as [`Self::schema`].
    fn keyword_partition_splits(&self, table: &str) -> Result<Vec<Vec<u8>>>;

    /// What does not hold in how the keyword rows refer to rows (the
    /// embedded store's row numbers, [`ReadTxn::check_keyword_numbers`]);
    /// empty for a source that keeps keys in them.
    ///
    /// # Errors
    /// As [`Self::keyword_partition_splits`].
    fn check_keyword_numbers(&self, _table: &str) -> Result<Vec<(Vec<u8>, String)>> {
        Ok(Vec::new())
    }

    /// How many keyword cells the table holds (a total for progress).
    ///
    /// # Errors
    /// As [`Self::keyword_partition_splits`].
    fn keyword_cell_count(&self, table: &str) -> Result<u64>;

    /// Every keyword cell of one partition, or of all (as
    /// [`ReadTxn::for_each_keyword_cell`]).
    ///
    /// # Errors
    /// As [`Self::keyword_partition_splits`], and whatever `f` returns.
    fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()>;

    /// Every keyword cell of the partitions `from <= p < to`.
    ///
    /// # Errors
    /// As [`Self::for_each_keyword_cell`].
    fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()>;

    /// Row keys cutting the table where its regions start, when this
    /// source builds an index from the rows' text rather than its keyword
    /// rows: a full build then reads the ranges between them in parallel
    /// with [`Self::for_each_row_keyword_cells`]. `None` (the default): it
    /// reads the keyword rows, by partition.
    ///
    /// # Errors
    /// As [`Self::schema`].
    fn row_splits(&self, _table: &str) -> Result<Option<Vec<Vec<u8>>>> {
        Ok(None)
    }

    /// The keyword cells of the rows with keys in `[from, to)`, made from
    /// their text (as [`ReadTxn::for_each_row_keyword_cells`]): each row's
    /// cells together, the rows in key order.
    ///
    /// # Errors
    /// `NoAnalyzer`; as [`Self::keyword_partition_splits`], and whatever
    /// `f` returns.
    fn for_each_row_keyword_cells(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()>;

    /// As [`Self::for_each_row_keyword_cells`], only the rows whose
    /// partition `keep` takes (one shard's). The default reads every
    /// row's cells and leaves the others'; a source that makes cells from
    /// text (HBase) leaves those rows before analyzing them.
    ///
    /// # Errors
    /// As [`Self::for_each_row_keyword_cells`].
    fn for_each_kept_row_keyword_cells(
        &self,
        table: &str,
        (from, to): (Option<&[u8]>, Option<&[u8]>),
        keep: &dyn Fn(&[u8]) -> bool,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        self.for_each_row_keyword_cells(table, from, to, &mut |cell| {
            if keep(cell.partition) { f(cell) } else { Ok(()) }
        })
    }

    /// The keyword cells row `row` should have, from its stored values.
    ///
    /// # Errors
    /// `NoAnalyzer`; as [`Self::keyword_partition_splits`].
    fn row_keyword_cells(&self, table: &str, row: &[u8]) -> Result<Vec<KeywordCell>>;
}

impl RowView for ReadTxn<'_> {
    fn schema(&self, table: &str) -> Result<TableSchema> {
        ReadTxn::schema(self, table)
    }

    fn table_id(&self, table: &str) -> Result<u64> {
        ReadTxn::table_id(self, table)
    }

    fn next_seq(&self) -> Result<u64> {
        ReadTxn::next_seq(self)
    }

    fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        ReadTxn::feed_since(self, from_seq, limit)
    }

    fn feed_time(&self, seq: u64) -> Result<Option<u64>> {
        ReadTxn::feed_time(self, seq)
    }

    fn version(&self) -> Option<u64> {
        Some(ReadTxn::version(self))
    }

    fn now_ms(&self) -> u64 {
        ReadTxn::now_ms(self)
    }

    fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        self.get_enabled_or_not(table, row, read)
    }

    fn keyword_partition_splits(&self, table: &str) -> Result<Vec<Vec<u8>>> {
        ReadTxn::keyword_partition_splits(self, table)
    }

    fn keyword_cell_count(&self, table: &str) -> Result<u64> {
        ReadTxn::keyword_cell_count(self, table)
    }

    fn check_keyword_numbers(&self, table: &str) -> Result<Vec<(Vec<u8>, String)>> {
        ReadTxn::check_keyword_numbers(self, table)
    }

    fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        ReadTxn::for_each_keyword_cell(self, table, partition, f)
    }

    fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        ReadTxn::for_each_keyword_cell_between(self, table, from, to, f)
    }

    fn for_each_row_keyword_cells(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        ReadTxn::for_each_row_keyword_cells(self, table, from, to, f)
    }

    fn row_keyword_cells(&self, table: &str, row: &[u8]) -> Result<Vec<KeywordCell>> {
        ReadTxn::row_keyword_cells(self, table, row)
    }
}

impl RowSource for Store {
    fn schema(&self, table: &str) -> Result<TableSchema> {
        Store::schema(self, table)
    }

    fn table_id(&self, table: &str) -> Result<u64> {
        Store::table_id(self, table)
    }

    fn regions(&self, table: &str) -> Result<Vec<Region>> {
        Store::regions(self, table)
    }

    fn rows(&self, table: &str, keys: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        let rtxn = self.begin_read()?;
        let rows = rtxn.multi_get(table, keys, read)?;
        // A row none of whose cells `read` selects still exists: looked
        // up whole in the same snapshot.
        let whole = ReadOptions::default();
        let mut out = Vec::with_capacity(rows.len());
        for (row, key) in rows.into_iter().zip(keys) {
            out.push(match row {
                Some(row) => Some(row),
                None if rtxn.get(table, key, &whole)?.is_some() => {
                    Some(Row { key: key.to_vec(), cells: Vec::new() })
                }
                None => None,
            });
        }
        Ok(out)
    }

    fn changes_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        self.feed_since(from_seq, limit)
    }

    fn next_seq(&self) -> Result<u64> {
        Store::next_seq(self)
    }

    fn view(&self) -> Result<Box<dyn RowView + '_>> {
        Ok(Box::new(self.begin_read()?))
    }

    fn tables(&self) -> Result<Vec<String>> {
        Store::tables(self)
    }

    fn is_enabled(&self, table: &str) -> Result<bool> {
        self.is_table_enabled(table)
    }

    fn table_state(&self, table: &str) -> Result<(Arc<TableSchema>, u64, bool)> {
        Store::table_state(self, table)
    }

    fn version(&self) -> Option<u64> {
        Some(Store::version(self))
    }

    fn analyzer(&self) -> Option<Arc<dyn Analyzer>> {
        Store::analyzer(self).cloned()
    }

    fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        Store::keyword_lookup(self, table, query)
    }

    fn thread_members(&self, table: &str, thread: u64) -> Result<Vec<crate::ThreadMember>> {
        self.begin_read()?.thread_members(table, thread)
    }

    fn trim_feed(&self, upto: u64) -> Result<u64> {
        Store::trim_feed(self, upto)
    }
}
