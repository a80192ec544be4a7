//! The change feed as the store's API: reading and trimming it, and its
//! consumers ([`Store::set_consumer`] and the rest); the layouts are
//! `db::feed`'s and `db::consumers`'.

use super::Store;
use crate::db::consumers::{Consumer, ConsumerState, DEFAULT_RETENTION_MS, validate_stored};
use crate::db::feed::FeedEntry;
use crate::error::{ErrorKind, Result};

impl Store {
    /// Change-feed entries with `seq >= from_seq`, at most `limit`, in order.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        let rtxn = self.env.read_txn()?;
        self.feed.since(&rtxn.txn, from_seq, limit)
    }

    /// The sequence the next committed row will get (1 for a new store).
    ///
    /// # Errors
    /// `Lmdb`.
    pub fn next_seq(&self) -> Result<u64> {
        let rtxn = self.env.read_txn()?;
        self.feed.next_seq(&rtxn.txn)
    }

    /// Removes feed entries with `seq <= up_to_seq`, but none after the
    /// position of a consumer still holding the feed
    /// ([`Store::set_consumer`]); returns how many.
    ///
    /// # Errors
    /// `Lmdb`, `Poisoned`.
    pub fn trim_feed(&self, up_to_seq: u64) -> Result<u64> {
        let now_ms = self.clock.now_ms();
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| {
            let limit = self.feed.trim_limit(wtxn, up_to_seq, now_ms)?;
            self.feed.trim(wtxn, limit)
        })
    }

    /// Every change-feed consumer, by name.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn consumers(&self) -> Result<Vec<Consumer>> {
        let rtxn = self.env.read_txn()?;
        self.feed.consumers(&rtxn.txn)
    }

    /// The consumer called `name`.
    ///
    /// # Errors
    /// `UnknownConsumer`, `Corrupted`, `Lmdb`.
    pub fn consumer(&self, name: &str) -> Result<Consumer> {
        let rtxn = self.env.read_txn()?;
        self.feed
            .consumer(&rtxn.txn, name)?
            .ok_or_else(|| ErrorKind::UnknownConsumer { name: name.to_owned() }.into())
    }

    /// Creates the consumer `name` or acknowledges its position.
    ///
    /// A new consumer starts at `position`, or at the feed's end (it sees
    /// the changes committed after this call). An existing one moves to
    /// `position` when given (back as well as forward, to read changes
    /// again, while the feed holds them). `retention_ms` (default 7 days,
    /// at most [`crate::MAX_RETENTION_MS`]: a longer one is taken as it)
    /// is how long it holds the feed's entries after its position from
    /// being trimmed. A name may be one an access key's scope holds
    /// ([`crate::scoped_name`]).
    ///
    /// # Errors
    /// `InvalidName`; `FellBehind` when `position` is below what the feed
    /// holds, `PastFeedEnd` when it is past its last sequence; `Lmdb`,
    /// `Poisoned`.
    pub fn set_consumer(
        &self,
        name: &str,
        position: Option<u64>,
        retention_ms: Option<u64>,
    ) -> Result<Consumer> {
        validate_stored(name)?;
        let now_ms = self.clock.now_ms();
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| {
            let existing = self.feed.consumer(wtxn, name)?;
            let position = match (position, &existing) {
                (Some(p), _) => {
                    self.feed.check_after(wtxn, p)?;
                    p
                }
                (None, Some(c)) => c.position,
                (None, None) => self.feed.next_seq(wtxn)? - 1,
            };
            let retention_ms = retention_ms
                .or(existing.as_ref().map(|c| c.retention_ms))
                .unwrap_or(DEFAULT_RETENTION_MS)
                .min(crate::MAX_RETENTION_MS);
            let consumer = Consumer { name: name.to_owned(), position, retention_ms, updated_ms: now_ms };
            self.feed.put_consumer(wtxn, &consumer)?;
            Ok(consumer)
        })
    }

    /// Removes the consumer `name` (the feed is no longer held for it);
    /// whether there was one.
    ///
    /// # Errors
    /// `Lmdb`, `Poisoned`.
    pub fn delete_consumer(&self, name: &str) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| self.feed.delete_consumer(wtxn, name))
    }

    /// Whether consumer `c` still holds the feed (its oldest unacknowledged
    /// change is within its retention) and whether the feed still holds
    /// every change after its position.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn consumer_state(&self, c: &Consumer) -> Result<ConsumerState> {
        let rtxn = self.env.read_txn()?;
        let next_seq = self.feed.next_seq(&rtxn.txn)?;
        let oldest = self.feed.oldest(&rtxn.txn)?;
        Ok(ConsumerState {
            holding: self.feed.holds(&rtxn.txn, c, self.clock.now_ms())?,
            fell_behind: c.position.saturating_add(1) < oldest,
            pending: next_seq.saturating_sub(c.position.saturating_add(1)),
            oldest,
            next_seq,
        })
    }
}
