//! The change feed for others and its consumers over HBase
//! (`rowsearch_store::ChangeFeed`), with HBase's guarantees, which API.md
//! states:
//! - a change's sequence is the time (ms) its entry was written to
//!   `rowsearch_feed` (by rowsearch for its own writes, by the replication
//!   peer for every client's); several changes may share one, and a read
//!   never splits them;
//! - the feed ends [`SKEW_MARGIN_MS`] before now: an entry stamped a little
//!   earlier than it lands (a slow write, a clock behind) is still read;
//! - the feed keeps every entry for its TTL (a day) and no longer, whatever
//!   the consumers: a consumer holds it for at most that long.

use rowsearch_store::{ChangeFeed, Consumer, ConsumerState, ErrorKind, FeedRead, RowView as _};

use super::view::HbaseView;
use super::{HbaseSource, SKEW_MARGIN_MS, err, now_ms};
use crate::hbase::stream::PROBE;
use crate::hbase::tables::FEED_KEEPS_MS;

/// The oldest sequence the feed says it holds is this much younger than
/// the edge where entries expire: a reader that starts there has a minute
/// to read before it falls behind.
const OLDEST_SLACK_MS: u64 = 60_000;
/// Most entries counted for a consumer's `pending`.
const PENDING_COUNTED: usize = 10_000;

/// Checks that the feed at `now` holds every entry after `since`.
fn check_after(since: u64, now: u64) -> rowsearch_store::Result<()> {
    if since > now {
        return Err(ErrorKind::PastFeedEnd { since, last: now.saturating_sub(SKEW_MARGIN_MS + 1) }.into());
    }
    if since.saturating_add(1) < now.saturating_sub(FEED_KEEPS_MS) {
        return Err(ErrorKind::FellBehind { since, oldest: oldest_at(now) }.into());
    }
    Ok(())
}

fn oldest_at(now: u64) -> u64 {
    now.saturating_sub(FEED_KEEPS_MS) + OLDEST_SLACK_MS
}

impl ChangeFeed for HbaseSource {
    fn changes_after(&self, since: u64, look_at: usize) -> rowsearch_store::Result<FeedRead> {
        let view = HbaseView::for_feed_readers(self);
        let now = view.now_ms();
        check_after(since, now)?;
        let settled = view.settled_seq()?;
        let read = view.feed_since(since.saturating_add(1), look_at)?;
        let whole = read.len() < look_at || read.last().is_some_and(|e| e.seq >= settled);
        let entries: Vec<_> = read.into_iter().filter(|e| e.seq < settled).collect();
        Ok(FeedRead { entries, last_seq: settled.saturating_sub(1).max(since), whole })
    }

    fn feed_oldest(&self) -> rowsearch_store::Result<u64> {
        Ok(oldest_at(now_ms()))
    }

    fn consumers(&self) -> rowsearch_store::Result<Vec<Consumer>> {
        self.tables.consumer_records().map_err(err)
    }

    fn consumer(&self, name: &str) -> rowsearch_store::Result<Consumer> {
        self.tables
            .consumer_record(name)
            .map_err(err)?
            .ok_or_else(|| ErrorKind::UnknownConsumer { name: name.to_owned() }.into())
    }

    fn set_consumer(
        &self,
        name: &str,
        position: Option<u64>,
        retention_ms: Option<u64>,
    ) -> rowsearch_store::Result<Consumer> {
        rowsearch_store::validate_stored_consumer_name(name)?;
        let now = now_ms();
        let existing = self.tables.consumer_record(name).map_err(err)?;
        let position = match (position, &existing) {
            (Some(p), _) => {
                check_after(p, now)?;
                p
            }
            (None, Some(c)) => c.position,
            // Now: it sees what is recorded after this call (an entry
            // recorded before it and landing late is a change made before
            // the consumer was).
            (None, None) => now,
        };
        let retention_ms = retention_ms
            .or(existing.as_ref().map(|c| c.retention_ms))
            .unwrap_or(rowsearch_store::DEFAULT_RETENTION_MS)
            .min(FEED_KEEPS_MS);
        let consumer = Consumer { name: name.to_owned(), position, retention_ms, updated_ms: now };
        self.tables.put_consumer_record(&consumer).map_err(err)?;
        Ok(consumer)
    }

    fn delete_consumer(&self, name: &str) -> rowsearch_store::Result<bool> {
        self.tables.delete_consumer_record(name).map_err(err)
    }

    fn consumer_state(&self, c: &Consumer) -> rowsearch_store::Result<ConsumerState> {
        let now = now_ms();
        let settled = now.saturating_sub(SKEW_MARGIN_MS);
        let first_held = c.position.saturating_add(1);
        let expired_below = now.saturating_sub(FEED_KEEPS_MS);
        let pending = if first_held < settled {
            let entries = self.tables.recorded_writes(first_held, settled, PENDING_COUNTED).map_err(err)?;
            entries.iter().filter(|e| e.table != PROBE).count() as u64
        } else {
            0
        };
        Ok(ConsumerState {
            holding: first_held >= settled
                || (first_held >= expired_below && now.saturating_sub(first_held) <= c.retention_ms),
            fell_behind: first_held < expired_below,
            pending,
            oldest: oldest_at(now),
            next_seq: settled,
        })
    }
}
