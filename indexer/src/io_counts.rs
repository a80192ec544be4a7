//! Counts of the costly reads a thread made: index opens (tantivy reading
//! a generation's files to open it) and change-feed reads. The refresher
//! reports its rounds' counts in its status, so the work a round does is
//! visible (and tested) without timing it.

use std::cell::Cell;

thread_local! {
    static OPENS: Cell<u64> = const { Cell::new(0) };
    static FEED_READS: Cell<u64> = const { Cell::new(0) };
}

/// One index opened on this thread.
pub(crate) fn index_opened() {
    OPENS.with(|c| c.set(c.get() + 1));
}

/// One read of the change feed on this thread.
pub(crate) fn feed_read() {
    FEED_READS.with(|c| c.set(c.get() + 1));
}

/// (index opens, feed reads) on this thread so far.
pub fn counts() -> (u64, u64) {
    (OPENS.with(Cell::get), FEED_READS.with(Cell::get))
}
