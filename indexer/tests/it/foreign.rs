//! A place that is not the embedded store, for the tests of what the
//! indexer does with tables that live elsewhere.

use std::sync::atomic::{AtomicUsize, Ordering};

use rowsearch_indexer::store::Store;

/// A place that is not the store (it answers through `TableStore` only, as
/// tables that live in HBase do, without `store()`): `reindex` builds the
/// same index from it, into another directory.
/// With `reads_left`, its reads of rows by key fail past that many (a
/// place that went away mid-run).
#[derive(Debug)]
pub(crate) struct Foreign<'a>(&'a Store, Option<AtomicUsize>);

impl<'a> Foreign<'a> {
    pub(crate) fn new(store: &'a Store) -> Self {
        Foreign(store, None)
    }

    /// Its reads of rows by key fail after `reads` of them.
    pub(crate) fn failing_after(store: &'a Store, reads: usize) -> Self {
        Foreign(store, Some(AtomicUsize::new(reads)))
    }
}

impl rowsearch_indexer::store::RowSource for Foreign<'_> {
    fn schema(&self, table: &str) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::TableSchema> {
        self.0.schema(table)
    }
    fn table_id(&self, table: &str) -> rowsearch_indexer::store::Result<u64> {
        self.0.table_id(table)
    }
    fn regions(
        &self,
        table: &str,
    ) -> rowsearch_indexer::store::Result<Vec<rowsearch_indexer::store::Region>> {
        self.0.regions(table)
    }
    fn rows(
        &self,
        table: &str,
        keys: &[&[u8]],
        read: &rowsearch_indexer::store::ReadOptions,
    ) -> rowsearch_indexer::store::Result<Vec<Option<rowsearch_indexer::store::Row>>> {
        if let Some(left) = &self.1
            && left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_err()
        {
            let gone = std::io::Error::other("the place went away");
            return Err(rowsearch_indexer::store::Error::callback(gone));
        }
        rowsearch_indexer::store::RowSource::rows(self.0, table, keys, read)
    }
    fn changes_since(
        &self,
        from_seq: u64,
        limit: usize,
    ) -> rowsearch_indexer::store::Result<Vec<rowsearch_indexer::store::FeedEntry>> {
        rowsearch_indexer::store::RowSource::changes_since(self.0, from_seq, limit)
    }
    fn next_seq(&self) -> rowsearch_indexer::store::Result<u64> {
        self.0.next_seq()
    }
    fn view(&self) -> rowsearch_indexer::store::Result<Box<dyn rowsearch_indexer::store::RowView + '_>> {
        rowsearch_indexer::store::RowSource::view(self.0)
    }
    fn tables(&self) -> rowsearch_indexer::store::Result<Vec<String>> {
        self.0.tables()
    }
    fn is_enabled(&self, table: &str) -> rowsearch_indexer::store::Result<bool> {
        self.0.is_table_enabled(table)
    }
    fn analyzer(&self) -> Option<std::sync::Arc<dyn rowsearch_indexer::store::Analyzer>> {
        self.0.analyzer().cloned()
    }
    fn keyword_lookup(
        &self,
        table: &str,
        query: &rowsearch_indexer::store::KeywordQuery,
    ) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::KeywordPage> {
        self.0.keyword_lookup(table, query)
    }
    fn thread_members(
        &self,
        table: &str,
        thread: u64,
    ) -> rowsearch_indexer::store::Result<Vec<rowsearch_indexer::store::ThreadMember>> {
        rowsearch_indexer::store::RowSource::thread_members(self.0, table, thread)
    }
}

impl rowsearch_indexer::store::ChangeFeed for Foreign<'_> {
    fn changes_after(
        &self,
        since: u64,
        look_at: usize,
    ) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::FeedRead> {
        rowsearch_indexer::store::ChangeFeed::changes_after(self.0, since, look_at)
    }
    fn feed_oldest(&self) -> rowsearch_indexer::store::Result<u64> {
        rowsearch_indexer::store::ChangeFeed::feed_oldest(self.0)
    }
    fn consumers(&self) -> rowsearch_indexer::store::Result<Vec<rowsearch_indexer::store::Consumer>> {
        self.0.consumers()
    }
    fn consumer(&self, name: &str) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::Consumer> {
        self.0.consumer(name)
    }
    fn set_consumer(
        &self,
        name: &str,
        position: Option<u64>,
        retention_ms: Option<u64>,
    ) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::Consumer> {
        self.0.set_consumer(name, position, retention_ms)
    }
    fn delete_consumer(&self, name: &str) -> rowsearch_indexer::store::Result<bool> {
        self.0.delete_consumer(name)
    }
    fn consumer_state(
        &self,
        c: &rowsearch_indexer::store::Consumer,
    ) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::ConsumerState> {
        self.0.consumer_state(c)
    }
}

impl rowsearch_indexer::store::TableStore for Foreign<'_> {
    fn place(&self) -> rowsearch_indexer::store::PlaceInfo {
        rowsearch_indexer::store::PlaceInfo { kind: "foreign", at: "a test".into() }
    }
    fn scan_page(
        &self,
        table: &str,
        scan: &rowsearch_indexer::store::Scan,
        cancel: &rowsearch_indexer::store::Cancel,
    ) -> rowsearch_indexer::store::Result<rowsearch_indexer::store::ScanPage> {
        rowsearch_indexer::store::TableStore::scan_page(self.0, table, scan, cancel)
    }
    fn count(
        &self,
        table: &str,
        scan: &rowsearch_indexer::store::Scan,
        cancel: &rowsearch_indexer::store::Cancel,
    ) -> rowsearch_indexer::store::Result<u64> {
        rowsearch_indexer::store::TableStore::count(self.0, table, scan, cancel)
    }
    fn set_table_enabled(&self, table: &str, enabled: bool) -> rowsearch_indexer::store::Result<bool> {
        self.0.set_table_enabled(table, enabled)
    }
    fn set_display(
        &self,
        table: &str,
        display: Option<Vec<String>>,
    ) -> rowsearch_indexer::store::Result<bool> {
        self.0.set_display(table, display)
    }
    fn set_shards(&self, table: &str, shards: u32) -> rowsearch_indexer::store::Result<bool> {
        self.0.set_shards(table, shards)
    }
    fn create_table(
        &self,
        table: &str,
        schema: &rowsearch_indexer::store::TableSchema,
    ) -> rowsearch_indexer::store::Result<bool> {
        self.0.create_table(table, schema)
    }
    fn drop_table(&self, table: &str) -> rowsearch_indexer::store::Result<()> {
        self.0.drop_table(table)
    }
    fn put_rows(
        &self,
        table: &str,
        rows: &[(Vec<u8>, Vec<rowsearch_indexer::store::PutCell>)],
    ) -> rowsearch_indexer::store::Result<u64> {
        rowsearch_indexer::store::TableStore::put_rows(self.0, table, rows)
    }
    fn delete(
        &self,
        table: &str,
        key: &[u8],
        whats: &[rowsearch_indexer::store::Delete],
    ) -> rowsearch_indexer::store::Result<u64> {
        rowsearch_indexer::store::TableStore::delete(self.0, table, key, whats)
    }
    fn each_version(
        &self,
        table: &str,
        start: Option<&[u8]>,
        opened: &mut dyn FnMut(
            rowsearch_indexer::store::TableSchema,
            Option<u64>,
        ) -> rowsearch_indexer::store::Result<()>,
        f: &mut dyn FnMut(rowsearch_indexer::store::Row) -> rowsearch_indexer::store::Result<()>,
    ) -> rowsearch_indexer::store::Result<()> {
        rowsearch_indexer::store::TableStore::each_version(self.0, table, start, opened, f)
    }
}
