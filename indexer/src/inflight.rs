//! A bound on the bytes of documents handed to tantivy and not indexed
//! yet. tantivy's writer queues up to 10,000 documents between the
//! threads that add them and its indexing threads; a full reindex of long
//! mail fills that queue with ~140 MiB beyond its memory budget. Each
//! document added by a build holds a [`Ticket`] for its bytes, given back
//! when tantivy drops the document (once indexed), and an adder waits while
//! the tickets out would pass the limit.

use std::sync::{Arc, Condvar, Mutex};

/// The bytes out and their limit.
#[derive(Debug)]
pub(crate) struct InFlight {
    limit: usize,
    out: Mutex<usize>,
    freed: Condvar,
}

impl InFlight {
    pub fn new(limit: usize) -> Arc<InFlight> {
        Arc::new(InFlight { limit, out: Mutex::new(0), freed: Condvar::new() })
    }

    /// A ticket for `bytes`, waiting while the tickets out hold more than
    /// the limit would allow (one document alone always gets one).
    pub fn take(self: &Arc<InFlight>, bytes: usize) -> Ticket {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        while *out > 0 && *out + bytes > self.limit {
            out = self.freed.wait(out).unwrap_or_else(|e| e.into_inner());
        }
        *out += bytes;
        Ticket { pool: Arc::clone(self), bytes }
    }

    /// The bytes out now.
    #[cfg(test)]
    fn out(&self) -> usize {
        *self.out.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Bytes of a document in flight, given back when dropped.
#[derive(Debug)]
pub struct Ticket {
    pool: Arc<InFlight>,
    bytes: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut out = self.pool.out.lock().unwrap_or_else(|e| e.into_inner());
        *out = out.saturating_sub(self.bytes);
        self.pool.freed.notify_all();
    }
}

/// A document's ticket, if it has one. A copy of the document has none (it
/// is not in flight).
#[derive(Debug, Default)]
pub struct Held {
    /// Kept for its drop.
    _ticket: Option<Ticket>,
}

impl Held {
    pub(crate) fn of(ticket: Ticket) -> Held {
        Held { _ticket: Some(ticket) }
    }
}

impl Clone for Held {
    fn clone(&self) -> Held {
        Held::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takers_wait_until_enough_is_given_back() {
        let pool = InFlight::new(100);
        let big = pool.take(500);
        assert_eq!(pool.out(), 500, "one document alone gets a ticket, whatever its size");
        drop(big);
        let a = pool.take(60);
        let waiter = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let t = pool.take(50);
                pool.out() - t.bytes
            })
        };
        // The waiter cannot get 50 while 60 of 100 are out; it gets them
        // once `a` is given back, and then it is the only one out.
        drop(a);
        assert_eq!(waiter.join().unwrap(), 0);
        assert_eq!(pool.out(), 0);
    }
}
