//! Schema changes (tables and indexes created, changed, dropped) and
//! compaction: writes that change what the catalog serves.

use std::collections::HashSet;
use std::sync::Arc;

use heed::RwTxn;

use super::apply::Writer;
use super::derived::{BuildCursor, build_chunk, build_total};
use crate::db::value::{DICTIONARY_BYTES, Dictionary};
use crate::error::{Error, ErrorKind, Result};
use crate::key::CellKey;
use crate::schema::{Compression, IndexSchema, TableSchema};
use crate::table::{DbSource, TableHandle, Tables, open_table};

/// What one step of an index build did ([`crate::Store::build_index_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexBuildStep {
    /// Cells walked.
    pub cells: u64,
    /// The index is ready: every row has its entry.
    pub ready: bool,
}

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
            let searchable = |base: &str| tables.table(base).is_ok_and(|t| t.schema.search.is_some());
            crate::schema::name::validate_new_table(table, &searchable)?;
            if let Ok(existing) = tables.table(table) {
                return if *existing.schema == *schema {
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
                &self.meta,
                &mut DbSource::Create(wtxn),
                table,
                version,
                schema.clone(),
                self.max_dbs,
            )?;
            Ok(Some(tables.with(version, Arc::new(handle))))
        })?;
        Ok(self.install_changed(created))
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
                self.meta.delete_index_build(wtxn, table, &index.schema.name)?;
            }
            if let Some(search) = &handle.search {
                search.db.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
                search.rows.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
                search.pending.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
            }
            if let Some(threads) = &handle.threads {
                threads.db.clear(wtxn).map_err(|e| Error::lmdb("clear threads", e))?;
            }
            let families: Vec<String> = handle.families.iter().map(|f| f.schema.name.clone()).collect();
            self.meta.delete_dictionaries(wtxn, table, &families)?;
            self.meta.delete_schema(wtxn, table)?;
            let version = self.meta.bump_catalog_version(wtxn)?;
            Ok(tables.without(version, table))
        })?;
        self.catalog.install(Arc::new(tables));
        Ok(())
    }

    /// [`crate::Store::start_index`].
    pub fn start_index(&self, table: &str, index: IndexSchema) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            if let Some(existing) = old.schema.indexes.iter().find(|i| i.name == index.name) {
                return if *existing == index {
                    Ok(None)
                } else {
                    Err(ErrorKind::IndexConflict { table: table.to_owned(), index: index.name.clone() }
                        .into())
                };
            }
            let mut schema = TableSchema::clone(&old.schema);
            schema.indexes.push(index.clone());
            schema.validate(table)?;
            self.meta.put_schema(wtxn, table, &schema)?;
            self.meta.put_index_build(wtxn, table, &index.name, &BuildCursor::default().encode())?;
            let handle = self.reopen(wtxn, tables, table, old.id, schema)?;
            // Leftovers of an earlier index of this name go.
            handle.1.index(&index.name)?.clear(wtxn)?;
            Ok(Some(handle))
        })?;
        Ok(self.install_changed(tables.map(|(tables, _)| tables)))
    }

    /// [`crate::Store::train_dictionary`].
    pub fn train_dictionary(&self, table: &str, family: &str, samples: &[&[u8]]) -> Result<bool> {
        // Trained outside the write lock: it takes a while, and only the
        // first dictionary of a family is kept (checked again below).
        let current = self.catalog.current();
        let handle = current.table(table)?;
        let wants = |handle: &crate::table::TableHandle| {
            handle.families.iter().any(|f| {
                f.schema.name == family && f.schema.compression == Compression::Zstd && f.dict.is_none()
            })
        };
        if !wants(&handle) {
            return Ok(false);
        }
        let Some(bytes) = Dictionary::train(samples, DICTIONARY_BYTES) else { return Ok(false) };
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            if !wants(&old) {
                return Ok(None);
            }
            self.meta.put_dictionary(wtxn, table, family, &bytes)?;
            self.reopen(wtxn, tables, table, old.id, TableSchema::clone(&old.schema)).map(Some)
        })?;
        Ok(self.install_changed(tables.map(|(tables, _)| tables)))
    }

    /// [`crate::Store::start_index_rebuild`].
    pub fn start_rebuild(&self, table: &str, index: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let (tables, _) = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            old.index(index)?.clear(wtxn)?;
            self.meta.put_index_build(wtxn, table, index, &BuildCursor::default().encode())?;
            self.reopen(wtxn, tables, table, old.id, TableSchema::clone(&old.schema))
        })?;
        self.catalog.install(Arc::new(tables));
        Ok(())
    }

    /// [`crate::Store::build_index_step`].
    pub fn build_step(&self, table: &str, index: &str, max_rows: usize) -> Result<IndexBuildStep> {
        let _writer = self.env.lock_writer()?;
        let now_ms = self.clock.now_ms();
        let (step, tables) = self.in_current(true, |wtxn, tables| {
            let handle = tables.table(table)?;
            let ix = handle.index(index)?;
            let Some(cursor) = self.meta.index_build(wtxn, table, index)? else {
                return Ok((IndexBuildStep { cells: 0, ready: true }, None));
            };
            let cursor = BuildCursor::decode(&cursor)?;
            // Entries the writes made since the build began move into the
            // main database, where the build writes.
            ix.merge_pending(wtxn, None)?;
            let (cells, next) = build_chunk(wtxn, &handle, index, &cursor, max_rows, now_ms)?;
            match next {
                Some(next) => {
                    self.meta.put_index_build(wtxn, table, index, &next.encode())?;
                    Ok((IndexBuildStep { cells, ready: false }, None))
                }
                None => {
                    self.meta.delete_index_build(wtxn, table, index)?;
                    let (tables, _) =
                        self.reopen(wtxn, tables, table, handle.id, TableSchema::clone(&handle.schema))?;
                    Ok((IndexBuildStep { cells, ready: true }, Some(tables)))
                }
            }
        })?;
        if let Some(tables) = tables {
            self.catalog.install(Arc::new(tables));
        }
        Ok(step)
    }

    /// Cells a build of `index` walks in all, for progress.
    pub fn build_total(&self, table: &str, index: &str) -> Result<u64> {
        let _writer = self.env.lock_writer()?;
        self.in_current(false, |wtxn, tables| {
            let handle = tables.table(table)?;
            Ok(build_total(wtxn, &handle, handle.index(index)?))
        })
    }

    /// [`crate::Store::drop_index`].
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        let (tables, _) = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            old.index(index)?.clear(wtxn)?;
            let mut schema = TableSchema::clone(&old.schema);
            schema.indexes.retain(|i| i.name != index);
            self.meta.put_schema(wtxn, table, &schema)?;
            self.meta.delete_index_build(wtxn, table, index)?;
            self.reopen(wtxn, tables, table, old.id, schema)
        })?;
        self.catalog.install(Arc::new(tables));
        Ok(())
    }

    /// [`crate::Store::set_table_enabled`].
    pub fn set_table_enabled(&self, table: &str, enabled: bool) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            if old.disabled != enabled {
                return Ok(None);
            }
            self.meta.set_disabled(wtxn, table, !enabled)?;
            self.reopen(wtxn, tables, table, old.id, TableSchema::clone(&old.schema))
                .map(|(tables, _)| Some(tables))
        })?;
        Ok(self.install_changed(tables))
    }

    /// [`crate::Store::set_display`].
    pub fn set_display(&self, table: &str, display: Option<Vec<String>>) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            let Some(schema) = old.schema.with_display(table, display.clone())? else { return Ok(None) };
            self.meta.put_schema(wtxn, table, &schema)?;
            self.reopen(wtxn, tables, table, old.id, schema).map(|(tables, _)| Some(tables))
        })?;
        Ok(self.install_changed(tables))
    }

    /// [`crate::Store::set_shards`].
    pub fn set_shards(&self, table: &str, shards: u32) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            let Some(schema) = old.schema.with_shards(table, shards)? else { return Ok(None) };
            self.meta.put_schema(wtxn, table, &schema)?;
            self.reopen(wtxn, tables, table, old.id, schema).map(|(tables, _)| Some(tables))
        })?;
        Ok(self.install_changed(tables))
    }

    /// [`crate::Store::write_format_4_for_tests`] (the store calls it).
    pub fn write_format_4(&self) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| {
            for handle in self.catalog.current().all() {
                if let Some(search) = &handle.search {
                    let name = crate::db::keyword_blocks_db_v4(&handle.name);
                    let v4 = self.env.create_db(wtxn, &name, self.max_dbs, "write format 4")?;
                    crate::keyword::write_format_4(wtxn, search, &v4)?;
                }
            }
            self.meta.set_format(wtxn, "rowsearch-store/4")
        })
    }

    /// [`crate::Store::write_format_9_for_tests`] (the store calls it).
    pub fn write_format_9(&self) -> Result<()> {
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| {
            for handle in self.catalog.current().all() {
                if let Some(search) = &handle.search {
                    crate::keyword::blocks_to_format_9(wtxn, search)?;
                }
            }
            self.meta.set_format(wtxn, "rowsearch-store/9")
        })
    }

    /// Serves `tables` when a schema change made them: whether it did.
    pub(super) fn install_changed(&self, tables: Option<Tables>) -> bool {
        let changed = tables.is_some();
        if let Some(tables) = tables {
            self.catalog.install(Arc::new(tables));
        }
        changed
    }

    /// Bumps the catalog version and opens `table` again with `schema` (as
    /// the metadata now says: schema and build states): the tables to serve
    /// once `wtxn` commits, and the new handle.
    fn reopen(
        &self,
        wtxn: &mut RwTxn,
        tables: &Tables,
        table: &str,
        id: u64,
        schema: TableSchema,
    ) -> Result<(Tables, Arc<TableHandle>)> {
        let version = self.meta.bump_catalog_version(wtxn)?;
        let handle = Arc::new(open_table(
            self.env,
            &self.meta,
            &mut DbSource::Create(wtxn),
            table,
            id,
            schema,
            self.max_dbs,
        )?);
        Ok((tables.with(version, Arc::clone(&handle)), handle))
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
            // again, then entries whose cells expired removed; keyword runs
            // merged into the blocks.
            for handle in &handles {
                for index in &handle.indexes {
                    index.compact(wtxn, now_ms)?;
                }
                if let Some(search) = &handle.search {
                    crate::keyword::merge_runs(wtxn, search)?;
                }
            }
            report.rows_touched = touched.len() as u64;
            let refs: Vec<(&str, &[u8])> = touched.iter().map(|(t, r)| (t.as_str(), r.as_slice())).collect();
            self.feed.append(wtxn, &refs, now_ms)?;
            Ok(report)
        })
    }
}
