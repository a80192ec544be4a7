//! The keyword block (format 10; format 5's before it): the one owner of
//! its bytes.
//!
//! A keyword column (one partition, field and term) is stored as a run of
//! blocks, each one LMDB entry holding consecutive versions of the column,
//! newest first: by `!date`, then by row *number* (`rows`), each version's
//! *order tail* `!date (u64 BE) ‖ row number (u32 BE)`:
//!
//! ```text
//! key   = term prefix (codec::term_prefix) ‖ the block's last order tail
//! value = varint (n << 4 | L << 1 | s) (n versions, >= 1)
//!         ‖ for each version but the last, in order:
//!             varint Δdate (in seconds where s is 1)
//!             ‖ varint (zigzag(Δrow number) << 3 | l)
//!             ‖ [varint positions length, where l is 7] ‖ positions
//!         ‖ for the last version: [varint positions length, where L is 7]
//!             ‖ positions
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
//! other one's from the version before it. Mail dates have no
//! milliseconds, so a block whose every Δdate is whole seconds says so
//! (`s`, format 10) and keeps them in seconds: two bytes of a version's
//! three or four. A positions length below 7 rides in three bits of the
//! row number's varint (`l`; the last version's in the header, `L`), 7
//! saying it follows. Format 5 to 9 blocks had `varint n` alone, Δdates in
//! milliseconds and every positions length written
//! ([`BlockReader::format9`] reads them for the upgrade).
//! Positions are the cell's value as before (LEB128 deltas), with their
//! byte length (inline or before them) so a reader that wants only keys
//! skips them.
//!
//! Blocks aim at [`TARGET_BLOCK_BYTES`] of value: a write rewrites one small
//! block per term it touches, a run of new versions is cut into blocks of
//! about that size, and a block that shrinks below a quarter of it takes in
//! the block after it.

use std::ops::Range;

use crate::error::{Error, Result};

/// The value size blocks aim at (bytes). Chosen by measurement
/// (store/BENCHMARKS.md, "Keyword blocks": 1,024 then), well under half an
/// LMDB page, so a block never needs overflow pages; 768 since format 10,
/// whose versions take about a fifth less, so a block holds about as many
/// versions as before (search-api/BENCHMARKS.md, issue 65 fourth part).
pub(crate) const TARGET_BLOCK_BYTES: usize = 768;

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

/// Milliseconds in a second: the unit of a format 10 block whose Δdates
/// are all whole seconds.
const SECOND: u64 = 1000;

/// Encodes versions `range` of `versions` (ascending, at least one) as a
/// block value; the block's key ends with the last version's order tail.
pub(crate) fn encode(versions: &Versions, range: Range<usize>, out: &mut Vec<u8>) {
    write(versions, range, out, false);
}

/// [`encode`], or as formats 5 to 9 did (`format9`: the count alone,
/// Δdates in milliseconds, every positions length written; the upgrade's
/// tests write old stores so).
pub(crate) fn encode_as(versions: &Versions, range: Range<usize>, out: &mut Vec<u8>, format9: bool) {
    write(versions, range, out, format9);
}

/// How many versions the block stored under `key` (its order tail from
/// `tail_start`) holds, read from its header.
pub(crate) fn count(db: &str, key: &[u8], tail_start: usize, value: &[u8]) -> Result<u64> {
    Ok(BlockReader::new(db, key, tail_start, value)?.len() as u64)
}

/// The encoded size of versions `range` as one block (what [`encode`]
/// writes).
pub(crate) fn encoded_len(versions: &Versions, range: Range<usize>) -> usize {
    let mut size = Size(0);
    write(versions, range, &mut size, false);
    size.0
}

/// Where [`write`] puts a block: its bytes, or only their count.
trait Sink {
    fn varint(&mut self, n: u64);
    fn bytes(&mut self, b: &[u8]);
}

impl Sink for Vec<u8> {
    fn varint(&mut self, n: u64) {
        push_varint(self, n);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

struct Size(usize);

impl Sink for Size {
    fn varint(&mut self, n: u64) {
        self.0 += varint_len(n);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0 += b.len();
    }
}

/// A positions length kept in three bits beside another number: the
/// length itself below [`EXPLICIT_LEN`], which says the length follows.
const EXPLICIT_LEN: u64 = 7;

fn inline_len(positions: &[u8]) -> u64 {
    (positions.len() as u64).min(EXPLICIT_LEN)
}

/// Writes versions `range` as a block (format 10, or `format9`'s layout).
fn write(versions: &Versions, range: Range<usize>, out: &mut impl Sink, format9: bool) {
    let Some(last_index) = range.end.checked_sub(1).filter(|&l| l >= range.start) else {
        out.varint(0);
        return;
    };
    let n = range.len() as u64;
    let (last, last_positions) = versions.get(last_index);
    let unit = if format9 { 1 } else { versions.unit(range.clone()) };
    out.varint(if format9 {
        n
    } else {
        n << 4 | inline_len(last_positions) << 1 | u64::from(unit == SECOND)
    });
    let mut prev = last;
    for i in range.start..last_index {
        let (v, positions) = versions.get(i);
        let len = positions.len() as u64;
        // The first counts back from the last; the others forward.
        let delta =
            if i == range.start { prev.date.wrapping_sub(v.date) } else { v.date.wrapping_sub(prev.date) };
        out.varint(delta / unit);
        if format9 {
            out.varint(zigzag(prev.row, v.row));
            out.varint(len);
        } else {
            out.varint(zigzag(prev.row, v.row) << 3 | inline_len(positions));
            if len >= EXPLICIT_LEN {
                out.varint(len);
            }
        }
        out.bytes(positions);
        prev = v;
    }
    if format9 || last_positions.len() as u64 >= EXPLICIT_LEN {
        out.varint(last_positions.len() as u64);
    }
    out.bytes(last_positions);
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
    /// What a stored Δdate counts: 1,000 (seconds) or 1 (milliseconds).
    unit: u64,
    /// How a version's row number varint holds its positions length:
    /// format 10 shifts the number by 3 over the length (`len_mask` 7,
    /// `len_or` 0); format 9 has none there (shift 0, mask 0, and `len_or`
    /// [`EXPLICIT_LEN`]: the length follows).
    len_shift: u32,
    len_mask: u64,
    len_or: u64,
    /// The last version's positions length from the header (format 10),
    /// or [`EXPLICIT_LEN`]: it precedes its positions.
    last_len: u64,
}

impl<'a> BlockReader<'a> {
    /// A reader of the block stored under `key` (whose bytes from
    /// `tail_start` are the last version's order tail) with value `value`.
    pub fn new(db: &'a str, key: &'a [u8], tail_start: usize, value: &'a [u8]) -> Result<BlockReader<'a>> {
        Self::open(db, key, tail_start, value, false)
    }

    /// A reader of a format 5 to 9 block (`varint n`, Δdates in
    /// milliseconds): what the upgrade to format 10 reads.
    pub fn format9(
        db: &'a str,
        key: &'a [u8],
        tail_start: usize,
        value: &'a [u8],
    ) -> Result<BlockReader<'a>> {
        Self::open(db, key, tail_start, value, true)
    }

    fn open(
        db: &'a str,
        key: &'a [u8],
        tail_start: usize,
        value: &'a [u8],
        format9: bool,
    ) -> Result<BlockReader<'a>> {
        let last_tail = key.get(tail_start..).unwrap_or_default();
        let mut rest = value;
        let corrupted = |detail: &str| corrupted(db, key, detail);
        if last_tail.len() != ORDER_TAIL_LEN {
            return Err(corrupted("bad keyword block key"));
        }
        let header = take_varint(&mut rest).ok_or_else(|| corrupted("bad version count"))?;
        let (n, unit, last_len) = if format9 {
            (header, 1, EXPLICIT_LEN)
        } else {
            (header >> 4, if header & 1 == 1 { SECOND } else { 1 }, header >> 1 & EXPLICIT_LEN)
        };
        let n = usize::try_from(n).map_err(|_| corrupted("bad version count"))?;
        if n == 0 {
            return Err(corrupted("bad version count"));
        }
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
            unit,
            len_shift: if format9 { 0 } else { 3 },
            len_mask: if format9 { 0 } else { EXPLICIT_LEN },
            len_or: if format9 { EXPLICIT_LEN } else { 0 },
            last_len,
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
            self.positions = self.take_positions(self.last_len)?;
            if !first && self.current >= self.last {
                return Err(bad("versions out of order"));
            }
            if !self.rest.is_empty() {
                return Err(bad("trailing bytes"));
            }
            self.current = self.last;
            return Ok(true);
        }
        let delta = take_varint(&mut self.rest)
            .and_then(|d| d.checked_mul(self.unit))
            .ok_or_else(|| bad("bad date"))?;
        let date =
            if first { self.current.date.checked_sub(delta) } else { self.current.date.checked_add(delta) }
                .ok_or_else(|| bad("bad date"))?;
        let z = take_varint(&mut self.rest).ok_or_else(|| bad("bad row number"))?;
        let len = (z & self.len_mask) | self.len_or;
        let row = unzigzag(self.current.row, z >> self.len_shift).ok_or_else(|| bad("bad row number"))?;
        let v = Version { date, row };
        // Ascending (the first version is checked against the last at the end).
        if !first && v <= self.current {
            return Err(bad("versions out of order"));
        }
        self.current = v;
        self.positions = self.take_positions(len)?;
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

    /// A version's positions: `len` bytes, or (at [`EXPLICIT_LEN`])
    /// prefixed by their length.
    #[inline]
    fn take_positions(&mut self, len: u64) -> Result<&'a [u8]> {
        if len < EXPLICIT_LEN {
            return take_slice(&mut self.rest, len as usize)
                .ok_or_else(|| corrupted(self.db, self.key, "bad positions"));
        }
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

    /// The unit of the Δdates of versions `range` as one block: seconds
    /// (1,000) when every Δdate is whole seconds, else milliseconds (1).
    /// Ascending, every Δdate is a true difference, so they are all whole
    /// seconds exactly when every date has the same remainder by 1,000.
    fn unit(&self, range: Range<usize>) -> u64 {
        let Some((first, rest)) = self.items[range].split_first() else { return SECOND };
        let remainder = first.0.date % SECOND;
        if rest.iter().all(|(v, _)| v.date % SECOND == remainder) { SECOND } else { 1 }
    }

    /// Appends every version of a stored block.
    pub fn extend_from_block(&mut self, mut block: BlockReader<'_>) -> Result<()> {
        while let Some((v, positions)) = block.next()? {
            self.push(v, positions);
        }
        Ok(())
    }

    /// Cuts the versions into blocks of about [`TARGET_BLOCK_BYTES`]
    /// each (as many blocks as the size needs, evenly filled): the
    /// version ranges.
    pub fn cut(&self) -> Vec<std::ops::Range<usize>> {
        if self.is_empty() {
            return Vec::new();
        }
        let total = encoded_len(self, 0..self.len());
        let blocks = total.div_ceil(TARGET_BLOCK_BYTES).max(1);
        if blocks == 1 {
            return std::iter::once(0..self.len()).collect();
        }
        let aim = total.div_ceil(blocks);
        let unit = self.unit(0..self.len());
        // Each version's size as encoded after the one before it: close to
        // its share of any block it lands in.
        let mut cuts = Vec::with_capacity(blocks);
        let (mut start, mut size) = (0, 0usize);
        let mut prev = self.get(0).0;
        for i in 0..self.len() {
            let (v, positions) = self.get(i);
            let len = positions.len() as u64;
            size += varint_len(v.date.wrapping_sub(prev.date) / unit)
                + varint_len(zigzag(prev.row, v.row) << 3 | inline_len(positions))
                + if len >= EXPLICIT_LEN { varint_len(len) } else { 0 }
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

    fn versions_of(versions: &[(Version, Vec<u8>)]) -> Versions {
        let mut out = Versions::default();
        for (v, p) in versions {
            out.push(*v, p);
        }
        out
    }

    fn encoded(versions: &[(Version, Vec<u8>)], format9: bool) -> Vec<u8> {
        let mut value = Vec::new();
        encode_as(&versions_of(versions), 0..versions.len(), &mut value, format9);
        value
    }

    fn len_of(versions: &[(Version, Vec<u8>)]) -> usize {
        encoded_len(&versions_of(versions), 0..versions.len())
    }

    fn read_all(key_tail: &[u8], value: &[u8]) -> Result<Vec<(Version, Vec<u8>)>> {
        read_with(key_tail, value, false)
    }

    fn read_format9(key_tail: &[u8], value: &[u8]) -> Result<Vec<(Version, Vec<u8>)>> {
        read_with(key_tail, value, true)
    }

    fn read_with(key_tail: &[u8], value: &[u8], format9: bool) -> Result<Vec<(Version, Vec<u8>)>> {
        let mut key = b"p\x00\x01\x00t\x00\x01".to_vec();
        let start = key.len();
        key.extend_from_slice(key_tail);
        let mut r = BlockReader::open("k", &key, start, value, format9)?;
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
        let value = encoded(&versions, false);
        // The header: n = 2, the last version's positions length (2) and
        // milliseconds: 2 << 4 | 2 << 1 | 0 = 36. The first version:
        // Δdate = !7 - !9 = 2; Δrow from the last's 5 = +295, zigzag 590,
        // with its positions length (1) in three bits: 590 << 3 | 1 = 4721
        // (0xF1 0x24); positions [3]. The last (7, row 5, from the key):
        // positions [1, 2].
        assert_eq!(value, [36, 2, 0xF1, 0x24, 3, 1, 2]);
        assert_eq!(len_of(&versions), value.len());
        let back = read_all(&tail(7, 5), &value).unwrap();
        assert_eq!(back, versions.to_vec());
        // Formats 5 to 9 wrote the count alone, Δdates in milliseconds and
        // every positions length.
        let format9 = [2, 2, 0xCE, 0x04, 1, 3, 2, 1, 2];
        assert_eq!(read_format9(&tail(7, 5), &format9).unwrap(), versions.to_vec());
        assert_eq!(encoded(&versions, true), format9);

        // Whole seconds (the header's low bit), Δdate 9,000 - 7,000 = 2 s.
        let versions =
            [(Version { date: !9_000, row: 300 }, vec![3u8]), (Version { date: !7_000, row: 5 }, vec![1, 2])];
        let value = encoded(&versions, false);
        assert_eq!(value, [37, 2, 0xF1, 0x24, 3, 1, 2]);
        assert_eq!(len_of(&versions), value.len());
        assert_eq!(read_all(&tail(7_000, 5), &value).unwrap(), versions.to_vec());
        // One version: no Δdate at all (seconds, vacuously): 1 << 4 | 1 << 1 | 1.
        assert_eq!(encoded(&versions[..1], false), [19, 3]);
        // Seven bytes of positions or more: the length written before them.
        let long = [
            (Version { date: !9_000, row: 2 }, vec![1u8; 9]),
            (Version { date: !7_000, row: 1 }, vec![2u8; 7]),
        ];
        let value = encoded(&long, false);
        let mut want = vec![2 << 4 | 7 << 1 | 1, 2, 2 << 3 | 7, 9];
        want.extend([1; 9]);
        want.push(7);
        want.extend([2; 7]);
        assert_eq!(value, want);
        assert_eq!(len_of(&long), value.len());
        assert_eq!(read_all(&tail(7_000, 1), &value).unwrap(), long.to_vec());
    }

    /// Seconds where every Δdate is whole seconds, milliseconds as soon as
    /// one is not; the first Δ counts back from the last version.
    #[test]
    fn a_block_takes_seconds_only_when_every_delta_is_whole() {
        let at = |dates: &[u64]| -> Vec<(Version, Vec<u8>)> {
            dates.iter().zip(1..).map(|(&d, row)| (Version { date: !d, row }, vec![row as u8])).collect()
        };
        for (dates, seconds) in [
            (&[5_000, 3_000, 1_000][..], true),
            (&[5_000, 3_000, 1_500], false),
            (&[5_000, 3_500, 1_000], false),
            (&[5_500, 3_500, 1_500], true),
            (&[5_001, 3_001, 1_001], true),
            (&[5_000, 5_000, 5_000], true),
        ] {
            let versions = at(dates);
            let value = encoded(&versions, false);
            assert_eq!(value[0] & 1 == 1, seconds, "{dates:?}");
            let last = versions.last().unwrap().0;
            assert_eq!(read_all(&order_tail(last), &value).unwrap(), versions, "{dates:?}");
        }
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
        // Headers: n << 4 | the last's inline positions length << 1 | seconds.
        for value in [&[][..], &[0], &[1], &[26, 0], &[16, 9], &[30, 5, 0], &[32, 0, 16, 0], &[32, 9, 0, 0]] {
            assert!(read_all(&t, value).is_err(), "{value:?}");
        }
        // Of one date, by row number: rows 0, 1, then the last, 1 again.
        assert!(read_all(&t, &[32, 0, 8]).is_ok(), "row 0 then row 1");
        assert!(read_all(&t, &[48, 0, 8, 0, 16]).is_err(), "row 0, 1, then 1 again");
        // Out of order: the second of three versions later than the last.
        assert!(read_all(&t, &[48, 0, 8, 5, 16]).is_err());
        assert!(read_all(&[1, 2], &[16]).is_err(), "short key tail");
        // Seconds that overflow a date: an error, not a wrapped date.
        let far = [33, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0];
        assert!(read_all(&t, &far).is_err());
    }

    proptest::proptest! {
        /// Any ascending versions (dates in whole seconds or not, any
        /// positions length) read back as written, in both layouts, and
        /// `encoded_len` is the length written.
        #[test]
        fn blocks_read_back_what_was_written(
            seconds in proptest::prelude::any::<bool>(),
            start in 0u64..1 << 44,
            steps in proptest::collection::vec(
                (0u64..100_000, 0u32..3, 0u32..70_000, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12)),
                1..40,
            ),
        ) {
            let (mut date, mut row) = (start * SECOND, 1u32 << 20);
            let mut versions = Vec::new();
            for (gap, same, jump, positions) in steps {
                let gap = if seconds { gap * SECOND } else { gap };
                // Ascending by inverted date, then by row: a date further
                // back, or the same date and a greater row.
                if same == 0 {
                    row += 1;
                } else {
                    date = date.saturating_sub(if seconds { (gap + 1) * SECOND } else { gap + 1 });
                    row = row.wrapping_add(jump).wrapping_sub(35_000);
                }
                versions.push((Version { date: !date, row }, positions));
            }
            versions.sort_by_key(|(v, _)| *v);
            versions.dedup_by_key(|(v, _)| *v);
            let last = versions.last().unwrap().0;
            for format9 in [false, true] {
                let value = encoded(&versions, format9);
                if !format9 {
                    // Whole seconds are kept as seconds.
                    proptest::prop_assert!(!seconds || value[0] & 1 == 1);
                    proptest::prop_assert_eq!(len_of(&versions), value.len());
                }
                let back = read_with(&order_tail(last), &value, format9).unwrap();
                proptest::prop_assert_eq!(&back, &versions);
            }
        }
    }
}
