//! The cell key: how (row, qualifier, timestamp) become one LMDB key whose
//! byte order is HBase's cell order.
//!
//! ```text
//! cell key = esc(row) 00 01 esc(qualifier) 00 01 !timestamp(8 bytes, big-endian)
//! esc(b)   = b with every 0x00 written as 00 FF
//! ```
//!
//! The escape keeps byte order and makes the terminator `00 01` sort below every
//! continuation (`00 FF` or a non-zero byte), so a key that is a prefix of
//! another sorts first, exactly as raw bytewise comparison does. Inverting the
//! timestamp's bits sorts newer versions first. The family is not in the key:
//! each family is its own LMDB database.
//!
//! This module owns the escape and the cell key; its submodules own the
//! other row-key layouts: [`rowkey`] the typed row key, [`salt`] the salt
//! byte, [`range`] row ranges and their cell-key bounds. Keys of derived
//! data reuse the escape but have owners of their own: index entries in
//! `secondary::entry`, keyword cells in `keyword::codec`, cursor tokens in
//! `cursor`.

pub(crate) mod range;
pub(crate) mod rowkey;
pub(crate) mod salt;

use crate::error::{Error, ErrorKind, Result};

/// Longest row key accepted, in bytes.
///
/// LMDB keys are at most 511 bytes; escaping can double a key, so row key and
/// qualifier limits are chosen so that any accepted pair fits.
pub const MAX_ROW_KEY_BYTES: usize = 160;

/// Longest qualifier accepted, in bytes.
pub const MAX_QUALIFIER_BYTES: usize = 80;

const TERMINATOR: [u8; 2] = [0x00, 0x01];
const ESCAPED_ZERO: [u8; 2] = [0x00, 0xFF];

/// Appends `bytes` escaped and terminated.
pub(crate) fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    push_escaped_open(out, bytes);
    out.extend_from_slice(&TERMINATOR);
}

/// Appends `bytes` escaped, without a terminator (a prefix of every key whose
/// component starts with `bytes`).
pub(crate) fn push_escaped_open(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut parts = bytes.split(|&b| b == 0);
    if let Some(first) = parts.next() {
        out.extend_from_slice(first);
    }
    for part in parts {
        out.extend_from_slice(&ESCAPED_ZERO);
        out.extend_from_slice(part);
    }
}

/// Checks a row key against the documented limits.
pub(crate) fn check_row_key(table: &str, row: &[u8]) -> Result<()> {
    if row.is_empty() {
        return Err(ErrorKind::EmptyRowKey { table: table.to_owned() }.into());
    }
    if row.len() > MAX_ROW_KEY_BYTES {
        return Err(ErrorKind::RowKeyTooLong {
            len: row.len(),
            max: MAX_ROW_KEY_BYTES,
            preview: crate::error::preview(row),
        }
        .into());
    }
    Ok(())
}

/// Checks a qualifier against the documented limit.
pub(crate) fn check_qualifier(family: &str, qualifier: &[u8]) -> Result<()> {
    if qualifier.len() > MAX_QUALIFIER_BYTES {
        return Err(ErrorKind::QualifierTooLong {
            family: family.to_owned(),
            len: qualifier.len(),
            max: MAX_QUALIFIER_BYTES,
        }
        .into());
    }
    Ok(())
}

/// A decoded cell key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CellKey {
    pub row: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: u64,
}

impl CellKey {
    /// Encodes (row, qualifier, timestamp).
    pub fn encode(row: &[u8], qualifier: &[u8], timestamp: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(row.len() + qualifier.len() + 16);
        CellKey::encode_into(&mut out, row, qualifier, timestamp);
        out
    }

    /// Encodes into `out`, replacing its contents (reuses its allocation).
    pub fn encode_into(out: &mut Vec<u8>, row: &[u8], qualifier: &[u8], timestamp: u64) {
        out.clear();
        push_escaped(out, row);
        push_escaped(out, qualifier);
        out.extend_from_slice(&(!timestamp).to_be_bytes());
    }

    /// Decodes a key written by [`CellKey::encode`].
    pub fn decode(db: &str, key: &[u8]) -> Result<CellKey> {
        let raw = RawCellKey::split(db, key)?;
        Ok(CellKey {
            row: unescape(raw.row_esc),
            qualifier: unescape(raw.qualifier_esc),
            timestamp: raw.timestamp,
        })
    }
}

/// A cell key split without copying: the escaped row and qualifier (without
/// terminators) and the timestamp. Escaped rows compare exactly as raw rows
/// do, so scans merge families on these slices and unescape once per row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawCellKey<'a> {
    pub row_esc: &'a [u8],
    pub qualifier_esc: &'a [u8],
    pub timestamp: u64,
}

/// Where the terminator `00 01` of the escaped component at the start of
/// `input` begins; `None` when the component is malformed or unterminated.
#[inline]
fn find_terminator(input: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        at += input.get(at..)?.iter().position(|&b| b == 0)?;
        match input.get(at + 1)? {
            0x01 => return Some(at),
            0xFF => at += 2,
            _ => return None,
        }
    }
}

impl<'a> RawCellKey<'a> {
    pub fn split(db: &str, key: &'a [u8]) -> Result<RawCellKey<'a>> {
        let corrupted = |detail: &str| Error::corrupted(db, key, detail);
        let r = find_terminator(key).ok_or_else(|| corrupted("bad row component"))?;
        let rest = &key[r + 2..];
        let q = find_terminator(rest).ok_or_else(|| corrupted("bad qualifier component"))?;
        let ts: [u8; 8] = rest[q + 2..].try_into().map_err(|_| corrupted("bad timestamp length"))?;
        Ok(RawCellKey { row_esc: &key[..r], qualifier_esc: &rest[..q], timestamp: !u64::from_be_bytes(ts) })
    }

    /// As [`Self::split`], for a key known to begin with its row's escaped
    /// component and terminator, `row_end` bytes and two (a cell read in a
    /// range of one row): the row is not searched for.
    #[inline]
    pub fn split_in_row(db: &str, key: &'a [u8], row_end: usize) -> Result<RawCellKey<'a>> {
        let corrupted = |detail: &str| Error::corrupted(db, key, detail);
        let rest = key.get(row_end + 2..).ok_or_else(|| corrupted("bad row component"))?;
        let q = find_terminator(rest).ok_or_else(|| corrupted("bad qualifier component"))?;
        let ts: [u8; 8] = rest[q + 2..].try_into().map_err(|_| corrupted("bad timestamp length"))?;
        Ok(RawCellKey {
            row_esc: &key[..row_end],
            qualifier_esc: &rest[..q],
            timestamp: !u64::from_be_bytes(ts),
        })
    }
}

/// Reads one escaped, terminated component from the start of `input`:
/// the unescaped bytes and how many bytes it took.
pub(crate) fn take_component(input: &[u8]) -> Option<(Vec<u8>, usize)> {
    let end = find_terminator(input)?;
    Some((unescape(&input[..end]), end + 2))
}

/// As [`take_component`], borrowing: the component itself when it holds
/// no escaped byte (the common case), else its bytes unescaped into
/// `scratch`; and how many bytes it took.
#[inline]
pub(crate) fn take_component_ref<'a>(input: &'a [u8], scratch: &'a mut Vec<u8>) -> Option<(&'a [u8], usize)> {
    let end = find_terminator(input)?;
    let esc = &input[..end];
    if esc.contains(&0) {
        unescape_into(esc, scratch);
        Some((scratch.as_slice(), end + 2))
    } else {
        Some((esc, end + 2))
    }
}

/// As [`take_component`], into `out` (cleared first); returns the bytes taken.
pub(crate) fn take_component_into(input: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let end = find_terminator(input)?;
    unescape_into(&input[..end], out);
    Some(end + 2)
}

/// Undoes the escape of a component (without its terminator).
pub(crate) fn unescape(esc: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(esc.len());
    unescape_into(esc, &mut out);
    out
}

/// Undoes the escape of a component into `out` (cleared first), reusing
/// its allocation.
pub(crate) fn unescape_into(esc: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut rest = esc;
    // Each 0x00 is followed by the 0xFF that escapes it.
    while let Some(zero) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..=zero]);
        rest = rest.get(zero + 2..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
}

/// The smallest key of any cell of `row`: the start of the row.
pub(crate) fn row_start(row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + 2);
    push_escaped(&mut out, row);
    out
}

/// A key above every cell of `row` and below every cell of a greater row.
pub(crate) fn row_end(row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + 2);
    push_escaped_open(&mut out, row);
    out.extend_from_slice(&[0x00, 0x02]);
    out
}

/// The common prefix of every version of one column.
pub(crate) fn column_prefix(row: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + qualifier.len() + 4);
    push_escaped(&mut out, row);
    push_escaped(&mut out, qualifier);
    out
}

/// The first key greater than every key starting with `prefix`, or `None`
/// when no such key exists (the prefix is empty or all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cell key's bytes are pinned: a store written by one build is
    /// read by the next.
    #[test]
    fn cell_key_bytes_are_pinned() {
        let key = CellKey::encode(b"r\x00w", b"q", 5);
        let mut want = b"r\x00\xffw\x00\x01q\x00\x01".to_vec();
        want.extend_from_slice(&(!5u64).to_be_bytes());
        assert_eq!(key, want);
        assert_eq!(row_start(b"r"), b"r\x00\x01");
        assert_eq!(row_end(b"r"), b"r\x00\x02");
        assert_eq!(column_prefix(b"r", b"q"), b"r\x00\x01q\x00\x01");
        // Order: rows bytewise (a prefix first), then qualifier, then newest first.
        let ordered = [
            CellKey::encode(b"a", b"q", 9),
            CellKey::encode(b"a", b"q", 1),
            CellKey::encode(b"a", b"r", 9),
            CellKey::encode(b"a\x00", b"", 9),
            CellKey::encode(b"a\x01", b"", 9),
            CellKey::encode(b"ab", b"", 9),
        ];
        assert!(ordered.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn cell_key_roundtrips_zero_and_ff_bytes() {
        let cases: &[(&[u8], &[u8], u64)] =
            &[(b"a", b"", 0), (b"\x00", b"\x00\xff", u64::MAX), (b"\xff\x00\x01", b"q\x00", 17)];
        for &(row, q, ts) in cases {
            let key = CellKey::encode(row, q, ts);
            let back = CellKey::decode("t", &key).unwrap();
            assert_eq!(back, CellKey { row: row.to_vec(), qualifier: q.to_vec(), timestamp: ts });
        }
    }

    #[test]
    fn cell_key_prefix_row_sorts_first() {
        // "a" < "a\0" < "ab" bytewise; the encodings must agree.
        let a = CellKey::encode(b"a", b"z", 0);
        let a0 = CellKey::encode(b"a\x00", b"", 0);
        let ab = CellKey::encode(b"ab", b"", 0);
        assert!(a < a0 && a0 < ab);
        assert!(a < row_end(b"a") && row_end(b"a") < a0);
    }

    #[test]
    fn cell_key_newer_version_sorts_first() {
        assert!(CellKey::encode(b"r", b"q", 10) < CellKey::encode(b"r", b"q", 9));
    }

    #[test]
    fn cell_key_rejects_garbage() {
        assert!(CellKey::decode("t", b"abc").is_err());
        assert!(CellKey::decode("t", b"a\x00\x05").is_err());
        let mut key = CellKey::encode(b"r", b"q", 1);
        key.pop();
        assert!(CellKey::decode("t", &key).is_err());
    }

    #[test]
    fn raw_cell_key_splits_like_decode() {
        for (row, q, ts) in [(&b"\x00a\x00"[..], &b"\x00"[..], 3u64), (b"r", b"", 0), (b"\xff", b"q\xff", 9)]
        {
            let key = CellKey::encode(row, q, ts);
            let raw = RawCellKey::split("t", &key).unwrap();
            assert_eq!(unescape(raw.row_esc), row);
            assert_eq!(unescape(raw.qualifier_esc), q);
            assert_eq!(raw.timestamp, ts);
        }
        assert!(RawCellKey::split("t", b"a\x00\x05").is_err());
    }

    #[test]
    fn borrowed_component_matches_the_copied_one() {
        for component in [&b""[..], b"ann", b"\x00", b"a\x00b\x00", b"\xff\x00\xff"] {
            let mut input = Vec::new();
            push_escaped(&mut input, component);
            input.extend_from_slice(b"rest");
            let mut scratch = Vec::new();
            let (bytes, used) = take_component_ref(&input, &mut scratch).unwrap();
            assert_eq!((bytes, used), (component, input.len() - 4));
            assert_eq!(take_component(&input), Some((component.to_vec(), used)));
        }
        assert_eq!(take_component_ref(b"a\x00\x05", &mut Vec::new()), None);
    }

    #[test]
    fn prefix_successor_skips_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
