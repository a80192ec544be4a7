//! Change-feed consumers: named positions in the feed that hold it from
//! being trimmed past them, each for at most its retention.
//!
//! ```text
//! key   = "feed/consumer/" ‖ name (UTF-8)
//! value = position (u64 BE) ‖ retention ms (u64 BE) ‖ updated ms (u64 BE)
//! ```
//!
//! `position` is the last sequence the consumer acknowledged: it has
//! handled every change up to it. A consumer holds the feed entries after
//! its position while the oldest of them is younger than its retention
//! (by the store's clock); past that, trimming goes on without it and the
//! consumer has fallen behind. Builds before consumers existed ignore the
//! records (they trim without them).

use heed::{RoTxn, RwTxn};

use super::META;
use super::feed::Feed;
use crate::error::{Error, ErrorKind, Result};

/// The meta key prefix of consumer records.
const PREFIX: &[u8] = b"feed/consumer/";

/// The longest consumer name, in bytes.
pub const MAX_CONSUMER_NAME: usize = 64;

/// How long a consumer holds the feed when it does not say: 7 days.
pub const DEFAULT_RETENTION_MS: u64 = 7 * 24 * 3600 * 1000;

/// The longest a consumer may hold the feed: 30 days.
pub const MAX_RETENTION_MS: u64 = 30 * 24 * 3600 * 1000;

/// The stored name of consumer `name` of `scope` (an access key's uid:
/// `scope/name`, a `/` no client's name holds), or `name` itself for the
/// store's own (the master key's, the CLI's).
pub fn scoped_name(scope: Option<&str>, name: &str) -> String {
    match scope {
        Some(scope) => format!("{scope}/{name}"),
        None => name.to_owned(),
    }
}

/// `stored`'s name within `scope` ([`scoped_name`] undone), or `None` when
/// it is another scope's.
pub fn name_in_scope<'a>(scope: Option<&str>, stored: &'a str) -> Option<&'a str> {
    match (scope, stored.split_once('/')) {
        (None, None) => Some(stored),
        (Some(scope), Some((s, name))) if s == scope => Some(name),
        _ => None,
    }
}

/// Checks a stored name: a client's name, alone or after one scope.
pub fn validate_stored(name: &str) -> Result<()> {
    match name.split_once('/') {
        Some((scope, rest))
            if !scope.is_empty() && scope.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
        {
            validate_name(rest)
        }
        _ => validate_name(name),
    }
}

/// A named reader of the change feed and the position it acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// Its name: 1 to 64 of `A-Z a-z 0-9 _ . -`.
    pub name: String,
    /// The last feed sequence it acknowledged (0: none).
    pub position: u64,
    /// How long it holds the entries after its position (ms).
    pub retention_ms: u64,
    /// When it was created or last acknowledged (ms of the store's clock).
    pub updated_ms: u64,
}

fn key(name: &str) -> Vec<u8> {
    [PREFIX, name.as_bytes()].concat()
}

fn encode(c: &Consumer) -> [u8; 24] {
    c.record()
}

fn decode(k: &[u8], v: &[u8]) -> Result<Consumer> {
    let corrupted = |detail: &str| Error::corrupted(META, k, detail);
    let name = std::str::from_utf8(&k[PREFIX.len().min(k.len())..])
        .map_err(|_| corrupted("consumer name is not UTF-8"))?;
    Consumer::from_record(name, v).ok_or_else(|| corrupted("consumer record is not 24 bytes"))
}

impl Consumer {
    /// Its record's value (the layout above; HBase's consumers table keeps
    /// the same bytes).
    pub fn record(&self) -> [u8; 24] {
        let mut out = [0u8; 24];
        out[..8].copy_from_slice(&self.position.to_be_bytes());
        out[8..16].copy_from_slice(&self.retention_ms.to_be_bytes());
        out[16..].copy_from_slice(&self.updated_ms.to_be_bytes());
        out
    }

    /// The consumer `name` whose record's value is `v`; `None` when `v`
    /// is not one.
    pub fn from_record(name: &str, v: &[u8]) -> Option<Consumer> {
        let v: &[u8; 24] = v.try_into().ok()?;
        let at = |i: usize| u64::from_be_bytes(v[i..i + 8].try_into().unwrap_or_default());
        Some(Consumer { name: name.to_owned(), position: at(0), retention_ms: at(8), updated_ms: at(16) })
    }
}

/// Where a consumer stands against the feed ([`crate::Store::consumer_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerState {
    /// It still holds the feed from being trimmed past its position.
    pub holding: bool,
    /// Changes after its position were trimmed: it must read the table
    /// again and move its position.
    pub fell_behind: bool,
    /// Changes committed after its position (of every table).
    pub pending: u64,
    /// The oldest sequence the feed holds.
    pub oldest: u64,
    /// The sequence of the next change.
    pub next_seq: u64,
}

/// Checks a consumer name as a client gives it.
pub fn validate_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("it names a directory (. and .. are refused)")
    } else if name.len() > MAX_CONSUMER_NAME {
        Some("it is longer than 64 bytes")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        Some("it may hold only A-Z, a-z, 0-9, '_', '.' and '-'")
    } else {
        None
    };
    match reason {
        Some(reason) => {
            Err(ErrorKind::InvalidName { what: "consumer", name: name.to_owned(), reason }.into())
        }
        None => Ok(()),
    }
}

impl Feed {
    /// The oldest sequence the feed holds; the next one when it is empty.
    /// Every sequence below it was trimmed (sequences are never skipped).
    pub fn oldest(&self, txn: &RoTxn<'_>) -> Result<u64> {
        let first = self.db.first(txn).map_err(|e| Error::lmdb("read feed", e))?;
        match first {
            Some((k, _)) => {
                let seq: [u8; 8] =
                    k.try_into().map_err(|_| Error::corrupted(super::FEED, k, "sequence is not 8 bytes"))?;
                Ok(u64::from_be_bytes(seq))
            }
            None => self.next_seq(txn),
        }
    }

    /// Checks that the feed holds every change after `since`: `FellBehind`
    /// when some were trimmed, `PastFeedEnd` when `since` is past its end.
    pub fn check_after(&self, txn: &RoTxn<'_>, since: u64) -> Result<()> {
        let next = self.next_seq(txn)?;
        if since >= next {
            return Err(ErrorKind::PastFeedEnd { since, last: next - 1 }.into());
        }
        let oldest = self.oldest(txn)?;
        if since.saturating_add(1) < oldest {
            return Err(ErrorKind::FellBehind { since, oldest }.into());
        }
        Ok(())
    }

    /// The consumer called `name`, if any.
    pub fn consumer(&self, txn: &RoTxn<'_>, name: &str) -> Result<Option<Consumer>> {
        let k = key(name);
        match self.meta.get(txn, &k).map_err(|e| Error::lmdb("read consumer", e))? {
            Some(v) => Ok(Some(decode(&k, v)?)),
            None => Ok(None),
        }
    }

    /// Every consumer, by name.
    pub fn consumers(&self, txn: &RoTxn<'_>) -> Result<Vec<Consumer>> {
        let mut out = Vec::new();
        let iter = self.meta.prefix_iter(txn, PREFIX).map_err(|e| Error::lmdb("read consumers", e))?;
        for item in iter {
            let (k, v) = item.map_err(|e| Error::lmdb("read consumers", e))?;
            out.push(decode(k, v)?);
        }
        Ok(out)
    }

    /// Writes `consumer`'s record.
    pub fn put_consumer(&self, wtxn: &mut RwTxn, consumer: &Consumer) -> Result<()> {
        self.meta
            .put(wtxn, &key(&consumer.name), &encode(consumer))
            .map_err(|e| Error::lmdb("write consumer", e))
    }

    /// Removes the consumer called `name`; whether there was one.
    pub fn delete_consumer(&self, wtxn: &mut RwTxn, name: &str) -> Result<bool> {
        self.meta.delete(wtxn, &key(name)).map_err(|e| Error::lmdb("delete consumer", e))
    }

    /// Whether `consumer` still holds the feed at `now_ms`: the oldest
    /// entry after its position is still there and was committed within
    /// its retention (or there is none yet, or its time is unknown).
    pub fn holds(&self, txn: &RoTxn<'_>, consumer: &Consumer, now_ms: u64) -> Result<bool> {
        let first_held = consumer.position.saturating_add(1);
        if first_held >= self.next_seq(txn)? {
            return Ok(true);
        }
        if first_held < self.oldest(txn)? {
            return Ok(false);
        }
        Ok(match self.time_of(txn, first_held)? {
            Some(ms) => now_ms.saturating_sub(ms) <= consumer.retention_ms,
            None => true,
        })
    }

    /// The greatest sequence at or below `up_to` that trimming may reach
    /// at `now_ms`: not past any consumer that still holds the feed.
    pub fn trim_limit(&self, txn: &RoTxn<'_>, up_to: u64, now_ms: u64) -> Result<u64> {
        let mut limit = up_to;
        for consumer in self.consumers(txn)? {
            if consumer.position < limit && self.holds(txn, &consumer, now_ms)? {
                limit = consumer.position;
            }
        }
        Ok(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_bytes_are_pinned_and_round_trip() {
        let c = Consumer { name: "warehouse".into(), position: 7, retention_ms: 9, updated_ms: 11 };
        let bytes = encode(&c);
        assert_eq!(&bytes[..8], &7u64.to_be_bytes());
        assert_eq!(&bytes[8..16], &9u64.to_be_bytes());
        assert_eq!(&bytes[16..], &11u64.to_be_bytes());
        assert_eq!(key("warehouse"), b"feed/consumer/warehouse");
        assert_eq!(decode(&key("warehouse"), &bytes).unwrap(), c);
        assert!(matches!(decode(&key("w"), &bytes[..23]).unwrap_err().kind(), ErrorKind::Corrupted { .. }));
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", ".", "..", "a/b", "sp ace", &"x".repeat(65), "é"] {
            assert!(
                matches!(validate_name(bad).unwrap_err().kind(), ErrorKind::InvalidName { .. }),
                "{bad:?}"
            );
        }
        for good in ["a", "warehouse-1", "cache.v2_x", &"x".repeat(64), "...", ".a"] {
            validate_name(good).unwrap();
        }
        // A scope's names.
        validate_stored("0123abcd/reader").unwrap();
        for bad in ["a/b/c", "/x", "a b/x", "k/..", "k/"] {
            assert!(validate_stored(bad).is_err(), "{bad:?}");
        }
        assert_eq!(scoped_name(Some("k1"), "r"), "k1/r");
        assert_eq!(name_in_scope(Some("k1"), "k1/r"), Some("r"));
        assert_eq!(name_in_scope(Some("k2"), "k1/r"), None);
        assert_eq!(name_in_scope(None, "k1/r"), None);
        assert_eq!(name_in_scope(None, "r"), Some("r"));
        assert_eq!(name_in_scope(Some("k1"), "r"), None);
    }
}
