//! The index entry: the one owner of its bytes.
//!
//! ```text
//! key   = region (u16 BE) ‖ esc(value 1) 00 01 ‖ … ‖ esc(value n) 00 01 ‖ esc(row key) 00 01
//! value = expiry (u64 BE, ms); empty for never
//! ```
//!
//! In the pending database a run id (u32 BE) comes before the key; that
//! prefix belongs to `super::runs`.

use heed::RoTxn;

use super::handle::IndexHandle;
use super::query::IndexQuery;
use crate::cell::PutCell;
use crate::db::family::{newest_put, newest_stored};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, push_escaped};

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
pub(crate) fn eq_prefix(source: &[u8], region: u16, eq: &[Vec<u8>]) -> Vec<u8> {
    let mut prefix = source.to_vec();
    prefix.extend_from_slice(&region.to_be_bytes());
    for v in eq {
        push_escaped(&mut prefix, v);
    }
    prefix
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

impl IndexHandle {
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
        let mut entry = eq_prefix(&[], 3, &[b"ann".to_vec(), b"x\x00".to_vec()]);
        push_escaped(&mut entry, b"row1");
        assert_eq!(entry, b"\x00\x03ann\x00\x01x\x00\xff\x00\x01row1\x00\x01");
        let (values, row) = entry_row("t/i", &entry, 2).unwrap();
        assert_eq!((values, row), (vec![b"ann".to_vec(), b"x\x00".to_vec()], b"row1".to_vec()));
        // A run prefix comes first; the region follows it.
        assert_eq!(eq_prefix(&[0, 0, 0, 7], 1, &[]), [0, 0, 0, 7, 0, 1]);
        assert!(entry_row("t/i", &entry, 3).is_err());
        assert!(entry_row("t/i", b"\x00", 0).is_err());
    }

    #[test]
    fn entries_sort_by_region_then_values_then_row() {
        let entry = |region: u16, value: &[u8], row: &[u8]| {
            let mut e = eq_prefix(&[], region, &[value.to_vec()]);
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
