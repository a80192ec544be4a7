//! Read transactions and the streaming scan.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLockReadGuard};

use heed::{RoTxn, WithoutTls};

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
        let lower = key::row_start(row);
        let upper = key::row_end(row);
        let mut iter = ScanIter::new(self, handle, read, false, (Some(lower), Some(upper)), false)?;
        iter.next().transpose()
    }

    /// Reads several rows from this snapshot, in the order asked.
    ///
    /// # Errors
    /// As [`ReadTxn::get`].
    pub fn multi_get(&self, table: &str, rows: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        rows.iter().map(|row| self.get(table, row, read)).collect()
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

/// The qualifiers a scan reads from one family; `None` for all of them.
type QualifierSet = Option<Vec<Vec<u8>>>;

type CellIter<'t> = Box<dyn Iterator<Item = heed::Result<(&'t [u8], &'t [u8])>> + 't>;

struct FamilyCursor<'t> {
    family: Arc<FamilyHandle>,
    /// `None`: every qualifier.
    qualifiers: Option<Vec<Vec<u8>>>,
    iter: CellIter<'t>,
    head: Option<(RawCellKey<'t>, &'t [u8])>,
}

impl<'t> FamilyCursor<'t> {
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
        // Which families, and which qualifiers of each.
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
        let families: Vec<(Arc<FamilyHandle>, QualifierSet)> = table
            .families
            .iter()
            .filter_map(|f| {
                if read.columns.is_empty() {
                    Some((f.clone(), None))
                } else {
                    selected.get(&f.schema.name).map(|q| (f.clone(), q.clone()))
                }
            })
            .collect();

        let empty = matches!(&bounds, (Some(lo), Some(hi)) if lo >= hi);
        let lower = bounds.0.as_deref().map_or(Bound::Unbounded, Bound::Included);
        let upper = bounds.1.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut cursors = Vec::with_capacity(families.len());
        for (family, qualifiers) in families {
            let iter: CellIter<'t> = if empty {
                Box::new(std::iter::empty())
            } else if reverse {
                Box::new(
                    family.db.rev_range(rtxn.raw(), &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?,
                )
            } else {
                Box::new(family.db.range(rtxn.raw(), &(lower, upper)).map_err(|e| Error::lmdb("scan", e))?)
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
            let versions = self.read.versions;
            let mut cells: Vec<Cell> = Vec::new();
            for cursor in &mut self.cursors {
                let start = cells.len();
                while let Some((k, v)) = cursor.head {
                    if k.row_esc != row_esc {
                        break;
                    }
                    if self.read.in_time_range(k.timestamp)
                        && cursor.family.schema.is_live(k.timestamp, self.now_ms)
                    {
                        let qualifier = key::unescape(k.qualifier_esc);
                        if cursor.qualifiers.as_ref().is_none_or(|qs| qs.contains(&qualifier)) {
                            cells.push(Cell {
                                family: cursor.family.schema.name.clone(),
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
                // Newest `versions` per column; this family's cells are in
                // HBase order now.
                if versions != crate::read::ALL_VERSIONS {
                    let mut run = 0u32;
                    let mut i = start;
                    let mut kept = start;
                    while i < cells.len() {
                        let same = i > start && cells[i].qualifier == cells[i - 1].qualifier;
                        run = if same { run + 1 } else { 1 };
                        if run <= versions {
                            cells.swap(kept, i);
                            kept += 1;
                        }
                        i += 1;
                    }
                    cells.truncate(kept);
                }
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
