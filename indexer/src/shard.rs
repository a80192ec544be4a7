//! One shard of a table as a row source: the table's rows whose partition
//! falls in the shard ([`SearchSchema::shard_of`]), and no other table.
//!
//! A searcher of a cluster builds and keeps an index of each shard it
//! holds (`search-api/src/cluster`) with the indexer's own machinery: live
//! indexes, refresher, full and incremental builds all read through a
//! [`ShardSource`] and so see the shard's keyword cells only. The filter is
//! on keyword cells, which name their partition: a full build reads the
//! shard's documents; an incremental build or an overlay finds a changed
//! row of another shard without cells, so deletes it by key and adds
//! nothing (a row moved to another mailbox leaves this shard's index and
//! enters the other's). Everything else (schemas, feed, rows by key) is the
//! table's own.

use std::sync::Arc;

use rowsearch_store::{
    Analyzer, FeedEntry, KeywordCell, KeywordCellRef, KeywordPage, KeywordQuery, ReadOptions, Region, Result,
    Row, RowSource, RowView, SearchSchema, TableSchema,
};

/// Shard `shard` of `shards` of `table` in `inner` (see the module docs).
#[derive(Debug, Clone)]
pub struct ShardSource {
    inner: Arc<dyn RowSource>,
    table: String,
    shard: u32,
    shards: u32,
}

impl ShardSource {
    /// Shard `shard` (of `shards`) of `table` read from `inner`.
    pub fn new(inner: Arc<dyn RowSource>, table: &str, shard: u32, shards: u32) -> ShardSource {
        ShardSource { inner, table: table.to_owned(), shard, shards: shards.max(1) }
    }

    /// No table of `inner` at all: live indexes over it build nothing (a
    /// searcher of a cluster, whose indexes are its shards').
    pub fn no_table(inner: Arc<dyn RowSource>) -> ShardSource {
        ShardSource { inner, table: String::new(), shard: 0, shards: 1 }
    }

    /// Its table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Its shard number.
    pub fn shard(&self) -> u32 {
        self.shard
    }

    fn filter(&self) -> Filter {
        Filter { table: self.table.clone(), shard: self.shard, shards: self.shards, last: None }
    }
}

/// Whether a keyword cell's partition is the shard's, remembering the last
/// partition asked (cells come partition by partition).
struct Filter {
    table: String,
    shard: u32,
    shards: u32,
    last: Option<(Vec<u8>, bool)>,
}

impl Filter {
    fn keeps(&mut self, table: &str, partition: &[u8]) -> bool {
        if table != self.table {
            return true;
        }
        if let Some((p, mine)) = &self.last
            && p == partition
        {
            return *mine;
        }
        let mine = SearchSchema::shard_of(partition, self.shards) == self.shard;
        self.last = Some((partition.to_vec(), mine));
        mine
    }
}

impl RowSource for ShardSource {
    fn schema(&self, table: &str) -> Result<TableSchema> {
        self.inner.schema(table)
    }

    fn table_id(&self, table: &str) -> Result<u64> {
        self.inner.table_id(table)
    }

    fn regions(&self, table: &str) -> Result<Vec<Region>> {
        self.inner.regions(table)
    }

    fn rows(&self, table: &str, keys: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        self.inner.rows(table, keys, read)
    }

    fn changes_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        self.inner.changes_since(from_seq, limit)
    }

    fn next_seq(&self) -> Result<u64> {
        self.inner.next_seq()
    }

    fn view(&self) -> Result<Box<dyn RowView + '_>> {
        Ok(Box::new(ShardView { inner: self.inner.view()?, filter: self.filter() }))
    }

    fn tail_view(&self) -> Result<Box<dyn RowView + '_>> {
        Ok(Box::new(ShardView { inner: self.inner.tail_view()?, filter: self.filter() }))
    }

    fn remote(&self) -> bool {
        self.inner.remote()
    }

    /// Its table alone, when the source has it.
    fn tables(&self) -> Result<Vec<String>> {
        Ok(self.inner.tables()?.into_iter().filter(|t| *t == self.table).collect())
    }

    fn is_enabled(&self, table: &str) -> Result<bool> {
        self.inner.is_enabled(table)
    }

    fn table_state(&self, table: &str) -> Result<(Arc<TableSchema>, u64, bool)> {
        self.inner.table_state(table)
    }

    fn version(&self) -> Option<u64> {
        self.inner.version()
    }

    fn analyzer(&self) -> Option<Arc<dyn Analyzer>> {
        self.inner.analyzer()
    }

    fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        self.inner.keyword_lookup(table, query)
    }

    fn thread_members(&self, table: &str, thread: u64) -> Result<Vec<rowsearch_store::ThreadMember>> {
        self.inner.thread_members(table, thread)
    }

    /// Nothing: the feed is the table's, read by every shard's index.
    fn trim_feed(&self, _upto: u64) -> Result<u64> {
        Ok(0)
    }
}

/// A view of a [`ShardSource`]: the inner view with other shards' keyword
/// cells left out.
struct ShardView<'a> {
    inner: Box<dyn RowView + 'a>,
    filter: Filter,
}

impl ShardView<'_> {
    /// `f` called for the shard's cells only.
    fn each(
        &self,
        table: &str,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
        read: impl FnOnce(&mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let mut filter = Filter { last: None, table: self.filter.table.clone(), ..self.filter };
        read(&mut |cell| if filter.keeps(table, cell.partition) { f(cell) } else { Ok(()) })
    }
}

impl RowView for ShardView<'_> {
    fn schema(&self, table: &str) -> Result<TableSchema> {
        self.inner.schema(table)
    }

    fn table_id(&self, table: &str) -> Result<u64> {
        self.inner.table_id(table)
    }

    fn next_seq(&self) -> Result<u64> {
        self.inner.next_seq()
    }

    fn settled_seq(&self) -> Result<u64> {
        self.inner.settled_seq()
    }

    fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        self.inner.feed_since(from_seq, limit)
    }

    fn feed_time(&self, seq: u64) -> Result<Option<u64>> {
        self.inner.feed_time(seq)
    }

    fn version(&self) -> Option<u64> {
        self.inner.version()
    }

    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        self.inner.get(table, row, read)
    }

    fn keyword_partition_splits(&self, table: &str) -> Result<Vec<Vec<u8>>> {
        self.inner.keyword_partition_splits(table)
    }

    fn check_keyword_numbers(&self, table: &str) -> Result<Vec<(Vec<u8>, String)>> {
        self.inner.check_keyword_numbers(table)
    }

    /// The table's (a total for progress: the shard's share is not known
    /// before it is read).
    fn keyword_cell_count(&self, table: &str) -> Result<u64> {
        self.inner.keyword_cell_count(table)
    }

    fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        self.each(table, f, |g| self.inner.for_each_keyword_cell(table, partition, g))
    }

    fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        self.each(table, f, |g| self.inner.for_each_keyword_cell_between(table, from, to, g))
    }

    fn row_splits(&self, table: &str) -> Result<Option<Vec<Vec<u8>>>> {
        self.inner.row_splits(table)
    }

    fn for_each_row_keyword_cells(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        if table != self.filter.table {
            return self.inner.for_each_row_keyword_cells(table, from, to, f);
        }
        let (shard, shards) = (self.filter.shard, self.filter.shards);
        let keep = move |partition: &[u8]| SearchSchema::shard_of(partition, shards) == shard;
        self.inner.for_each_kept_row_keyword_cells(table, (from, to), &keep, f)
    }

    /// The row's cells when its partition is the shard's; none otherwise
    /// (an index of the shard then holds no document of it).
    fn row_keyword_cells(&self, table: &str, row: &[u8]) -> Result<Vec<KeywordCell>> {
        let cells = self.inner.row_keyword_cells(table, row)?;
        let mut filter = Filter { last: None, table: self.filter.table.clone(), ..self.filter };
        Ok(cells.into_iter().filter(|c| filter.keeps(table, &c.partition)).collect())
    }
}
