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
use crate::table::{DbSource, TableHandle, Tables, open_table};

/// What `compact` removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Cells past their TTL that were purged.
    pub cells_purged: u64,
    /// Rows that lost at least one cell.
    pub rows_touched: u64,
}

impl Writer<'_> {
    /// Runs `op` in a write transaction with the tables of the catalog
    /// version that transaction sees: when the catalog held here is stale
    /// (another process changed a schema), the transaction is abandoned,
    /// the catalog reloaded and `op` run again. `opens_dbs` when `op` opens
    /// or creates databases. Callers hold the writer lock.
    pub(super) fn in_current<T>(
        &self,
        opens_dbs: bool,
        mut op: impl FnMut(&mut RwTxn, &Tables) -> Result<T>,
    ) -> Result<T> {
        loop {
            let tables = self.catalog.current();
            let outcome = {
                let _dbi = opens_dbs.then(|| self.env.lock_dbi());
                self.env.write_txn(|wtxn| {
                    if self.catalog.version_in(wtxn)? != tables.version {
                        return Ok(None);
                    }
                    op(wtxn, &tables).map(Some)
                })?
            };
            match outcome {
                Some(value) => return Ok(value),
                None => {
                    self.catalog.refresh(self.env)?;
                }
            }
        }
    }

    /// [`crate::Store::create_table`].
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        schema.validate(table)?;
        let _writer = self.env.lock_writer()?;
        let created = self.in_current(true, |wtxn, tables| {
            if let Ok(existing) = tables.table(table) {
                return if existing.schema == *schema {
                    Ok(None)
                } else {
                    Err(ErrorKind::SchemaConflict { table: table.to_owned() }.into())
                };
            }
            self.meta.put_schema(wtxn, table, schema)?;
            let version = self.meta.bump_catalog_version(wtxn)?;
            self.meta.put_table_id(wtxn, table, version)?;
            let handle = open_table(
                self.env,
                &mut DbSource::Create(wtxn),
                table,
                version,
                schema.clone(),
                self.max_dbs,
            )?;
            Ok(Some(tables.with(version, Arc::new(handle))))
        })?;
        Ok(match created {
            Some(tables) => {
                self.catalog.install(Arc::new(tables));
                true
            }
            None => false,
        })
    }

    /// [`crate::Store::drop_table`].
    pub fn drop_table(&self, table: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(false, |wtxn, tables| {
            let handle = tables.table(table)?;
            for family in &handle.families {
                family.db.clear(wtxn).map_err(|e| Error::lmdb("clear family", e))?;
            }
            for index in &handle.indexes {
                index.clear(wtxn)?;
            }
            if let Some(search) = &handle.search {
                search.db.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
            }
            self.meta.delete_schema(wtxn, table)?;
            let version = self.meta.bump_catalog_version(wtxn)?;
            Ok(tables.without(version, table))
        })?;
        self.catalog.install(Arc::new(tables));
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
        self.change_schema(
            table,
            |old| {
                if old.indexes.iter().any(|i| i.name == index.name) {
                    return Err(ErrorKind::InvalidSchema {
                        table: table.to_owned(),
                        reason: format!("index {:?} exists", index.name),
                    }
                    .into());
                }
                let mut schema = old.clone();
                schema.indexes.push(index.clone());
                schema.validate(table)?;
                Ok(schema)
            },
            |wtxn, _, handle| build_index(wtxn, handle, &index.name, self.clock.now_ms(), &mut *progress),
        )
    }

    /// [`crate::Store::rebuild_index`].
    pub fn rebuild_index(&self, table: &str, index: &str, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let now_ms = self.clock.now_ms();
        self.in_current(false, |wtxn, tables| {
            let handle = tables.table(table)?;
            handle.index(index)?;
            build_index(wtxn, &handle, index, now_ms, &mut *progress)
        })
    }

    /// [`crate::Store::drop_index`].
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        self.change_schema(
            table,
            |old| {
                if !old.indexes.iter().any(|i| i.name == index) {
                    return Err(
                        ErrorKind::UnknownIndex { table: table.to_owned(), index: index.to_owned() }.into()
                    );
                }
                let mut schema = old.clone();
                schema.indexes.retain(|i| i.name != index);
                Ok(schema)
            },
            |wtxn, old, _| old.index(index)?.clear(wtxn),
        )
    }

    /// Changes the schema of `table` to what `change` makes of the current
    /// one, and runs `work` with the old and the new handle, all in one
    /// transaction; then serves the new handle.
    fn change_schema(
        &self,
        table: &str,
        change: impl Fn(&TableSchema) -> Result<TableSchema>,
        mut work: impl FnMut(&mut RwTxn, &TableHandle, &TableHandle) -> Result<()>,
    ) -> Result<()> {
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            let schema = change(&old.schema)?;
            self.meta.put_schema(wtxn, table, &schema)?;
            let version = self.meta.bump_catalog_version(wtxn)?;
            let handle =
                open_table(self.env, &mut DbSource::Create(wtxn), table, old.id, schema, self.max_dbs)?;
            work(wtxn, &old, &handle)?;
            Ok(tables.with(version, Arc::new(handle)))
        })?;
        self.catalog.install(Arc::new(tables));
        Ok(())
    }

    /// [`crate::Store::compact`].
    pub fn compact(&self) -> Result<CompactReport> {
        let _writer = self.env.lock_writer()?;
        let now_ms = self.clock.now_ms();
        self.in_current(false, |wtxn, tables| {
            let handles: Vec<Arc<TableHandle>> = tables.all();
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
