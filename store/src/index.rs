//! Secondary indexes: declared per table over one or more columns, kept in
//! the same write transaction as the rows they index.
//!
//! An index is two LMDB databases: the merged entries, `t/<table>/i/<index>`,
//! and sorted runs of recent ones, `t/<table>/p/<index>` (see "Pending
//! runs" below). An entry is
//!
//! ```text
//! region (u16, BE) | esc(value 1) 00 01 | ... | esc(value n) 00 01 | esc(row key) 00 01
//! ```
//!
//! with the values of the newest live version of each indexed column and the
//! (unsalted) row key, escaped as in cell keys so entries sort by values, then
//! row key. Its value is the entry's expiry (u64 BE, ms; `u64::MAX` without
//! TTL, stored as an empty value): the earliest time one of its cells passes
//! its family's TTL. A row that lacks one of the columns has no entry. The
//! region prefix keeps a region's entries with the region; a lookup merges
//! the regions.
//!
//! # Pending runs
//!
//! Entries sort by value, so the rows of one write batch land all over a
//! large index: a batch of 10,000 rows dirties ~10,000 of its B-tree pages,
//! and LMDB copies and writes back every page a transaction touches. A
//! write therefore appends its new entries, sorted, as one *run* of the
//! pending database, keyed `run id (u32 BE) | entry`: a new run's keys sort
//! after every key there, so LMDB appends them (`MDB_APPEND`) and fills each
//! page once. A directory under run id 0 (`00 00 00 00 | run id` -> entries
//! written, u64 BE) lists the runs. When a write leaves more than
//! [`PENDING_RUNS`] runs (configurable), it moves every run into the main
//! database in one ascending pass (a k-way merge, the newest run winning a
//! key found in several) and empties the pending one: a merge touches each
//! main page once for many entries.
//!
//! Lookups read the main database and every run (a sorted merge), in the
//! same transaction as the data, so an index never disagrees with the data.
//! A live entry is in exactly one place; a removal or new expiry goes to the
//! newest run holding the key, else to the main database. Only expired
//! entries (left until compaction or the next merge overwrites them) can
//! share a key with a live one in a newer run, and lookups skip expired
//! entries.

use std::collections::BinaryHeap;
use std::ops::Bound;
use std::sync::Arc;

use heed::{RoTxn, RwTxn};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::read::Column;
use crate::sorted::SortedPuts;
use crate::store::{BytesDb, FamilyHandle, TableHandle};

/// An index declared in a table schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSchema {
    /// The index name (same rules as family names).
    pub name: String,
    /// The indexed columns, `family:qualifier`, most significant first.
    pub columns: Vec<String>,
}

impl IndexSchema {
    /// An index over these columns.
    pub fn new(name: impl Into<String>, columns: impl IntoIterator<Item = impl Into<String>>) -> IndexSchema {
        IndexSchema { name: name.into(), columns: columns.into_iter().map(Into::into).collect() }
    }

    /// The columns as (family, qualifier).
    pub(crate) fn parsed_columns(&self) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
        let what = format!("index {:?}: column", self.name);
        self.columns.iter().map(|c| parse_column(&what, c)).collect()
    }
}

/// A `family:qualifier` column of a schema (a binary string); the reason,
/// prefixed with `what`, when it is not one.
pub(crate) fn parse_column(what: &str, column: &str) -> std::result::Result<(String, Vec<u8>), String> {
    let bytes = crate::binstr::decode(column).map_err(|e| format!("{what} {column:?}: {e}"))?;
    match Column::parse(&bytes) {
        Column::Qualifier(f, q) => Ok((f, q)),
        Column::Family(_) => Err(format!("{what} {column:?} must be family:qualifier")),
    }
}

/// The newest stored version of a column of row `stored`: (timestamp, value).
pub(crate) fn newest_stored<'t>(
    txn: &'t RoTxn<'_>,
    family: &FamilyHandle,
    stored: &[u8],
    qualifier: &[u8],
) -> Result<Option<(u64, &'t [u8])>> {
    let prefix = key::column_prefix(stored, qualifier);
    let mut iter = family.db.prefix_iter(txn, &prefix).map_err(|e| Error::lmdb("column read", e))?;
    match iter.next() {
        None => Ok(None),
        Some(item) => {
            let (k, v) = item.map_err(|e| Error::lmdb("column read", e))?;
            Ok(Some((key::RawCellKey::split(&family.db_name, k)?.timestamp, v)))
        }
    }
}

/// The newest version of a column among `cells` put into a new row: the
/// last of equal timestamps, as the last write of a key wins.
pub(crate) fn newest_put<'c>(
    cells: &[&'c crate::cell::PutCell],
    family: &FamilyHandle,
    qualifier: &[u8],
    now_ms: u64,
) -> Option<(u64, &'c [u8])> {
    cells
        .iter()
        .filter(|c| *c.family == *family.name && c.qualifier == *qualifier)
        .map(|c| (c.timestamp.unwrap_or(now_ms), c.value.as_slice()))
        .reduce(|a, b| if b.0 >= a.0 { b } else { a })
}

/// A cursor token: `prefix` then the bytes in hex.
pub(crate) fn hex_token(prefix: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(prefix.len() + bytes.len() * 2);
    out.push_str(prefix);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The bytes of a [`hex_token`], or why it is not one.
pub(crate) fn parse_hex_token(prefix: &str, token: &str) -> std::result::Result<Vec<u8>, &'static str> {
    let hex = token.strip_prefix(prefix).ok_or("wrong cursor prefix")?;
    if hex.len() % 2 != 0 {
        return Err("bad cursor length");
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or("cursor is not hex"))
        .collect()
}

/// An open index of a table.
#[derive(Debug)]
pub(crate) struct IndexHandle {
    pub schema: IndexSchema,
    pub db_name: String,
    pub db: BytesDb,
    /// The pending runs (see the module documentation).
    pub pending: BytesDb,
    /// The indexed columns, resolved.
    pub columns: Vec<(Arc<FamilyHandle>, Vec<u8>)>,
}

/// One index entry: its key and expiry.
pub(crate) type Entry = (Vec<u8>, u64);

use crate::key::push_escaped;

/// An entry's expiry (ms), from its stored value.
pub(crate) fn entry_expiry(value: &[u8]) -> u64 {
    value.try_into().map(u64::from_be_bytes).unwrap_or(u64::MAX)
}

/// Writes entry `key` expiring at `expiry` into `db` (an empty value for
/// never, so entries without TTL take 8 bytes less).
fn put_entry(wtxn: &mut RwTxn, db: &BytesDb, key: &[u8], expiry: u64) -> Result<()> {
    db.put(wtxn, key, entry_value(&expiry.to_be_bytes(), expiry)).map_err(|e| Error::lmdb("index put", e))
}

/// The stored value of an entry expiring at `expiry` (`bytes`, its
/// big-endian form): empty for never.
fn entry_value(bytes: &[u8; 8], expiry: u64) -> &[u8] {
    if expiry == u64::MAX { &[] } else { bytes }
}

/// Default most pending runs of an index before a write merges them
/// ([`crate::StoreBuilder::index_pending_runs`]).
pub(crate) const PENDING_RUNS: usize = 32;

/// The directory's run id in the pending database.
const DIRECTORY: [u8; 4] = [0; 4];

/// Where lookups read an index's entries: a database and the key prefix
/// before the entry (empty in the main database, the run id in a run).
pub(crate) type Source<'a> = (&'a BytesDb, Vec<u8>);

/// The lower LMDB bound of the keys starting with `prefix` (LMDB refuses an
/// empty key, even as a bound).
fn prefix_start(prefix: &[u8]) -> Bound<&[u8]> {
    if prefix.is_empty() { Bound::Unbounded } else { Bound::Included(prefix) }
}

/// The LMDB range of keys `prefix | k` for `k` in `[lower, upper)` (`upper`
/// `None`: to the end of the prefix).
fn prefixed_range(prefix: &[u8], lower: &[u8], upper: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
    let lo = [prefix, lower].concat();
    let hi = match upper {
        Some(u) => Some([prefix, u].concat()),
        None => key::prefix_successor(prefix),
    };
    (lo, hi)
}

/// One region's LMDB bounds for entry tails `[lo, hi)` (`hi` `None`: to
/// the region's end).
fn region_bounds(region: usize, lo: &[u8], hi: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
    let prefix = u16::try_from(region).unwrap_or(u16::MAX).to_be_bytes();
    let lower = [&prefix[..], lo].concat();
    let upper = match hi {
        Some(h) => Some([&prefix[..], h].concat()),
        None => u16::try_from(region + 1).ok().map(|r| r.to_be_bytes().to_vec()),
    };
    (lower, upper)
}

/// The region of a stored key: how many splits are at or below it.
pub(crate) fn region_of(splits: &[Vec<u8>], stored: &[u8]) -> u16 {
    let n = splits.partition_point(|s| s.as_slice() <= stored);
    u16::try_from(n).unwrap_or(u16::MAX)
}

impl IndexHandle {
    /// The pending runs, oldest first.
    pub fn runs(&self, txn: &RoTxn<'_>) -> Result<Vec<[u8; 4]>> {
        let mut runs = Vec::new();
        for item in self.pending.prefix_iter(txn, &DIRECTORY).map_err(|e| Error::lmdb("index runs", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("index runs", e))?;
            let run: [u8; 4] = k.get(4..).and_then(|r| r.try_into().ok()).ok_or_else(|| -> Error {
                ErrorKind::Corrupted {
                    db: self.db_name.clone(),
                    key: crate::error::preview(k),
                    detail: "bad pending run directory key".into(),
                }
                .into()
            })?;
            runs.push(run);
        }
        Ok(runs)
    }

    /// Every place entries are read from: the main database, then the
    /// runs, oldest first.
    pub fn sources(&self, txn: &RoTxn<'_>) -> Result<Vec<Source<'_>>> {
        let mut sources = vec![(&self.db, Vec::new())];
        sources.extend(self.runs(txn)?.into_iter().map(|r| (&self.pending, r.to_vec())));
        Ok(sources)
    }

    /// Removes every entry.
    pub fn clear(&self, wtxn: &mut RwTxn) -> Result<()> {
        for db in [&self.db, &self.pending] {
            db.clear(wtxn).map_err(|e| Error::lmdb("clear index", e))?;
        }
        Ok(())
    }

    /// Writes new entries (keys that are nowhere live), strictly ascending,
    /// as a new pending run.
    pub fn insert_sorted<'k>(
        &self,
        wtxn: &mut RwTxn,
        entries: impl IntoIterator<Item = (&'k [u8], u64)>,
    ) -> Result<()> {
        let last = self.runs(wtxn)?.last().map_or(0, |r| u32::from_be_bytes(*r));
        let next = match last.checked_add(1) {
            Some(next) => next,
            None => {
                // Ids ran out (only with an enormous `index_pending_runs`):
                // merge every run, and ids start again.
                self.merge_pending(wtxn, None)?;
                1
            }
        };
        let run = next.to_be_bytes();
        let mut written = 0u64;
        {
            let mut puts = SortedPuts::new(wtxn, &self.pending, "index put")?;
            let mut buf = run.to_vec();
            for (key, expiry) in entries {
                buf.truncate(run.len());
                buf.extend_from_slice(key);
                puts.append(&buf, entry_value(&expiry.to_be_bytes(), expiry))?;
                written += 1;
            }
        }
        if written > 0 {
            self.pending
                .put(wtxn, &[DIRECTORY, run].concat(), &written.to_be_bytes())
                .map_err(|e| Error::lmdb("index put", e))?;
        }
        Ok(())
    }

    /// The database and key holding live entry `key`: the newest of `runs`
    /// (from [`IndexHandle::runs`]) that has it, else the main database.
    fn holder(&self, wtxn: &RwTxn, runs: &[[u8; 4]], key: &[u8]) -> Result<(&BytesDb, Vec<u8>)> {
        for run in runs.iter().rev() {
            let k = [&run[..], key].concat();
            if self.pending.get(wtxn, &k).map_err(|e| Error::lmdb("index read", e))?.is_some() {
                return Ok((&self.pending, k));
            }
        }
        Ok((&self.db, key.to_vec()))
    }

    /// Writes a new expiry for an existing entry, where the entry is;
    /// `runs` as [`IndexHandle::runs`] gives them.
    pub fn replace(&self, wtxn: &mut RwTxn, runs: &[[u8; 4]], key: &[u8], expiry: u64) -> Result<()> {
        let (db, k) = self.holder(wtxn, runs, key)?;
        put_entry(wtxn, db, &k, expiry)
    }

    /// Removes an entry from where it is; `runs` as [`IndexHandle::runs`]
    /// gives them.
    pub fn remove(&self, wtxn: &mut RwTxn, runs: &[[u8; 4]], key: &[u8]) -> Result<()> {
        let (db, k) = self.holder(wtxn, runs, key)?;
        db.delete(wtxn, &k).map_err(|e| Error::lmdb("index delete", e))?;
        Ok(())
    }

    /// Writes an entry straight into the main database (building an index,
    /// where entries arrive in bulk anyway).
    pub fn build_put(&self, wtxn: &mut RwTxn, key: &[u8], expiry: u64) -> Result<()> {
        put_entry(wtxn, &self.db, key, expiry)
    }

    /// Moves every pending run into the main database when there are more
    /// than `max_runs` of them; always with `max_runs` `None`. Returns how
    /// many entries moved.
    pub fn merge_pending(&self, wtxn: &mut RwTxn, max_runs: Option<usize>) -> Result<u64> {
        let runs = self.runs(wtxn)?;
        let due = match max_runs {
            None => !runs.is_empty(),
            Some(max) => runs.len() > max,
        };
        if !due {
            return Ok(0);
        }
        let moved = self.move_to_main(wtxn, &runs)?;
        self.pending.clear(wtxn).map_err(|e| Error::lmdb("index merge", e))?;
        Ok(moved)
    }

    /// Writes the entries of the pending ranges `prefixes` (prefix
    /// stripped) into the main database in one ascending pass (so neighbouring
    /// writes share leaf pages); where a key is in several ranges, the last
    /// range's entry wins. Reads in chunks, so memory stays bounded.
    fn move_to_main(&self, wtxn: &mut RwTxn, prefixes: &[impl AsRef<[u8]>]) -> Result<u64> {
        let mut ranges: Vec<MergeRange> = prefixes.iter().map(|p| MergeRange::new(p.as_ref())).collect();
        // Keys at or below the main database's last one are inserted; the
        // rest sort after everything there and are appended.
        let main_last =
            self.db.last(wtxn).map_err(|e| Error::lmdb("index merge", e))?.map(|(k, _)| k.to_vec());
        // Heads of the ranges, smallest entry first, then oldest range.
        let mut heap: BinaryHeap<MergeHead> = BinaryHeap::new();
        let mut moved = 0u64;
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(MergeRange::CHUNK);
        loop {
            for (i, r) in ranges.iter_mut().enumerate() {
                if r.buf.is_empty() && !r.done {
                    r.refill(wtxn, &self.pending)?;
                    r.push_head(i, &mut heap);
                }
            }
            if heap.is_empty() {
                return Ok(moved);
            }
            // Emit in order until a range that has more in LMDB runs dry.
            out.clear();
            while let Some(std::cmp::Reverse((k, i, mut v))) = heap.pop() {
                let mut dry = ranges[i].push_head(i, &mut heap);
                while let Some(std::cmp::Reverse((k2, _, _))) = heap.peek()
                    && *k2 == k
                {
                    if let Some(std::cmp::Reverse((_, j, v2))) = heap.pop() {
                        v = v2;
                        dry |= ranges[j].push_head(j, &mut heap);
                    }
                }
                out.push((k, v));
                if dry {
                    break;
                }
            }
            let mut puts = SortedPuts::new(wtxn, &self.db, "index merge")?;
            for (k, v) in &out {
                if main_last.as_ref().is_some_and(|last| k <= last) {
                    puts.put(k, v)?;
                } else {
                    puts.append(k, v)?;
                }
            }
            moved += out.len() as u64;
        }
    }

    /// Moves a version 2 store's pending entries (written without a run
    /// id) into the main database (upgrading to the run layout).
    pub fn absorb_unprefixed_pending(&self, wtxn: &mut RwTxn) -> Result<u64> {
        let moved = self.move_to_main(wtxn, &[[0u8; 0]])?;
        self.pending.clear(wtxn).map_err(|e| Error::lmdb("index upgrade", e))?;
        Ok(moved)
    }

    /// Every entry still live at `now_ms`, sorted, each once.
    pub fn live_entries(&self, txn: &RoTxn<'_>, now_ms: u64) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for (db, prefix) in self.sources(txn)? {
            let lower = prefix_start(&prefix);
            let upper = key::prefix_successor(&prefix);
            let range = (lower, upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
            for item in db.range(txn, &range).map_err(|e| Error::lmdb("index read", e))? {
                let (k, v) = item.map_err(|e| Error::lmdb("index read", e))?;
                if now_ms < entry_expiry(v) {
                    out.push(k[prefix.len()..].to_vec());
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Merges the runs, then removes the entries expired at `now_ms`.
    pub fn compact(&self, wtxn: &mut RwTxn, now_ms: u64) -> Result<()> {
        self.merge_pending(wtxn, None)?;
        let mut dead = Vec::new();
        for item in self.db.iter(wtxn).map_err(|e| Error::lmdb("compact index", e))? {
            let (k, v) = item.map_err(|e| Error::lmdb("compact index", e))?;
            if entry_expiry(v) <= now_ms {
                dead.push(k.to_vec());
            }
        }
        for k in &dead {
            self.db.delete(wtxn, k).map_err(|e| Error::lmdb("compact index", e))?;
        }
        Ok(())
    }

    /// The entry of `row` (unsalted key; `stored` its stored key) in this
    /// index as the data in `txn` stands, or `None` when it lacks a column.
    pub fn entry(
        &self,
        txn: &RoTxn<'_>,
        table: &TableHandle,
        row: &[u8],
        stored: &[u8],
        now_ms: u64,
    ) -> Result<Option<Entry>> {
        let mut newest: Vec<(u64, &[u8])> = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            // The newest version comes first; older ones expire before it.
            let Some(cell) = newest_stored(txn, family, stored, qualifier)? else { return Ok(None) };
            newest.push(cell);
        }
        Ok(self.assemble(table, row, stored, &newest, now_ms))
    }

    /// The entry of a row whose indexed columns' newest versions are
    /// `newest` (timestamp, value), one per column; `None` when one is
    /// expired.
    pub fn assemble(
        &self,
        table: &TableHandle,
        row: &[u8],
        stored: &[u8],
        newest: &[(u64, &[u8])],
        now_ms: u64,
    ) -> Option<Entry> {
        // Escaping at most doubles a part; each ends with two bytes.
        let parts = newest.iter().map(|(_, v)| v.len()).sum::<usize>() + row.len();
        let mut out = Vec::with_capacity(2 + 2 * parts + 2 * (newest.len() + 1));
        out.extend_from_slice(&region_of(&table.splits, stored).to_be_bytes());
        let mut expiry = u64::MAX;
        for ((family, _), (ts, value)) in self.columns.iter().zip(newest) {
            if !family.schema.is_live(*ts, now_ms) {
                return None;
            }
            if let Some(ttl) = family.schema.ttl_ms() {
                expiry = expiry.min(ts.saturating_add(ttl));
            }
            push_escaped(&mut out, value);
        }
        push_escaped(&mut out, row);
        Some((out, expiry))
    }

    /// The entry of a row that did not exist before a batch which only put
    /// `cells` into it: the newest put of each column (the last of equal
    /// timestamps, as the last write of a key wins).
    pub fn entry_from_puts(
        &self,
        table: &TableHandle,
        row: &[u8],
        stored: &[u8],
        cells: &[&crate::cell::PutCell],
        now_ms: u64,
    ) -> Option<Entry> {
        let mut newest: Vec<(u64, &[u8])> = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            newest.push(newest_put(cells, family, qualifier, now_ms)?);
        }
        self.assemble(table, row, stored, &newest, now_ms)
    }
}

/// An entry on its way to the main database: key (prefix stripped),
/// range, value; the smallest key, then the oldest range, on top.
type MergeHead = std::cmp::Reverse<(Vec<u8>, usize, Vec<u8>)>;

/// One pending range being merged into the main database, read in chunks.
struct MergeRange {
    prefix: Vec<u8>,
    upper: Option<Vec<u8>>,
    /// Entries read and not yet merged, prefix stripped.
    buf: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The last full key read.
    after: Option<Vec<u8>>,
    /// Everything read.
    done: bool,
}

impl MergeRange {
    const CHUNK: usize = 4096;

    fn new(prefix: &[u8]) -> MergeRange {
        MergeRange {
            prefix: prefix.to_vec(),
            upper: key::prefix_successor(prefix),
            buf: Default::default(),
            after: None,
            done: false,
        }
    }

    /// Reads the next chunk of the range.
    fn refill(&mut self, txn: &RoTxn<'_>, db: &BytesDb) -> Result<()> {
        let lower = self.after.as_deref().map_or_else(|| prefix_start(&self.prefix), Bound::Excluded);
        let range = (lower, self.upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
        let mut last = None;
        let mut read = 0;
        for item in db.range(txn, &range).map_err(|e| Error::lmdb("index merge", e))?.take(Self::CHUNK) {
            let (k, v) = item.map_err(|e| Error::lmdb("index merge", e))?;
            self.buf.push_back((k[self.prefix.len()..].to_vec(), v.to_vec()));
            last = Some(k);
            read += 1;
        }
        self.done = read < Self::CHUNK;
        self.after = last.map(<[u8]>::to_vec);
        Ok(())
    }

    /// Pushes the next buffered entry (of range `i`) onto the heap; true
    /// when none is buffered but LMDB holds more (the merge must refill
    /// before it goes on).
    fn push_head(&mut self, i: usize, heap: &mut BinaryHeap<MergeHead>) -> bool {
        match self.buf.pop_front() {
            Some((k, v)) => {
                heap.push(std::cmp::Reverse((k, i, v)));
                false
            }
            None => !self.done,
        }
    }
}

/// The row key at the end of an entry (after region and values).
pub(crate) fn entry_row(db: &str, entry: &[u8], values: usize) -> Result<(Vec<Vec<u8>>, Vec<u8>)> {
    let corrupted = || -> Error {
        ErrorKind::Corrupted {
            db: db.to_owned(),
            key: crate::error::preview(entry),
            detail: "bad index entry".into(),
        }
        .into()
    };
    let mut rest = entry.get(2..).ok_or_else(corrupted)?;
    let mut parts = Vec::with_capacity(values + 1);
    for _ in 0..=values {
        let (part, used) = key::take_component(rest).ok_or_else(corrupted)?;
        parts.push(part);
        rest = &rest[used..];
    }
    if !rest.is_empty() {
        return Err(corrupted());
    }
    let row = parts.pop().ok_or_else(corrupted)?;
    Ok((parts, row))
}

/// A lookup in one index: equality on leading columns, then optionally a
/// prefix or a range on the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexQuery {
    /// Values the leading columns must equal, in column order.
    pub eq: Vec<Vec<u8>>,
    /// The next column starts with this.
    pub prefix: Option<Vec<u8>>,
    /// The next column is at least this.
    pub start: Option<Vec<u8>>,
    /// The next column is below this.
    pub stop: Option<Vec<u8>>,
    /// Most keys returned.
    pub limit: Option<usize>,
    /// Resume after this token (from [`IndexPage::next_cursor`]).
    pub cursor: Option<String>,
    /// Only entries of rows in this region; `None` merges every region.
    pub region: Option<usize>,
}

/// One match of an index lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexHit {
    /// The indexed values, in column order.
    pub values: Vec<Vec<u8>>,
    /// The row key.
    pub key: Vec<u8>,
}

/// A page of index matches, in index order (values, then row key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPage {
    /// The matches.
    pub hits: Vec<IndexHit>,
    /// Present when the limit cut the lookup short.
    pub next_cursor: Option<String>,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Entries checked.
    pub entries: u64,
    /// Rows whose entry is missing from the index (row keys, first 100).
    pub missing: Vec<Vec<u8>>,
    /// Entries the data does not justify (entry keys, first 100).
    pub extra: Vec<Vec<u8>>,
    /// Counts, beyond the samples.
    pub missing_count: u64,
    /// Counts, beyond the samples.
    pub extra_count: u64,
}

impl VerifyReport {
    /// No difference found.
    pub fn is_clean(&self) -> bool {
        self.missing_count == 0 && self.extra_count == 0
    }
}

/// Bounds (inclusive lower, exclusive upper) of a query in one region, on
/// entry keys without the region prefix.
pub(crate) fn query_bounds(query: &IndexQuery, after: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut base = Vec::new();
    for v in &query.eq {
        push_escaped(&mut base, v);
    }
    let (mut lo, mut hi) = if let Some(p) = &query.prefix {
        let mut lo = base.clone();
        key::push_escaped_open(&mut lo, p);
        let hi = key::prefix_successor(&lo);
        (lo, hi)
    } else {
        let mut lo = base.clone();
        if let Some(s) = &query.start {
            push_escaped(&mut lo, s);
        }
        let hi = match &query.stop {
            Some(s) => {
                let mut hi = base.clone();
                push_escaped(&mut hi, s);
                Some(hi)
            }
            None => key::prefix_successor(&base),
        };
        (lo, hi)
    };
    if let Some(after) = after {
        // Just above `after`: no entry lies strictly between them.
        let mut next = after.to_vec();
        next.push(0);
        if next > lo {
            lo = next;
        }
    }
    if let Some(h) = &hi
        && lo >= *h
    {
        hi = Some(lo.clone());
    }
    (lo, hi)
}

/// An entry of one region's range, for the merge across regions.
pub(crate) struct Head {
    /// The entry without its region prefix.
    pub entry: Vec<u8>,
    pub source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.entry == other.entry
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Head) -> std::cmp::Ordering {
        other.entry.cmp(&self.entry)
    }
}

/// Runs a query over every region of an index: entries in order, expired
/// ones skipped; stops after `limit + 1` entries.
pub(crate) fn lookup(
    txn: &RoTxn<'_>,
    table: &TableHandle,
    index: &IndexHandle,
    query: &IndexQuery,
    now_ms: u64,
) -> Result<IndexPage> {
    let columns = index.columns.len();
    let ranged = query.prefix.is_some() || query.start.is_some() || query.stop.is_some();
    if query.eq.len() > columns || (ranged && query.eq.len() == columns) {
        return Err(ErrorKind::InvalidIndexQuery {
            index: index.schema.name.clone(),
            reason: format!(
                "the index has {columns} column(s); {} equality value(s){} given",
                query.eq.len(),
                if ranged { " and a prefix or range on the next" } else { "" }
            ),
        }
        .into());
    }
    if query.prefix.is_some() && (query.start.is_some() || query.stop.is_some()) {
        return Err(ErrorKind::InvalidIndexQuery {
            index: index.schema.name.clone(),
            reason: "give a prefix or a start/stop range, not both".into(),
        }
        .into());
    }
    let after = match &query.cursor {
        None => None,
        Some(token) => Some(decode_cursor(token)?),
    };
    let (lo, hi) = query_bounds(query, after.as_deref());
    let regions: Vec<usize> = match query.region {
        Some(r) if r <= table.splits.len() => vec![r],
        Some(r) => {
            return Err(ErrorKind::UnknownRegion {
                table: table.name.clone(),
                region: r,
                regions: table.splits.len() + 1,
            }
            .into());
        }
        None => (0..=table.splits.len()).collect(),
    };
    let sources = index.sources(txn)?;
    let mut iters = Vec::with_capacity(regions.len() * sources.len());
    let mut skips = Vec::with_capacity(iters.capacity());
    for &region in &regions {
        let (lower, upper) = region_bounds(region, &lo, hi.as_deref());
        for (db, prefix) in &sources {
            let (lower, upper) = prefixed_range(prefix, &lower, upper.as_deref());
            let range = (
                Bound::Included(lower.as_slice()),
                upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
            );
            iters.push(db.range(txn, &range).map_err(|e| Error::lmdb("index lookup", e))?);
            // The source's prefix and the region.
            skips.push(prefix.len() + 2);
        }
    }
    let sources = iters.len();
    let mut heap = BinaryHeap::new();
    let mut pull = |i: usize, heap: &mut BinaryHeap<Head>| -> Result<()> {
        for item in iters[i].by_ref() {
            let (k, v) = item.map_err(|e| Error::lmdb("index lookup", e))?;
            let expiry = entry_expiry(v);
            if now_ms < expiry {
                heap.push(Head { entry: k.get(skips[i]..).unwrap_or_default().to_vec(), source: i });
                break;
            }
        }
        Ok(())
    };
    for i in 0..sources {
        pull(i, &mut heap)?;
    }
    let limit = query.limit.unwrap_or(usize::MAX);
    let mut hits = Vec::new();
    let mut last = None;
    while let Some(head) = heap.pop() {
        if hits.len() == limit {
            return Ok(IndexPage { hits, next_cursor: last.map(|e: Vec<u8>| encode_cursor(&e)) });
        }
        let (values, key) =
            entry_row(&index.db_name, &[&[0, 0][..], &head.entry].concat(), index.columns.len())?;
        hits.push(IndexHit { values, key });
        pull(head.source, &mut heap)?;
        last = Some(head.entry);
    }
    Ok(IndexPage { hits, next_cursor: None })
}

fn encode_cursor(entry: &[u8]) -> String {
    hex_token("i1.", entry)
}

fn decode_cursor(token: &str) -> Result<Vec<u8>> {
    parse_hex_token("i1.", token).map_err(|reason| ErrorKind::InvalidCursor { reason }.into())
}

/// How [`crate::ReadTxn::index_combine`] combines lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Row keys present in every lookup.
    Intersect,
    /// Row keys present in any lookup.
    Union,
}

/// One lookup of a combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTerm {
    /// The index.
    pub index: String,
    /// The lookup (its limit and cursor are ignored).
    pub query: IndexQuery,
}

/// Row keys of a combination, in row-key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPage {
    /// The row keys.
    pub keys: Vec<Vec<u8>>,
    /// Resume after this row key (pass it as `after`) when the limit cut
    /// the page short.
    pub next_after: Option<Vec<u8>>,
    /// Index entries read to compute the page (to see that a combination
    /// stops early).
    pub entries_read: u64,
}

/// Sorted keys of one lookup, with seeking: row keys of an index lookup,
/// or the (date, row key) versions of a keyword list.
pub(crate) enum KeyStream<'t> {
    /// Ranges sharing one tail order (each region of an index, or each
    /// search field of a keyword), merged lazily; a seek re-positions every
    /// range.
    Live {
        txn: &'t RoTxn<'t>,
        db_name: &'t str,
        /// Every range: a database and the key prefix of its keys; the key
        /// after it is the stream's tail.
        ranges: Vec<Source<'t>>,
        tail: Tail,
        heap: BinaryHeap<std::cmp::Reverse<(Vec<u8>, usize)>>,
        iters: Vec<heed::RoRange<'t, heed::types::Bytes, heed::types::Bytes>>,
        now_ms: u64,
        read: u64,
    },
    /// Any other lookup: all its keys, sorted.
    Sorted { keys: Vec<Vec<u8>>, at: usize, read: u64 },
}

/// How a live stream's entries end after their prefix.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tail {
    /// An escaped row key; the value is the entry's expiry (index entries).
    EscapedRow,
    /// Raw bytes to the end of the key (keyword versions).
    Raw,
}

impl<'t> KeyStream<'t> {
    pub fn open(
        txn: &'t RoTxn<'t>,
        table: &TableHandle,
        index: &'t IndexHandle,
        query: &IndexQuery,
        now_ms: u64,
    ) -> Result<KeyStream<'t>> {
        let complete =
            query.eq.len() == index.columns.len() && query.prefix.is_none() && query.start.is_none();
        if !complete {
            let page = lookup(
                txn,
                table,
                index,
                &IndexQuery { limit: None, cursor: None, ..query.clone() },
                now_ms,
            )?;
            let read = page.hits.len() as u64;
            let mut keys: Vec<Vec<u8>> = page.hits.into_iter().map(|h| h.key).collect();
            keys.sort_unstable();
            keys.dedup();
            return Ok(KeyStream::Sorted { keys, at: 0, read });
        }
        let mut ranges = Vec::new();
        for (db, source) in index.sources(txn)? {
            for region in 0..=table.splits.len() {
                let mut prefix = source.clone();
                prefix.extend_from_slice(&(region as u16).to_be_bytes());
                for v in &query.eq {
                    push_escaped(&mut prefix, v);
                }
                ranges.push((db, prefix));
            }
        }
        KeyStream::live(txn, &index.db_name, ranges, Tail::EscapedRow, now_ms)
    }

    /// A stream over the tails of the keys of every range (a database and
    /// the prefix of the keys read there).
    pub fn live(
        txn: &'t RoTxn<'t>,
        db_name: &'t str,
        ranges: Vec<Source<'t>>,
        tail: Tail,
        now_ms: u64,
    ) -> Result<KeyStream<'t>> {
        let mut stream = KeyStream::Live {
            txn,
            db_name,
            ranges,
            tail,
            heap: BinaryHeap::new(),
            iters: Vec::new(),
            now_ms,
            read: 0,
        };
        stream.seek(&[])?;
        Ok(stream)
    }

    pub fn entries_read(&self) -> u64 {
        match self {
            KeyStream::Live { read, .. } | KeyStream::Sorted { read, .. } => *read,
        }
    }

    pub fn peek(&self) -> Option<&[u8]> {
        match self {
            KeyStream::Live { heap, .. } => heap.peek().map(|std::cmp::Reverse((k, _))| k.as_slice()),
            KeyStream::Sorted { keys, at, .. } => keys.get(*at).map(Vec::as_slice),
        }
    }

    /// Positions at the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        match self {
            KeyStream::Sorted { keys, at, .. } => {
                *at = (*at).max(keys.partition_point(|k| k.as_slice() < target));
                Ok(())
            }
            KeyStream::Live { txn, ranges, tail, heap, iters, .. } => {
                heap.clear();
                iters.clear();
                for (db, prefix) in ranges.iter() {
                    let mut lower = prefix.clone();
                    match tail {
                        Tail::EscapedRow if !target.is_empty() => push_escaped(&mut lower, target),
                        Tail::EscapedRow => {}
                        Tail::Raw => lower.extend_from_slice(target),
                    }
                    let upper = key::prefix_successor(prefix);
                    let range = (
                        Bound::Included(lower.as_slice()),
                        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    );
                    iters.push(db.range(txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
                }
                for source in 0..iters.len() {
                    self.refill(source)?;
                }
                Ok(())
            }
        }
    }

    /// Reads range `source`'s next live entry into the heap.
    fn refill(&mut self, source: usize) -> Result<()> {
        let KeyStream::Live { db_name, ranges, tail, heap, iters, now_ms, read, .. } = self else {
            return Ok(());
        };
        let skip = ranges[source].1.len();
        for item in iters[source].by_ref() {
            let (k, v) = item.map_err(|e| Error::lmdb("lookup", e))?;
            *read += 1;
            let rest = k.get(skip..).unwrap_or_default();
            let item = match tail {
                Tail::Raw => rest.to_vec(),
                Tail::EscapedRow => {
                    if *now_ms >= entry_expiry(v) {
                        continue;
                    }
                    key::take_component(rest)
                        .ok_or_else(|| -> Error {
                            ErrorKind::Corrupted {
                                db: (*db_name).to_owned(),
                                key: crate::error::preview(k),
                                detail: "bad index entry".into(),
                            }
                            .into()
                        })?
                        .0
                }
            };
            heap.push(std::cmp::Reverse((item, source)));
            break;
        }
        Ok(())
    }

    /// Moves past the current key.
    pub fn advance(&mut self) -> Result<()> {
        match self {
            KeyStream::Sorted { at, .. } => {
                *at += 1;
                Ok(())
            }
            KeyStream::Live { heap, .. } => {
                // Every range holding the current key moves past it (a term
                // can be in several fields of one row).
                let Some(std::cmp::Reverse((current, source))) = heap.pop() else { return Ok(()) };
                let mut sources = vec![source];
                while let Some(std::cmp::Reverse((k, _))) = heap.peek()
                    && *k == current
                {
                    if let Some(std::cmp::Reverse((_, s))) = heap.pop() {
                        sources.push(s);
                    }
                }
                for source in sources {
                    self.refill(source)?;
                }
                Ok(())
            }
        }
    }
}

/// Intersects or unites row-key streams, after `after`, up to `limit` keys.
pub(crate) fn combine(
    mut streams: Vec<KeyStream<'_>>,
    op: SetOp,
    after: Option<&[u8]>,
    limit: Option<usize>,
) -> Result<KeyPage> {
    let limit = limit.unwrap_or(usize::MAX);
    if let Some(after) = after {
        let mut next = after.to_vec();
        next.push(0);
        for s in &mut streams {
            s.seek(&next)?;
        }
    }
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut more = false;
    match op {
        SetOp::Union => {
            while let Some(min) = streams.iter().filter_map(KeyStream::peek).min().map(<[u8]>::to_vec) {
                if keys.len() == limit {
                    more = true;
                    break;
                }
                for s in &mut streams {
                    if s.peek() == Some(min.as_slice()) {
                        s.advance()?;
                    }
                }
                keys.push(min);
            }
        }
        SetOp::Intersect => 'outer: loop {
            // Leapfrog: seek every stream to the largest head until all agree.
            let mut candidate: Vec<u8> = match streams.iter().map(KeyStream::peek).collect::<Option<Vec<_>>>()
            {
                Some(heads) if !heads.is_empty() => {
                    heads.iter().max().map(|k| k.to_vec()).unwrap_or_default()
                }
                _ => break,
            };
            loop {
                let mut agreed = true;
                for s in &mut streams {
                    if s.peek().is_some_and(|k| k < candidate.as_slice()) {
                        s.seek(&candidate)?;
                    }
                    match s.peek() {
                        None => break 'outer,
                        Some(k) if k > candidate.as_slice() => {
                            candidate = k.to_vec();
                            agreed = false;
                        }
                        Some(_) => {}
                    }
                }
                if agreed {
                    break;
                }
            }
            if keys.len() == limit {
                more = true;
                break;
            }
            for s in &mut streams {
                s.advance()?;
            }
            keys.push(candidate);
        },
    }
    let entries_read = streams.iter().map(KeyStream::entries_read).sum();
    let next_after = if more { keys.last().cloned() } else { None };
    Ok(KeyPage { keys, next_after, entries_read })
}
