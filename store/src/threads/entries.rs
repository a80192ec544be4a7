//! The bytes of a table's thread entries (`t/<table>/th`): the one owner
//! of that layout. Three kinds of entry, told apart by their first byte:
//!
//! | key | value |
//! |---|---|
//! | `i` ‖ partition length (u16 BE) ‖ partition ‖ id | thread (u64 BE) ‖ row key (empty: a ghost, an id only referred to) |
//! | `m` ‖ thread (u64 BE) ‖ id | partition length (u16 BE) ‖ partition ‖ row key (empty: a ghost) |
//! | `s` ‖ partition length (u16 BE) ‖ partition ‖ subject hash (u64 BE) ‖ date ms (u64 BE) ‖ id | `01`: a reply without references, `00`: any other message |
//!
//! A member entry's row key is its id entry's, written together (format 7
//! kept only the partition there: a thread's rows took a read of each
//! member's id entry; the upgrade to format 8 copies the rows in).
//!
//! Ids are kept as [`key_part`] makes them: an id longer than
//! [`MAX_ID_BYTES`] is kept as `00` and its 128-bit xxh3 (ids as they are
//! never start with a NUL byte), partitions the same way past
//! [`MAX_PARTITION_BYTES`], so every key fits LMDB's 511 bytes.

use std::borrow::Cow;

/// Longest id kept as it is in a key.
pub const MAX_ID_BYTES: usize = 250;
/// Longest partition kept as it is in a key (longer ones are hashed too).
pub const MAX_PARTITION_BYTES: usize = 200;

const BY_ID: u8 = b'i';
const MEMBER: u8 = b'm';
const SUBJECT: u8 = b's';

/// An id or partition as it is kept in keys.
pub fn key_part(bytes: &[u8], max: usize) -> Cow<'_, [u8]> {
    if bytes.len() <= max && bytes.first() != Some(&0) {
        Cow::Borrowed(bytes)
    } else {
        let mut out = vec![0u8];
        out.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(bytes).to_be_bytes());
        Cow::Owned(out)
    }
}

fn partition_prefix(kind: u8, partition: &[u8]) -> Vec<u8> {
    let partition = key_part(partition, MAX_PARTITION_BYTES);
    let mut key = Vec::with_capacity(3 + partition.len() + 64);
    key.push(kind);
    key.extend_from_slice(&(partition.len() as u16).to_be_bytes());
    key.extend_from_slice(&partition);
    key
}

/// The prefixes of a partition's id entries and subject entries (every
/// entry a message of the partition reads when it is linked, but the
/// members of threads it merges).
pub fn partition_prefixes(partition: &[u8]) -> [Vec<u8>; 2] {
    [partition_prefix(BY_ID, partition), partition_prefix(SUBJECT, partition)]
}

/// The key of an id's entry (`id` as kept: see [`key_part`]).
pub fn by_id_key(partition: &[u8], id: &[u8]) -> Vec<u8> {
    let mut key = partition_prefix(BY_ID, partition);
    key.extend_from_slice(id);
    key
}

/// An id entry's value: its thread and its row (empty for a ghost).
pub fn by_id_value(thread: u64, row: &[u8]) -> Vec<u8> {
    [&thread.to_be_bytes()[..], row].concat()
}

/// An id entry's thread and row; `None` when the bytes are too short.
pub fn decode_by_id(value: &[u8]) -> Option<(u64, &[u8])> {
    let (thread, row) = value.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*thread), row))
}

/// The prefix of every member entry, of every thread.
pub fn all_members_prefix() -> &'static [u8] {
    &[MEMBER]
}

/// The prefix of a thread's member entries.
pub fn members_prefix(thread: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(9 + 64);
    key.push(MEMBER);
    key.extend_from_slice(&thread.to_be_bytes());
    key
}

/// The key of a member entry (`id` as kept).
pub fn member_key(thread: u64, id: &[u8]) -> Vec<u8> {
    let mut key = members_prefix(thread);
    key.extend_from_slice(id);
    key
}

/// A member entry's value: the partition its id lives in and its row
/// (empty for a ghost).
pub fn member_value(partition: &[u8], row: &[u8]) -> Vec<u8> {
    let len = u16::try_from(partition.len()).unwrap_or(u16::MAX);
    [&len.to_be_bytes()[..], &partition[..usize::from(len)], row].concat()
}

/// A member entry's partition and row; `None` when the bytes are too
/// short.
pub fn decode_member(value: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = value.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The id part of a member key.
pub fn member_id(key: &[u8]) -> &[u8] {
    key.get(9..).unwrap_or_default()
}

/// The prefix of a subject's entries in a partition.
pub fn subject_prefix(partition: &[u8], subject_hash: u64) -> Vec<u8> {
    let mut key = partition_prefix(SUBJECT, partition);
    key.extend_from_slice(&subject_hash.to_be_bytes());
    key
}

/// The key of a subject entry (`id` as kept).
pub fn subject_key(partition: &[u8], subject_hash: u64, date_ms: u64, id: &[u8]) -> Vec<u8> {
    let mut key = subject_prefix(partition, subject_hash);
    key.extend_from_slice(&date_ms.to_be_bytes());
    key.extend_from_slice(id);
    key
}

/// A subject entry's date and id, after its prefix of `prefix_len` bytes.
pub fn decode_subject(key: &[u8], prefix_len: usize) -> Option<(u64, &[u8])> {
    let rest = key.get(prefix_len..)?;
    let (date, id) = rest.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*date), id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_pinned() {
        assert_eq!(by_id_key(b"ann", b"a@b"), b"i\x00\x03anna@b".to_vec());
        assert_eq!(by_id_value(1, b"k"), b"\0\0\0\0\0\0\0\x01k".to_vec());
        assert_eq!(decode_by_id(&by_id_value(7, b"row")), Some((7, &b"row"[..])));
        assert_eq!(member_key(2, b"x"), b"m\0\0\0\0\0\0\0\x02x".to_vec());
        assert_eq!(member_id(&member_key(2, b"x")), b"x");
        assert_eq!(member_value(b"ann", b"k1"), b"\x00\x03annk1".to_vec());
        assert_eq!(decode_member(&member_value(b"ann", b"k1")), Some((&b"ann"[..], &b"k1"[..])));
        assert_eq!(decode_member(&member_value(b"", b"")), Some((&b""[..], &b""[..])));
        assert_eq!(decode_member(b"\x00\x05ann"), None);
        let key = subject_key(b"", 5, 9, b"q");
        assert_eq!(key, b"s\0\0\0\0\0\0\0\0\0\x05\0\0\0\0\0\0\0\x09q".to_vec());
        assert_eq!(decode_subject(&key, subject_prefix(b"", 5).len()), Some((9, &b"q"[..])));
    }

    #[test]
    fn long_ids_and_leading_nuls_are_hashed() {
        let long = vec![b'a'; MAX_ID_BYTES + 1];
        assert_eq!(key_part(&long, MAX_ID_BYTES).len(), 17);
        assert_eq!(key_part(b"\0a", MAX_ID_BYTES).len(), 17);
        assert_ne!(key_part(&long, MAX_ID_BYTES), key_part(b"\0a", MAX_ID_BYTES));
        assert_eq!(key_part(b"ok", MAX_ID_BYTES).as_ref(), b"ok");
    }
}
