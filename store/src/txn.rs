//! Read transactions and the streaming scan.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLockReadGuard};

use heed::types::Bytes;
use heed::{RoRange, RoRevRange, RoTxn, WithoutTls};

use crate::cell::{Cell, Row};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, RawCellKey};
use crate::read::{Column, ReadOptions, Scan, ScanCursor};
use crate::store::{FamilyHandle, Store, TableHandle};

/// A read-only snapshot of the whole store. Dropping it ends the transaction.
///
/// Everything it returns is owned, so nothing borrows the memory map after
/// the transaction ends.
pub struct ReadTxn<'s> {
    // Field order matters: the LMDB transaction must end before the resize
    // guard is released.
    txn: RoTxn<'s, WithoutTls>,
    store: &'s Store,
    now_ms: u64,
    _resize_guard: RwLockReadGuard<'s, ()>,
}

impl std::fmt::Debug for ReadTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTxn").field("now_ms", &self.now_ms).finish_non_exhaustive()
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

impl<'s> ReadTxn<'s> {
    pub(crate) fn new(
        store: &'s Store,
        txn: RoTxn<'s, WithoutTls>,
        guard: RwLockReadGuard<'s, ()>,
        now_ms: u64,
    ) -> ReadTxn<'s> {
        ReadTxn { txn, store, now_ms, _resize_guard: guard }
    }

    pub(crate) fn raw(&self) -> &RoTxn<'s, WithoutTls> {
        &self.txn
    }

    /// Reads one row: the selected cells, or `None` when none is selected.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownFamily` (in `read.columns`), `Corrupted`, `Lmdb`.
    pub fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        let handle = self.store.table_handle(table)?;
        self.get_in(&handle, row, read)
    }

    /// `get` on a resolved table: one range per selected family over the
    /// row's cells, without the scan's merge machinery.
    fn get_in(&self, table: &TableHandle, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        // Both bounds in one buffer: esc(row) 00 01 | esc(row) 00 02.
        let mut bounds = key::row_start(row);
        let split = bounds.len();
        bounds.extend_from_within(..split);
        if let Some(last) = bounds.last_mut() {
            *last = 0x02;
        }
        let range = (Bound::Included(&bounds[..split]), Bound::Excluded(&bounds[split..]));
        let shape = RowShape { read, reverse: false, keys_only: false, now_ms: self.now_ms };
        let selection = Selection::new(table, read)?;
        let mut cells = Vec::new();
        for (family, qualifiers) in selection.families(table) {
            let iter = family.db.range(&self.txn, &range).map_err(|e| Error::lmdb("get", e))?;
            let mut cursor = FamilyCursor { family, qualifiers, iter: CellIter::Forward(iter), head: None };
            cursor.advance()?;
            let Some((first, _)) = cursor.head else { continue };
            shape.take_cells(&mut cursor, first.row_esc, &mut cells)?;
        }
        if cells.is_empty() {
            return Ok(None);
        }
        Ok(Some(Row { key: row.to_vec(), cells }))
    }

    /// Reads several rows from this snapshot, in the order asked.
    ///
    /// # Errors
    /// As [`ReadTxn::get`].
    pub fn multi_get(&self, table: &str, rows: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        let handle = self.store.table_handle(table)?;
        rows.iter().map(|row| self.get_in(&handle, row, read)).collect()
    }

    /// Starts a streaming scan: rows come one at a time and memory stays flat
    /// however many rows the scan walks. Offset and limit apply; the cursor
    /// of the last row is [`ScanIter::cursor`].
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownFamily`, `InvalidCursor` (a cursor from a scan
    /// in the other direction), `Lmdb`.
    pub fn scan<'t>(&'t self, table: &str, scan: &Scan) -> Result<ScanIter<'t>> {
        let handle = self.store.table_handle(table)?;
        let bounds = scan_bounds(scan)?;
        let mut iter = ScanIter::new(self, handle, &scan.read, scan.reverse, bounds, scan.keys_only)?;
        iter.offset = scan.offset;
        iter.limit = scan.limit;
        Ok(iter)
    }

    /// Runs a scan up to its limit; `next_cursor` is set when more rows follow.
    ///
    /// # Errors
    /// As [`ReadTxn::scan`].
    pub fn scan_page(&self, table: &str, scan: &Scan) -> Result<ScanPage> {
        let mut iter = self.scan(table, scan)?;
        let limit = iter.limit.take();
        let mut rows = Vec::new();
        for row in iter.by_ref() {
            rows.push(row?);
            if Some(rows.len()) == limit {
                break;
            }
        }
        let next_cursor = match limit {
            Some(n) if rows.len() == n && iter.has_more()? => iter.cursor(),
            _ => None,
        };
        Ok(ScanPage { rows, next_cursor })
    }

    /// Counts the rows a scan selects, ignoring its limit but not its offset.
    ///
    /// # Errors
    /// As [`ReadTxn::scan`].
    pub fn count(&self, table: &str, scan: &Scan) -> Result<u64> {
        let mut scan = scan.clone();
        scan.limit = None;
        scan.keys_only = true;
        let mut n = 0;
        for row in self.scan(table, &scan)? {
            row?;
            n += 1;
        }
        Ok(n)
    }
}

type KeyBounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Lower bound (inclusive) and upper bound (exclusive) on cell keys.
fn scan_bounds(scan: &Scan) -> Result<KeyBounds> {
    let mut lowers = Vec::new();
    let mut uppers: Vec<Option<Vec<u8>>> = Vec::new();
    if let Some(prefix) = &scan.prefix {
        let p = key::row_prefix(prefix);
        uppers.push(key::prefix_successor(&p));
        lowers.push(p);
    }
    if let Some(cursor) = &scan.cursor
        && cursor.reverse != scan.reverse
    {
        return Err(
            ErrorKind::InvalidCursor { reason: "cursor comes from a scan in the other direction" }.into()
        );
    }
    if scan.reverse {
        if let Some(start) = &scan.start {
            uppers.push(Some(key::row_end(start)));
        }
        if let Some(stop) = &scan.stop {
            lowers.push(key::row_end(stop));
        }
        if let Some(cursor) = &scan.cursor {
            uppers.push(Some(key::row_start(&cursor.last_key)));
        }
    } else {
        if let Some(start) = &scan.start {
            lowers.push(key::row_start(start));
        }
        if let Some(stop) = &scan.stop {
            uppers.push(Some(key::row_start(stop)));
        }
        if let Some(cursor) = &scan.cursor {
            lowers.push(key::row_end(&cursor.last_key));
        }
    }
    let lower = lowers.into_iter().max();
    let upper = uppers.into_iter().flatten().min();
    Ok((lower, upper))
}

/// The qualifiers a read takes from one family; `None` for all of them.
type QualifierSet = Option<Vec<Vec<u8>>>;

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
        let mut selected: BTreeMap<String, QualifierSet> = BTreeMap::new();
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
        Ok(Selection::Some(selected))
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
}

impl<'t> FamilyCursor<'t> {
    #[inline]
    fn advance(&mut self) -> Result<()> {
        self.head = match self.iter.next() {
            None => None,
            Some(item) => {
                let (k, v) = item.map_err(|e| Error::lmdb("scan", e))?;
                Some((RawCellKey::split(&self.family.db_name, k)?, v))
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
            if self.read.in_time_range(k.timestamp) && cursor.family.schema.is_live(k.timestamp, self.now_ms)
            {
                let qualifier = key::unescape(k.qualifier_esc);
                if cursor.qualifiers.as_ref().is_none_or(|qs| qs.contains(&qualifier)) {
                    cells.push(Cell {
                        family: cursor.family.name.clone(),
                        qualifier,
                        timestamp: k.timestamp,
                        value: if self.keys_only { Vec::new() } else { v.to_vec() },
                    });
                }
            }
            cursor.advance()?;
        }
        if self.reverse {
            cells[start..].reverse();
        }
        // Newest `versions` per column; this family's cells are in HBase
        // order now.
        let versions = self.read.versions;
        if versions != crate::read::ALL_VERSIONS && cells.len() - start > 1 {
            let mut run = 0u32;
            let mut kept = start;
            for i in start..cells.len() {
                let same = i > start && cells[i].qualifier == cells[i - 1].qualifier;
                run = if same { run + 1 } else { 1 };
                if run <= versions {
                    cells.swap(kept, i);
                    kept += 1;
                }
            }
            cells.truncate(kept);
        }
        Ok(())
    }
}

/// A streaming scan over one table. Yields one `Result<Row>` per row.
pub struct ScanIter<'t> {
    cursors: Vec<FamilyCursor<'t>>,
    read: ReadOptions,
    reverse: bool,
    keys_only: bool,
    now_ms: u64,
    offset: usize,
    limit: Option<usize>,
    returned: usize,
    /// The escaped key of the last row returned.
    last_key: Option<&'t [u8]>,
    failed: bool,
}

impl std::fmt::Debug for ScanIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanIter").field("reverse", &self.reverse).field("returned", &self.returned).finish()
    }
}

impl<'t> ScanIter<'t> {
    fn new(
        rtxn: &'t ReadTxn<'_>,
        table: Arc<TableHandle>,
        read: &ReadOptions,
        reverse: bool,
        bounds: KeyBounds,
        keys_only: bool,
    ) -> Result<ScanIter<'t>> {
        let selection = Selection::new(&table, read)?;
        let empty = matches!(&bounds, (Some(lo), Some(hi)) if lo >= hi);
        let lower = bounds.0.as_deref().map_or(Bound::Unbounded, Bound::Included);
        let upper = bounds.1.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut cursors = Vec::with_capacity(table.families.len());
        for (family, qualifiers) in selection.families(&table) {
            let iter = if empty {
                CellIter::Empty
            } else if reverse {
                CellIter::Reverse(
                    family.db.rev_range(rtxn.raw(), &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?,
                )
            } else {
                CellIter::Forward(
                    family.db.range(rtxn.raw(), &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?,
                )
            };
            let mut cursor = FamilyCursor { family, qualifiers, iter, head: None };
            cursor.advance()?;
            cursors.push(cursor);
        }
        Ok(ScanIter {
            cursors,
            read: read.clone(),
            reverse,
            keys_only,
            now_ms: rtxn.now_ms,
            offset: 0,
            limit: None,
            returned: 0,
            last_key: None,
            failed: false,
        })
    }

    /// The cursor resuming after the last row returned so far.
    pub fn cursor(&self) -> Option<ScanCursor> {
        self.last_key.map(|k| ScanCursor { last_key: key::unescape(k), reverse: self.reverse })
    }

    /// Whether another row would be returned (ignoring the limit). Consumes
    /// nothing visible: the row is assembled and dropped, and the cursor
    /// still points after the last row returned.
    fn has_more(&mut self) -> Result<bool> {
        let saved = self.last_key;
        let more = self.next_row()?.is_some();
        self.last_key = saved;
        Ok(more)
    }

    /// The next row with at least one selected cell, before offset and limit.
    fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            // Escaped rows order like raw rows, so heads compare unescaped-free.
            let next: Option<&'t [u8]> = self
                .cursors
                .iter()
                .filter_map(|c| c.head.as_ref().map(|(k, _)| k.row_esc))
                .reduce(|a, b| if (b < a) != self.reverse { b } else { a });
            let Some(row_esc) = next else { return Ok(None) };
            let shape = RowShape {
                read: &self.read,
                reverse: self.reverse,
                keys_only: self.keys_only,
                now_ms: self.now_ms,
            };
            let mut cells: Vec<Cell> = Vec::new();
            for cursor in &mut self.cursors {
                shape.take_cells(cursor, row_esc, &mut cells)?;
            }
            if !cells.is_empty() {
                self.last_key = Some(row_esc);
                return Ok(Some(Row { key: key::unescape(row_esc), cells }));
            }
        }
    }
}

impl Iterator for ScanIter<'_> {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        if self.failed || self.limit.is_some_and(|l| self.returned >= l) {
            return None;
        }
        loop {
            match self.next_row() {
                Ok(Some(row)) => {
                    if self.offset > 0 {
                        self.offset -= 1;
                        continue;
                    }
                    self.returned += 1;
                    return Some(Ok(row));
                }
                Ok(None) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
