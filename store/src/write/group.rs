//! Group commit: writers that arrive together share one LMDB commit, so
//! the sync to disk is paid once per group, not once per write.
//!
//! The queue and its answers live here; the leading and the commit are
//! `Writer::apply_grouped` (apply.rs). Each [`crate::Store::apply`] queues
//! its batch. When no commit is under
//! way, the writer that finds it so becomes the leader: it takes every
//! queued batch and, holding the writer lock, writes them in one
//! transaction, each in a nested transaction of its own: a batch that
//! fails (a value LMDB refuses) is rolled back alone and answered its
//! error, the others commit. A failure of the whole transaction (a full
//! disk, a failed commit) is every batch's. Meanwhile the next writers
//! queue; when the commit is done its writers are woken with their answers
//! and one of the queued becomes the next leader. Acknowledged still means
//! durable: the commit has synced before any of its writers returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::batch::Batch;
use crate::db::feed::CommitInfo;
use crate::error::{Error, ErrorKind, Result};

/// One queued write and, once committed or refused, its answer.
#[derive(Debug)]
pub(crate) struct Waiting {
    pub(super) batch: Batch,
    answer: Mutex<Option<Result<CommitInfo>>>,
}

impl Waiting {
    /// A write queued with `batch`, not answered yet.
    pub(super) fn new(batch: Batch) -> Waiting {
        Waiting { batch, answer: Mutex::new(None) }
    }

    pub(super) fn answer(&self) -> Option<Result<CommitInfo>> {
        self.answer.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    pub(super) fn set(&self, answer: Result<CommitInfo>) {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
    }
}

/// The queue and whether a leader is committing.
#[derive(Debug, Default)]
pub(super) struct QueueState {
    pub(super) waiting: Vec<Arc<Waiting>>,
    pub(super) leading: bool,
}

/// The store's queue of writes waiting for a commit.
#[derive(Debug, Default)]
pub(crate) struct GroupQueue {
    state: Mutex<QueueState>,
    /// Signalled when a leader's commit is done.
    pub(super) done: Condvar,
    /// Group commits made, and the batches they wrote.
    pub(super) commits: AtomicU64,
    pub(super) batches: AtomicU64,
}

impl GroupQueue {
    pub(super) fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Commits made through the queue, and the batches they wrote.
    pub(crate) fn stats(&self) -> (u64, u64) {
        (self.commits.load(Ordering::Relaxed), self.batches.load(Ordering::Relaxed))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// The same failure for another writer of the group (errors are not
/// `Clone`: their sources are rebuilt from their messages).
pub(super) fn echo(e: &Error) -> Error {
    match e.kind() {
        ErrorKind::DiskFull { path, available_bytes } => {
            ErrorKind::DiskFull { path: path.clone(), available_bytes: *available_bytes }.into()
        }
        ErrorKind::MapFull { map_size_bytes, reason } => {
            ErrorKind::MapFull { map_size_bytes: *map_size_bytes, reason: reason.clone() }.into()
        }
        ErrorKind::Poisoned => ErrorKind::Poisoned.into(),
        _ => ErrorKind::Io { path: PathBuf::new(), source: std::io::Error::other(e.to_string()) }.into(),
    }
}

/// A failure of one batch only (rolled back alone), not of the storage.
pub(super) fn of_the_batch(e: &Error) -> bool {
    !matches!(
        e.kind(),
        ErrorKind::DiskFull { .. }
            | ErrorKind::MapFull { .. }
            | ErrorKind::Poisoned
            | ErrorKind::Lmdb { .. }
            | ErrorKind::Io { .. }
    ) || matches!(e.kind(), ErrorKind::KeyTooLarge { .. })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{Batch, FamilySchema, PutCell, ReadOptions, Store, TableSchema};

    /// Writers that queue while another holds the writer lock share one
    /// commit; a batch of the group that is refused (a qualifier past the
    /// store's limit) is answered its error alone, the others are written.
    #[test]
    fn writers_waiting_together_share_one_commit_and_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
        let (commits_before, _) = store.group.stats();
        // A commit under way: the writers queue behind it.
        store.group.lock().leading = true;
        let writers: Vec<_> = (0..5)
            .map(|i| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    let mut batch = Batch::new();
                    // Writer 2's qualifier is longer than the store takes.
                    let qualifier = if i == 2 { vec![b'q'; 600] } else { b"q".to_vec() };
                    batch.put("t", format!("r{i}"), vec![PutCell::new("f", qualifier, format!("v{i}"))]);
                    store.apply(&batch).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        // Every writer queued behind the held lock (a wait on a condition,
        // bounded; no sleep decides the outcome).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while store.group.len() < 5 {
            assert!(std::time::Instant::now() < deadline, "the writers did not queue");
            std::thread::yield_now();
        }
        // Done: the first writer to see it leads one commit for all five.
        store.group.lock().leading = false;
        store.group.done.notify_all();
        let answers: Vec<Result<(), String>> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let (commits, _) = store.group.stats();
        assert_eq!(commits - commits_before, 1, "one commit for the five writers: {answers:?}");
        for (i, answer) in answers.iter().enumerate() {
            let row = store.get("t", format!("r{i}").as_bytes(), &ReadOptions::default()).unwrap();
            if i == 2 {
                assert!(answer.is_err(), "{answer:?}");
                assert!(row.is_none(), "the refused batch wrote nothing");
            } else {
                assert_eq!(answer, &Ok(()), "writer {i}");
                assert_eq!(row.unwrap().cells[0].value, format!("v{i}").into_bytes());
            }
        }
    }
}
