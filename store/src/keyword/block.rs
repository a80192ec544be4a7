//! The keyword block (format 5): the one owner of its bytes.
//!
//! A keyword column (one partition, field and term) is stored as a run of
//! blocks, each one LMDB entry holding consecutive versions of the column,
//! newest first: by `!date`, then by row *number* (`rows`), each version's
//! *order tail* `!date (u64 BE) ‖ row number (u32 BE)`:
//!
//! ```text
//! key   = term prefix (codec::term_prefix) ‖ the block's last order tail
//! value = varint n (versions, >= 1)
//!         ‖ for each version but the last, in order:
//!             varint Δdate ‖ varint zigzag(Δrow number)
//!             ‖ varint positions length ‖ positions
//!         ‖ for the last version: varint positions length ‖ positions
//! ```
//!
//! A block holds no row key (a number takes one to three bytes as a
//! difference, where a key took 15 or more, and a key ends with twelve
//! bytes, where it ended with the whole row key); the block holding order
//! tail `t` is the first one whose key is at or after `prefix ‖ t`, so a
//! lookup seeks forward only and turns numbers into keys only for its
//! hits. Cells are read in the model's order (by date, then by row key):
//! a reader sorts the few versions of one date by key. The first version's
//! Δdate is counted from the last version's inverted date, every other
//! one's from the version before it (order tails ascend, so every Δ is >=
//! 0); the first version's Δrow from the last version's number, every
//! other one's from the version before it.
//! Positions are the cell's value as before (LEB128 deltas), prefixed by
//! their byte length so a reader that wants only keys skips them.
//!
//! Blocks aim at [`TARGET_BLOCK_BYTES`] of value: a write rewrites one small
//! block per term it touches, a run of new versions is cut into blocks of
//! about that size, and a block that shrinks below a quarter of it takes in
//! the block after it.

use crate::error::{Error, Result};

/// The value size blocks aim at (bytes). Chosen by measurement
/// (store/BENCHMARKS.md, "Keyword blocks"): well under half an LMDB page,
/// so a block never needs overflow pages.
pub(crate) const TARGET_BLOCK_BYTES: usize = 1024;

/// A block below this size takes in its successor when it is rewritten.
pub(crate) const MIN_BLOCK_BYTES: usize = TARGET_BLOCK_BYTES / 4;

/// The key of the column's counter: one byte, below every partition's
/// first key (`00 01`), holding the number of keyword cells (versions) of
/// the table as a u64 big-endian.
pub(crate) const COUNTER_KEY: &[u8] = &[0];

/// The first key a keyword block can have (the empty partition's start).
pub(crate) const FIRST_BLOCK_KEY: &[u8] = &[0, 1];

pub(crate) fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint_len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a LEB128 number of at most 10 bytes.
#[inline]
pub(crate) fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..70).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u64::from(b & 0x7F).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

pub(crate) fn take_len(bytes: &mut &[u8]) -> Option<usize> {
    take_varint(bytes).and_then(|n| usize::try_from(n).ok())
}

pub(crate) fn take_slice<'a>(bytes: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
    let (head, rest) = bytes.split_at_checked(len)?;
    *bytes = rest;
    Some(head)
}

/// The inverted date a tail starts with.
pub(crate) fn date_of(tail: &[u8]) -> u64 {
    tail.first_chunk::<8>().map_or(0, |d| u64::from_be_bytes(*d))
}

/// The length of an order tail.
pub(crate) const ORDER_TAIL_LEN: usize = 12;

/// The order tail of a version: `!date ‖ row number`, big-endian.
pub(crate) fn order_tail(v: Version) -> [u8; ORDER_TAIL_LEN] {
    let mut t = [0u8; ORDER_TAIL_LEN];
    t[..8].copy_from_slice(&v.date.to_be_bytes());
    t[8..].copy_from_slice(&v.row.to_be_bytes());
    t
}

/// The version an order tail names (a short one: its bytes as far as they
/// go, zeros after).
pub(crate) fn version_of(tail: &[u8]) -> Version {
    let mut t = [0u8; ORDER_TAIL_LEN];
    let n = tail.len().min(ORDER_TAIL_LEN);
    t[..n].copy_from_slice(&tail[..n]);
    Version { date: date_of(&t), row: u32::from_be_bytes([t[8], t[9], t[10], t[11]]) }
}

fn zigzag(from: u32, to: u32) -> u64 {
    let d = i64::from(to) - i64::from(from);
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(from: u32, z: u64) -> Option<u32> {
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    u32::try_from(i64::from(from).checked_add(d)?).ok()
}

/// One version as a block keeps it: the inverted date (a tail's first
/// eight bytes) and the row number; ordered as order tails are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version {
    pub date: u64,
    pub row: u32,
}

/// Encodes versions (ascending, at least one; positions as stored) as a
/// block value; the block's key ends with the last version's order tail.
pub(crate) fn encode<'v>(
    versions: impl ExactSizeIterator<Item = (Version, &'v [u8])> + Clone,
    out: &mut Vec<u8>,
) {
    let n = versions.len();
    push_varint(out, n as u64);
    let Some((last, _)) = versions.clone().last() else { return };
    let mut prev = last;
    for (i, (v, positions)) in versions.enumerate() {
        if i + 1 < n {
            // The first version counts back from the last; the others forward.
            push_varint(
                out,
                if i == 0 { prev.date.wrapping_sub(v.date) } else { v.date.wrapping_sub(prev.date) },
            );
            push_varint(out, zigzag(prev.row, v.row));
            prev = v;
        }
        push_varint(out, positions.len() as u64);
        out.extend_from_slice(positions);
    }
}

/// How many versions the block stored under `key` (its order tail from
/// `tail_start`) holds, read from its header.
pub(crate) fn count(db: &str, key: &[u8], tail_start: usize, value: &[u8]) -> Result<u64> {
    Ok(BlockReader::new(db, key, tail_start, value)?.len() as u64)
}

/// The encoded size of versions as one block (what [`encode`] writes).
pub(crate) fn encoded_len<'v>(versions: impl ExactSizeIterator<Item = (Version, &'v [u8])> + Clone) -> usize {
    let n = versions.len();
    let Some((last, _)) = versions.clone().last() else { return varint_len(0) };
    let mut size = varint_len(n as u64);
    let mut prev = last;
    for (i, (v, positions)) in versions.enumerate() {
        if i + 1 < n {
            size += varint_len(if i == 0 {
                prev.date.wrapping_sub(v.date)
            } else {
                v.date.wrapping_sub(prev.date)
            });
            size += varint_len(zigzag(prev.row, v.row));
            prev = v;
        }
        size += varint_len(positions.len() as u64) + positions.len();
    }
    size
}

/// Reads a block's versions in order, lending the positions from the
/// block's bytes.
pub(crate) struct BlockReader<'a> {
    db: &'a str,
    key: &'a [u8],
    last_tail: &'a [u8],
    last: Version,
    rest: &'a [u8],
    /// Versions left, the current one included.
    left: usize,
    total: usize,
    /// The current version (before the first step: the last's, as the
    /// first version counts from it).
    current: Version,
    positions: &'a [u8],
}

impl<'a> BlockReader<'a> {
    /// A reader of the block stored under `key` (whose bytes from
    /// `tail_start` are the last version's order tail) with value `value`.
    pub fn new(db: &'a str, key: &'a [u8], tail_start: usize, value: &'a [u8]) -> Result<BlockReader<'a>> {
        let last_tail = key.get(tail_start..).unwrap_or_default();
        let mut rest = value;
        let corrupted = |detail: &str| corrupted(db, key, detail);
        if last_tail.len() != ORDER_TAIL_LEN {
            return Err(corrupted("bad keyword block key"));
        }
        let n = take_len(&mut rest).filter(|&n| n >= 1).ok_or_else(|| corrupted("bad version count"))?;
        let last = version_of(last_tail);
        Ok(BlockReader {
            db,
            key,
            last_tail,
            last,
            rest,
            left: n + 1,
            total: n,
            current: last,
            positions: &[],
        })
    }

    /// How many versions the block holds.
    pub fn len(&self) -> usize {
        self.total
    }

    /// The last version's order tail (the block's greatest).
    pub fn last_tail(&self) -> &'a [u8] {
        self.last_tail
    }

    /// Moves to the next version, which [`BlockReader::current`] then
    /// tells; false after the last.
    #[inline]
    pub fn step(&mut self) -> Result<bool> {
        if self.left <= 1 {
            self.left = 0;
            return Ok(false);
        }
        self.left -= 1;
        let first = self.left == self.total;
        let (db, key) = (self.db, self.key);
        let bad = |detail: &str| corrupted(db, key, detail);
        if self.left == 1 {
            // The last version: its tail is the key's.
            self.positions = self.take_positions()?;
            if !first && self.current >= self.last {
                return Err(bad("versions out of order"));
            }
            if !self.rest.is_empty() {
                return Err(bad("trailing bytes"));
            }
            self.current = self.last;
            return Ok(true);
        }
        let delta = take_varint(&mut self.rest).ok_or_else(|| bad("bad date"))?;
        let date =
            if first { self.current.date.checked_sub(delta) } else { self.current.date.checked_add(delta) }
                .ok_or_else(|| bad("bad date"))?;
        let row = take_varint(&mut self.rest)
            .and_then(|z| unzigzag(self.current.row, z))
            .ok_or_else(|| bad("bad row number"))?;
        let v = Version { date, row };
        // Ascending (the first version is checked against the last at the end).
        if !first && v <= self.current {
            return Err(bad("versions out of order"));
        }
        self.current = v;
        self.positions = self.take_positions()?;
        Ok(true)
    }

    /// The next version and its positions (checked LEB128 deltas are the
    /// caller's business), or `None` after the last.
    #[inline]
    pub fn next(&mut self) -> Result<Option<(Version, &'a [u8])>> {
        Ok(self.step()?.then_some((self.current, self.positions)))
    }

    /// The version the last [`BlockReader::step`] moved to.
    #[inline]
    pub fn current(&self) -> Version {
        self.current
    }

    fn take_positions(&mut self) -> Result<&'a [u8]> {
        take_positions(&mut self.rest, self.db, self.key)
    }
}

/// Reads a version's positions, prefixed by their length (both formats'
/// blocks keep them so), from `rest`.
pub(crate) fn take_positions<'a>(rest: &mut &'a [u8], db: &str, key: &[u8]) -> Result<&'a [u8]> {
    let len = take_len(rest).ok_or_else(|| corrupted(db, key, "bad positions"))?;
    take_slice(rest, len).ok_or_else(|| corrupted(db, key, "bad positions"))
}

pub(crate) fn corrupted(db: &str, key: &[u8], detail: &str) -> Error {
    Error::corrupted(db, key, detail)
}

/// Owned versions of one column, the positions in one buffer: what a
/// write decodes, merges its changes into and cuts into blocks again.
#[derive(Debug, Default, Clone)]
pub(crate) struct Versions {
    positions: Vec<u8>,
    /// Per version: it, and where its positions end.
    items: Vec<(Version, usize)>,
}

impl Versions {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn clear(&mut self) {
        self.positions.clear();
        self.items.clear();
    }

    /// Version `i` and its positions.
    pub fn get(&self, i: usize) -> (Version, &[u8]) {
        let start = i.checked_sub(1).map_or(0, |p| self.items[p].1);
        let (v, end) = self.items[i];
        (v, &self.positions[start..end])
    }

    pub fn push(&mut self, v: Version, positions: &[u8]) {
        self.positions.extend_from_slice(positions);
        self.items.push((v, self.positions.len()));
    }

    /// Appends every version of a stored block.
    pub fn extend_from_block(&mut self, mut block: BlockReader<'_>) -> Result<()> {
        while let Some((v, positions)) = block.next()? {
            self.push(v, positions);
        }
        Ok(())
    }

    /// Versions `range` with their positions.
    pub fn slice(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl ExactSizeIterator<Item = (Version, &[u8])> + Clone + '_ {
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
        let mut prev = self.get(0).0;
        for i in 0..self.len() {
            let (v, positions) = self.get(i);
            size += varint_len(v.date.wrapping_sub(prev.date))
                + varint_len(zigzag(prev.row, v.row))
                + varint_len(positions.len() as u64)
                + positions.len();
            prev = v;
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

    fn tail(date: u64, row: u32) -> Vec<u8> {
        order_tail(Version { date: !date, row }).to_vec()
    }

    fn read_all(key_tail: &[u8], value: &[u8]) -> Result<Vec<(Version, Vec<u8>)>> {
        let mut key = b"p\x00\x01\x00t\x00\x01".to_vec();
        let start = key.len();
        key.extend_from_slice(key_tail);
        let mut r = BlockReader::new("k", &key, start, value)?;
        let mut out = Vec::new();
        while let Some((v, p)) = r.next()? {
            out.push((v, p.to_vec()));
        }
        Ok(out)
    }

    /// The block's bytes are pinned: a store written by one build is read
    /// by the next.
    #[test]
    fn block_bytes_are_pinned() {
        let versions =
            [(Version { date: !9, row: 300 }, vec![3u8]), (Version { date: !7, row: 5 }, vec![1, 2])];
        let mut value = Vec::new();
        encode(versions.iter().map(|(v, p)| (*v, p.as_slice())), &mut value);
        // n = 2; first: Δdate = !7 - !9 = 2, Δrow from the last's 5 = +295
        // (zigzag 590 = 0xCE 0x04), positions [3]; last (7, row 5, from the
        // key): positions [1, 2].
        assert_eq!(value, [2, 2, 0xCE, 0x04, 1, 3, 2, 1, 2]);
        assert_eq!(encoded_len(versions.iter().map(|(v, p)| (*v, p.as_slice()))), value.len());
        let back = read_all(&tail(7, 5), &value).unwrap();
        assert_eq!(back, versions.to_vec());
    }

    #[test]
    fn zigzag_round_trips_at_the_ends() {
        for (a, b) in [(0, u32::MAX), (u32::MAX, 0), (7, 7), (1, 2), (2, 1)] {
            assert_eq!(unzigzag(a, zigzag(a, b)), Some(b));
            assert_eq!(varint_len(zigzag(a, b)), {
                let mut v = Vec::new();
                push_varint(&mut v, zigzag(a, b));
                v.len()
            });
        }
        assert_eq!(unzigzag(0, 1), None, "below zero");
    }

    #[test]
    fn corrupt_blocks_are_errors() {
        let t = tail(1, 1);
        for value in [&[][..], &[0], &[1], &[1, 5, 0], &[1, 0, 9], &[2, 0, 2, 0, 0, 0], &[2, 9, 0, 0, 0, 0]] {
            assert!(read_all(&t, value).is_err(), "{value:?}");
        }
        // Of one date, by row number: rows 0, 1, then the last, 1 again.
        assert!(read_all(&t, &[2, 0, 1, 0, 0]).is_ok(), "row 0 then row 1");
        assert!(read_all(&t, &[3, 0, 1, 0, 0, 2, 0, 0]).is_err(), "row 0, 1, then 1 again");
        // Out of order: the second of three versions later than the last.
        assert!(read_all(&t, &[3, 0, 1, 0, 5, 2, 0, 0]).is_err());
        assert!(read_all(&[1, 2], &[1, 0]).is_err(), "short key tail");
    }
}
