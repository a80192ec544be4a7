//! The reader's read-ahead: what the reader thread has parsed, handed to
//! the batching thread in chunks, bounded in chunks and in bytes.
//!
//! The reader runs up to a batch ahead (so it parses the next batch while
//! the one before is tokenized): a channel of `chunks` places, and a gate
//! that holds the reader while the chunks handed over and not yet taken
//! hold `bytes` or more of input (one chunk always passes, however large:
//! a message may be larger than the limit). The bytes are the inputs' raw
//! sizes, what the parsed rows hold about. Dropping the receiving side
//! ([`Behind`]) releases a reader waiting at the gate or the channel: its
//! next hand-over fails and it stops, so a batching thread that stops on
//! an error never leaves the reader blocked.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use rowsearch_store::PutCell;

use super::options::Skipped;

/// What the reader thread hands the writer.
pub(super) enum Item {
    Row {
        key: Vec<u8>,
        cells: Vec<PutCell>,
        source: String,
        dedupe: bool,
        bytes: usize,
        /// The key an earlier build gave this message, when it differs.
        legacy: Option<Vec<u8>>,
    },
    /// A skipped file or message; `true` when it was a message (or row).
    Skip(Skipped, bool),
    FileDone {
        bytes: u64,
    },
}

/// The reader's side.
pub(super) struct Ahead {
    tx: SyncSender<(Vec<Item>, usize)>,
    gate: Arc<Gate>,
}

/// The batching thread's side.
pub(super) struct Behind {
    rx: Receiver<(Vec<Item>, usize)>,
    gate: Arc<Gate>,
}

struct Gate {
    state: Mutex<State>,
    taken: Condvar,
    limit: usize,
}

#[derive(Default)]
struct State {
    /// Bytes handed over and not yet taken.
    ahead: usize,
    /// The most `ahead` has been.
    peak: usize,
    /// The receiving side is gone.
    closed: bool,
    /// Whether the reader waits at the gate.
    waiting: bool,
}

/// A read-ahead of at most `chunks` chunks and `bytes` bytes (at least one
/// of each).
pub(super) fn read_ahead(chunks: usize, bytes: usize) -> (Ahead, Behind) {
    let (tx, rx) = sync_channel(chunks.max(1));
    let gate =
        Arc::new(Gate { state: Mutex::new(State::default()), taken: Condvar::new(), limit: bytes.max(1) });
    (Ahead { tx, gate: Arc::clone(&gate) }, Behind { rx, gate })
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Ahead {
    /// Hands `items` (`bytes` of input) over, once what is ahead leaves
    /// room; `false` when the receiving side is gone (the reader stops).
    pub(super) fn send(&self, items: Vec<Item>, bytes: usize) -> bool {
        {
            let mut state = self.gate.lock();
            while !state.closed && state.ahead > 0 && state.ahead.saturating_add(bytes) > self.gate.limit {
                state.waiting = true;
                state = self.gate.taken.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            state.waiting = false;
            if state.closed {
                return false;
            }
            state.ahead = state.ahead.saturating_add(bytes);
            state.peak = state.peak.max(state.ahead);
        }
        self.tx.send((items, bytes)).is_ok()
    }
}

impl Behind {
    /// The next chunk, in the order handed over; `None` once the reader is
    /// done.
    pub(super) fn recv(&self) -> Option<Vec<Item>> {
        let (items, bytes) = self.rx.recv().ok()?;
        let mut state = self.gate.lock();
        state.ahead -= bytes;
        self.gate.taken.notify_all();
        Some(items)
    }

    /// The most bytes that were ever ahead.
    #[cfg(test)]
    fn peak(&self) -> usize {
        self.gate.lock().peak
    }

    #[cfg(test)]
    fn reader_waits(&self) -> bool {
        self.gate.lock().waiting
    }
}

impl Drop for Behind {
    fn drop(&mut self) {
        self.gate.lock().closed = true;
        self.gate.taken.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: u64) -> Vec<Item> {
        vec![Item::FileDone { bytes: n }]
    }

    fn ids(items: Vec<Item>) -> Vec<u64> {
        items.into_iter().map(|i| if let Item::FileDone { bytes } = i { bytes } else { u64::MAX }).collect()
    }

    /// A reader far ahead of a batcher that has not started holds no more
    /// than the limit: it waits at the gate (without the gate, the channel's
    /// places alone would let all 100 chunks through).
    #[test]
    fn the_reader_waits_at_the_byte_limit_and_order_is_kept() {
        let (ahead, behind) = read_ahead(1000, 25);
        let sent = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for n in 0..100 {
                    assert!(ahead.send(chunk(n), 10));
                    sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                drop(ahead);
            });
            // Until the reader waits or has got three chunks (30 bytes) past.
            while !behind.reader_waits() && sent.load(std::sync::atomic::Ordering::SeqCst) < 3 {
                std::thread::yield_now();
            }
            let mut got = Vec::new();
            while let Some(items) = behind.recv() {
                got.extend(ids(items));
            }
            assert_eq!(got, (0..100).collect::<Vec<u64>>());
            assert!(behind.peak() <= 25, "{} bytes ahead, past the limit of 25", behind.peak());
        });
    }

    /// A chunk larger than the limit passes when nothing is ahead.
    #[test]
    fn a_chunk_past_the_limit_passes_alone() {
        let (ahead, behind) = read_ahead(4, 10);
        assert!(ahead.send(chunk(1), 50));
        assert_eq!(ids(behind.recv().unwrap()), vec![1]);
        assert!(ahead.send(chunk(2), 50));
        drop(ahead);
        assert_eq!(ids(behind.recv().unwrap()), vec![2]);
        assert!(behind.recv().is_none());
    }

    /// The batching side gone (an error), a reader held at the gate or at
    /// a full channel is let go and told to stop.
    #[test]
    fn dropping_the_receiver_releases_a_waiting_reader() {
        for (chunks, bytes) in [(1000, 15), (1, 1000)] {
            let (ahead, behind) = read_ahead(chunks, bytes);
            std::thread::scope(|s| {
                let reader = s.spawn(move || {
                    let mut handed = 0;
                    while ahead.send(chunk(handed), 10) {
                        handed += 1;
                    }
                    handed
                });
                // The first chunk taken: the reader is then at the gate or
                // the channel, or gets there.
                assert_eq!(ids(behind.recv().unwrap()), vec![0]);
                drop(behind);
                let handed = reader.join().unwrap();
                assert!(handed >= 1, "{handed}");
            });
        }
    }
}
