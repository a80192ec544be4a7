//! The index entry: the one owner of its bytes.
//!
//! ```text
//! key   = region (u16 BE) ‖ esc(value 1) 00 01 ‖ … ‖ esc(value n) 00 01 ‖ esc(row key) 00 01
//! value = expiry (u64 BE, ms); empty for never
//! ```
//!
//! In the pending database a run id (u32 BE) comes before the key; that
//! prefix belongs to `super::runs`.
//!
//! A value too long for LMDB's 511-byte keys (more than [`value_budget`]
//! bytes once escaped, a budget that leaves room for the longest row key)
//! is kept *cut*: `esc(its first bytes) 00 02 esc(xxh3-64 of the whole
//! value, BE) 00 01`, so it sorts right after the value equal to its first
//! bytes. Lookups widen their bounds to take in cut entries and check the
//! row's full value (see `super::lookup`).

use heed::RoTxn;

use super::handle::IndexHandle;
use super::query::IndexQuery;
use crate::cell::PutCell;
use crate::db::family::{newest_put, newest_stored};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, push_escaped, push_escaped_open};

/// LMDB's longest key.
const MAX_LMDB_KEY: usize = 511;
/// What follows the first bytes of a cut value: `00 02`, then the hash.
const CUT: [u8; 2] = [0x00, 0x02];
/// The most bytes a cut value's hash takes escaped, with `CUT` and the
/// terminator.
const CUT_TAIL: usize = 2 + 16;

/// The most bytes one value of an index of `columns` columns takes in an
/// entry escaped (its terminator not counted), whatever the row key: a
/// pending run's id, the region, the longest row key escaped and every
/// terminator leave the rest to the values, shared evenly. 181 bytes for
/// one column, 89 for two.
pub(crate) fn value_budget(columns: usize) -> usize {
    let values = MAX_LMDB_KEY - 4 - 2 - (2 * key::MAX_ROW_KEY_BYTES + 2);
    (values / columns.max(1)).saturating_sub(2)
}

/// The most escaped bytes of a value's first bytes, for values (and query
/// bounds) longer than that: a cut value keeps its longest prefix within it.
fn cut_budget(columns: usize) -> usize {
    value_budget(columns).saturating_sub(CUT_TAIL)
}

fn escaped_len(bytes: &[u8]) -> usize {
    bytes.len() + bytes.iter().filter(|&&b| b == 0).count()
}

/// The longest prefix of `bytes` whose escaped form fits `budget`.
fn cut_prefix(bytes: &[u8], budget: usize) -> &[u8] {
    let mut used = 0;
    for (i, &b) in bytes.iter().enumerate() {
        used += if b == 0 { 2 } else { 1 };
        if used > budget {
            return &bytes[..i];
        }
    }
    bytes
}

/// Appends value `v` of an index of `columns` columns: escaped and
/// terminated, or cut (module documentation) when too long.
pub(crate) fn push_value(out: &mut Vec<u8>, v: &[u8], columns: usize) {
    if escaped_len(v) <= value_budget(columns) {
        push_escaped(out, v);
    } else {
        push_escaped_open(out, cut_prefix(v, cut_budget(columns)));
        out.extend_from_slice(&CUT);
        push_escaped(out, &xxhash_rust::xxh3::xxh3_64(v).to_be_bytes());
    }
}

/// Whether a query bound on a column must be widened to its first bytes
/// (`Some(them)`) because cut values may sort outside the exact bound.
fn widened(bound: &[u8], columns: usize) -> Option<&[u8]> {
    let budget = cut_budget(columns);
    (escaped_len(bound) > budget).then(|| cut_prefix(bound, budget))
}

/// One value of an entry as stored: whole, or cut to its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredValue {
    Whole(Vec<u8>),
    Cut(Vec<u8>),
}

/// Reads one value component: the value (or a cut value's first bytes)
/// and the bytes taken.
fn take_value(input: &[u8]) -> Option<(StoredValue, usize)> {
    let mut at = 0;
    loop {
        at += input.get(at..)?.iter().position(|&b| b == 0)?;
        match input.get(at + 1)? {
            0x01 => return Some((StoredValue::Whole(key::unescape(&input[..at])), at + 2)),
            0xFF => at += 2,
            0x02 => {
                let (hash, used) = key::take_component(&input[at + 2..])?;
                return (hash.len() == 8)
                    .then(|| (StoredValue::Cut(key::unescape(&input[..at])), at + 2 + used));
            }
            _ => return None,
        }
    }
}

/// One index entry: its key and expiry.
pub(crate) type Entry = (Vec<u8>, u64);

/// An entry's expiry (ms), from its stored value.
pub(crate) fn entry_expiry(value: &[u8]) -> u64 {
    value.try_into().map(u64::from_be_bytes).unwrap_or(u64::MAX)
}

/// The stored value of an entry expiring at `expiry` (`bytes`, its
/// big-endian form): empty for never.
pub(crate) fn entry_value(bytes: &[u8; 8], expiry: u64) -> &[u8] {
    if expiry == u64::MAX { &[] } else { bytes }
}

/// One region's LMDB bounds for entry tails `[lo, hi)` (`hi` `None`: to
/// the region's end).
pub(crate) fn region_bounds(region: usize, lo: &[u8], hi: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
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

/// The key prefix of entries in `region` whose leading values are `eq`,
/// after the `source` prefix (a run id, or nothing in the main database).
/// `columns`: the index's column count.
pub(crate) fn eq_prefix(source: &[u8], region: u16, eq: &[Vec<u8>], columns: usize) -> Vec<u8> {
    let mut prefix = source.to_vec();
    prefix.extend_from_slice(&region.to_be_bytes());
    for v in eq {
        push_value(&mut prefix, v, columns);
    }
    prefix
}

/// The values and row key of an entry (after the region), values as
/// stored: a cut one holds only its first bytes.
pub(crate) fn entry_parts(db: &str, entry: &[u8], values: usize) -> Result<(Vec<StoredValue>, Vec<u8>)> {
    let corrupted = || -> Error {
        ErrorKind::Corrupted {
            db: db.to_owned(),
            key: crate::error::preview(entry),
            detail: "bad index entry".into(),
        }
        .into()
    };
    let mut rest = entry.get(2..).ok_or_else(corrupted)?;
    let mut parts = Vec::with_capacity(values);
    for _ in 0..values {
        let (part, used) = take_value(rest).ok_or_else(corrupted)?;
        parts.push(part);
        rest = &rest[used..];
    }
    let (row, used) = key::take_component(rest).ok_or_else(corrupted)?;
    if used != rest.len() {
        return Err(corrupted());
    }
    Ok((parts, row))
}

/// The row key at the end of an entry (after region and values), with the
/// values as stored (a cut value's first bytes only).
pub(crate) fn entry_row(db: &str, entry: &[u8], values: usize) -> Result<(Vec<Vec<u8>>, Vec<u8>)> {
    let (parts, row) = entry_parts(db, entry, values)?;
    let values = parts
        .into_iter()
        .map(|p| match p {
            StoredValue::Whole(v) | StoredValue::Cut(v) => v,
        })
        .collect();
    Ok((values, row))
}

/// Bounds (inclusive lower, exclusive upper) of a query in one region, on
/// entry keys without the region prefix.
/// A bound on a column long enough that cut values may sort outside it
/// is widened to the bound's first bytes; the lookup then checks values.
pub(crate) fn query_bounds(
    query: &IndexQuery,
    after: Option<&[u8]>,
    columns: usize,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut base = Vec::new();
    for v in &query.eq {
        push_value(&mut base, v, columns);
    }
    let (mut lo, mut hi) = if let Some(p) = &query.prefix {
        let mut lo = base.clone();
        push_escaped_open(&mut lo, widened(p, columns).unwrap_or(p));
        let hi = key::prefix_successor(&lo);
        (lo, hi)
    } else {
        let mut lo = base.clone();
        if let Some(s) = &query.start {
            match widened(s, columns) {
                Some(first) => push_escaped_open(&mut lo, first),
                None => push_escaped(&mut lo, s),
            }
        }
        let hi = match &query.stop {
            Some(s) => {
                let mut hi = base.clone();
                match widened(s, columns) {
                    Some(first) => {
                        push_escaped_open(&mut hi, first);
                        key::prefix_successor(&hi)
                    }
                    None => {
                        push_escaped(&mut hi, s);
                        Some(hi)
                    }
                }
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

impl IndexHandle {
    /// The full values of `row`'s indexed columns as `txn` has them (for
    /// checking an entry whose values are cut); `None` when one is missing.
    pub fn row_values(&self, txn: &RoTxn<'_>, row: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
        let stored = match &self.row_key {
            Some(rk) => rk.salt(row),
            None => row.to_vec(),
        };
        let mut values = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            match newest_stored(txn, family, &stored, qualifier)? {
                Some((_, v)) => values.push(v.into_owned()),
                None => return Ok(None),
            }
        }
        Ok(Some(values))
    }

    /// The entry of `row` (unsalted key; `stored` its stored key) in this
    /// index as the data in `txn` stands, or `None` when it lacks a column.
    pub fn entry(&self, txn: &RoTxn<'_>, row: &[u8], stored: &[u8], now_ms: u64) -> Result<Option<Entry>> {
        let mut held = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            // The newest version comes first; older ones expire before it.
            let Some(cell) = newest_stored(txn, family, stored, qualifier)? else { return Ok(None) };
            held.push(cell);
        }
        let newest: Vec<(u64, &[u8])> = held.iter().map(|(ts, v)| (*ts, &**v)).collect();
        Ok(self.assemble(row, stored, &newest, now_ms))
    }

    /// The entry of a row whose indexed columns' newest versions are
    /// `newest` (timestamp, value), one per column; `None` when one is
    /// expired.
    pub fn assemble(&self, row: &[u8], stored: &[u8], newest: &[(u64, &[u8])], now_ms: u64) -> Option<Entry> {
        // Escaping at most doubles a part; each ends with two bytes.
        let parts = newest.iter().map(|(_, v)| v.len()).sum::<usize>() + row.len();
        let mut out = Vec::with_capacity(2 + 2 * parts + 2 * (newest.len() + 1));
        out.extend_from_slice(&region_of(&self.splits, stored).to_be_bytes());
        let mut expiry = u64::MAX;
        for ((family, _), (ts, value)) in self.columns.iter().zip(newest) {
            if !family.schema.is_live(*ts, now_ms) {
                return None;
            }
            if let Some(ttl) = family.schema.ttl_ms() {
                expiry = expiry.min(ts.saturating_add(ttl));
            }
            push_value(&mut out, value, newest.len());
        }
        push_escaped(&mut out, row);
        Some((out, expiry))
    }

    /// The entry of a row that did not exist before a batch which only put
    /// `cells` into it: the newest put of each column (the last of equal
    /// timestamps, as the last write of a key wins).
    pub fn entry_from_puts(
        &self,
        row: &[u8],
        stored: &[u8],
        cells: &[&PutCell],
        now_ms: u64,
    ) -> Option<Entry> {
        let mut newest: Vec<(u64, &[u8])> = Vec::with_capacity(self.columns.len());
        for (family, qualifier) in &self.columns {
            newest.push(newest_put(cells, family, qualifier, now_ms)?);
        }
        self.assemble(row, stored, &newest, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry's bytes are pinned: a store written by one build is read
    /// by the next.
    #[test]
    fn entry_bytes_are_pinned_and_decode() {
        let mut entry = eq_prefix(&[], 3, &[b"ann".to_vec(), b"x\x00".to_vec()], 2);
        push_escaped(&mut entry, b"row1");
        assert_eq!(entry, b"\x00\x03ann\x00\x01x\x00\xff\x00\x01row1\x00\x01");
        let (values, row) = entry_row("t/i", &entry, 2).unwrap();
        assert_eq!((values, row), (vec![b"ann".to_vec(), b"x\x00".to_vec()], b"row1".to_vec()));
        // A run prefix comes first; the region follows it.
        assert_eq!(eq_prefix(&[0, 0, 0, 7], 1, &[], 1), [0, 0, 0, 7, 0, 1]);
        assert!(entry_row("t/i", &entry, 3).is_err());
        assert!(entry_row("t/i", b"\x00", 0).is_err());
    }

    #[test]
    fn entries_sort_by_region_then_values_then_row() {
        let entry = |region: u16, value: &[u8], row: &[u8]| {
            let mut e = eq_prefix(&[], region, &[value.to_vec()], 1);
            push_escaped(&mut e, row);
            e
        };
        let ordered = [
            entry(0, b"b", b"z"),
            entry(1, b"a", b"z"),
            entry(1, b"a\x00", b"a"),
            entry(1, b"ab", b"a"),
            entry(1, b"ab", b"b"),
        ];
        assert!(ordered.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn expiry_value_is_empty_for_never() {
        let never = u64::MAX.to_be_bytes();
        assert_eq!(entry_value(&never, u64::MAX), b"");
        assert_eq!(entry_expiry(b""), u64::MAX);
        let at = 1234u64.to_be_bytes();
        assert_eq!(entry_value(&at, 1234), at);
        assert_eq!(entry_expiry(&at), 1234);
    }

    #[test]
    fn region_of_counts_the_splits_at_or_below() {
        let splits = [b"g".to_vec(), b"p".to_vec()];
        assert_eq!(region_of(&splits, b"a"), 0);
        assert_eq!(region_of(&splits, b"g"), 1);
        assert_eq!(region_of(&splits, b"z"), 2);
    }
}
