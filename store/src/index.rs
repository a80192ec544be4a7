//! Secondary indexes: declared per table over one or more columns, kept in
//! the same write transaction as the rows they index.
//!
//! An index is two LMDB databases: the merged entries, `t/<table>/i/<index>`,
//! and a small buffer of recent ones, `t/<table>/p/<index>` (see "Pending
//! entries" below). An entry is
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
//! # Pending entries
//!
//! Entries sort by value, so the rows of one write batch land all over a
//! large index: a batch of 10,000 rows dirties ~10,000 of its B-tree pages,
//! and LMDB copies and writes back every page a transaction touches. New
//! entries therefore go to the pending database, which stays small (its
//! pages are few and hot), and are merged into the main one in key order
//! once the buffer holds more than [`PENDING_MIN`] entries (configurable) and an eighth of
//! the main database: one merge touches each main page once for many
//! entries. Both databases are written in the row's transaction and read
//! together by every lookup, so an index still never disagrees with the
//! data. A live entry is in exactly one of them; deletes and replacements
//! go to the one holding it. Only an expired entry left in the main
//! database (removed by compaction or overwritten by the merge) can share
//! its key with a pending one, and lookups skip expired entries.

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
    /// The pending entries (see the module documentation).
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

/// Default fewest pending entries of an index before a merge
/// ([`crate::StoreBuilder::index_buffer_entries`]).
pub(crate) const PENDING_MIN: u64 = 16_384;

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
    /// The main and the pending database, the order lookups read them in.
    pub fn dbs(&self) -> [&BytesDb; 2] {
        [&self.db, &self.pending]
    }

    /// Removes every entry.
    pub fn clear(&self, wtxn: &mut RwTxn) -> Result<()> {
        for db in self.dbs() {
            db.clear(wtxn).map_err(|e| Error::lmdb("clear index", e))?;
        }
        Ok(())
    }

    /// Writes new entries (keys in neither database, or only as expired
    /// entries of the main one), in ascending key order: they go to the
    /// pending database.
    pub fn insert_sorted<'k>(
        &self,
        wtxn: &mut RwTxn,
        entries: impl IntoIterator<Item = (&'k [u8], u64)>,
    ) -> Result<()> {
        let mut puts = SortedPuts::new(wtxn, &self.pending, "index put")?;
        for (key, expiry) in entries {
            puts.put(key, entry_value(&expiry.to_be_bytes(), expiry))?;
        }
        Ok(())
    }

    /// Writes a new expiry for an existing entry, where the entry is.
    pub fn replace(&self, wtxn: &mut RwTxn, key: &[u8], expiry: u64) -> Result<()> {
        let pending = self.pending.get(wtxn, key).map_err(|e| Error::lmdb("index read", e))?.is_some();
        put_entry(wtxn, if pending { &self.pending } else { &self.db }, key, expiry)
    }

    /// Removes an entry from whichever database holds it.
    pub fn remove(&self, wtxn: &mut RwTxn, key: &[u8]) -> Result<()> {
        if !self.pending.delete(wtxn, key).map_err(|e| Error::lmdb("index delete", e))? {
            self.db.delete(wtxn, key).map_err(|e| Error::lmdb("index delete", e))?;
        }
        Ok(())
    }

    /// Writes an entry straight into the main database (building an index,
    /// where entries arrive in bulk anyway).
    pub fn build_put(&self, wtxn: &mut RwTxn, key: &[u8], expiry: u64) -> Result<()> {
        put_entry(wtxn, &self.db, key, expiry)
    }

    /// Merges the pending entries into the main database when there are
    /// more than `min` of them and more than an eighth of the main ones;
    /// always with `min` `None`. Returns how many moved.
    pub fn merge_pending(&self, wtxn: &mut RwTxn, min: Option<u64>) -> Result<u64> {
        let stat = |db: &BytesDb, wtxn: &RwTxn| -> Result<u64> {
            Ok(db.stat(wtxn).map_err(|e| Error::lmdb("index stat", e))?.entries as u64)
        };
        let pending = stat(&self.pending, wtxn)?;
        let due = match min {
            None => pending > 0,
            Some(min) => pending > min && pending > stat(&self.db, wtxn)? / 8,
        };
        if !due {
            return Ok(0);
        }
        // In chunks, so memory stays bounded; the buffer is emptied at the end.
        const CHUNK: usize = 8192;
        let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(CHUNK);
        let mut after: Option<Vec<u8>> = None;
        loop {
            chunk.clear();
            let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            for item in self
                .pending
                .range(wtxn, &(lower, Bound::Unbounded))
                .map_err(|e| Error::lmdb("index merge", e))?
                .take(CHUNK)
            {
                let (k, v) = item.map_err(|e| Error::lmdb("index merge", e))?;
                chunk.push((k.to_vec(), v.to_vec()));
            }
            let mut puts = SortedPuts::new(wtxn, &self.db, "index merge")?;
            for (k, v) in &chunk {
                puts.put(k, v)?;
            }
            match chunk.pop() {
                Some((last, _)) if chunk.len() + 1 == CHUNK => after = Some(last),
                _ => break,
            }
        }
        self.pending.clear(wtxn).map_err(|e| Error::lmdb("index merge", e))?;
        Ok(pending)
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
        let mut out = region_of(&table.splits, stored).to_be_bytes().to_vec();
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
    let mut iters = Vec::with_capacity(regions.len());
    for &region in &regions {
        let (lower, upper) = region_bounds(region, &lo, hi.as_deref());
        let range =
            (Bound::Included(lower.as_slice()), upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
        for db in index.dbs() {
            iters.push(db.range(txn, &range).map_err(|e| Error::lmdb("index lookup", e))?);
        }
    }
    let sources = iters.len();
    let mut heap = BinaryHeap::new();
    let mut pull = |i: usize, heap: &mut BinaryHeap<Head>| -> Result<()> {
        for item in iters[i].by_ref() {
            let (k, v) = item.map_err(|e| Error::lmdb("index lookup", e))?;
            let expiry = entry_expiry(v);
            if now_ms < expiry {
                heap.push(Head { entry: k.get(2..).unwrap_or_default().to_vec(), source: i });
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
        /// The databases read (an index's main and pending ones), each over
        /// every prefix.
        dbs: Vec<&'t BytesDb>,
        db_name: &'t str,
        /// Every range's key prefix; the key after it is the stream's tail.
        prefixes: Vec<Vec<u8>>,
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
        let prefixes = (0..=table.splits.len())
            .map(|region| {
                let mut prefix = (region as u16).to_be_bytes().to_vec();
                for v in &query.eq {
                    push_escaped(&mut prefix, v);
                }
                prefix
            })
            .collect();
        KeyStream::live(txn, index.dbs().to_vec(), &index.db_name, prefixes, Tail::EscapedRow, now_ms)
    }

    /// A stream over the tails of every key starting with one of `prefixes`.
    pub fn live(
        txn: &'t RoTxn<'t>,
        dbs: Vec<&'t BytesDb>,
        db_name: &'t str,
        prefixes: Vec<Vec<u8>>,
        tail: Tail,
        now_ms: u64,
    ) -> Result<KeyStream<'t>> {
        let mut stream = KeyStream::Live {
            txn,
            dbs,
            db_name,
            prefixes,
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
            KeyStream::Live { txn, dbs, prefixes, tail, heap, iters, .. } => {
                heap.clear();
                iters.clear();
                // Range `source` reads prefix `source % prefixes.len()`.
                for db in dbs.iter() {
                    for prefix in prefixes.iter() {
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
        let KeyStream::Live { db_name, prefixes, tail, heap, iters, now_ms, read, .. } = self else {
            return Ok(());
        };
        let skip = prefixes[source % prefixes.len()].len();
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
