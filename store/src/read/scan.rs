//! The scan engine: rows assembled from each selected family's cells,
//! merged over salt buckets and regions, filtered, and paged; and the
//! point read of one row.

use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Bound;
use std::sync::Arc;

use heed::types::Bytes;
use heed::{RoRange, RoRevRange, RoTxn, WithoutTls};

use super::options::{ReadOptions, Scan, ScanCursor};
use crate::cell::{Cell, Row};
use crate::db::family::FamilyHandle;
use crate::error::{Error, ErrorKind, Result};
use crate::filter::FilterRun;
use crate::key::range::{KeyBounds, RowRange, cell_bounds};
use crate::key::salt::{stored_range, unsalted_esc};
use crate::key::{self, RawCellKey};
use crate::schema::Column;
use crate::table::TableHandle;

/// `get` on a resolved table: one range per selected family over the
/// row's cells, without the scan's merge machinery.
pub(crate) fn get_row(
    txn: &RoTxn<'_, WithoutTls>,
    now_ms: u64,
    table: &TableHandle,
    row: &[u8],
    read: &ReadOptions,
) -> Result<Option<Row>> {
    get_selected(txn, now_ms, table, row, read, &Selection::new(table, read)?)
}

/// The rows `rows` of `table` (each `None` when it has no cell `read`
/// selects), the selection made once for all.
pub(crate) fn get_rows(
    txn: &RoTxn<'_, WithoutTls>,
    now_ms: u64,
    table: &TableHandle,
    rows: &[&[u8]],
    read: &ReadOptions,
) -> Result<Vec<Option<Row>>> {
    let selection = Selection::new(table, read)?;
    rows.iter().map(|row| get_selected(txn, now_ms, table, row, read, &selection)).collect()
}

fn get_selected(
    txn: &RoTxn<'_, WithoutTls>,
    now_ms: u64,
    table: &TableHandle,
    row: &[u8],
    read: &ReadOptions,
    selection: &Selection,
) -> Result<Option<Row>> {
    let stored = table.stored_key(row);
    // Both bounds in one buffer: esc(row) 00 01 | esc(row) 00 02.
    let mut bounds = key::row_start(&stored);
    let split = bounds.len();
    bounds.extend_from_within(..split);
    if let Some(last) = bounds.last_mut() {
        *last = 0x02;
    }
    let range = (Bound::Included(&bounds[..split]), Bound::Excluded(&bounds[split..]));
    let shape = RowShape { read, reverse: false, keys_only: false, now_ms };
    let mut cells = Vec::new();
    for (family, qualifiers) in selection.families(table) {
        let iter = family.db.range(txn, &range).map_err(|e| Error::lmdb("get", e))?;
        let row_end = Some(split - 2);
        let mut cursor =
            FamilyCursor { family, qualifiers, iter: CellIter::Forward(iter), head: None, row_end };
        cursor.advance()?;
        let Some((first, _)) = cursor.head else { continue };
        shape.take_cells(&mut cursor, first.row_esc, &mut cells)?;
    }
    limit_versions(&mut cells, read.versions);
    if cells.is_empty() {
        return Ok(None);
    }
    Ok(Some(Row { key: row.to_vec(), cells }))
}

/// The (unsalted) row range a scan selects: start/stop, prefix, cursor, and
/// what its filter bounds.
fn scan_range(scan: &Scan) -> Result<RowRange> {
    if let Some(cursor) = &scan.cursor
        && cursor.reverse != scan.reverse
    {
        return Err(
            ErrorKind::CursorMismatch { reason: "cursor comes from a scan in the other direction" }.into()
        );
    }
    let mut range = RowRange::all();
    if let Some(prefix) = &scan.prefix {
        range = range.intersect(RowRange::prefix(prefix));
    }
    let bound = |lo, hi| RowRange { lo, hi };
    if scan.reverse {
        if let Some(start) = &scan.start {
            range = range.intersect(bound(Bound::Unbounded, Bound::Included(start.clone())));
        }
        if let Some(stop) = &scan.stop {
            range = range.intersect(bound(Bound::Excluded(stop.clone()), Bound::Unbounded));
        }
        if let Some(cursor) = &scan.cursor {
            range = range.intersect(bound(Bound::Unbounded, Bound::Excluded(cursor.last_key.clone())));
        }
    } else {
        if let Some(start) = &scan.start {
            range = range.intersect(bound(Bound::Included(start.clone()), Bound::Unbounded));
        }
        if let Some(stop) = &scan.stop {
            range = range.intersect(bound(Bound::Unbounded, Bound::Excluded(stop.clone())));
        }
        if let Some(cursor) = &scan.cursor {
            range = range.intersect(bound(Bound::Excluded(cursor.last_key.clone()), Bound::Unbounded));
        }
    }
    if let Some(filter) = &scan.filter {
        range = range.intersect(filter.row_range(scan.reverse));
    }
    Ok(range)
}

/// Keeps the newest `versions` cells of each column; `cells` are in HBase
/// order (each column's versions adjacent, newest first).
fn limit_versions(cells: &mut Vec<Cell>, versions: u32) {
    if versions == super::options::ALL_VERSIONS || cells.len() < 2 {
        return;
    }
    let mut run = 0u32;
    let keep: Vec<bool> = (0..cells.len())
        .map(|i| {
            let same = i > 0
                && cells[i].qualifier == cells[i - 1].qualifier
                && cells[i].family == cells[i - 1].family;
            run = if same { run + 1 } else { 1 };
            run <= versions
        })
        .collect();
    let mut keep = keep.into_iter();
    cells.retain(|_| keep.next().unwrap_or(true));
}

/// The qualifiers a read takes from one family; `None` for all of them.
type QualifierSet = Option<Arc<[Vec<u8>]>>;

/// Whether the qualifier escaped as `esc` is among `qualifiers`: compared
/// as it is stored when it holds no escaped byte (a qualifier without a
/// 0x00, nearly every one), so a cell left out is never copied.
#[inline]
fn selected(qualifiers: &[Vec<u8>], esc: &[u8]) -> bool {
    if esc.contains(&0) {
        qualifiers.contains(&key::unescape(esc))
    } else {
        qualifiers.iter().any(|q| q.as_slice() == esc)
    }
}

/// The families and qualifiers that `ReadOptions::columns` select.
enum Selection {
    /// No columns named: every family, every qualifier.
    All,
    /// Family name -> qualifiers (`None`: the whole family).
    Some(BTreeMap<String, QualifierSet>),
}

impl Selection {
    fn new(table: &TableHandle, read: &ReadOptions) -> Result<Selection> {
        if read.columns.is_empty() {
            return Ok(Selection::All);
        }
        let mut selected: BTreeMap<String, Option<Vec<Vec<u8>>>> = BTreeMap::new();
        for column in &read.columns {
            table.family(column.family())?;
            match column {
                Column::Family(f) => {
                    selected.insert(f.clone(), None);
                }
                Column::Qualifier(f, q) => {
                    let entry = selected.entry(f.clone()).or_insert_with(|| Some(Vec::new()));
                    if let Some(qs) = entry {
                        qs.push(q.clone());
                    }
                }
            }
        }
        Ok(Selection::Some(selected.into_iter().map(|(f, qs)| (f, qs.map(Arc::from))).collect()))
    }

    /// The selected families of `table` in family order, with their qualifiers.
    fn families<'a>(
        &'a self,
        table: &'a TableHandle,
    ) -> impl Iterator<Item = (Arc<FamilyHandle>, QualifierSet)> + 'a {
        table.families.iter().filter_map(move |f| match self {
            Selection::All => Some((f.clone(), None)),
            Selection::Some(selected) => selected.get(&f.schema.name).map(|q| (f.clone(), q.clone())),
        })
    }
}

/// One family's LMDB iterator in the scan's direction.
enum CellIter<'t> {
    Empty,
    Forward(RoRange<'t, Bytes, Bytes>),
    Reverse(RoRevRange<'t, Bytes, Bytes>),
}

impl<'t> Iterator for CellIter<'t> {
    type Item = heed::Result<(&'t [u8], &'t [u8])>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            CellIter::Empty => None,
            CellIter::Forward(iter) => iter.next(),
            CellIter::Reverse(iter) => iter.next(),
        }
    }
}

struct FamilyCursor<'t> {
    family: Arc<FamilyHandle>,
    /// `None`: every qualifier.
    qualifiers: QualifierSet,
    iter: CellIter<'t>,
    head: Option<(RawCellKey<'t>, &'t [u8])>,
    /// For a cursor over one row's range: where each key's row component
    /// ends (its keys all begin with it); `None` for a range of rows.
    row_end: Option<usize>,
}

impl<'t> FamilyCursor<'t> {
    #[inline]
    fn advance(&mut self) -> Result<()> {
        self.head = match self.iter.next() {
            None => None,
            Some(item) => {
                let (k, v) = item.map_err(|e| Error::lmdb("scan", e))?;
                let key = match self.row_end {
                    Some(row_end) => RawCellKey::split_in_row(&self.family.db_name, k, row_end)?,
                    None => RawCellKey::split(&self.family.db_name, k)?,
                };
                Some((key, v))
            }
        };
        Ok(())
    }
}

/// How cells of a row are selected and shaped, shared by get and scan.
struct RowShape<'r> {
    read: &'r ReadOptions,
    reverse: bool,
    keys_only: bool,
    now_ms: u64,
}

impl RowShape<'_> {
    /// Moves `cursor` past the cells of the row `row_esc` and appends those
    /// selected (time range, TTL, qualifiers, versions) to `cells`, in
    /// HBase order.
    fn take_cells<'t>(
        &self,
        cursor: &mut FamilyCursor<'t>,
        row_esc: &[u8],
        cells: &mut Vec<Cell>,
    ) -> Result<()> {
        let start = cells.len();
        while let Some((k, v)) = cursor.head {
            if k.row_esc != row_esc {
                break;
            }
            if self.read.in_time_range(&cursor.family.name, k.timestamp)
                && cursor.family.schema.is_live(k.timestamp, self.now_ms)
                && cursor.qualifiers.as_ref().is_none_or(|qs| selected(qs, k.qualifier_esc))
            {
                cells.push(Cell {
                    family: cursor.family.name.clone(),
                    qualifier: key::unescape(k.qualifier_esc),
                    timestamp: k.timestamp,
                    value: if self.keys_only { Vec::new() } else { cursor.family.value(v)?.into_owned() },
                });
            }
            cursor.advance()?;
        }
        if self.reverse {
            cells[start..].reverse();
        }
        Ok(())
    }
}

/// The rows of one stored-key range: the families' cursors merged row by row.
struct RowSource<'t> {
    cursors: Vec<FamilyCursor<'t>>,
    /// Stored keys carry a salt byte to strip.
    salted: bool,
}

impl<'t> RowSource<'t> {
    fn open(
        txn: &'t RoTxn<'t, WithoutTls>,
        table: &TableHandle,
        selection: &Selection,
        reverse: bool,
        bounds: KeyBounds,
    ) -> Result<RowSource<'t>> {
        let empty = matches!(&bounds, (Some(lo), Some(hi)) if lo >= hi);
        let lower = bounds.0.as_deref().map_or(Bound::Unbounded, Bound::Included);
        let upper = bounds.1.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut cursors = Vec::with_capacity(table.families.len());
        for (family, qualifiers) in selection.families(table) {
            let iter = if empty {
                CellIter::Empty
            } else if reverse {
                CellIter::Reverse(
                    family.db.rev_range(txn, &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?,
                )
            } else {
                CellIter::Forward(family.db.range(txn, &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?)
            };
            let mut cursor = FamilyCursor { family, qualifiers, iter, head: None, row_end: None };
            cursor.advance()?;
            cursors.push(cursor);
        }
        Ok(RowSource { cursors, salted: table.is_salted() })
    }

    /// The next row with at least one selected cell, and its stored key as
    /// LMDB holds it (escaped, salt included).
    fn next_row(&mut self, shape: &RowShape<'_>) -> Result<Option<Sourced<'t>>> {
        loop {
            // Escaped rows order like raw rows, so heads compare unescaped.
            let next: Option<&'t [u8]> = self
                .cursors
                .iter()
                .filter_map(|c| c.head.as_ref().map(|(k, _)| k.row_esc))
                .reduce(|a, b| if (b < a) != shape.reverse { b } else { a });
            let Some(row_esc) = next else { return Ok(None) };
            let mut cells: Vec<Cell> = Vec::new();
            for cursor in &mut self.cursors {
                shape.take_cells(cursor, row_esc, &mut cells)?;
            }
            limit_versions(&mut cells, shape.read.versions);
            if !cells.is_empty() {
                let key = key::unescape(unsalted_esc(self.salted, row_esc));
                return Ok(Some((Row { key, cells }, row_esc)));
            }
        }
    }
}

/// One page of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanPage {
    /// The rows, in scan order.
    pub rows: Vec<Row>,
    /// Present when the limit cut the scan short and more rows follow.
    pub next_cursor: Option<ScanCursor>,
}

/// A row and its stored key as LMDB holds it (escaped, salt included).
type Sourced<'t> = (Row, &'t [u8]);

/// A source's next row in the merge of several sources. The heap's top is
/// the smallest key (forward) or the largest (reverse); keys are distinct
/// across sources (each row lives in one bucket).
struct RowHead<'t> {
    row: Row,
    esc: &'t [u8],
    source: usize,
    reverse: bool,
}

impl PartialEq for RowHead<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.row.key == other.row.key
    }
}

impl Eq for RowHead<'_> {}

impl PartialOrd for RowHead<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RowHead<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let ord = self.row.key.cmp(&other.row.key);
        if self.reverse { ord } else { ord.reverse() }
    }
}

/// A streaming scan over one table. Yields one `Result<Row>` per row, in key
/// order (salted tables: the buckets merged by unsalted key).
pub struct ScanIter<'t> {
    sources: Vec<RowSource<'t>>,
    /// Each source's next row, when several are merged: the next row of the
    /// scan on top.
    heads: BinaryHeap<RowHead<'t>>,
    /// Stored keys carry a salt byte.
    salted: bool,
    primed: bool,
    read: ReadOptions,
    /// The versions limit, applied after the filter.
    versions: u32,
    filter: Option<FilterRun>,
    /// Values dropped after the filter saw them (keys-only with a filter).
    strip_values: bool,
    reverse: bool,
    keys_only: bool,
    now_ms: u64,
    offset: usize,
    limit: Option<usize>,
    returned: usize,
    /// The stored key (escaped, as in LMDB) of the last row returned.
    last_key: Option<&'t [u8]>,
    /// A row read ahead by `has_more`.
    peeked: Option<Sourced<'t>>,
    finished: bool,
    /// Looked at every [`CANCEL_EVERY`] rows walked.
    cancel: crate::Cancel,
    walked: usize,
}

/// Rows walked between looks at a scan's [`crate::Cancel`].
const CANCEL_EVERY: usize = 256;

impl std::fmt::Debug for ScanIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanIter").field("reverse", &self.reverse).field("returned", &self.returned).finish()
    }
}

impl<'t> ScanIter<'t> {
    pub(crate) fn new(
        txn: &'t RoTxn<'t, WithoutTls>,
        now_ms: u64,
        table: Arc<TableHandle>,
        scan: &Scan,
    ) -> Result<ScanIter<'t>> {
        let range = scan_range(scan)?;
        let selection = Selection::new(&table, &scan.read)?;
        let region = match scan.region {
            None => RowRange::all(),
            Some(index) => table.region_range(index)?,
        };
        let buckets: Vec<Option<u8>> = match table.schema.row_key.as_ref() {
            Some(rk) if rk.is_salted() => {
                (0..rk.salt_buckets).filter_map(|b| u8::try_from(b).ok()).map(Some).collect()
            }
            _ => vec![None],
        };
        // With a filter, every version reaches it; the limit applies after.
        let mut read = scan.read.clone();
        if scan.filter.is_some() {
            read.versions = super::options::ALL_VERSIONS;
        }
        let mut sources = Vec::with_capacity(buckets.len());
        if !range.is_empty() {
            for bucket in buckets {
                let stored = stored_range(&range, bucket).intersect(region.clone());
                if stored.is_empty() {
                    continue;
                }
                sources.push(RowSource::open(txn, &table, &selection, scan.reverse, cell_bounds(&stored))?);
            }
        }
        Ok(ScanIter {
            heads: BinaryHeap::new(),
            salted: table.is_salted(),
            primed: false,
            sources,
            read,
            versions: scan.read.versions,
            filter: scan.filter.clone().map(|f| FilterRun::new(f, scan.reverse, scan.read.versions)),
            strip_values: scan.keys_only && scan.filter.is_some(),
            reverse: scan.reverse,
            keys_only: scan.keys_only && scan.filter.is_none(),
            now_ms,
            offset: scan.offset,
            limit: scan.limit,
            returned: 0,
            last_key: None,
            peeked: None,
            finished: false,
            cancel: crate::Cancel::never(),
            walked: 0,
        })
    }

    /// Makes the scan give up with `Cancelled` once `cancel` fires, looked
    /// at every few hundred rows it walks (those its filter rejects too).
    pub fn cancel_on(mut self, cancel: crate::Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// The cursor resuming after the last row returned so far.
    pub fn cursor(&self) -> Option<ScanCursor> {
        self.last_key.map(|esc| ScanCursor {
            last_key: key::unescape(unsalted_esc(self.salted, esc)),
            reverse: self.reverse,
        })
    }

    /// Whether another row would be returned (ignoring the limit). The row is
    /// read ahead and returned by the next call to `next`.
    fn has_more(&mut self) -> Result<bool> {
        if self.peeked.is_none() {
            self.peeked = self.next_selected()?;
        }
        Ok(self.peeked.is_some())
    }

    /// The next row of the merged sources, before filter, offset and limit.
    fn next_source_row(&mut self) -> Result<Option<Sourced<'t>>> {
        let shape = RowShape {
            read: &self.read,
            reverse: self.reverse,
            keys_only: self.keys_only,
            now_ms: self.now_ms,
        };
        match self.sources.len() {
            0 => Ok(None),
            1 => self.sources[0].next_row(&shape),
            _ => {
                if !self.primed {
                    for (source, s) in self.sources.iter_mut().enumerate() {
                        if let Some((row, esc)) = s.next_row(&shape)? {
                            self.heads.push(RowHead { row, esc, source, reverse: self.reverse });
                        }
                    }
                    self.primed = true;
                }
                let Some(head) = self.heads.pop() else { return Ok(None) };
                if let Some((row, esc)) = self.sources[head.source].next_row(&shape)? {
                    self.heads.push(RowHead { row, esc, source: head.source, reverse: self.reverse });
                }
                Ok(Some((head.row, head.esc)))
            }
        }
    }

    /// The next row that passes the filter, shaped (before offset and limit).
    fn next_selected(&mut self) -> Result<Option<Sourced<'t>>> {
        loop {
            if self.filter.as_ref().is_some_and(FilterRun::done) {
                return Ok(None);
            }
            self.walked += 1;
            if self.walked.is_multiple_of(CANCEL_EVERY) {
                self.cancel.check()?;
            }
            let Some((row, esc)) = self.next_source_row()? else { return Ok(None) };
            let Some(run) = self.filter.as_mut() else { return Ok(Some((row, esc))) };
            let verdict = run.eval(&row.key, &row.cells);
            if !verdict.row {
                continue;
            }
            let untouched =
                !self.strip_values && !verdict.keep.contains(&false) && !verdict.strip.contains(&true);
            if untouched {
                let mut cells = row.cells;
                limit_versions(&mut cells, self.versions);
                return Ok(Some((Row { key: row.key, cells }, esc)));
            }
            let mut cells = Vec::with_capacity(row.cells.len());
            for (i, mut cell) in row.cells.into_iter().enumerate() {
                if !verdict.keep[i] {
                    continue;
                }
                if verdict.strip[i] {
                    cell.value = if verdict.len_as_value {
                        u32::try_from(cell.value.len()).unwrap_or(u32::MAX).to_be_bytes().to_vec()
                    } else {
                        Vec::new()
                    };
                }
                if self.strip_values {
                    cell.value = Vec::new();
                }
                cells.push(cell);
            }
            limit_versions(&mut cells, self.versions);
            if !cells.is_empty() {
                return Ok(Some((Row { key: row.key, cells }, esc)));
            }
        }
    }
}

impl ScanIter<'_> {
    /// Runs the scan up to its limit; `next_cursor` is set when more rows
    /// follow.
    ///
    /// # Errors
    /// As [`crate::ReadTxn::scan`], and `Cancelled` (see [`Self::cancel_on`]).
    pub fn into_page(self) -> Result<ScanPage> {
        let mut iter = self;
        let limit = iter.limit.take();
        let mut rows = Vec::new();
        for row in iter.by_ref() {
            rows.push(row?);
            if Some(rows.len()) == limit {
                break;
            }
        }
        let next_cursor = match limit {
            Some(n) if n > 0 && rows.len() == n && iter.has_more()? => iter.cursor(),
            _ => None,
        };
        Ok(ScanPage { rows, next_cursor })
    }
}

impl Iterator for ScanIter<'_> {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        if self.finished || self.limit.is_some_and(|l| self.returned >= l) {
            return None;
        }
        loop {
            let next = match self.peeked.take() {
                Some(sourced) => Ok(Some(sourced)),
                None => self.next_selected(),
            };
            match next {
                Ok(Some((row, esc))) => {
                    if self.offset > 0 {
                        self.offset -= 1;
                        continue;
                    }
                    self.returned += 1;
                    self.last_key = Some(esc);
                    return Some(Ok(row));
                }
                Ok(None) => {
                    self.finished = true;
                    return None;
                }
                Err(e) => {
                    self.finished = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
