//! HBase as a `RowSource`, and [`HbaseView`]: HBase's tables as one
//! `RowView` (a time for the feed, rows read as HBase has them, keyword
//! cells from the keyword rows or the rows' text).

use std::collections::HashSet;
use std::sync::Arc;

use rowsearch_store::{
    Analyzer, FeedEntry, KeywordCell, KeywordCellRef, KeywordPage, KeywordQuery, ReadOptions, Region, Row,
    RowSource, RowView, TableSchema,
};

use super::{HbaseError, HbaseSource, PAGE, SKEW_MARGIN_MS, err, keywords, now_ms};

impl RowSource for HbaseSource {
    fn remote(&self) -> bool {
        true
    }

    fn thread_members(
        &self,
        table: &str,
        thread: u64,
    ) -> rowsearch_store::Result<Vec<rowsearch_store::ThreadMember>> {
        self.members(table, thread)
    }

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
        self.read_rows(table, keys, read)
    }

    fn changes_since(&self, from_seq: u64, limit: usize) -> rowsearch_store::Result<Vec<FeedEntry>> {
        HbaseView::new(self, true).feed_since(from_seq, limit)
    }

    fn next_seq(&self) -> rowsearch_store::Result<u64> {
        HbaseView::new(self, false).next_seq()
    }

    fn view(&self) -> rowsearch_store::Result<Box<dyn RowView + '_>> {
        Ok(Box::new(HbaseView::new(self, false)))
    }

    /// The tailer's view; its round writes a replication probe (at most
    /// one a second, `stream.rs`), which a later feed read meets.
    fn tail_view(&self) -> rowsearch_store::Result<Box<dyn RowView + '_>> {
        let view = HbaseView::new(self, true);
        if let Err(e) = self.stream.probe(&self.tables, view.before) {
            tracing::debug!(error = %e, "replication probe not written");
        }
        Ok(Box::new(view))
    }

    fn tables(&self) -> rowsearch_store::Result<Vec<String>> {
        self.tables.tables().map_err(err)
    }

    fn is_enabled(&self, table: &str) -> rowsearch_store::Result<bool> {
        self.tables.is_enabled(table).map_err(err)
    }

    fn analyzer(&self) -> Option<Arc<dyn Analyzer>> {
        Some(Arc::clone(&self.analyzer))
    }

    fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> rowsearch_store::Result<KeywordPage> {
        let schema = self.tables.schema(table).map_err(err)?;
        let mut client = self.tables.client();
        if !self.companions.kept(&self.tables, table).map_err(err)? {
            return Err(rowsearch_store::Error::callback(HbaseError::Schema {
                table: table.to_owned(),
                reason: "rowsearch keeps no keyword rows for it (a table filled by other HBase clients): \
                         search it instead"
                    .into(),
            }));
        }
        keywords::lookup(&mut client, table, &schema, &*self.analyzer, query)
    }
}

/// HBase's tables as of one time. Its feed: the writes rowsearch recorded
/// (`rowsearch_feed`) before `before` (and HBase's replication, where it
/// ships to rowsearch: every write of any client), and when it is the
/// tailer's (`tail`) and the replication stream is not followed, also
/// every row with a cell written since (time-range scans of every table). Its rows are read as HBase has them when they are read,
/// whatever their cells' timestamps: a cell may carry any time (the mail
/// table's carry the message's date, a date to come included), so a read
/// bounded by `before` would miss rows dated later. A row read newer than
/// the feed read says is harmless: the next read of the feed names it
/// again.
#[derive(Debug)]
pub(super) struct HbaseView<'s> {
    source: &'s HbaseSource,
    before: u64,
    tail: bool,
    /// Whether a read of its feed brings the keyword rows of the rows it
    /// names to what HBase holds (the tailer's view: an index reads them
    /// next).
    follow: bool,
}

impl<'s> HbaseView<'s> {
    pub(super) fn new(source: &'s HbaseSource, tail: bool) -> HbaseView<'s> {
        HbaseView { source, before: now_ms() + 1, tail, follow: tail }
    }

    /// A view whose feed names every change as the tailer's does, for a
    /// reader of the change feed (which writes nothing).
    pub(super) fn for_feed_readers(source: &'s HbaseSource) -> HbaseView<'s> {
        HbaseView { source, before: now_ms() + 1, tail: true, follow: false }
    }
}

impl HbaseView<'_> {
    /// Whether rowsearch keeps keyword rows for `table`.
    fn kept(&self, table: &str) -> rowsearch_store::Result<bool> {
        self.source.companions.kept(&self.source.tables, table).map_err(err)
    }

    /// The kept keyword cells of the partitions in `range`, then the cells
    /// of the rows of those partitions that have none kept (rows other
    /// HBase clients wrote), made from their text: a build from the keyword
    /// rows misses no row.
    fn kept_cells(
        &self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let schema = self.schema(table)?;
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        keywords::for_each_cell_between(
            &mut self.source.tables.client(),
            table,
            &schema,
            range,
            &mut |cell| {
                if !seen.contains(cell.key) {
                    seen.insert(cell.key.to_vec());
                }
                f(cell)
            },
        )?;
        self.unkept_cells(table, &schema, range, &seen, f)
    }

    /// The cells of the rows of the partitions in `range` not in `seen`.
    fn unkept_cells(
        &self,
        table: &str,
        schema: &TableSchema,
        range: (Option<&[u8]>, Option<&[u8]>),
        seen: &HashSet<Vec<u8>>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let in_range = |p: &[u8]| range.0.is_none_or(|lo| p >= lo) && range.1.is_none_or(|hi| p < hi);
        let mut missing: Vec<Vec<u8>> = Vec::new();
        let mut failed = None;
        self.source
            .tables
            .client()
            .scan_keys(table, (None, None), PAGE, &mut |row| {
                if seen.contains(&row.key) || failed.is_some() {
                    return;
                }
                // A row whose partition its key names only when in range; a
                // partition column: fetched, its cells' partition decides.
                match rowsearch_store::key_partition_of(table, schema, &row.key) {
                    Ok(Some(p)) if !in_range(&p) => {}
                    Ok(_) => missing.push(row.key),
                    Err(e) => failed = Some(e),
                }
            })
            .map_err(err)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let analyzer = &*self.source.analyzer;
        for chunk in missing.chunks(PAGE) {
            let keys: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            let rows = self.source.read_rows(table, &keys, &ReadOptions::default())?;
            for row in rows.into_iter().flatten() {
                rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, &row, &mut |cell| {
                    if in_range(cell.partition) { f(cell) } else { Ok(()) }
                })?;
            }
        }
        Ok(())
    }

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
        self.source.scan(table, (None, None), None, &mut |row| {
            rowsearch_store::for_each_keyword_cell_of(table, &schema, analyzer, &row, &mut |cell| {
                if keep(cell.partition) { f(cell) } else { Ok(()) }
            })
        })
    }
}

/// Rows whose keyword rows are brought current at once.
const FOLLOW_CHUNK: usize = 1_024;

impl HbaseView<'_> {
    /// Brings the keyword rows of the rows `entries` name to what HBase
    /// holds now, before the refresher takes them (a failure fails the
    /// round, which reads the same entries again): whoever wrote them,
    /// through rowsearch or not (keywords/follow.rs; a row rowsearch wrote
    /// finds its record equal and costs two gets).
    fn follow_keywords(&self, entries: &[FeedEntry]) -> rowsearch_store::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut by_table: std::collections::BTreeMap<&str, std::collections::BTreeSet<&[u8]>> =
            std::collections::BTreeMap::new();
        for e in entries {
            by_table.entry(e.table.as_str()).or_default().insert(e.row.as_slice());
        }
        let known = self.source.tables.tables().map_err(err)?;
        for (table, keys) in by_table {
            if known.binary_search_by(|t| t.as_str().cmp(table)).is_err() {
                continue; // not a rowsearch table
            }
            let schema = self.source.schema(table)?;
            if schema.search.is_none()
                || !self.source.companions.kept(&self.source.tables, table).map_err(err)?
            {
                continue;
            }
            let keys: Vec<&[u8]> = keys.into_iter().collect();
            // In pieces: an incremental build reads the feed 50,000 entries
            // at a time, and rows carry their text.
            for keys in keys.chunks(FOLLOW_CHUNK) {
                let rows = match self.source.read_rows(table, keys, &ReadOptions::default()) {
                    Ok(rows) => rows,
                    Err(_) if self.source.gone(table)? => break,
                    Err(e) => return Err(e),
                };
                let pairs: Vec<(&[u8], Option<&Row>)> =
                    keys.iter().copied().zip(rows.iter().map(Option::as_ref)).collect();
                keywords::follow_writes(&self.source.tables, table, &schema, &*self.source.analyzer, &pairs)
                    .map_err(err)?;
            }
        }
        Ok(())
    }
}

impl RowView for HbaseView<'_> {
    fn schema(&self, table: &str) -> rowsearch_store::Result<TableSchema> {
        self.source.schema(table)
    }

    fn table_id(&self, table: &str) -> rowsearch_store::Result<u64> {
        self.source.table_id(table)
    }

    /// The view's time: a change is stamped before it.
    fn next_seq(&self) -> rowsearch_store::Result<u64> {
        Ok(self.before)
    }

    fn settled_seq(&self) -> rowsearch_store::Result<u64> {
        Ok(self.before.saturating_sub(SKEW_MARGIN_MS))
    }

    /// The rows of every rowsearch table with a cell written at or after
    /// `from_seq` (a time), each once at its newest such time, oldest
    /// first.
    fn feed_since(&self, from_seq: u64, limit: usize) -> rowsearch_store::Result<Vec<FeedEntry>> {
        let mut entries = self.source.tables.recorded_writes(from_seq, self.before, limit).map_err(err)?;
        // Recorded writes left unread past this time: nothing after it
        // goes out in this read, or a reader would go on past them.
        let unread_after = (entries.len() >= limit).then(|| entries.last().map(|e| e.seq)).flatten();
        let stream = &self.source.stream;
        stream.observe(&mut entries);
        // While HBase's replication brings every write to the feed, the
        // tables need no scan: the feed names other clients' writes too.
        let scan = self.tail && !stream.following(self.before);
        let tables = if scan { self.source.tables.tables().map_err(err)? } else { Vec::new() };
        for table in tables {
            let scanned = self.source.scan(&table, (None, None), Some((from_seq, self.before)), &mut |row| {
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
        if let Some(last) = unread_after {
            entries.retain(|e| e.seq <= last);
        }
        // A reader goes on after the last sequence it got: a cut never
        // falls between entries of one time (all of them, past `limit`,
        // when that is the first).
        if let Some(cut) = entries.get(limit).map(|e| e.seq) {
            let keep = entries.iter().position(|e| e.seq == cut).unwrap_or(limit);
            let keep = if keep == 0 { entries.iter().take_while(|e| e.seq == cut).count() } else { keep };
            entries.truncate(keep);
        }
        if self.follow {
            self.follow_keywords(&entries)?;
        }
        Ok(entries)
    }

    fn feed_time(&self, seq: u64) -> rowsearch_store::Result<Option<u64>> {
        Ok(Some(seq))
    }

    fn now_ms(&self) -> u64 {
        self.before.saturating_sub(1)
    }

    fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> rowsearch_store::Result<Option<Row>> {
        Ok(self.source.read_rows(table, &[row], read)?.pop().flatten())
    }

    /// Where the keyword rows' regions start (one range when they are
    /// made from the rows' text as they are scanned).
    fn keyword_partition_splits(&self, table: &str) -> rowsearch_store::Result<Vec<Vec<u8>>> {
        let mut client = self.source.tables.client();
        if self.source.companions.kept(&self.source.tables, table).map_err(err)? {
            return keywords::partition_splits(&mut client, table).map_err(err);
        }
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
        if let Some(p) = partition {
            let mut next = p.to_vec();
            next.push(0);
            if self.kept(table)? {
                return self.kept_cells(table, (Some(p), Some(&next)), f);
            }
        } else if self.kept(table)? {
            return self.kept_cells(table, (None, None), f);
        }
        self.cells_where(table, &|p| partition.is_none_or(|want| want == p), f)
    }

    fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        if self.kept(table)? {
            return self.kept_cells(table, (from, to), f);
        }
        self.cells_where(table, &|p| from.is_none_or(|lo| p >= lo) && to.is_none_or(|hi| p < hi), f)
    }

    /// Where the table's regions start: a full build reads the rows, region
    /// by region, and makes their keyword cells from their text as it
    /// scans them. Measured on the full corpus, that is faster than reading
    /// the keyword runs back (12.4 s against 15.7 s, BENCHMARKS.md): the
    /// runs are more cells than the rows are bytes, and HBase serves every
    /// cell of them.
    fn row_splits(&self, table: &str) -> rowsearch_store::Result<Option<Vec<Vec<u8>>>> {
        // Keyword rows the build before wrote are upgraded by the first
        // command that meets them; a full build is one, though it does not
        // read them.
        self.kept(table)?;
        let regions = self.source.regions(table)?;
        Ok(Some(regions.into_iter().filter_map(|r| r.start).collect()))
    }

    fn for_each_row_keyword_cells(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let schema = self.schema(table)?;
        let analyzer = &*self.source.analyzer;
        self.source.scan(table, (from, to), None, &mut |row| {
            rowsearch_store::for_each_keyword_cell_of(table, &schema, analyzer, &row, f)
        })
    }

    fn for_each_kept_row_keyword_cells(
        &self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        keep: &dyn Fn(&[u8]) -> bool,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let schema = self.schema(table)?;
        let analyzer = &*self.source.analyzer;
        self.source.scan(table, range, None, &mut |row| {
            rowsearch_store::for_each_kept_keyword_cell_of(table, &schema, analyzer, &row, keep, f)
        })
    }

    fn row_keyword_cells(&self, table: &str, row: &[u8]) -> rowsearch_store::Result<Vec<KeywordCell>> {
        let schema = self.schema(table)?;
        match self.get(table, row, &ReadOptions::default())? {
            Some(row) => rowsearch_store::keyword_cells_of(table, &schema, &*self.source.analyzer, &row),
            None => Ok(Vec::new()),
        }
    }
}
