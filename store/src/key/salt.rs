//! The salt byte: the one place that knows a salted table stores each row
//! under `bucket (u8) ‖ row key`, with the bucket chosen by
//! [`RowKeySchema::bucket`](super::rowkey::RowKeySchema::bucket). Reads and
//! writes of a salted table take unsalted keys; these helpers add and strip
//! the byte.

use std::ops::Bound;

use super::range::RowRange;

/// The stored key of `key` in salt bucket `bucket`.
pub(crate) fn salted(bucket: u8, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 1);
    out.push(bucket);
    out.extend_from_slice(key);
    out
}

/// The first stored key of a salt bucket (where its region starts).
pub(crate) fn bucket_start(bucket: u8) -> Vec<u8> {
    vec![bucket]
}

/// The row key of a stored key of a salted table (the salt byte stripped).
pub(crate) fn unsalted(stored: &[u8]) -> &[u8] {
    stored.get(1..).unwrap_or_default()
}

/// The escaped key without its escaped salt byte (0x00 escapes to two bytes).
pub(crate) fn unsalted_esc(salted: bool, esc: &[u8]) -> &[u8] {
    match (salted, esc.first()) {
        (false, _) | (true, None) => esc,
        (true, Some(0)) => esc.get(2..).unwrap_or_default(),
        (true, Some(_)) => &esc[1..],
    }
}

/// The stored-key range of one salt bucket (`None`: unsalted) for an
/// unsalted row range.
pub(crate) fn stored_range(range: &RowRange, bucket: Option<u8>) -> RowRange {
    let Some(b) = bucket else { return range.clone() };
    let with_salt = |key: &Vec<u8>| salted(b, key);
    let lo = match &range.lo {
        Bound::Included(k) => Bound::Included(with_salt(k)),
        Bound::Excluded(k) => Bound::Excluded(with_salt(k)),
        Bound::Unbounded => Bound::Included(bucket_start(b)),
    };
    let hi = match &range.hi {
        Bound::Included(k) => Bound::Included(with_salt(k)),
        Bound::Excluded(k) => Bound::Excluded(with_salt(k)),
        Bound::Unbounded => match b.checked_add(1) {
            Some(next) => Bound::Excluded(bucket_start(next)),
            None => Bound::Unbounded,
        },
    };
    RowRange { lo, hi }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::push_escaped;

    /// The layout is pinned: one byte, the bucket, before the row key.
    #[test]
    fn salted_key_bytes_are_pinned() {
        assert_eq!(salted(3, b"ann"), b"\x03ann");
        assert_eq!(unsalted(&salted(3, b"ann")), b"ann");
        assert_eq!(bucket_start(7), [7]);
        // Stored keys of one bucket sort together, buckets in order.
        assert!(salted(0, b"zz") < salted(1, b"") && salted(1, b"") < salted(1, b"a"));
    }

    #[test]
    fn escaped_salt_byte_is_stripped_even_when_zero() {
        for bucket in [0u8, 1, 255] {
            let mut esc = Vec::new();
            push_escaped(&mut esc, &salted(bucket, b"a\x00b"));
            let mut plain = Vec::new();
            push_escaped(&mut plain, b"a\x00b");
            assert_eq!(unsalted_esc(true, &esc), &plain[..]);
            assert_eq!(unsalted_esc(false, &plain), &plain[..]);
        }
    }

    #[test]
    fn a_bucket_range_stays_in_its_bucket() {
        let r = stored_range(&RowRange::all(), Some(4));
        assert_eq!((r.lo, r.hi), (Bound::Included(vec![4]), Bound::Excluded(vec![5])));
        let r = stored_range(&RowRange::prefix(b"ab"), Some(255));
        assert_eq!(r.lo, Bound::Included(vec![255, b'a', b'b']));
        assert_eq!(r.hi, Bound::Excluded(vec![255, b'a', b'c']));
    }
}
