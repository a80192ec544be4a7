//! HBase as a row source: what the indexer reads (`RowSource`, `RowView`)
//! answered from tables in HBase. A view reads as of one timestamp (every
//! read's time range ends there); the change feed is HBase's own
//! timestamps: a change's sequence is its cell's time (ms), so the rows
//! changed since a sequence are a time-range scan. Keyword cells come from
//! the rows' values through the analyzer (`store::for_each_keyword_cell_of`),
//! so a table filled by any HBase client is searchable.

use std::sync::Arc;

use rowsearch_store::{Analyzer, PutCell, ReadOptions, Row, TableSchema};

use super::indexes;
use super::keywords;
use super::tables::{HbaseError, HbaseTables, read_ahead};
use super::threads;

mod feed;
mod view;

/// A row's key and the cells put into it.
type RowPuts = (Vec<u8>, Vec<PutCell>);

/// Connections a batch of puts is spread over.
const PUT_WAYS: usize = 2;

/// Rows scanned a call.
const PAGE: usize = 500;

/// How far before a view's time the sequence it reports goes (the point an
/// index built from it has absorbed): a write committed in the same
/// millisecond as the view began, or stamped by a region server whose
/// clock is a little behind, is found by the next pass (a row indexed
/// again is harmless).
const SKEW_MARGIN_MS: u64 = 2_000;

/// Tables in HBase as a row source.
#[derive(Debug)]
pub struct HbaseSource {
    tables: HbaseTables,
    analyzer: Arc<dyn Analyzer>,
    /// Held while a threaded table's threads are assigned and written: one
    /// writer of thread entries at a time (see `threads`).
    threading: std::sync::Mutex<()>,
    /// Which tables keep keyword rows (and their upgrade, once).
    companions: keywords::Companions,
    /// Whether HBase's replication brings every write to the feed.
    pub(super) stream: super::stream::Stream,
}

pub(super) fn err(e: impl Into<HbaseError>) -> rowsearch_store::Error {
    match e.into() {
        // The store's own kind, so callers handle a missing table alike.
        HbaseError::UnknownTable { table } => rowsearch_store::ErrorKind::UnknownTable { table }.into(),
        HbaseError::UnknownFamily { table, family } => {
            rowsearch_store::ErrorKind::UnknownFamily { table, family }.into()
        }
        HbaseError::SchemaConflict { table } => rowsearch_store::ErrorKind::SchemaConflict { table }.into(),
        HbaseError::Store(e) => e,
        e => rowsearch_store::Error::callback(e),
    }
}

pub(super) use super::clock::now_ms;

fn selects(column: &rowsearch_store::Column, cell: &rowsearch_store::Cell) -> bool {
    match column {
        rowsearch_store::Column::Family(f) => *cell.family == **f,
        rowsearch_store::Column::Qualifier(f, q) => *cell.family == **f && cell.qualifier == *q,
    }
}

/// The cells `read` selects of `row` (its columns; HBase answers the
/// newest version of each).
pub(super) fn selected(row: Row, read: &ReadOptions) -> Option<Row> {
    let cells: Vec<_> = row
        .cells
        .into_iter()
        .filter(|c| read.columns.is_empty() || read.columns.iter().any(|col| selects(col, c)))
        .collect();
    (!cells.is_empty()).then_some(Row { key: row.key, cells })
}

impl HbaseSource {
    /// The tables behind the Thrift2 gateway at `addr`, their keyword cells
    /// made by `analyzer`.
    pub fn new(addr: &str, analyzer: Arc<dyn Analyzer>) -> HbaseSource {
        HbaseSource {
            tables: HbaseTables::new(addr),
            analyzer,
            threading: std::sync::Mutex::new(()),
            companions: keywords::Companions::default(),
            stream: super::stream::Stream::default(),
        }
    }

    /// Whether HBase answers (one call, within 2 s).
    ///
    /// # Errors
    /// `Client` when it does not.
    pub fn ping(&self) -> Result<(), HbaseError> {
        let mut client =
            crate::thrift::HbaseClient::new(self.tables.addr(), std::time::Duration::from_secs(2));
        client.table_exists(super::tables::CATALOG)?;
        Ok(())
    }

    /// The tables (catalog and rows).
    pub fn tables(&self) -> &HbaseTables {
        &self.tables
    }

    /// Upgrades `table`'s keyword rows when an older build wrote them (see
    /// `keywords::upgrade`), `progress(partitions, cells moved)` as it goes:
    /// the cells moved, `None` when there was nothing to do.
    ///
    /// # Errors
    /// `Client`; `Corrupted` for a cell of neither layout.
    pub fn upgrade_keywords(
        &self,
        table: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Option<u64>, HbaseError> {
        self.companions.upgrade(&self.tables, table, progress)
    }

    /// Creates `table` with `schema` (and, for a searchable one, the
    /// companion table of its keyword rows); false when an identical one
    /// exists.
    ///
    /// # Errors
    /// As [`HbaseTables::create_table`].
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool, HbaseError> {
        for (suffix, what) in [(keywords::SUFFIX, "keyword"), (threads::SUFFIX, "thread")] {
            if table.ends_with(suffix) {
                return Err(HbaseError::Schema {
                    table: table.to_owned(),
                    reason: format!("names ending in {suffix:?} are rowsearch's {what} tables"),
                });
            }
        }
        if table.contains(indexes::MARK) {
            return Err(HbaseError::Schema {
                table: table.to_owned(),
                reason: format!("names holding {:?} are rowsearch's index tables", indexes::MARK),
            });
        }
        let created = self.tables.create_table(table, schema)?;
        self.companions.forget(table);
        indexes::create_all(&mut self.tables.client(), table, schema)?;
        if schema.search.is_some() {
            keywords::create(&mut self.tables.client(), table, schema)?;
        }
        if schema.threads.is_some() {
            threads::create(&mut self.tables.client(), table)?;
        }
        Ok(created)
    }

    /// Drops `table` and its keyword rows.
    ///
    /// # Errors
    /// As [`HbaseTables::drop_table`].
    pub fn drop_table(&self, table: &str) -> Result<(), HbaseError> {
        let schema = self.tables.schema(table)?;
        self.tables.drop_table(table)?;
        indexes::drop_all(&mut self.tables.client(), table, &schema)?;
        threads::drop_companion(&mut self.tables.client(), table)?;
        self.companions.forget(table);
        keywords::drop_companion(&mut self.tables.client(), table)
    }

    /// Writes `rows` of `table` (each its cells onto what the row holds)
    /// and their keyword rows: the rows as they are read first (one
    /// batched get), the keyword columns they gain and lose, then the rows
    /// (one batched put). A failure between leaves keyword columns of rows
    /// not written yet, which the next write of the rows puts right and a
    /// search drops (their rows are not there).
    ///
    /// # Errors
    /// `UnknownTable`; `UnknownFamily`; `Client`.
    pub fn put_rows(&self, table: &str, rows: &[(Vec<u8>, Vec<PutCell>)]) -> Result<(), HbaseError> {
        let schema = self.tables.schema(table)?;
        if let Some(c) =
            rows.iter().flat_map(|(_, c)| c).find(|c| !schema.families.iter().any(|f| f.name == c.family))
        {
            return Err(HbaseError::UnknownFamily { table: table.to_owned(), family: c.family.clone() });
        }
        // A threaded table's rows gain their thread column, and rows of
        // threads merged into another theirs, entries written first.
        let started = std::time::Instant::now();
        let mut phases = [0u128; 8];
        let mut lap = |i: usize, at: &mut std::time::Instant| {
            phases[i] = at.elapsed().as_micros();
            *at = std::time::Instant::now();
        };
        let mut at_phase = started;
        let _threading;
        let threaded;
        let rows = if schema.threads.is_some() {
            _threading = self.threading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            threaded = self.threaded(table, &schema, rows)?;
            threaded.as_slice()
        } else {
            rows
        };
        // An indexed table's cells without a timestamp take the write's:
        // one clock orders its rows and their index entries.
        let indexed = !schema.indexes.is_empty();
        let at = super::clock::stamp();
        let stamped: Vec<RowPuts>;
        let rows = if indexed {
            stamped = rows
                .iter()
                .map(|(k, cells)| {
                    let cells = cells.iter().cloned().map(|mut c| {
                        c.timestamp.get_or_insert(at);
                        c
                    });
                    (k.clone(), cells.collect())
                })
                .collect();
            stamped.as_slice()
        } else {
            rows
        };
        let mut client = self.tables.client();
        let kept = schema.search.is_some() && self.companions.kept(&self.tables, table)?;
        let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| k.as_slice()).collect();
        lap(0, &mut at_phase);
        let old = if kept || indexed { client.get_rows(table, &keys)? } else { Vec::new() };
        lap(1, &mut at_phase);
        let index_write =
            if indexed { Some(self.index_write(table, &schema, at, rows, &old)?) } else { None };
        if let Some(w) = &index_write {
            w.unverified(&mut client)?;
            w.in_window()?;
        }
        lap(6, &mut at_phase);
        if kept {
            let merged = keywords::merged(rows, &old);
            lap(7, &mut at_phase);
            let pairs: Vec<(Option<&Row>, Option<&Row>)> =
                merged.iter().map(|(before, after)| (before.as_ref(), Some(after))).collect();
            keywords::write_runs(&self.tables, table, &schema, &*self.analyzer, &pairs, PUT_WAYS)?;
        }
        lap(2, &mut at_phase);
        drop(client);
        self.tables.put_parallel(table, rows, PUT_WAYS)?;
        lap(4, &mut at_phase);
        if let Some(w) = &index_write {
            w.verified(&mut self.tables.client())?;
        }
        self.tables.record_writes(table, &keys, now_ms())?;
        lap(5, &mut at_phase);
        let [threads_us, old_us, keyword_runs_us, _, rows_us, index_feed_us, index_us, merged_us] = phases;
        tracing::debug!(
            table,
            rows = rows.len(),
            total_us = started.elapsed().as_micros(),
            threads_us,
            old_us,
            keyword_runs_us,
            rows_us,
            index_feed_us,
            index_us,
            merged_us,
            "rows written to HBase"
        );
        Ok(())
    }

    /// What writing `rows` (cells stamped, at `at`) onto `old` (each row as
    /// read before, in order) does to `table`'s indexes: per key, the row
    /// before the batch and after all of it.
    fn index_write(
        &self,
        table: &str,
        schema: &TableSchema,
        at: u64,
        rows: &[RowPuts],
        old: &[Option<Row>],
    ) -> Result<indexes::IndexWrite, HbaseError> {
        let mut by_key: std::collections::BTreeMap<&[u8], (Option<&Row>, Option<Row>)> =
            std::collections::BTreeMap::new();
        for ((key, cells), old) in rows.iter().zip(old) {
            let (first, last) = by_key.entry(key.as_slice()).or_insert((old.as_ref(), None));
            let before = last.as_ref().or(*first);
            *last = Some(indexes::merged_at(key, before, cells, at));
        }
        let pairs: Vec<(Option<&Row>, Option<&Row>)> =
            by_key.values().map(|(o, n)| (*o, n.as_ref())).collect();
        indexes::IndexWrite::plan(table, schema, at, &pairs)
    }

    /// `rows` with their thread column, and the rows outside them whose
    /// thread changed with theirs (at their id cell's timestamp), after
    /// the thread entries are written.
    fn threaded(
        &self,
        table: &str,
        schema: &TableSchema,
        rows: &[(Vec<u8>, Vec<PutCell>)],
    ) -> Result<Vec<RowPuts>, HbaseError> {
        let schema_err = |e: rowsearch_store::Error| match e.into_callback::<HbaseError>() {
            Ok(e) => e,
            Err(e) => HbaseError::Schema { table: table.to_owned(), reason: e.to_string() },
        };
        let mut rows = rows.to_vec();
        let mut client = self.tables.client();
        threads::create(&mut client, table)?;
        let mut entries = threads::Entries::new(&mut client, table);
        let moved = rowsearch_store::thread_rows(table, schema, &*self.analyzer, &mut entries, &mut rows)
            .map_err(schema_err)?;
        entries.flush()?;
        if moved.is_empty() {
            return Ok(rows);
        }
        let Some(columns) = schema.threads.as_ref() else { return Ok(rows) };
        let (id, thread) = (
            rowsearch_store::Column::parse(columns.id_column.as_bytes()),
            rowsearch_store::Column::parse(columns.thread_column.as_bytes()),
        );
        let (rowsearch_store::Column::Qualifier(id_f, id_q), rowsearch_store::Column::Qualifier(th_f, th_q)) =
            (id, thread)
        else {
            return Ok(rows);
        };
        let keys: Vec<&[u8]> = moved.iter().map(|m| m.row.as_slice()).collect();
        let stored = client.get_rows(table, &keys)?;
        for (m, stored) in moved.iter().zip(stored) {
            let Some(stored) = stored else { continue };
            if stored.value(&th_f, &th_q) == Some(m.thread.as_bytes()) {
                continue;
            }
            let ts =
                stored.cells.iter().find(|c| *c.family == *id_f && c.qualifier == id_q).map(|c| c.timestamp);
            let mut cell = PutCell::new(th_f.clone(), th_q.clone(), m.thread.clone().into_bytes());
            cell.timestamp = ts;
            rows.push((m.row.clone(), vec![cell]));
        }
        Ok(rows)
    }

    fn members(
        &self,
        table: &str,
        thread: u64,
    ) -> rowsearch_store::Result<Vec<rowsearch_store::ThreadMember>> {
        let schema = self.tables.schema(table).map_err(err)?;
        if schema.threads.is_none() {
            return Err(rowsearch_store::ErrorKind::NotThreaded { table: table.to_owned() }.into());
        }
        let mut client = self.tables.client();
        if !client.table_exists(&threads::companion(table)).map_err(err)? {
            return Ok(Vec::new());
        }
        rowsearch_store::thread_members_in(&mut threads::Entries::new(&mut client, table), thread)
    }

    /// Every row of `table` from `start` on (inclusive), in key order,
    /// with every version of each cell, to `f` (an export or a copy).
    ///
    /// # Errors
    /// HBase's failures; what `f` returns.
    pub fn scan_all_versions(
        &self,
        table: &str,
        start: Option<&[u8]>,
        f: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let mut client = self.tables.client();
        let produce = |each: &mut dyn FnMut(Row)| client.scan_all_versions(table, (start, None), PAGE, each);
        read_ahead(produce, f)
    }

    /// Deletes row `key` of `table` and its keyword columns.
    ///
    /// # Errors
    /// As [`Self::put_rows`].
    pub fn delete_row(&self, table: &str, key: &[u8]) -> Result<(), HbaseError> {
        let schema = self.tables.schema(table)?;
        let mut client = self.tables.client();
        let old = client.get_rows(table, &[key])?.pop().flatten();
        // HBase stamps a plain delete with its clock: cells of a later time
        // (a message dated ahead) would outlive it. The tombstone takes the
        // newest cell's time when that is later.
        let newest = old.iter().flat_map(|r| &r.cells).map(|c| c.timestamp).max().unwrap_or(0);
        if !schema.indexes.is_empty() {
            drop(client);
            let up_to = Some(super::clock::stamp().max(newest));
            return self.delete_cells(table, key, &[rowsearch_store::Delete::Row { up_to }]);
        }
        let kept = schema.search.is_some() && self.companions.kept(&self.tables, table)?;
        if kept {
            if let (Some(old), Some(_)) = (&old, &schema.threads) {
                self.ghost(table, &schema, old)?;
            }
            keywords::write_runs(&self.tables, table, &schema, &*self.analyzer, &[(old.as_ref(), None)], 1)?;
        }
        if newest >= now_ms() {
            client.delete_cells(table, key, &rowsearch_store::Delete::Row { up_to: Some(newest) })?;
        } else {
            client.delete_row(table, key)?;
        }
        drop(client);
        self.tables.record_writes(table, &[key], now_ms())?;
        Ok(())
    }

    /// Deletes what `whats` names of row `key` of `table` (columns,
    /// families, versions, the row up to a time; HBase's tombstones), and
    /// puts its keyword columns right: the row is read before and after
    /// (the cells a delete uncovers, older versions, count). A row left
    /// with no cells leaves its ids as ghosts in their threads. A failure
    /// between the delete and the keyword columns leaves keyword cells of
    /// values no longer there, which the next write of the row puts right
    /// and a reindex does not index (it reads the rows).
    ///
    /// # Errors
    /// As [`Self::put_rows`].
    pub fn delete_cells(
        &self,
        table: &str,
        key: &[u8],
        whats: &[rowsearch_store::Delete],
    ) -> Result<(), HbaseError> {
        if whats == [rowsearch_store::Delete::Row { up_to: None }] {
            return self.delete_row(table, key);
        }
        let schema = self.tables.schema(table)?;
        if let Some(w) = whats.iter().find_map(|w| match w {
            rowsearch_store::Delete::Family { family, .. }
            | rowsearch_store::Delete::Column { family, .. }
            | rowsearch_store::Delete::Version { family, .. } => Some(family),
            rowsearch_store::Delete::Row { .. } => None,
        }) && !schema.families.iter().any(|f| f.name == *w)
        {
            return Err(HbaseError::UnknownFamily { table: table.to_owned(), family: w.clone() });
        }
        let mut client = self.tables.client();
        let kept = schema.search.is_some() && self.companions.kept(&self.tables, table)?;
        let old = if kept { client.get_rows(table, &[key])?.pop().flatten() } else { None };
        // An indexed table's deletes take the write's timestamp (see
        // `put_rows`), and its index entries change around them.
        let at = super::clock::stamp();
        let stamped: Vec<rowsearch_store::Delete>;
        let mut index_write = None;
        let whats = if schema.indexes.is_empty() {
            whats
        } else {
            stamped = whats.iter().map(|w| stamp_delete(w, at)).collect();
            let versions = client.get_rows_versions(table, &[key])?.pop().flatten();
            let after = versions.as_ref().and_then(|v| indexes::after_deletes(v, &stamped));
            index_write =
                Some(indexes::IndexWrite::plan(table, &schema, at, &[(versions.as_ref(), after.as_ref())])?);
            if let Some(w) = &index_write {
                w.unverified(&mut client)?;
                w.in_window()?;
            }
            stamped.as_slice()
        };
        for what in whats {
            client.delete_cells(table, key, what)?;
        }
        if let Some(w) = &index_write {
            w.verified(&mut client)?;
        }
        if kept {
            let new = client.get_rows(table, &[key])?.pop().flatten();
            if let (Some(old), None, Some(_)) = (&old, &new, &schema.threads) {
                drop(client);
                self.ghost(table, &schema, old)?;
                client = self.tables.client();
            }
            drop(client);
            keywords::write_runs(
                &self.tables,
                table,
                &schema,
                &*self.analyzer,
                &[(old.as_ref(), new.as_ref())],
                1,
            )?;
            client = self.tables.client();
        }
        drop(client);
        self.tables.record_writes(table, &[key], now_ms())?;
        Ok(())
    }

    /// Makes the ids `row` (about to be deleted) carries ghosts in its
    /// thread.
    fn ghost(&self, table: &str, schema: &TableSchema, row: &Row) -> Result<(), HbaseError> {
        let (Some(columns), Some(search)) = (&schema.threads, &schema.search) else { return Ok(()) };
        let schema_err =
            |e: rowsearch_store::Error| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() };
        let value = |column: &str| match rowsearch_store::Column::parse(column.as_bytes()) {
            rowsearch_store::Column::Qualifier(f, q) => row.value(&f, &q).map(<[u8]>::to_vec),
            rowsearch_store::Column::Family(_) => None,
        };
        let Some(ids) = value(&columns.id_column) else { return Ok(()) };
        let partition =
            match rowsearch_store::key_partition_of(table, schema, &row.key).map_err(schema_err)? {
                Some(p) => p,
                None => search.partition.as_deref().and_then(value).unwrap_or_default(),
            };
        let _threading = self.threading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut client = self.tables.client();
        let mut entries = threads::Entries::new(&mut client, table);
        rowsearch_store::ghost_row(table, schema, &mut entries, (&partition, &row.key), &ids)
            .map_err(schema_err)?;
        entries.flush()
    }

    /// `keys`' rows as HBase has them now (every time), only what `read` asks.
    fn read_rows(
        &self,
        table: &str,
        keys: &[&[u8]],
        read: &ReadOptions,
    ) -> rowsearch_store::Result<Vec<Option<Row>>> {
        // Only the columns asked for cross from HBase (a page of hits shows
        // a few columns of rows that may hold much more).
        let rows = self.tables.client().get_columns_before(table, keys, None, &read.columns).map_err(err)?;
        Ok(rows.into_iter().map(|r| r.and_then(|r| selected(r, read))).collect())
    }

    /// Whether `table` is no longer there to read (dropped, or disabled).
    fn gone(&self, table: &str) -> rowsearch_store::Result<bool> {
        let mut client = self.tables.client();
        if !client.table_exists(table).map_err(err)? {
            return Ok(true);
        }
        match client.is_table_enabled(table) {
            Ok(enabled) => Ok(!enabled),
            // Dropped between the two questions (another client's
            // drop-table): gone; anything else is the error it is.
            Err(e) => match client.table_exists(table) {
                Ok(false) => Ok(true),
                _ => Err(err(e)),
            },
        }
    }

    /// Every row of `table` with a key in `range` (`[start, stop)`, open
    /// sides `None`) and (when given) a cell written in `time`, `[from,
    /// before)`, to `f`.
    fn scan(
        &self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        time: Option<(u64, u64)>,
        f: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let mut client = self.tables.client();
        let produce = |each: &mut dyn FnMut(Row)| client.scan(table, range, time, PAGE, each);
        read_ahead(produce, f)
    }
}

/// `what` with `at` as its time bound where it has none.
fn stamp_delete(what: &rowsearch_store::Delete, at: u64) -> rowsearch_store::Delete {
    use rowsearch_store::Delete;
    match what.clone() {
        Delete::Row { up_to } => Delete::Row { up_to: up_to.or(Some(at)) },
        Delete::Family { family, up_to } => Delete::Family { family, up_to: up_to.or(Some(at)) },
        Delete::Column { family, qualifier, up_to } => {
            Delete::Column { family, qualifier, up_to: up_to.or(Some(at)) }
        }
        version @ Delete::Version { .. } => version,
    }
}
