//! The table operations of [`TableStore`] over HBase (scans, counts,
//! enable/disable, display settings). Scans and counts are answered as the
//! embedded store answers them: the store's [`Scan`] as HBase's `TScan` (the key range of
//! its bounds, prefix, region and cursor; its columns, versions and time
//! range; its filter pushed down, written back in HBase's filter language,
//! which HBase runs as the store does),
//! offset and limit over what HBase returns, a cursor when more rows
//! follow.

use rowsearch_store::{
    Cancel, Column, ErrorKind, Filter, IndexPage, IndexQuery, IndexSchema, IndexState, IndexTerm,
    IndexVerifyReport, KeyPage, PlaceInfo, PutCell, Row, Scan, ScanCursor, ScanPage, SetOp, TableSchema,
    TableStore,
};

use super::indexes;
use super::source::{HbaseSource, err as store_err};
use super::tables::HbaseError;
use crate::thrift::TScanSpec;

/// Rows asked of HBase a call.
const PAGE: usize = 500;

fn higher(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn lower(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The first filter in `filter` that rowsearch's filter language has and
/// HBase's does not (HBase's `ParseFilter` knows neither).
fn not_in_hbase(filter: &Filter) -> Option<&'static str> {
    match filter {
        Filter::MultiRowRange(_) => Some("MultiRowRangeFilter"),
        Filter::FuzzyRow(_) => Some("FuzzyRowFilter"),
        Filter::List(_, filters) => filters.iter().find_map(not_in_hbase),
        Filter::Skip(inner) | Filter::WhileMatch(inner) => not_in_hbase(inner),
        _ => None,
    }
}

/// A row as the scan returns it (HBase's order of cells is the store's).
fn as_scanned(mut row: Row, keys_only: bool) -> Row {
    if keys_only {
        row.cells.iter_mut().for_each(|c| c.value.clear());
    }
    row
}

impl TableStore for HbaseSource {
    fn place(&self) -> PlaceInfo {
        PlaceInfo { kind: "hbase", at: self.tables().addr().to_owned() }
    }

    fn ping(&self) -> rowsearch_store::Result<()> {
        HbaseSource::ping(self).map_err(store_err)
    }

    fn following(&self) -> Option<rowsearch_store::Following> {
        Some(self.stream.following_state(super::clock::now_ms()))
    }

    fn create_table(&self, table: &str, schema: &TableSchema) -> rowsearch_store::Result<bool> {
        // The store's own checks first, with its errors (a bad name, a bad
        // schema), as the embedded store answers them.
        schema.validate(table)?;
        HbaseSource::create_table(self, table, schema).map_err(store_err)
    }

    fn drop_table(&self, table: &str) -> rowsearch_store::Result<()> {
        HbaseSource::drop_table(self, table).map_err(store_err)
    }

    /// Row by row, as HBase applies a multi-row put; the sequence is
    /// HBase's clock (ms) once written.
    fn put_rows(&self, table: &str, rows: &[(Vec<u8>, Vec<PutCell>)]) -> rowsearch_store::Result<u64> {
        // What the store would refuse is refused here too, in its order:
        // a family the table lacks, then a typed key that does not decode.
        let schema = self.tables().schema(table).map_err(store_err)?;
        if let Some(c) =
            rows.iter().flat_map(|(_, c)| c).find(|c| !schema.families.iter().any(|f| f.name == c.family))
        {
            let (table, family) = (table.to_owned(), c.family.clone());
            return Err(ErrorKind::UnknownFamily { table, family }.into());
        }
        if let Some(row_key) = &schema.row_key {
            for (key, _) in rows {
                row_key.decode(key)?;
            }
        }
        HbaseSource::put_rows(self, table, rows).map_err(|e| self.dropped_meanwhile(table, e))?;
        Ok(super::clock::now_ms())
    }

    fn delete(
        &self,
        table: &str,
        key: &[u8],
        whats: &[rowsearch_store::Delete],
    ) -> rowsearch_store::Result<u64> {
        HbaseSource::delete_cells(self, table, key, whats).map_err(|e| self.dropped_meanwhile(table, e))?;
        Ok(super::clock::now_ms())
    }

    fn each_version(
        &self,
        table: &str,
        start: Option<&[u8]>,
        opened: &mut dyn FnMut(TableSchema, Option<u64>) -> rowsearch_store::Result<()>,
        f: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        opened(self.tables().schema(table).map_err(store_err)?, None)?;
        self.scan_all_versions(table, start, f)
    }

    fn indexes(&self, table: &str) -> rowsearch_store::Result<Vec<IndexState>> {
        indexes::list(self.tables(), table).map_err(store_err)
    }

    fn start_index(&self, table: &str, index: IndexSchema) -> rowsearch_store::Result<bool> {
        indexes::start(self.tables(), table, index).map_err(store_err)
    }

    fn start_index_rebuild(&self, table: &str, index: &str) -> rowsearch_store::Result<()> {
        indexes::restart(self.tables(), table, index).map_err(store_err)
    }

    fn finish_index_build(
        &self,
        table: &str,
        index: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> rowsearch_store::Result<()> {
        indexes::build(self.tables(), table, index, progress).map_err(store_err)
    }

    fn drop_index(&self, table: &str, index: &str) -> rowsearch_store::Result<()> {
        indexes::drop_index(self.tables(), table, index).map_err(store_err)
    }

    fn index_lookup(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
    ) -> rowsearch_store::Result<IndexPage> {
        indexes::lookup(self.tables(), table, index, query).map(|(page, _)| page).map_err(store_err)
    }

    fn index_rows(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
        read: &rowsearch_store::ReadOptions,
    ) -> rowsearch_store::Result<(IndexPage, Vec<Option<Row>>)> {
        let (page, rows) = indexes::lookup_rows(self.tables(), table, index, query).map_err(store_err)?;
        Ok((page, rows.into_iter().map(|r| r.and_then(|r| super::source::selected(r, read))).collect()))
    }

    fn index_combine(
        &self,
        table: &str,
        terms: &[IndexTerm],
        op: SetOp,
        after: Option<&[u8]>,
        limit: Option<usize>,
    ) -> rowsearch_store::Result<KeyPage> {
        indexes::combine(self.tables(), table, terms, op, after, limit).map_err(store_err)
    }

    fn verify_index(&self, table: &str, index: &str) -> rowsearch_store::Result<IndexVerifyReport> {
        indexes::verify(self.tables(), table, index).map(|(report, _)| report).map_err(store_err)
    }

    /// A page of `scan` over `table` (as [`rowsearch_store::ReadTxn::scan`]).
    ///
    /// # Errors
    /// `UnknownTable`, `TableDisabled`, `UnknownFamily`, `UnknownRegion`,
    /// `InvalidCursor`; a filter or per-family time ranges (not served over
    /// HBase yet); HBase's failures, `Cancelled`.
    fn scan_page(&self, table: &str, scan: &Scan, cancel: &Cancel) -> rowsearch_store::Result<ScanPage> {
        let limit = scan.limit.unwrap_or(usize::MAX);
        let mut rows = Vec::new();
        let mut more = false;
        self.scan_rows(
            table,
            scan,
            Some(scan.offset.saturating_add(limit).saturating_add(1)),
            cancel,
            &mut |row| {
                if rows.len() == scan.offset.saturating_add(limit) {
                    more = true;
                    return false;
                }
                rows.push(row);
                true
            },
        )?;
        let rows: Vec<Row> = rows.into_iter().skip(scan.offset).collect();
        let next_cursor = more
            .then(|| rows.last().map(|r| ScanCursor { last_key: r.key.clone(), reverse: scan.reverse }))
            .flatten();
        Ok(ScanPage { rows, next_cursor })
    }

    /// The rows `scan` selects past its offset (its limit aside, as
    /// [`rowsearch_store::ReadTxn::count_until`]).
    ///
    /// # Errors
    /// As [`Self::scan_page`].
    fn count(&self, table: &str, scan: &Scan, cancel: &Cancel) -> rowsearch_store::Result<u64> {
        // As the store counts: every row the scan selects past its offset,
        // whatever its limit.
        let mut seen = 0usize;
        let mut keys = scan.clone();
        keys.keys_only = true;
        self.scan_rows(table, &keys, None, cancel, &mut |_| {
            seen += 1;
            true
        })?;
        Ok(seen.saturating_sub(scan.offset) as u64)
    }

    fn set_table_enabled(&self, table: &str, enabled: bool) -> rowsearch_store::Result<bool> {
        self.tables().set_enabled(table, enabled).map_err(store_err)
    }

    fn set_display(&self, table: &str, display: Option<Vec<String>>) -> rowsearch_store::Result<bool> {
        let schema = self.tables().schema(table).map_err(store_err)?;
        let Some(schema) = schema.with_display(table, display)? else { return Ok(false) };
        self.tables().put_schema(table, &schema).map_err(store_err)?;
        Ok(true)
    }

    fn set_shards(&self, table: &str, shards: u32) -> rowsearch_store::Result<bool> {
        let schema = self.tables().schema(table).map_err(store_err)?;
        let Some(schema) = schema.with_shards(table, shards)? else { return Ok(false) };
        self.tables().put_schema(table, &schema).map_err(store_err)?;
        Ok(true)
    }
}

impl HbaseSource {
    /// A write HBase refused because another process dropped the table
    /// since the catalog was read (kept a second): `UnknownTable`, as the
    /// embedded store answers; any other failure as it is.
    fn dropped_meanwhile(&self, table: &str, e: HbaseError) -> rowsearch_store::Error {
        let refused = matches!(e, HbaseError::Client(crate::thrift::ClientError::Refused { .. }));
        if refused && matches!(self.tables().client().table_exists(table), Ok(false)) {
            return ErrorKind::UnknownTable { table: table.to_owned() }.into();
        }
        store_err(e)
    }

    /// Each row `scan` selects, in its order, to `each` until it answers
    /// false; HBase returns at most `cap` rows.
    fn scan_rows(
        &self,
        table: &str,
        scan: &Scan,
        cap: Option<usize>,
        cancel: &Cancel,
        each: &mut dyn FnMut(Row) -> bool,
    ) -> rowsearch_store::Result<()> {
        let tables = self.tables();
        let schema = tables.schema(table).map_err(store_err)?;
        if !tables.is_enabled(table).map_err(store_err)? {
            return Err(ErrorKind::TableDisabled { table: table.to_owned() }.into());
        }
        if !scan.read.family_time_ranges.is_empty() {
            return Err(store_err(HbaseError::Schema {
                table: table.to_owned(),
                reason: "per-family time ranges are not served over HBase".into(),
            }));
        }
        if let Some(name) = scan.filter.as_ref().and_then(not_in_hbase) {
            return Err(ErrorKind::InvalidFilter {
                position: 0,
                expected: "a filter of HBase's own filter language (the table lives in HBase)".into(),
                found: name.into(),
            }
            .into());
        }
        for column in &scan.read.columns {
            let family = match column {
                Column::Family(f) | Column::Qualifier(f, _) => f,
            };
            if !schema.families.iter().any(|f| &f.name == family) {
                return Err(
                    ErrorKind::UnknownFamily { table: table.to_owned(), family: family.clone() }.into()
                );
            }
        }
        // The bounds: forward, `start` is the inclusive lower one and
        // `stop` the exclusive upper one; reversed (as HBase), `start` the
        // inclusive upper and `stop` the exclusive lower. Prefix, region and
        // cursor narrow them; what HBase's start and stop rows cannot say
        // is checked as rows come.
        let mut region = None;
        if let Some(index) = scan.region {
            let regions = rowsearch_store::RowSource::regions(self, table)?;
            let found = regions.get(index).ok_or_else(|| ErrorKind::UnknownRegion {
                table: table.to_owned(),
                region: index,
                regions: regions.len(),
            })?;
            region = Some(found.clone());
        }
        if let Some(cursor) = &scan.cursor
            && cursor.reverse != scan.reverse
        {
            return Err(
                ErrorKind::CursorMismatch { reason: "it comes from a scan in the other direction" }.into()
            );
        }
        // Inclusive lower bound, exclusive upper bound, from everything
        // but the scan's own start and stop.
        let mut lo = higher(scan.prefix.clone(), region.as_ref().and_then(|r| r.start.clone()));
        let mut hi = lower(
            scan.prefix.as_deref().and_then(rowsearch_store::prefix_successor),
            region.as_ref().and_then(|r| r.end.clone()),
        );
        if let Some(cursor) = &scan.cursor {
            if scan.reverse {
                hi = lower(hi, Some(cursor.last_key.clone()));
            } else {
                let mut past = cursor.last_key.clone();
                past.push(0);
                lo = higher(lo, Some(past));
            }
        }
        let (hbase_start, hbase_stop) = if scan.reverse {
            // HBase's start is inclusive: the lower of the scan's start and
            // the exclusive `hi` (a row equal to `hi` passed over below).
            let start = match (&scan.start, &hi) {
                (Some(s), Some(h)) if s < h => Some(s.clone()),
                (_, Some(h)) => Some(h.clone()),
                (s, None) => s.clone(),
            };
            (start, scan.stop.clone())
        } else {
            (higher(lo.clone(), scan.start.clone()), lower(hi.clone(), scan.stop.clone()))
        };
        if !scan.reverse
            && let (Some(l), Some(h)) = (&hbase_start, &hbase_stop)
            && l >= h
        {
            return Ok(());
        }
        let columns = scan
            .read
            .columns
            .iter()
            .map(|c| match c {
                Column::Family(f) => (f.as_str(), None),
                Column::Qualifier(f, q) => (f.as_str(), Some(q.as_slice())),
            })
            .collect();
        let time = (scan.read.min_ts > 0 || scan.read.max_ts.is_some())
            .then(|| (scan.read.min_ts, scan.read.max_ts.unwrap_or(u64::MAX)));
        let spec = TScanSpec {
            start: hbase_start.as_deref(),
            stop: hbase_stop.as_deref(),
            columns,
            versions: scan.read.versions,
            time,
            // Pushed down: HBase runs the same filter language.
            filter: scan.filter.as_ref().map(Filter::to_language),
            reversed: scan.reverse,
            limit: cap.map(|c| c.saturating_add(usize::from(scan.reverse))),
        };
        let page = cap.map_or(PAGE, |c| c.clamp(1, PAGE));
        let mut cancelled = false;
        let mut handed = |row: Row| {
            if cancel.is_cancelled() {
                cancelled = true;
                return false;
            }
            if scan.reverse {
                if hi.as_deref().is_some_and(|h| row.key.as_slice() >= h) {
                    return true;
                }
                if lo.as_deref().is_some_and(|l| row.key.as_slice() < l) {
                    return false;
                }
            }
            each(as_scanned(row, scan.keys_only))
        };
        tables.client().scan_spec(table, &spec, page, &mut handed).map_err(store_err)?;
        if cancelled {
            cancel.check()?;
        }
        Ok(())
    }
}
