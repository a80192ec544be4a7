//! Read transactions and the streaming scan.

use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Bound;
use std::sync::{Arc, RwLockReadGuard};

use heed::types::Bytes;
use heed::{RoRange, RoRevRange, RoTxn, WithoutTls};

use crate::cell::{Cell, Row};
use crate::error::{Error, ErrorKind, Result};
use crate::filter::{FilterRun, RowRange};
use crate::index::{IndexPage, IndexQuery, IndexTerm, KeyPage, SetOp, VerifyReport};
use crate::key::{self, RawCellKey};
use crate::keyword::{KeywordCell, KeywordCellRef, KeywordPage, KeywordQuery};
use crate::read::{Column, ReadOptions, Scan, ScanCursor};
use crate::store::{FamilyHandle, Region, RegionStats, Store, TableHandle};

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

    /// The change-feed sequence the next commit after this snapshot gets:
    /// everything below it is in the snapshot.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn next_seq(&self) -> Result<u64> {
        self.store.next_feed_seq(&self.txn)
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
        let stored = table.stored_key(row);
        // Both bounds in one buffer: esc(row) 00 01 | esc(row) 00 02.
        let mut bounds = key::row_start(&stored);
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
        limit_versions(&mut cells, read.versions);
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
        ScanIter::new(self, handle, scan)
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
            Some(n) if n > 0 && rows.len() == n && iter.has_more()? => iter.cursor(),
            _ => None,
        };
        Ok(ScanPage { rows, next_cursor })
    }

    /// Looks rows up in a secondary index of `table`.
    ///
    /// # Errors
    /// As [`Store::index_lookup`].
    pub fn index_lookup(&self, table: &str, index: &str, query: &IndexQuery) -> Result<IndexPage> {
        let handle = self.store.table_handle(table)?;
        crate::index::lookup(&self.txn, &handle, handle.index(index)?, query, self.now_ms)
    }

    /// Row keys in every lookup (`Intersect`) or any (`Union`), in row-key
    /// order, after `after`, at most `limit`. Lookups with equality on every
    /// column of their index stream in row-key order and the intersection
    /// leapfrogs between them (seeking), so it reads little of long lists;
    /// other lookups are read whole and sorted first.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `InvalidIndexQuery`, `Lmdb`.
    pub fn index_combine(
        &self,
        table: &str,
        terms: &[IndexTerm],
        op: SetOp,
        after: Option<&[u8]>,
        limit: Option<usize>,
    ) -> Result<KeyPage> {
        let handle = self.store.table_handle(table)?;
        let raw: &RoTxn<'_> = &self.txn;
        let mut streams = Vec::with_capacity(terms.len());
        for term in terms {
            let index = handle.index(&term.index)?;
            streams.push(crate::index::KeyStream::open(raw, &handle, index, &term.query, self.now_ms)?);
        }
        crate::index::combine(streams, op, after, limit)
    }

    /// The rows of an index lookup's matches, in index order, read in this
    /// snapshot (a match whose row has no selected cell is skipped).
    ///
    /// # Errors
    /// As [`ReadTxn::index_lookup`] and [`ReadTxn::get`].
    pub fn index_rows(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
        read: &ReadOptions,
    ) -> Result<(Vec<Row>, Option<String>)> {
        let page = self.index_lookup(table, index, query)?;
        let handle = self.store.table_handle(table)?;
        let mut rows = Vec::with_capacity(page.hits.len());
        for hit in &page.hits {
            if let Some(row) = self.get_in(&handle, &hit.key, read)? {
                rows.push(row);
            }
        }
        Ok((rows, page.next_cursor))
    }

    /// The rows of partition `query.partition` holding every term of
    /// `query.terms`, newest first (by the date column, then row key),
    /// read straight from the keyword rows: a streaming intersection of the
    /// terms' version lists that seeks past versions it does not need and
    /// stops after `limit` hits.
    ///
    /// ```
    /// use rowsearch_store::{FamilySchema, KeywordQuery, PutCell, SearchField, SearchSchema, Store, TableSchema};
    /// # #[derive(Debug)] struct Words;
    /// # impl rowsearch_store::Analyzer for Words {
    /// #     fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
    /// #         for (i, w) in text.split_whitespace().enumerate() { sink(&w.to_lowercase(), i as u32) }
    /// #     }
    /// #     fn date_ms(&self, v: &[u8]) -> Option<u64> { std::str::from_utf8(v).ok()?.parse().ok() }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::builder().analyzer(std::sync::Arc::new(Words)).open(dir.path())?;
    /// let search = SearchSchema::new([SearchField::text("subject", "m:subject")])
    ///     .partition("m:user")
    ///     .date_column("m:date");
    /// store.create_table("mail", &TableSchema::new([FamilySchema::new("m")]).search(search))?;
    /// for (key, date, subject) in [("a", "1", "gas prices"), ("b", "3", "Gas deal"), ("c", "2", "power deal")] {
    ///     let cells = vec![PutCell::new("m", "user", "ann"), PutCell::new("m", "date", date), PutCell::new("m", "subject", subject)];
    ///     store.put("mail", key.as_bytes(), cells)?;
    /// }
    /// let query = KeywordQuery { partition: b"ann".to_vec(), terms: vec!["deal".into()], ..Default::default() };
    /// let page = store.keyword_lookup("mail", &query)?;
    /// let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
    /// assert_eq!(keys, [b"b", b"c"]); // newest first
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `NoAnalyzer`, `InvalidKeywordQuery`
    /// (no terms after analysis, an unknown `field:`, a bad cursor), `Lmdb`.
    pub fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        let handle = self.store.table_handle(table)?;
        let search = handle.search()?;
        let analyzer = self.store.analyzer_for(table)?;
        crate::keyword::lookup(&self.txn, search, analyzer, query)
    }

    /// Calls `f` with every keyword cell of `partition` (of every partition
    /// when `None`) in key order: partition, field, term, then newest first.
    /// The cell is lent, borrowing from the store's pages, so a scan of
    /// millions of cells copies and allocates nothing per cell;
    /// [`KeywordCellRef::to_cell`] copies what you keep.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Corrupted`, `Lmdb`, and whatever
    /// `f` returns.
    pub fn for_each_keyword_cell(
        &self,
        table: &str,
        partition: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let handle = self.store.table_handle(table)?;
        crate::keyword::for_each_cell(&self.txn, handle.search()?, partition, f)
    }

    /// Like [`ReadTxn::for_each_keyword_cell`], over the partitions
    /// `from <= p < to` (`None`: unbounded), e.g. between two of
    /// [`ReadTxn::keyword_partition_splits`].
    ///
    /// # Errors
    /// As [`ReadTxn::for_each_keyword_cell`].
    pub fn for_each_keyword_cell_between(
        &self,
        table: &str,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let handle = self.store.table_handle(table)?;
        crate::keyword::for_each_cell_between(&self.txn, handle.search()?, from, to, f)
    }

    /// Partitions that cut the table's keyword rows where its region splits
    /// cut its rows, ascending: reading between consecutive ones reads whole
    /// partitions, and, when the partition is the row key's leading string
    /// field (as in the mail table), exactly one region's keyword rows. Empty
    /// for a table without splits.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Corrupted`, `Lmdb`.
    pub fn keyword_partition_splits(&self, table: &str) -> Result<Vec<Vec<u8>>> {
        let handle = self.store.table_handle(table)?;
        crate::keyword::partition_splits(&self.txn, handle.search()?, &handle.splits)
    }

    /// How many keyword cells the table holds (all partitions), read from
    /// LMDB's counters without a scan: a total for progress reports.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `Lmdb`.
    pub fn keyword_cell_count(&self, table: &str) -> Result<u64> {
        let handle = self.store.table_handle(table)?;
        let stat = handle.search()?.db.stat(&self.txn).map_err(|e| Error::lmdb("stat", e))?;
        Ok(stat.entries as u64)
    }

    /// The keyword cells that row `row` should have, computed from its
    /// stored values with the store's analyzer (for checks and reindexing
    /// one row), in key order.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `NoAnalyzer`, `InvalidRowKey`, `Lmdb`.
    pub fn row_keyword_cells(&self, table: &str, row: &[u8]) -> Result<Vec<KeywordCell>> {
        let handle = self.store.table_handle(table)?;
        let search = handle.search()?;
        let analyzer = self.store.analyzer_for(table)?;
        let values = search.values(&self.txn, &handle.stored_key(row))?;
        search
            .entries(analyzer, &handle, row, &values)?
            .iter()
            .map(|(k, v)| crate::keyword::decode_cell(search, k, v))
            .collect()
    }

    /// Compares an index with the data in this snapshot.
    ///
    /// # Errors
    /// As [`Store::verify_index`].
    pub fn verify_index(&self, table: &str, index: &str) -> Result<VerifyReport> {
        let handle = self.store.table_handle(table)?;
        let ix = handle.index(index)?;
        // What the data says, in entry order.
        let mut expected = Vec::new();
        for row in self.scan(table, &Scan::new().keys_only(true))? {
            let row = row?;
            let stored = handle.stored_key(&row.key);
            if let Some((k, _)) = ix.entry(&self.txn, &handle, &row.key, &stored, self.now_ms)? {
                expected.push(k);
            }
        }
        expected.sort_unstable();
        // The main entries and the runs'; a live key in two places is one
        // extra entry.
        let actual = ix.live_entries(&self.txn, self.now_ms)?;
        let mut report = VerifyReport { entries: actual.len() as u64, ..VerifyReport::default() };
        let (mut i, mut j) = (0, 0);
        while i < expected.len() || j < actual.len() {
            let ord = match (expected.get(i), actual.get(j)) {
                (Some(e), Some(a)) => e.cmp(a),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
                std::cmp::Ordering::Less => {
                    report.missing_count += 1;
                    if report.missing.len() < 100 {
                        let (_, row) = crate::index::entry_row(&ix.db_name, &expected[i], ix.columns.len())?;
                        report.missing.push(row);
                    }
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    report.extra_count += 1;
                    if report.extra.len() < 100 {
                        report.extra.push(actual[j].clone());
                    }
                    j += 1;
                }
            }
        }
        Ok(report)
    }

    /// Rows, cells and bytes stored in one region of `table`.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownRegion`, `Corrupted`, `Lmdb`.
    pub fn region_stats(&self, table: &str, region: &Region) -> Result<RegionStats> {
        let handle = self.store.table_handle(table)?;
        let (lo, hi) = cell_bounds(&handle.region_range(region.index)?);
        let lower = lo.as_deref().map_or(Bound::Unbounded, Bound::Included);
        let upper = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let (mut cells, mut bytes) = (0u64, 0u64);
        for family in &handle.families {
            for item in
                family.db.range(&self.txn, &(lower, upper)).map_err(|e| Error::lmdb("region stats", e))?
            {
                let (k, v) = item.map_err(|e| Error::lmdb("region stats", e))?;
                cells += 1;
                bytes += (k.len() + v.len()) as u64;
            }
        }
        let rows = self.count(table, &Scan::new().region(region.index))?;
        Ok(RegionStats { region: region.clone(), rows, cells, bytes })
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

/// The (unsalted) row range a scan selects: start/stop, prefix, cursor, and
/// what its filter bounds.
fn scan_range(scan: &Scan) -> Result<RowRange> {
    if let Some(cursor) = &scan.cursor
        && cursor.reverse != scan.reverse
    {
        return Err(
            ErrorKind::InvalidCursor { reason: "cursor comes from a scan in the other direction" }.into()
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

/// The stored-key range of one salt bucket (`None`: unsalted) for an
/// unsalted row range.
fn stored_range(range: &RowRange, bucket: Option<u8>) -> RowRange {
    let Some(b) = bucket else { return range.clone() };
    let with_salt = |key: &Vec<u8>| {
        let mut out = Vec::with_capacity(key.len() + 1);
        out.push(b);
        out.extend_from_slice(key);
        out
    };
    let lo = match &range.lo {
        Bound::Included(k) => Bound::Included(with_salt(k)),
        Bound::Excluded(k) => Bound::Excluded(with_salt(k)),
        Bound::Unbounded => Bound::Included(vec![b]),
    };
    let hi = match &range.hi {
        Bound::Included(k) => Bound::Included(with_salt(k)),
        Bound::Excluded(k) => Bound::Excluded(with_salt(k)),
        Bound::Unbounded => match b.checked_add(1) {
            Some(next) => Bound::Excluded(vec![next]),
            None => Bound::Unbounded,
        },
    };
    RowRange { lo, hi }
}

/// Cell-key bounds (lower inclusive, upper exclusive) of a stored-row range.
fn cell_bounds(range: &RowRange) -> KeyBounds {
    let lo = match &range.lo {
        Bound::Included(r) => Some(key::row_start(r)),
        Bound::Excluded(r) => Some(key::row_end(r)),
        Bound::Unbounded => None,
    };
    let hi = match &range.hi {
        Bound::Included(r) => Some(key::row_end(r)),
        Bound::Excluded(r) => Some(key::row_start(r)),
        Bound::Unbounded => None,
    };
    (lo, hi)
}

/// Keeps the newest `versions` cells of each column; `cells` are in HBase
/// order (each column's versions adjacent, newest first).
fn limit_versions(cells: &mut Vec<Cell>, versions: u32) {
    if versions == crate::read::ALL_VERSIONS || cells.len() < 2 {
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
        rtxn: &'t ReadTxn<'_>,
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

/// A row and its stored key as LMDB holds it (escaped, salt included).
type Sourced<'t> = (Row, &'t [u8]);

/// The escaped key without its escaped salt byte (0x00 escapes to two bytes).
fn unsalted_esc(salted: bool, esc: &[u8]) -> &[u8] {
    match (salted, esc.first()) {
        (false, _) | (true, None) => esc,
        (true, Some(0)) => esc.get(2..).unwrap_or_default(),
        (true, Some(_)) => &esc[1..],
    }
}

/// A source's next row in the merge of several sources. The heap's top is
/// the smallest key (forward) or the largest (reverse); keys are distinct
/// across sources (each row lives in one bucket).
struct Head<'t> {
    row: Row,
    esc: &'t [u8],
    source: usize,
    reverse: bool,
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.row.key == other.row.key
    }
}

impl Eq for Head<'_> {}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head<'_> {
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
    heads: BinaryHeap<Head<'t>>,
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
}

impl std::fmt::Debug for ScanIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanIter").field("reverse", &self.reverse).field("returned", &self.returned).finish()
    }
}

impl<'t> ScanIter<'t> {
    fn new(rtxn: &'t ReadTxn<'_>, table: Arc<TableHandle>, scan: &Scan) -> Result<ScanIter<'t>> {
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
            read.versions = crate::read::ALL_VERSIONS;
        }
        let mut sources = Vec::with_capacity(buckets.len());
        if !range.is_empty() {
            for bucket in buckets {
                let stored = stored_range(&range, bucket).intersect(region.clone());
                if stored.is_empty() {
                    continue;
                }
                sources.push(RowSource::open(rtxn, &table, &selection, scan.reverse, cell_bounds(&stored))?);
            }
        }
        Ok(ScanIter {
            heads: BinaryHeap::new(),
            salted: table.is_salted(),
            primed: false,
            sources,
            read,
            versions: scan.read.versions,
            filter: scan.filter.clone().map(|f| FilterRun::new(f, scan.reverse)),
            strip_values: scan.keys_only && scan.filter.is_some(),
            reverse: scan.reverse,
            keys_only: scan.keys_only && scan.filter.is_none(),
            now_ms: rtxn.now_ms,
            offset: scan.offset,
            limit: scan.limit,
            returned: 0,
            last_key: None,
            peeked: None,
            finished: false,
        })
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
                            self.heads.push(Head { row, esc, source, reverse: self.reverse });
                        }
                    }
                    self.primed = true;
                }
                let Some(head) = self.heads.pop() else { return Ok(None) };
                if let Some((row, esc)) = self.sources[head.source].next_row(&shape)? {
                    self.heads.push(Head { row, esc, source: head.source, reverse: self.reverse });
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
