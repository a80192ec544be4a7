//! Schema changes (tables and indexes created, changed, dropped) and
//! compaction: writes that change what the catalog serves.

use std::collections::HashSet;
use std::sync::Arc;

use heed::RwTxn;

use super::apply::Writer;
use super::derived::build_index;
use crate::error::{Error, ErrorKind, Result};
use crate::key::CellKey;
use crate::schema::{IndexSchema, TableSchema};
use crate::table::{TableHandle, open_table};

/// What `compact` removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Cells past their TTL that were purged.
    pub cells_purged: u64,
    /// Rows that lost at least one cell.
    pub rows_touched: u64,
}

impl Writer<'_> {
    /// [`crate::Store::create_table`].
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        schema.validate(table)?;
        let _writer = self.env.lock_writer()?;
        if let Ok(existing) = self.catalog.table(table) {
            return if existing.schema == *schema {
                Ok(false)
            } else {
                Err(ErrorKind::SchemaConflict { table: table.to_owned() }.into())
            };
        }
        let handle = self.env.write_txn(|wtxn| {
            self.meta.put_schema(wtxn, table, schema)?;
            open_table(self.env, wtxn, table, schema.clone(), self.max_dbs)
        })?;
        self.catalog.insert(Arc::new(handle));
        Ok(true)
    }

    /// [`crate::Store::drop_table`].
    pub fn drop_table(&self, table: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let handle = self.catalog.table(table)?;
        self.env.write_txn(|wtxn| {
            for family in &handle.families {
                family.db.clear(wtxn).map_err(|e| Error::lmdb("clear family", e))?;
            }
            for index in &handle.indexes {
                index.clear(wtxn)?;
            }
            if let Some(search) = &handle.search {
                search.db.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
            }
            self.meta.delete_schema(wtxn, table)
        })?;
        self.catalog.remove(table);
        Ok(())
    }

    /// [`crate::Store::add_index`].
    pub fn add_index(
        &self,
        table: &str,
        index: IndexSchema,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let old = self.catalog.table(table)?;
        if old.schema.indexes.iter().any(|i| i.name == index.name) {
            return Err(ErrorKind::InvalidSchema {
                table: table.to_owned(),
                reason: format!("index {:?} exists", index.name),
            }
            .into());
        }
        let mut schema = old.schema.clone();
        schema.indexes.push(index.clone());
        schema.validate(table)?;
        self.replace_schema(table, schema, |wtxn, handle| {
            build_index(wtxn, handle, &index.name, self.clock.now_ms(), progress)
        })?;
        Ok(())
    }

    /// [`crate::Store::rebuild_index`].
    pub fn rebuild_index(&self, table: &str, index: &str, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let handle = self.catalog.table(table)?;
        handle.index(index)?;
        let now_ms = self.clock.now_ms();
        self.env.write_txn(|wtxn| build_index(wtxn, &handle, index, now_ms, &mut *progress))
    }

    /// [`crate::Store::drop_index`].
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let old = self.catalog.table(table)?;
        old.index(index)?;
        let mut schema = old.schema.clone();
        schema.indexes.retain(|i| i.name != index);
        self.replace_schema(table, schema, |wtxn, _| old.index(index)?.clear(wtxn))?;
        Ok(())
    }

    /// Writes a changed schema of `table`, runs `work` with the new handle
    /// in the same transaction, then serves the new handle.
    fn replace_schema(
        &self,
        table: &str,
        schema: TableSchema,
        mut work: impl FnMut(&mut RwTxn, &TableHandle) -> Result<()>,
    ) -> Result<Arc<TableHandle>> {
        let handle = self.env.write_txn(|wtxn| {
            self.meta.put_schema(wtxn, table, &schema)?;
            let handle = open_table(self.env, wtxn, table, schema.clone(), self.max_dbs)?;
            work(wtxn, &handle)?;
            Ok(handle)
        })?;
        let handle = Arc::new(handle);
        self.catalog.insert(handle.clone());
        Ok(handle)
    }

    /// [`crate::Store::compact`].
    pub fn compact(&self) -> Result<CompactReport> {
        let _writer = self.env.lock_writer()?;
        let now_ms = self.clock.now_ms();
        let handles: Vec<Arc<TableHandle>> = self.catalog.all();
        self.env.write_txn(|wtxn| {
            let mut report = CompactReport::default();
            let mut touched: Vec<(String, Vec<u8>)> = Vec::new();
            let mut seen = HashSet::new();
            for handle in &handles {
                for family in handle.families.iter().filter(|f| f.schema.ttl_seconds.is_some()) {
                    let mut dead = Vec::new();
                    for item in family.db.iter(wtxn).map_err(|e| Error::lmdb("compact", e))? {
                        let (k, _) = item.map_err(|e| Error::lmdb("compact", e))?;
                        let cell = CellKey::decode(&family.db_name, k)?;
                        if !family.schema.is_live(cell.timestamp, now_ms) {
                            dead.push(k.to_vec());
                            if seen.insert((handle.name.clone(), cell.row.clone())) {
                                touched.push((handle.name.clone(), cell.row));
                            }
                        }
                    }
                    for k in &dead {
                        family.db.delete(wtxn, k).map_err(|e| Error::lmdb("compact", e))?;
                    }
                    report.cells_purged += dead.len() as u64;
                }
            }
            // Index runs merged, so a compacted index is one database
            // again, then entries whose cells expired removed.
            for handle in &handles {
                for index in &handle.indexes {
                    index.compact(wtxn, now_ms)?;
                }
            }
            report.rows_touched = touched.len() as u64;
            let refs: Vec<(&str, &[u8])> = touched.iter().map(|(t, r)| (t.as_str(), r.as_slice())).collect();
            self.feed.append(wtxn, &refs)?;
            Ok(report)
        })
    }
}
