//! The byte layout of an index kept in HBase (this file is its one
//! owner; the entries' own bytes are the store's `EntryCodec`'s): the
//! index table's name, its family, the status cell and the index's own
//! row. A leaf.

/// The index tables' one family.
pub(crate) const FAMILY: &str = "e";
/// An entry's status cell.
pub(crate) const STATUS: &[u8] = b"s";
/// The index's own row, after every entry: `e:b` while being built.
pub(crate) const META: &[u8] = &[0xff];
pub(crate) const BUILDING: &[u8] = b"b";
pub(crate) const VERIFIED: u8 = 1;
pub(crate) const UNVERIFIED: u8 = 2;

/// How long a write may take from its first phase to its last: an
/// unverified entry older than this whose row does not have it is a
/// write's that failed, and is deleted.
pub(crate) const WRITE_WINDOW_MS: u64 = 30_000;

/// What an index table's name holds between the table's and the index's.
pub(crate) const MARK: &str = ".idx.";

/// The HBase table of index `index` of `table`.
pub(crate) fn companion(table: &str, index: &str) -> String {
    format!("{table}{MARK}{index}")
}

/// The status cell's value.
pub(crate) fn status_value(status: u8, expiry: u64) -> Vec<u8> {
    let mut v = vec![status];
    if expiry != u64::MAX {
        v.extend_from_slice(&expiry.to_be_bytes());
    }
    v
}

/// A status cell's status and expiry (`None`: not a status).
pub(crate) fn parse_status(value: &[u8]) -> Option<(u8, u64)> {
    let (&status, rest) = value.split_first()?;
    let expiry = match rest.len() {
        0 => u64::MAX,
        8 => u64::from_be_bytes(rest.try_into().ok()?),
        _ => return None,
    };
    Some((status, expiry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_values_round_trip() {
        assert_eq!(parse_status(&status_value(VERIFIED, u64::MAX)), Some((VERIFIED, u64::MAX)));
        assert_eq!(parse_status(&status_value(UNVERIFIED, 1234)), Some((UNVERIFIED, 1234)));
        assert_eq!(parse_status(b""), None);
        assert_eq!(parse_status(b"\x01abc"), None);
    }
}
