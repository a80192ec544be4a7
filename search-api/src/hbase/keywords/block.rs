//! The bytes of rowsearch's keyword blocks in HBase (this file is their one
//! owner; store/FORMAT.md, "Keyword rows in HBase", describes them).
//!
//! A companion row (one per partition) holds, per keyword column `(field,
//! term)`, one HBase cell per *run*: the versions one write added or
//! removed in that column. Its qualifier is the column's term prefix
//! (`[field index] term 00`) then the run's tail, `stamp (u64 BE) ‖ tag
//! (u32 BE)`: the writer's clock and a number of the writing process, so
//! two writes never share a cell and a column's runs sort oldest first.
//! Its value:
//!
//! ```text
//! 01 (the block format) ‖ varint n
//! ‖ n times: varint Δ!date ‖ varint shared ‖ varint suffix length ‖ suffix
//!            ‖ varint state ‖ positions
//! ```
//!
//! Versions in the store's order (`!date` ascending, so newest first, then
//! row key); `Δ!date` from the version before (the first from 0); the row
//! key as the bytes it shares with the key before and the rest; `state` 0
//! for a version the run removed (no positions follow), else the positions'
//! length + 1. Varints are LEB128 (u64). A version's newest run decides:
//! a removal hides the version from every older run.
//!
//! The build before kept one cell per version: qualifier `term prefix ‖
//! !date (u64 BE) ‖ row key`, value the positions (read only by the
//! upgrade, [`super::upgrade`]).
//!
//! Beside the partitions' rows, each row of the table written since
//! records were kept has its *record*: companion row `r ‖ row key`, cell
//! `k:r`, the keyword cells the runs were last written with for it (what
//! a write by another client, which leaves no old row to read, is
//! compared with):
//!
//! ```text
//! 01 ‖ varint partition length ‖ partition ‖ varint date
//! ‖ varint n ‖ n times: field index (u8) ‖ varint term length ‖ term
//!                       ‖ xxh3-64 of the positions, low 32 bits (u32 BE)
//! ```
//!
//! Cells in the order the row's text gives them; a row without keyword
//! cells (deleted) has a record of none. Beside it, cell `k:w`: `1` from
//! before a write puts the row's runs until it puts the record (which
//! puts it empty), so a write cut off between is known
//! ([`super::changes::RecordState::Unsure`]).

use std::collections::BTreeMap;

use crate::hbase::tables::HbaseError;

/// The companion table's suffix.
pub const SUFFIX: &str = rowsearch_store::KEYWORDS_SUFFIX;
/// The companion's one family.
pub const FAMILY: &str = "k";
/// What a partition's row key starts with.
pub(super) const ROW_PREFIX: u8 = b'k';
/// Columns a scan result carries at most (a wider row comes in pieces).
pub(super) const SCAN_BATCH: usize = 5_000;

/// What a row's record's companion row key starts with (after every
/// partition's row).
pub(super) const RECORD_PREFIX: u8 = b'r';
/// The row of the layout's marker (below every partition's row).
pub(super) const META_ROW: &[u8] = &[0];
/// Marks a companion made with every row's record (`k:records` in
/// [`META_ROW`]): a row without one was never written through rowsearch
/// nor followed, so the keyword rows hold nothing of it.
pub(super) const RECORDS_COLUMN: &[u8] = b"records";
/// A record's column.
pub(super) const RECORD_COLUMN: &[u8] = b"r";
/// Beside a record, the mark of a write begun: non-empty from before the
/// row's runs are put until its record is (which puts it empty).
pub(super) const WRITING_COLUMN: &[u8] = b"w";

/// The companion table of `table`.
pub fn companion(table: &str) -> String {
    format!("{table}{SUFFIX}")
}

/// This process's tag in its runs' qualifiers (with the clock's stamp, two
/// processes' writes never share a cell).
pub(super) fn process_tag() -> u32 {
    use std::hash::BuildHasher;
    static TAG: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        let h = std::collections::hash_map::RandomState::new()
            .hash_one((std::process::id(), std::time::Instant::now()));
        // Never 0: stamp 0 and tag 0 name the upgrade's runs.
        (h as u32).max(1)
    })
}

/// The companion row of `partition`.
pub(super) fn row_key(partition: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(partition.len() + 1);
    key.push(ROW_PREFIX);
    key.extend_from_slice(partition);
    key
}

/// The error of a companion cell that is neither layout's.
pub(super) fn corrupted(table: &str, detail: impl Into<String>) -> HbaseError {
    HbaseError::Corrupted { table: companion(table), detail: detail.into() }
}

/// The block format's first byte.
const FORMAT: u8 = 1;
/// A run's tail in a qualifier: stamp and tag.
pub(super) const RUN_TAIL: usize = 12;

/// One version of a keyword column: when, which row, and its positions
/// (`None`: removed by its run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version {
    /// `!date (u64 BE) ‖ row key`: the store's order, bytewise.
    pub tail: Vec<u8>,
    pub positions: Option<Vec<u8>>,
}

/// The version tail of `(date, key)`.
#[cfg(test)]
pub(super) fn tail(date_ms: u64, key: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(8 + key.len());
    t.extend_from_slice(&(!date_ms).to_be_bytes());
    t.extend_from_slice(key);
    t
}

/// A version tail's date and row key.
pub(super) fn split_tail(tail: &[u8]) -> Option<(u64, &[u8])> {
    let (date, key) = tail.split_first_chunk::<8>()?;
    Some((!u64::from_be_bytes(*date), key))
}

/// The qualifier prefix every cell of `term` in field `field` shares.
pub(super) fn term_prefix(field: usize, term: &str) -> Vec<u8> {
    let mut q = Vec::with_capacity(term.len() + 2 + RUN_TAIL);
    q.push(u8::try_from(field).unwrap_or(u8::MAX));
    q.extend_from_slice(term.as_bytes());
    q.push(0);
    q
}

/// The qualifier of the run `(stamp, tag)` of a column.
pub(super) fn run_qualifier(prefix: &[u8], stamp: u64, tag: u32) -> Vec<u8> {
    let mut q = Vec::with_capacity(prefix.len() + RUN_TAIL);
    q.extend_from_slice(prefix);
    q.extend_from_slice(&stamp.to_be_bytes());
    q.extend_from_slice(&tag.to_be_bytes());
    q
}

/// A qualifier's field index, term, and what follows the term (a run's
/// tail, or in the build before a version tail).
pub(super) fn split_qualifier(q: &[u8]) -> Option<(usize, &str, &[u8])> {
    let (&field, rest) = q.split_first()?;
    let end = rest.iter().position(|&b| b == 0)?;
    let term = std::str::from_utf8(&rest[..end]).ok()?;
    Some((usize::from(field), term, &rest[end + 1..]))
}

/// The length of a qualifier's term prefix (`None`: not a keyword column).
pub(super) fn prefix_len(q: &[u8]) -> Option<usize> {
    let end = q.get(1..)?.iter().position(|&b| b == 0)?;
    Some(end + 2)
}

fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

fn take<'a>(bytes: &mut &'a [u8], n: u64) -> Option<&'a [u8]> {
    let n = usize::try_from(n).ok()?;
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

/// A run's value: `versions` (date, row key, positions or `None` for a
/// removal) in the store's order (newest first, then by key; each once).
pub(super) fn encode<'v>(
    versions: impl ExactSizeIterator<Item = (u64, &'v [u8], Option<&'v [u8]>)>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + versions.len() * 24);
    out.push(FORMAT);
    push_varint(&mut out, versions.len() as u64);
    let (mut date, mut key): (u64, &[u8]) = (0, &[]);
    for (date_ms, k, positions) in versions {
        let d = !date_ms;
        push_varint(&mut out, d.wrapping_sub(date));
        let shared = key.iter().zip(k).take_while(|(a, b)| a == b).count();
        push_varint(&mut out, shared as u64);
        push_varint(&mut out, (k.len() - shared) as u64);
        out.extend_from_slice(&k[shared..]);
        match positions {
            None => push_varint(&mut out, 0),
            Some(p) => {
                push_varint(&mut out, p.len() as u64 + 1);
                out.extend_from_slice(p);
            }
        }
        (date, key) = (d, k);
    }
    out
}

/// [`encode`] of versions given by their tails.
pub(super) fn encode_tails<'v>(versions: &[(&'v [u8], Option<&'v [u8]>)]) -> Vec<u8> {
    encode(versions.iter().map(|(t, p)| {
        let (date, key) = split_tail(t).unwrap_or((0, &[]));
        (date, key, *p)
    }))
}

/// A run's versions, in its order; `None` when the bytes are not a run.
pub(super) fn decode(mut value: &[u8]) -> Option<Vec<Version>> {
    let bytes = &mut value;
    let (&format, rest) = bytes.split_first()?;
    *bytes = rest;
    if format != FORMAT {
        return None;
    }
    let n = read_varint(bytes)?;
    let mut out = Vec::with_capacity(usize::try_from(n.min(1 << 16)).ok()?);
    let (mut date, mut key): (u64, Vec<u8>) = (0, Vec::new());
    for _ in 0..n {
        date = date.wrapping_add(read_varint(bytes)?);
        let shared = usize::try_from(read_varint(bytes)?).ok()?;
        if shared > key.len() {
            return None;
        }
        let suffix_len = read_varint(bytes)?;
        key.truncate(shared);
        key.extend_from_slice(take(bytes, suffix_len)?);
        let state = read_varint(bytes)?;
        let positions = match state {
            0 => None,
            s => Some(take(bytes, s - 1)?.to_vec()),
        };
        let mut tail = Vec::with_capacity(8 + key.len());
        tail.extend_from_slice(&date.to_be_bytes());
        tail.extend_from_slice(&key);
        out.push(Version { tail, positions });
    }
    bytes.is_empty().then_some(out)
}

/// A column's versions from its runs (given oldest first): each version as
/// its newest run says, the removed ones left out, in the store's order.
/// `None` when a value is not a run.
pub(super) fn merge<'v>(runs: impl IntoIterator<Item = &'v [u8]>) -> Option<Vec<Version>> {
    let mut runs = runs.into_iter();
    let Some(first) = runs.next() else { return Some(Vec::new()) };
    let first = decode(first)?;
    let Some(second) = runs.next() else {
        return Some(first.into_iter().filter(|v| v.positions.is_some()).collect());
    };
    let mut by_tail: BTreeMap<Vec<u8>, Option<Vec<u8>>> =
        first.into_iter().map(|v| (v.tail, v.positions)).collect();
    for run in std::iter::once(second).chain(runs) {
        for v in decode(run)? {
            by_tail.insert(v.tail, v.positions);
        }
    }
    Some(
        by_tail
            .into_iter()
            .filter_map(|(tail, positions)| positions.map(|p| Version { tail, positions: Some(p) }))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn version() -> impl Strategy<Value = (u64, Vec<u8>, Option<Vec<u8>>)> {
        (
            prop_oneof![0u64..4, any::<u64>()],
            proptest::collection::vec(0u8..3, 0..5),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
        )
    }

    fn run() -> impl Strategy<Value = BTreeMap<Vec<u8>, Option<Vec<u8>>>> {
        proptest::collection::vec(version(), 0..12)
            .prop_map(|vs| vs.into_iter().map(|(d, k, p)| (tail(d, &k), p)).collect())
    }

    proptest! {
        /// Runs read back as written, and a column's runs merge as a model
        /// (newest run wins per version, removals hidden) says.
        #[test]
        fn runs_merge_as_the_model_says(runs in proptest::collection::vec(run(), 1..5)) {
            let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            let mut values = Vec::new();
            for run in &runs {
                let versions: Vec<(&[u8], Option<&[u8]>)> =
                    run.iter().map(|(t, p)| (t.as_slice(), p.as_deref())).collect();
                let value = encode_tails(&versions);
                let back = decode(&value).expect("a run");
                prop_assert_eq!(back.len(), run.len());
                for (v, (t, p)) in back.iter().zip(run) {
                    prop_assert_eq!(&v.tail, t);
                    prop_assert_eq!(&v.positions, p);
                }
                for (t, p) in run {
                    model.insert(t.clone(), p.clone());
                }
                values.push(value);
            }
            let merged = merge(values.iter().map(Vec::as_slice)).expect("runs");
            let want: Vec<Version> = model
                .into_iter()
                .filter_map(|(tail, p)| p.map(|p| Version { tail, positions: Some(p) }))
                .collect();
            prop_assert_eq!(merged, want);
        }

        /// Bytes that are not a run are refused, never a panic.
        #[test]
        fn garbage_is_refused_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode(&bytes);
            let _ = Record::decode(&bytes);
        }

        /// A row's record reads back as written; cut short, it is refused.
        #[test]
        fn records_read_back(
            partition in proptest::collection::vec(any::<u8>(), 0..6),
            date_ms in any::<u64>(),
            cells in proptest::collection::vec((any::<u8>(), "[a-zé]{0,5}", any::<u32>()), 0..8),
        ) {
            let record = Record { partition, date_ms, cells };
            let value = record.encode();
            prop_assert_eq!(Record::decode(&value), Some(record));
            prop_assert_eq!(Record::decode(&value[..value.len() - 1]), None);
        }
    }

    #[test]
    fn a_records_bytes_are_pinned() {
        let record =
            Record { partition: b"u".to_vec(), date_ms: 300, cells: vec![(1, "gas".into(), 0x0102_0304)] };
        assert_eq!(record.encode(), b"\x01\x01u\xac\x02\x01\x01\x03gas\x01\x02\x03\x04");
    }

    #[test]
    fn the_bytes_are_pinned() {
        let a = tail(5, b"ab");
        let b = tail(5, b"ac");
        let value = encode_tails(&[(a.as_slice(), Some(&[2][..])), (b.as_slice(), None)]);
        let mut want = vec![1, 2];
        want.extend_from_slice(&[0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]); // !5
        want.extend_from_slice(&[0, 2, b'a', b'b', 2, 2]);
        want.extend_from_slice(&[0, 1, 1, b'c', 0]);
        assert_eq!(value, want);
        assert_eq!(
            run_qualifier(&term_prefix(1, "x"), 7, 9),
            vec![1, b'x', 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 9]
        );
        assert_eq!(prefix_len(&run_qualifier(&term_prefix(1, "xy"), 7, 9)), Some(4));
    }
}

/// The companion row of the record of the table's row `key`.
pub(super) fn record_key(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 1);
    out.push(RECORD_PREFIX);
    out.extend_from_slice(key);
    out
}

/// The keyword cells a row's runs were last written with: its record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The row's partition.
    pub partition: Vec<u8>,
    /// The row's date (ms).
    pub date_ms: u64,
    /// Per cell: field index, term, [`positions_hash`] of its positions.
    pub cells: Vec<(u8, String, u32)>,
}

/// The hash a record keeps of a cell's positions (as the store encodes
/// them): a write whose positions differ from the record's is a change.
pub(super) fn positions_hash(encoded: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(encoded) as u32
}

impl Record {
    /// Its value.
    pub(super) fn encode(&self) -> Vec<u8> {
        let text: usize = self.cells.iter().map(|(_, t, _)| t.len() + 6).sum();
        let mut out = Vec::with_capacity(16 + self.partition.len() + text);
        out.push(FORMAT);
        push_varint(&mut out, self.partition.len() as u64);
        out.extend_from_slice(&self.partition);
        push_varint(&mut out, self.date_ms);
        push_varint(&mut out, self.cells.len() as u64);
        for (field, term, hash) in &self.cells {
            out.push(*field);
            push_varint(&mut out, term.len() as u64);
            out.extend_from_slice(term.as_bytes());
            out.extend_from_slice(&hash.to_be_bytes());
        }
        out
    }

    /// A value [`Self::encode`] made; `None` for other bytes.
    pub(super) fn decode(mut bytes: &[u8]) -> Option<Record> {
        let (&format, rest) = bytes.split_first()?;
        if format != FORMAT {
            return None;
        }
        bytes = rest;
        let n = read_varint(&mut bytes)?;
        let partition = take(&mut bytes, n)?.to_vec();
        let date_ms = read_varint(&mut bytes)?;
        let n = read_varint(&mut bytes)?;
        let mut cells = Vec::with_capacity(usize::try_from(n.min(1 << 16)).ok()?);
        for _ in 0..n {
            let (&field, rest) = bytes.split_first()?;
            bytes = rest;
            let len = read_varint(&mut bytes)?;
            let term = std::str::from_utf8(take(&mut bytes, len)?).ok()?.to_owned();
            let hash = u32::from_be_bytes(take(&mut bytes, 4)?.try_into().ok()?);
            cells.push((field, term, hash));
        }
        bytes.is_empty().then_some(Record { partition, date_ms, cells })
    }
}
