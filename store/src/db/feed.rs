//! The change feed: one entry per row a commit touched, in commit order,
//! written in the same transaction as the rows.
//!
//! ```text
//! key   = sequence (u64 BE)
//! value = table name length (u16 BE) ‖ table name ‖ row key (unsalted)
//! ```
//!
//! The next sequence is kept in the metadata database under
//! `feed/next_seq` (u64 BE), so trimming the feed never reuses one. Each
//! commit's time is kept there too, under `feed/time/` ‖ the commit's
//! first sequence (u64 BE), as milliseconds (u64 BE) of the store's
//! clock: the time of any sequence is the one of the greatest key at or
//! below it (stores written before times were kept have none: unknown).

use std::ops::Bound;

use heed::{PutFlags, RoTxn, RwTxn};

use super::{BytesDb, FEED, META, META_FEED_NEXT_SEQ, META_FEED_TIME_PREFIX};
use crate::error::{Error, ErrorKind, Result};

/// What a committed batch wrote to the change feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// Feed sequence of the first row touched; `None` for an empty batch.
    pub first_seq: Option<u64>,
    /// Feed sequence of the last row touched.
    pub last_seq: Option<u64>,
    /// Distinct rows touched.
    pub rows: usize,
}

/// One change-feed entry: a row that a commit touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEntry {
    /// Position in the feed, increasing with every row of every commit.
    pub seq: u64,
    /// The table.
    pub table: String,
    /// The row key.
    pub row: Vec<u8>,
}

/// The feed's database and the metadata database holding its counter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Feed {
    pub db: BytesDb,
    pub meta: BytesDb,
}

/// The metadata key of the time of the commit whose first sequence is
/// `first_seq`.
fn time_key(first_seq: u64) -> Vec<u8> {
    [META_FEED_TIME_PREFIX, &first_seq.to_be_bytes()[..]].concat()
}

/// The stored value of a feed entry.
fn encode_value(out: &mut Vec<u8>, table: &str, row: &[u8]) {
    out.clear();
    // Table names are at most 64 bytes (validated).
    let len = u16::try_from(table.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(table.as_bytes());
    out.extend_from_slice(row);
}

fn decode(k: &[u8], v: &[u8]) -> Result<FeedEntry> {
    let corrupted = |detail: &str| Error::corrupted(FEED, k, detail);
    let seq = u64::from_be_bytes(k.try_into().map_err(|_| corrupted("sequence is not 8 bytes"))?);
    let len_bytes: [u8; 2] =
        v.get(..2).and_then(|b| b.try_into().ok()).ok_or_else(|| corrupted("short entry"))?;
    let len = usize::from(u16::from_be_bytes(len_bytes));
    let table = v.get(2..2 + len).ok_or_else(|| corrupted("short table name"))?;
    let table = std::str::from_utf8(table).map_err(|_| corrupted("table name is not UTF-8"))?;
    Ok(FeedEntry { seq, table: table.to_owned(), row: v[2 + len..].to_vec() })
}

impl Feed {
    /// Appends one entry per touched row, advances the counter and records
    /// the commit's time (`now_ms`).
    pub fn append(&self, wtxn: &mut RwTxn, touched: &[(&str, &[u8])], now_ms: u64) -> Result<CommitInfo> {
        if touched.is_empty() {
            return Ok(CommitInfo { first_seq: None, last_seq: None, rows: 0 });
        }
        let first = self.next_seq(wtxn)?;
        let mut seq = first;
        let mut value = Vec::new();
        for (table, row) in touched {
            encode_value(&mut value, table, row);
            self.db
                .put_with_flags(wtxn, PutFlags::APPEND, &seq.to_be_bytes(), &value)
                .map_err(|e| Error::lmdb("append feed", e))?;
            seq += 1;
        }
        self.meta
            .put(wtxn, META_FEED_NEXT_SEQ, &seq.to_be_bytes())
            .map_err(|e| Error::lmdb("write feed sequence", e))?;
        self.meta
            .put(wtxn, &time_key(first), &now_ms.to_be_bytes())
            .map_err(|e| Error::lmdb("write feed time", e))?;
        Ok(CommitInfo { first_seq: Some(first), last_seq: Some(seq - 1), rows: touched.len() })
    }

    /// The sequence the next committed row gets, as `txn` sees it.
    pub fn next_seq(&self, txn: &RoTxn<'_>) -> Result<u64> {
        match self.meta.get(txn, META_FEED_NEXT_SEQ).map_err(|e| Error::lmdb("read feed sequence", e))? {
            None => Ok(1),
            Some(bytes) => {
                let arr: [u8; 8] = bytes.try_into().map_err(|_| ErrorKind::Corrupted {
                    db: META.to_owned(),
                    key: "feed/next_seq".to_owned(),
                    detail: "not 8 bytes".to_owned(),
                })?;
                Ok(u64::from_be_bytes(arr))
            }
        }
    }

    /// Entries with `seq >= from_seq`, at most `limit`, in order.
    pub fn since(&self, txn: &RoTxn<'_>, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        let range = (Bound::Included(&from_seq.to_be_bytes()[..]), Bound::Unbounded);
        let mut out = Vec::new();
        for item in self.db.range(txn, &range).map_err(|e| Error::lmdb("read feed", e))? {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item.map_err(|e| Error::lmdb("read feed", e))?;
            out.push(decode(k, v)?);
        }
        Ok(out)
    }

    /// When the commit holding `seq` was made (ms of the store's clock);
    /// `None` when no time was kept for it.
    pub fn time_of(&self, txn: &RoTxn<'_>, seq: u64) -> Result<Option<u64>> {
        let (lower, upper) = (time_key(0), time_key(seq));
        let range = (Bound::Included(&lower[..]), Bound::Included(&upper[..]));
        let mut iter = self.meta.rev_range(txn, &range).map_err(|e| Error::lmdb("read feed time", e))?;
        let Some(item) = iter.next() else { return Ok(None) };
        let (k, v) = item.map_err(|e| Error::lmdb("read feed time", e))?;
        let ms: [u8; 8] = v.try_into().map_err(|_| Error::corrupted(META, k, "feed time is not 8 bytes"))?;
        Ok(Some(u64::from_be_bytes(ms)))
    }

    /// Removes entries with `seq <= up_to_seq`, and the times of commits
    /// wholly below the entries kept; returns how many entries.
    pub fn trim(&self, wtxn: &mut RwTxn, up_to_seq: u64) -> Result<u64> {
        let upper = up_to_seq.to_be_bytes();
        let range = (Bound::Unbounded, Bound::Included(&upper[..]));
        let n = self.db.delete_range(wtxn, &range).map_err(|e| Error::lmdb("trim feed", e))?;
        // The commit holding the first entry kept keeps its time.
        let kept = time_key(up_to_seq.saturating_add(1));
        let first_kept = {
            let range = (Bound::Included(&time_key(0)[..]), Bound::Included(&kept[..]));
            let mut iter =
                self.meta.rev_range(wtxn, &range).map_err(|e| Error::lmdb("trim feed times", e))?;
            match iter.next() {
                Some(item) => Some(item.map_err(|e| Error::lmdb("trim feed times", e))?.0.to_vec()),
                None => None,
            }
        };
        if let Some(first_kept) = first_kept {
            let range = (Bound::Included(&time_key(0)[..]), Bound::Excluded(&first_kept[..]));
            self.meta.delete_range(wtxn, &range).map_err(|e| Error::lmdb("trim feed times", e))?;
        }
        Ok(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry layout is pinned: a store written by one build is read by
    /// the next.
    #[test]
    fn entry_bytes_are_pinned_and_round_trip() {
        let mut v = Vec::new();
        encode_value(&mut v, "mail", b"a\x00b");
        assert_eq!(v, b"\x00\x04maila\x00b");
        let entry = decode(&7u64.to_be_bytes(), &v).unwrap();
        assert_eq!(entry, FeedEntry { seq: 7, table: "mail".into(), row: b"a\x00b".to_vec() });
        // Sequences are big-endian, so entries sort in commit order.
        assert!(255u64.to_be_bytes() < 256u64.to_be_bytes());
    }

    #[test]
    fn damaged_entries_are_corrupted_not_panics() {
        for (k, v) in [
            (&b"short"[..], &b"\x00\x01t"[..]),
            (&[0; 8][..], &b"\x00"[..]),
            (&[0; 8][..], &b"\x00\x09ab"[..]),
        ] {
            assert!(matches!(decode(k, v).unwrap_err().kind(), ErrorKind::Corrupted { .. }));
        }
    }
}
