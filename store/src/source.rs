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

use crate::Result;
use crate::cell::Row;
use crate::db::feed::FeedEntry;
use crate::read::ReadOptions;
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
}
