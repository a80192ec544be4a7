//! HBase as a row source: what the indexer reads (`RowSource`, `RowView`)
//! answered from tables in HBase. A view reads as of one timestamp (every
//! read's time range ends there); the change feed is HBase's own
//! timestamps: a change's sequence is its cell's time (ms), so the rows
//! changed since a sequence are a time-range scan. Keyword cells come from
//! the rows' values through the analyzer (`store::for_each_keyword_cell_of`),
//! so a table filled by any HBase client is searchable.

use std::sync::Arc;

use rowsearch_store::{
    Analyzer, FeedEntry, KeywordCell, KeywordCellRef, ReadOptions, Region, Row, RowSource, RowView,
    TableSchema,
};

use super::tables::{HbaseError, HbaseTables};

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
}

fn err(e: impl Into<HbaseError>) -> rowsearch_store::Error {
    rowsearch_store::Error::callback(e.into())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn selects(column: &rowsearch_store::Column, cell: &rowsearch_store::Cell) -> bool {
    match column {
        rowsearch_store::Column::Family(f) => *cell.family == **f,
        rowsearch_store::Column::Qualifier(f, q) => *cell.family == **f && cell.qualifier == *q,
    }
}

/// The cells `read` selects of `row` (its columns; HBase answers the
/// newest version of each).
fn selected(row: Row, read: &ReadOptions) -> Option<Row> {
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
        HbaseSource { tables: HbaseTables::new(addr), analyzer }
    }

    /// The tables (catalog and rows).
    pub fn tables(&self) -> &HbaseTables {
        &self.tables
    }

    fn rows_before(
        &self,
        table: &str,
        keys: &[&[u8]],
        read: &ReadOptions,
        before: Option<u64>,
    ) -> rowsearch_store::Result<Vec<Option<Row>>> {
        let rows = self.tables.client().get_rows_before(table, keys, before).map_err(err)?;
        Ok(rows.into_iter().map(|r| r.and_then(|r| selected(r, read))).collect())
    }

    /// Whether `table` is no longer there to read (dropped, or disabled).
    fn gone(&self, table: &str) -> rowsearch_store::Result<bool> {
        let mut client = self.tables.client();
        if !client.table_exists(table).map_err(err)? {
            return Ok(true);
        }
        Ok(!client.is_table_enabled(table).map_err(err)?)
    }

    /// Every row of `table` with a cell written in `[from, before)`, to `f`.
    fn scan(
        &self,
        table: &str,
        from: u64,
        before: u64,
        f: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let mut failed = None;
        self.tables
            .client()
            .scan(table, (None, None), Some((from, before)), PAGE, &mut |row| {
                if failed.is_none()
                    && let Err(e) = f(row)
                {
                    failed = Some(e);
                }
            })
            .map_err(err)?;
        failed.map_or(Ok(()), Err)
    }
}

impl RowSource for HbaseSource {
    fn schema(&self, table: &str) -> rowsearch_store::Result<TableSchema> {
        self.tables.schema(table).map_err(err)
    }

    fn table_id(&self, table: &str) -> rowsearch_store::Result<u64> {
        self.tables.table_id(table).map_err(err)
    }

    fn regions(&self, table: &str) -> rowsearch_store::Result<Vec<Region>> {
        self.tables.client().regions(table).map_err(err)
    }

    fn rows(
        &self,
        table: &str,
        keys: &[&[u8]],
        read: &ReadOptions,
    ) -> rowsearch_store::Result<Vec<Option<Row>>> {
        self.rows_before(table, keys, read, None)
    }

    fn changes_since(&self, from_seq: u64, limit: usize) -> rowsearch_store::Result<Vec<FeedEntry>> {
        HbaseView::new(self).feed_since(from_seq, limit)
    }

    fn next_seq(&self) -> rowsearch_store::Result<u64> {
        HbaseView::new(self).next_seq()
    }

    fn view(&self) -> rowsearch_store::Result<Box<dyn RowView + '_>> {
        Ok(Box::new(HbaseView::new(self)))
    }
}

/// HBase's tables as of one time: cells written before `before` only.
#[derive(Debug)]
struct HbaseView<'s> {
    source: &'s HbaseSource,
    before: u64,
}

impl<'s> HbaseView<'s> {
    fn new(source: &'s HbaseSource) -> HbaseView<'s> {
        HbaseView { source, before: now_ms() + 1 }
    }
}

impl HbaseView<'_> {
    /// The keyword cells of every row (made from its text as it is
    /// scanned: each row's cells together, the rows in key order) whose
    /// partition `keep` takes, to `f`.
    fn cells_where(
        &self,
        table: &str,
        keep: &dyn Fn(&[u8]) -> bool,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let schema = self.schema(table)?;
        let analyzer = &*self.source.analyzer;
        self.source.scan(table, 0, self.before, &mut |row| {
            rowsearch_store::for_each_keyword_cell_of(table, &schema, analyzer, &row, &mut |cell| {
                if keep(cell.partition) { f(cell) } else { Ok(()) }
            })
        })
    }
}

impl RowView for HbaseView<'_> {
    fn schema(&self, table: &str) -> rowsearch_store::Result<TableSchema> {
        self.source.schema(table)
    }

    fn table_id(&self, table: &str) -> rowsearch_store::Result<u64> {
        self.source.table_id(table)
    }

    fn next_seq(&self) -> rowsearch_store::Result<u64> {
        Ok(self.before.saturating_sub(SKEW_MARGIN_MS))
    }

    /// The rows of every rowsearch table with a cell written at or after
    /// `from_seq` (a time), each once at its newest such time, oldest
    /// first.
    fn feed_since(&self, from_seq: u64, limit: usize) -> rowsearch_store::Result<Vec<FeedEntry>> {
        let mut entries = Vec::new();
        for table in self.source.tables.tables().map_err(err)? {
            let scanned = self.source.scan(&table, from_seq, self.before, &mut |row| {
                let seq = row.cells.iter().map(|c| c.timestamp).max().unwrap_or(from_seq);
                entries.push(FeedEntry { seq, table: table.clone(), row: row.key });
                Ok(())
            });
            // A table dropped or disabled since the catalog was read has
            // no changes to give; any other failure is the feed's.
            if let Err(e) = scanned
                && !self.source.gone(&table)?
            {
                return Err(e);
            }
        }
        entries.sort_by(|a, b| (a.seq, &a.table, &a.row).cmp(&(b.seq, &b.table, &b.row)));
        entries.truncate(limit);
        Ok(entries)
    }

    fn feed_time(&self, seq: u64) -> rowsearch_store::Result<Option<u64>> {
        Ok(Some(seq))
    }

    fn now_ms(&self) -> u64 {
        self.before.saturating_sub(1)
    }

    fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> rowsearch_store::Result<Option<Row>> {
        Ok(self.source.rows_before(table, &[row], read, Some(self.before))?.pop().flatten())
    }

    /// One range: the rows' keyword cells are made as they are scanned.
    fn keyword_partition_splits(&self, _table: &str) -> rowsearch_store::Result<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }

    /// Unknown until the rows are read (progress counts without a total).
    fn keyword_cell_count(&self, _table: &str) -> rowsearch_store::Result<u64> {
        Ok(0)
    }

    fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        self.cells_where(table, &|p| partition.is_none_or(|want| want == p), f)
    }

    fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        self.cells_where(table, &|p| from.is_none_or(|lo| p >= lo) && to.is_none_or(|hi| p < hi), f)
    }

    fn row_keyword_cells(&self, table: &str, row: &[u8]) -> rowsearch_store::Result<Vec<KeywordCell>> {
        let schema = self.schema(table)?;
        match self.get(table, row, &ReadOptions::default())? {
            Some(row) => rowsearch_store::keyword_cells_of(table, &schema, &*self.source.analyzer, &row),
            None => Ok(Vec::new()),
        }
    }
}
