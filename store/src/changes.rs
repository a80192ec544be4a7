//! The change feed for others and its consumers, wherever the tables live:
//! the seam `GET /tables/{t}/changes`, `/consumers` and `rowsearch changes`
//! read through. The store answers from its own feed (`db::feed`,
//! `db::consumers`); a place elsewhere (HBase) from what it keeps there,
//! with that place's guarantees (its implementation says which).

use crate::db::consumers::{Consumer, ConsumerState};
use crate::db::feed::FeedEntry;
use crate::error::Result;
use crate::store::Store;

/// What a read of the feed after a sequence found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedRead {
    /// The entries after the sequence asked (of every table), in order.
    /// Entries that share a sequence (a place whose sequences are times)
    /// are never split between two reads.
    pub entries: Vec<FeedEntry>,
    /// The last sequence of the feed when it was read: nothing at or
    /// below it can be added later.
    pub last_seq: u64,
    /// Whether `entries` are every entry up to `last_seq` (none was left
    /// for a later read).
    pub whole: bool,
}

/// The change feed and its consumers (see the module docs).
pub trait ChangeFeed {
    /// Entries after `since` (`seq > since`), about `look_at` of them at
    /// most, checking first that the feed still holds every one of them.
    ///
    /// # Errors
    /// `FellBehind` when entries after `since` are gone; `PastFeedEnd`
    /// when `since` is past the feed's end; the place's own failures.
    fn changes_after(&self, since: u64, look_at: usize) -> Result<FeedRead>;

    /// The oldest sequence the feed holds.
    ///
    /// # Errors
    /// The place's own failures.
    fn feed_oldest(&self) -> Result<u64>;

    /// Every consumer, by name.
    ///
    /// # Errors
    /// The place's own failures.
    fn consumers(&self) -> Result<Vec<Consumer>>;

    /// The consumer called `name`.
    ///
    /// # Errors
    /// `UnknownConsumer`; the place's own failures.
    fn consumer(&self, name: &str) -> Result<Consumer>;

    /// Creates the consumer `name` or acknowledges its position (as
    /// [`Store::set_consumer`]).
    ///
    /// # Errors
    /// As [`Store::set_consumer`]; the place's own failures.
    fn set_consumer(&self, name: &str, position: Option<u64>, retention_ms: Option<u64>) -> Result<Consumer>;

    /// Removes the consumer `name`; whether there was one.
    ///
    /// # Errors
    /// The place's own failures.
    fn delete_consumer(&self, name: &str) -> Result<bool>;

    /// Where consumer `c` stands against the feed.
    ///
    /// # Errors
    /// The place's own failures.
    fn consumer_state(&self, c: &Consumer) -> Result<ConsumerState>;
}

impl ChangeFeed for Store {
    fn changes_after(&self, since: u64, look_at: usize) -> Result<FeedRead> {
        let rtxn = self.begin_read()?;
        let entries = rtxn.changes_after(since, look_at)?;
        let whole = entries.len() < look_at;
        Ok(FeedRead { entries, last_seq: rtxn.next_seq()? - 1, whole })
    }

    fn feed_oldest(&self) -> Result<u64> {
        self.begin_read()?.feed_oldest()
    }

    fn consumers(&self) -> Result<Vec<Consumer>> {
        Store::consumers(self)
    }

    fn consumer(&self, name: &str) -> Result<Consumer> {
        Store::consumer(self, name)
    }

    fn set_consumer(&self, name: &str, position: Option<u64>, retention_ms: Option<u64>) -> Result<Consumer> {
        Store::set_consumer(self, name, position, retention_ms)
    }

    fn delete_consumer(&self, name: &str) -> Result<bool> {
        Store::delete_consumer(self, name)
    }

    fn consumer_state(&self, c: &Consumer) -> Result<ConsumerState> {
        Store::consumer_state(self, c)
    }
}
