//! The format 4 keyword block, which held each version's row key: read by
//! the upgrade to format 5 (and written by the upgrade from format 3,
//! which then goes on to format 5 in the same transaction). Nothing else
//! reads or writes it.
//!
//! ```text
//! key   = term prefix (codec::term_prefix) ‖ the block's last version tail
//! value = varint n (versions, >= 1)
//!         ‖ for each version but the last, in order:
//!             varint Δdate ‖ varint shared ‖ varint suffix length ‖ suffix
//!             ‖ varint positions length ‖ positions
//!         ‖ for the last version: varint positions length ‖ positions
//! ```
//!
//! A version tail is `!date (u64 BE) ‖ row key`. The first version's Δdate
//! is counted from the last version's inverted date, every other one's from
//! the version before it; `shared` is how many leading bytes the row key
//! has in common with the row key before it (for the first version: the
//! last version's).

use super::block::{
    TARGET_BLOCK_BYTES, corrupted, push_varint, take_len, take_positions, take_slice, take_varint,
};
use crate::error::Result;

fn date_of(tail: &[u8]) -> u64 {
    tail.first_chunk::<8>().map_or(0, |d| u64::from_be_bytes(*d))
}

fn shared_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Encodes versions (tails ascending, each at least 8 bytes; positions as
/// stored) as a block value; the block's key ends with the last tail.
pub(crate) fn encode<'v>(
    versions: impl ExactSizeIterator<Item = (&'v [u8], &'v [u8])> + Clone,
    out: &mut Vec<u8>,
) {
    let n = versions.len();
    push_varint(out, n as u64);
    let Some((last, _)) = versions.clone().last() else { return };
    let (mut prev_date, mut prev_row) = (date_of(last), &last[8.min(last.len())..]);
    for (i, (tail, positions)) in versions.enumerate() {
        if i + 1 < n {
            let (date, row) = (date_of(tail), &tail[8.min(tail.len())..]);
            // The first version counts back from the last; the others forward.
            push_varint(
                out,
                if i == 0 { prev_date.wrapping_sub(date) } else { date.wrapping_sub(prev_date) },
            );
            let shared = shared_len(prev_row, row);
            push_varint(out, shared as u64);
            push_varint(out, (row.len() - shared) as u64);
            out.extend_from_slice(&row[shared..]);
            (prev_date, prev_row) = (date, row);
        }
        push_varint(out, positions.len() as u64);
        out.extend_from_slice(positions);
    }
}

/// The encoded size of versions as one block (what [`encode`] writes).
pub(crate) fn encoded_len<'v>(
    versions: impl ExactSizeIterator<Item = (&'v [u8], &'v [u8])> + Clone,
) -> usize {
    let mut out = Vec::new();
    encode(versions, &mut out);
    out.len()
}

/// Reads a block's versions in order, lending each tail from its buffer
/// and the positions from the block's bytes.
pub(crate) struct BlockReader<'a> {
    db: &'a str,
    key: &'a [u8],
    last_tail: &'a [u8],
    rest: &'a [u8],
    /// Versions left, the last included.
    left: usize,
    total: usize,
    /// The current tail: `!date ‖ row key`.
    tail: Vec<u8>,
    /// The previous version's inverted date (the last version's before the
    /// first).
    prev_date: u64,
}

impl<'a> BlockReader<'a> {
    /// A reader of the block stored under `key` (whose last `tail_len`
    /// bytes are the last version's tail) with value `value`.
    pub fn new(db: &'a str, key: &'a [u8], tail_start: usize, value: &'a [u8]) -> Result<BlockReader<'a>> {
        let last_tail = key.get(tail_start..).unwrap_or_default();
        let mut rest = value;
        let corrupted = |detail: &str| corrupted(db, key, detail);
        if last_tail.len() < 8 {
            return Err(corrupted("short keyword block key"));
        }
        let n = take_len(&mut rest).filter(|&n| n >= 1).ok_or_else(|| corrupted("bad version count"))?;
        let mut tail = Vec::with_capacity(last_tail.len() + 8);
        tail.extend_from_slice(last_tail);
        Ok(BlockReader { db, key, last_tail, rest, left: n, total: n, tail, prev_date: date_of(last_tail) })
    }

    /// The next version: its tail and its positions (checked LEB128 deltas
    /// are the caller's business), or `None` after the last.
    #[inline]
    pub fn next(&mut self) -> Result<Option<(&[u8], &'a [u8])>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let first = self.left + 1 == self.total;
        if self.left == 0 {
            // The last version: its tail is the key's.
            let positions = self.take_positions()?;
            if !first && self.tail.as_slice() >= self.last_tail {
                return Err(corrupted(self.db, self.key, "versions out of order"));
            }
            if self.rest.is_empty() {
                return Ok(Some((self.last_tail, positions)));
            }
            return Err(corrupted(self.db, self.key, "trailing bytes"));
        }
        let (db, key) = (self.db, self.key);
        let bad = |detail: &str| corrupted(db, key, detail);
        let delta = take_varint(&mut self.rest).ok_or_else(|| bad("bad date"))?;
        let date = if first { self.prev_date.checked_sub(delta) } else { self.prev_date.checked_add(delta) }
            .ok_or_else(|| bad("bad date"))?;
        let shared = take_len(&mut self.rest).ok_or_else(|| bad("bad row key"))?;
        let suffix_len = take_len(&mut self.rest).ok_or_else(|| bad("bad row key"))?;
        let suffix = take_slice(&mut self.rest, suffix_len).ok_or_else(|| bad("bad row key"))?;
        if shared > self.tail.len() - 8 {
            return Err(bad("bad row key"));
        }
        // Ascending: a later date, or the same date and a greater row key
        // (the first version is checked against the last one at the end).
        if !first && date == self.prev_date && suffix <= &self.tail[8 + shared..] {
            return Err(bad("versions out of order"));
        }
        self.tail.truncate(8 + shared);
        self.tail[..8].copy_from_slice(&date.to_be_bytes());
        self.tail.extend_from_slice(suffix);
        self.prev_date = date;
        let positions = self.take_positions()?;
        Ok(Some((&self.tail, positions)))
    }

    fn take_positions(&mut self) -> Result<&'a [u8]> {
        take_positions(&mut self.rest, self.db, self.key)
    }
}

/// Owned versions of one column, in one buffer: what a write decodes,
/// merges its changes into and cuts into blocks again.
#[derive(Debug, Default, Clone)]
pub(crate) struct Versions {
    bytes: Vec<u8>,
    /// Per version: where its tail ends and where its positions end.
    ends: Vec<(usize, usize)>,
}

impl Versions {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Version `i`: its tail and its positions.
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        let (tail_end, end) = self.ends[i];
        (&self.bytes[start..tail_end], &self.bytes[tail_end..end])
    }

    pub fn push(&mut self, tail: &[u8], positions: &[u8]) {
        self.bytes.extend_from_slice(tail);
        let tail_end = self.bytes.len();
        self.bytes.extend_from_slice(positions);
        self.ends.push((tail_end, self.bytes.len()));
    }

    /// Versions `range` as (tail, positions) pairs.
    pub fn slice(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + Clone + '_ {
        range.map(|i| self.get(i))
    }

    /// Cuts the versions into blocks of about [`TARGET_BLOCK_BYTES`]
    /// each (as many blocks as the size needs, evenly filled): the
    /// version ranges.
    pub fn cut(&self) -> Vec<std::ops::Range<usize>> {
        if self.is_empty() {
            return Vec::new();
        }
        let total = encoded_len(self.slice(0..self.len()));
        let blocks = total.div_ceil(TARGET_BLOCK_BYTES).max(1);
        if blocks == 1 {
            return std::iter::once(0..self.len()).collect();
        }
        let aim = total.div_ceil(blocks);
        // Each version's size as encoded after the one before it: close to
        // its share of any block it lands in.
        let mut cuts = Vec::with_capacity(blocks);
        let (mut start, mut size) = (0, 0usize);
        let mut prev_row: &[u8] = &[];
        for i in 0..self.len() {
            let (tail, positions) = self.get(i);
            let row = &tail[8.min(tail.len())..];
            let shared = shared_len(prev_row, row);
            prev_row = row;
            size += 6 + row.len() - shared + positions.len();
            if size >= aim && i + 1 < self.len() {
                cuts.push(start..i + 1);
                (start, size) = (i + 1, 0);
            }
        }
        cuts.push(start..self.len());
        cuts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(date: u64, row: &[u8]) -> Vec<u8> {
        let mut t = (!date).to_be_bytes().to_vec();
        t.extend_from_slice(row);
        t
    }

    fn read_all(key_tail: &[u8], value: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut key = b"p\x00\x01\x00t\x00\x01".to_vec();
        let start = key.len();
        key.extend_from_slice(key_tail);
        let mut r = BlockReader::new("k", &key, start, value)?;
        let mut out = Vec::new();
        while let Some((t, p)) = r.next()? {
            out.push((t.to_vec(), p.to_vec()));
        }
        Ok(out)
    }

    /// The block's bytes are pinned: a store written by one build is read
    /// by the next.
    #[test]
    fn block_bytes_are_pinned() {
        let versions = [(tail(9, b"user\x00\x01ab"), vec![3u8]), (tail(7, b"user\x00\x01aa"), vec![1, 2])];
        let mut value = Vec::new();
        encode(versions.iter().map(|(t, p)| (t.as_slice(), p.as_slice())), &mut value);
        // n = 2; first: Δdate = !7 - !9 = 2, shared 7 ("user\0\1a"), suffix "b",
        // positions [3]; last: positions [1, 2].
        assert_eq!(value, [2, 2, 7, 1, b'b', 1, 3, 2, 1, 2]);
        let back = read_all(&versions[1].0, &value).unwrap();
        assert_eq!(back, versions.to_vec());
    }

    #[test]
    fn corrupt_blocks_are_errors() {
        let t = tail(1, b"r");
        for value in [&[][..], &[0], &[1], &[1, 5, 0], &[1, 0, 9], &[2, 0, 2, 0, 0, 0], &[2, 9, 0, 0, 0]] {
            assert!(read_all(&t, value).is_err(), "{value:?}");
        }
        // Out of order: the first version equal to the last.
        assert!(read_all(&t, &[2, 0, 1, 0, 0, 0]).is_err());
        assert!(read_all(&[1, 2], &[1, 0]).is_err(), "short key tail");
    }
}
