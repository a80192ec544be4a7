//! The keyword cell: the one owner of its bytes.
//!
//! ```text
//! key   = esc(partition) ‖ field (u8, index in `fields`) ‖ esc(term) ‖ !date (u64 BE) ‖ row key
//! value = the term's positions in the field, ascending, as LEB128 deltas
//! ```
//!
//! A column's cells are stored in blocks (`block`); this module owns the
//! cell key and the positions, which blocks keep as they are.
//!
//! `esc` is the cell key's order-preserving escape (`crate::key`): a
//! partition is a keyword row's key, so its cells start where a row's do.
//! The row key is the unsalted key and comes last, unescaped: the tail
//! after the term, `!date ‖ row key` (a *version tail*), sorts newest
//! first and then by key, and is what lookups merge.

use crate::error::{Error, Result};
use crate::key::{self, push_escaped};
use crate::schema::SearchField;

/// Where partition `p`'s cells start: esc(p) 00 01 (escaping keeps the
/// order, the terminator makes it prefix-free).
pub(crate) fn partition_start(p: &[u8]) -> Vec<u8> {
    // A partition is the keyword row's key: its cells start where a row's do.
    key::row_start(p)
}

/// The key prefix of one (partition, field, term) column, given the
/// partition's [`partition_start`].
pub(crate) fn term_prefix(partition_start: &[u8], field: usize, term: &str) -> Vec<u8> {
    let mut p = partition_start.to_vec();
    // unwrap-free: at most 255 fields (validated).
    p.push(u8::try_from(field).unwrap_or(u8::MAX));
    push_escaped(&mut p, term.as_bytes());
    p
}

/// Appends the key of a keyword cell: partition (as [`partition_start`]
/// gives it), field, term, then the version tail.
pub(crate) fn push_cell_key(
    out: &mut Vec<u8>,
    partition_start: &[u8],
    field: usize,
    term: &str,
    date: u64,
    row: &[u8],
) {
    out.extend_from_slice(partition_start);
    // unwrap-free: at most 255 fields (validated).
    out.push(u8::try_from(field).unwrap_or(u8::MAX));
    push_escaped(out, term.as_bytes());
    push_version_tail(out, date, row);
}

/// Appends a version tail: `!date (u64 BE) ‖ row key`.
pub(crate) fn push_version_tail(out: &mut Vec<u8>, date: u64, row: &[u8]) {
    out.extend_from_slice(&(!date).to_be_bytes());
    out.extend_from_slice(row);
}

pub(crate) fn push_varint(out: &mut Vec<u8>, n: u32) {
    super::block::push_varint(out, u64::from(n));
}

/// Reads one position delta: a LEB128 number of at most 5 bytes that
/// fits a `u32`.
#[inline]
fn take_delta(bytes: &mut &[u8]) -> Option<u32> {
    let mut n = 0u32;
    for shift in (0..35).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u32::from(b & 0x7F).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// How many positions a keyword cell's value holds; `None` when the bytes
/// are not LEB128 deltas (each at most 5 bytes) summing to a `u32`.
pub(crate) fn count_positions(mut bytes: &[u8]) -> Option<usize> {
    let (mut count, mut last) = (0usize, 0u32);
    while !bytes.is_empty() {
        last = last.checked_add(take_delta(&mut bytes)?)?;
        count += 1;
    }
    Some(count)
}

/// One keyword cell, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeywordCell {
    /// The partition (keyword row).
    pub partition: Vec<u8>,
    /// The search field's name.
    pub field: String,
    /// The term.
    pub term: String,
    /// The row's date (ms).
    pub date_ms: u64,
    /// The row key (the version).
    pub key: Vec<u8>,
    /// The term's positions in the field.
    pub positions: Vec<u32>,
}

/// One keyword cell as a scan lends it: borrowed from the store's pages
/// (or from the scan's buffers, for an escaped partition or term), so a
/// scan of millions of cells copies and allocates nothing per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeywordCellRef<'a> {
    /// The partition (keyword row).
    pub partition: &'a [u8],
    /// The search field's index in the schema's `fields`.
    pub field_index: usize,
    /// The search field's name.
    pub field: &'a str,
    /// The term.
    pub term: &'a str,
    /// The row's date (ms).
    pub date_ms: u64,
    /// The row key (the version).
    pub key: &'a [u8],
    /// The positions as stored (checked LEB128 deltas).
    positions: &'a [u8],
    position_count: usize,
}

impl<'a> KeywordCellRef<'a> {
    /// The term's positions in the field, ascending.
    pub fn positions(&self) -> Positions<'a> {
        Positions { bytes: self.positions, left: self.position_count, last: 0 }
    }

    /// A cell kept outside the store (HBase's keyword rows), its positions
    /// as [`Self::encoded_positions`] gave them; `None` when those bytes
    /// are not positions.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        partition: &'a [u8],
        field_index: usize,
        field: &'a str,
        term: &'a str,
        date_ms: u64,
        key: &'a [u8],
        positions: &'a [u8],
    ) -> Option<KeywordCellRef<'a>> {
        let position_count = count_positions(positions)?;
        Some(KeywordCellRef { partition, field_index, field, term, date_ms, key, positions, position_count })
    }

    /// The positions as the store keeps them (for a copy kept elsewhere;
    /// [`Self::from_parts`] reads them back).
    pub fn encoded_positions(&self) -> &'a [u8] {
        self.positions
    }

    /// An owned copy.
    pub fn to_cell(&self) -> KeywordCell {
        KeywordCell {
            partition: self.partition.to_vec(),
            field: self.field.to_owned(),
            term: self.term.to_owned(),
            date_ms: self.date_ms,
            key: self.key.to_vec(),
            positions: self.positions().collect(),
        }
    }
}

/// The gaps between the positions `encoded` holds (as
/// [`KeywordCellRef::encoded_positions`] gives them), the first from 0:
/// what an inverted index keeps. Stops at the first malformed number.
pub fn position_gaps(mut encoded: &[u8]) -> impl Iterator<Item = u32> + '_ {
    std::iter::from_fn(move || take_delta(&mut encoded))
}

/// The positions of a [`KeywordCellRef`], ascending.
#[derive(Debug, Clone)]
pub struct Positions<'a> {
    bytes: &'a [u8],
    left: usize,
    last: u32,
}

impl Iterator for Positions<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        // The bytes were checked when the cell was read (`count_positions`):
        // `left` deltas summing without overflow.
        let n = take_delta(&mut self.bytes)?;
        self.left = self.left.saturating_sub(1);
        self.last = self.last.saturating_add(n);
        Some(self.last)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Positions<'_> {}

/// The column part of a keyword block's key: partition, field and term.
pub(crate) struct Column<'a> {
    pub partition: &'a [u8],
    pub field_index: usize,
    pub field: &'a str,
    pub term: &'a str,
    /// Where the version tail starts in the key.
    pub prefix_len: usize,
}

/// Decodes the column of a block key (or a cell key), borrowing from `k`
/// (and from `partition` and `term` for an escaped partition or term).
pub(crate) fn decode_column<'a>(
    db_name: &str,
    fields: &'a [SearchField],
    k: &'a [u8],
    partition: &'a mut Vec<u8>,
    term: &'a mut Vec<u8>,
) -> Result<Column<'a>> {
    let corrupted = |detail: &str| Error::corrupted(db_name, k, detail);
    let (partition, used) =
        key::take_component_ref(k, partition).ok_or_else(|| corrupted("bad partition"))?;
    let rest = &k[used..];
    let (&field_index, rest) = rest.split_first().ok_or_else(|| corrupted("no field"))?;
    let field_index = usize::from(field_index);
    let field = fields.get(field_index).ok_or_else(|| corrupted("unknown field"))?;
    let (term, term_used) = key::take_component_ref(rest, term).ok_or_else(|| corrupted("bad term"))?;
    let term = std::str::from_utf8(term).map_err(|_| corrupted("term is not UTF-8"))?;
    Ok(Column { partition, field_index, field: &field.name, term, prefix_len: used + 1 + term_used })
}

/// A keyword cell of `column` (of block key `k`, for errors): one
/// version's tail and positions.
#[inline]
pub(crate) fn cell_ref<'a>(
    db_name: &str,
    k: &[u8],
    column: &Column<'a>,
    tail: &'a [u8],
    positions: &'a [u8],
) -> Result<KeywordCellRef<'a>> {
    let corrupted = |detail: &str| Error::corrupted(db_name, k, detail);
    let (date, row) = tail.split_first_chunk::<8>().ok_or_else(|| corrupted("short keyword cell"))?;
    let position_count = count_positions(positions).ok_or_else(|| corrupted("bad positions"))?;
    Ok(KeywordCellRef {
        partition: column.partition,
        field_index: column.field_index,
        field: column.field,
        term: column.term,
        date_ms: !u64::from_be_bytes(*date),
        key: row,
        positions,
        position_count,
    })
}

/// Decodes one keyword cell (a full cell key and its positions, as
/// `handle` computes them for a row), borrowing from `k` and `v` (and from
/// `partition` and `term` for an escaped partition or term).
#[inline]
pub(crate) fn decode_cell_ref<'a>(
    db_name: &str,
    fields: &'a [SearchField],
    k: &'a [u8],
    v: &'a [u8],
    partition: &'a mut Vec<u8>,
    term: &'a mut Vec<u8>,
) -> Result<KeywordCellRef<'a>> {
    let column = decode_column(db_name, fields, k, partition, term)?;
    cell_ref(db_name, k, &column, &k[column.prefix_len..], v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyword cell's bytes are pinned: a store written by one build is
    /// read by the next.
    #[test]
    fn cell_bytes_are_pinned_and_decode() {
        let mut key = Vec::new();
        push_cell_key(&mut key, &partition_start(b"ann"), 1, "gas", 7, b"r\x00");
        let mut want = b"ann\x00\x01\x01gas\x00\x01".to_vec();
        want.extend_from_slice(&(!7u64).to_be_bytes());
        want.extend_from_slice(b"r\x00");
        assert_eq!(key, want);
        assert_eq!(term_prefix(&partition_start(b"ann"), 1, "gas"), b"ann\x00\x01\x01gas\x00\x01");
        let mut positions = Vec::new();
        for delta in [3, 4] {
            push_varint(&mut positions, delta);
        }
        let fields = [SearchField::text("subject", "m:s"), SearchField::text("body", "b:b")];
        let (mut p, mut t) = (Vec::new(), Vec::new());
        let cell = decode_cell_ref("t/k", &fields, &key, &positions, &mut p, &mut t).unwrap();
        assert_eq!(
            cell.to_cell(),
            KeywordCell {
                partition: b"ann".to_vec(),
                field: "body".into(),
                term: "gas".into(),
                date_ms: 7,
                key: b"r\x00".to_vec(),
                positions: vec![3, 7],
            }
        );
    }

    #[test]
    fn versions_sort_newest_first_then_by_key() {
        let cell = |date: u64, row: &[u8]| {
            let mut k = Vec::new();
            push_cell_key(&mut k, &partition_start(b"p"), 0, "t", date, row);
            k
        };
        assert!(cell(9, b"b") < cell(1, b"a"));
        assert!(cell(5, b"a") < cell(5, b"b"));
        // Another term, another partition: after every version.
        let mut other = Vec::new();
        push_cell_key(&mut other, &partition_start(b"p"), 0, "u", u64::MAX, b"");
        assert!(cell(0, b"zz") < other);
    }

    #[test]
    fn positions_round_trip() {
        for positions in [vec![], vec![0], vec![0, 1, 2], vec![5, 200, 70_000, u32::MAX]] {
            let mut bytes = Vec::new();
            let mut last = 0;
            for &p in &positions {
                push_varint(&mut bytes, p - last);
                last = p;
            }
            let count = count_positions(&bytes);
            assert_eq!(count, Some(positions.len()));
            let decoded = Positions { bytes: &bytes, left: positions.len(), last: 0 };
            assert_eq!(decoded.len(), positions.len());
            assert_eq!(decoded.collect::<Vec<_>>(), positions);
        }
        // Unterminated, longer than 5 bytes, and summing past u32::MAX.
        assert_eq!(count_positions(&[0x80]), None);
        assert_eq!(count_positions(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), None);
        let mut past = Vec::new();
        push_varint(&mut past, u32::MAX);
        push_varint(&mut past, 1);
        assert_eq!(count_positions(&past), None);
    }
}
