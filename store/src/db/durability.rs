//! When a committed write is on disk: every commit synced (the default), or
//! commits left in the operating system's page cache and synced by a
//! background thread at an interval, as HBase's own write-ahead log does
//! with its default durability (`SYNC_WAL`: a `hflush`, not a `hsync`).

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// When [`crate::Store::apply`] and the other writes return relative to the
/// disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit is on disk before it returns (LMDB's default: the data
    /// pages and then the meta page synced): a write that returned survives
    /// a power loss.
    #[default]
    Sync,
    /// A commit returns once its pages are written to the operating
    /// system's page cache; a background thread syncs the store every
    /// `sync_interval` when it has changed, and closing the store syncs it.
    /// A write that returned survives the process being killed at any
    /// moment; an operating-system crash or a power loss loses the writes
    /// since the last sync, and LMDB (`MDB_NOSYNC`) does not promise the
    /// file is intact after one: restore from a backup then. The trade of
    /// HBase's default `SYNC_WAL`, Elasticsearch's `translog.durability:
    /// async` and SQLite's `synchronous=OFF`; [`crate::Store::sync`] makes
    /// the writes so far durable when one must be.
    Process {
        /// How often changes are synced (at least 1 ms).
        sync_interval: Duration,
    },
}

impl Durability {
    /// `Process` with the default interval, one second.
    pub const PROCESS: Durability = Durability::Process { sync_interval: Duration::from_secs(1) };
}

/// Syncs of an environment opened with `Durability::Process`.
#[derive(Debug, Default)]
pub(crate) struct SyncState {
    /// Commits since the last sync began.
    pub unsynced: AtomicU64,
    /// Syncs done.
    pub syncs: AtomicU64,
    /// Set when the environment closes, to end the background thread.
    stop: Mutex<bool>,
    wake: Condvar,
}

impl SyncState {
    /// Ends the background thread (the environment is closing).
    pub fn stop(&self) {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Waits `interval` or until stopped; whether to go on.
    fn wait(&self, interval: Duration) -> bool {
        let stopped = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        let (stopped, _) =
            self.wake.wait_timeout_while(stopped, interval, |s| !*s).unwrap_or_else(|e| e.into_inner());
        !*stopped
    }
}

/// Starts the thread that calls `sync` every `interval` until `state` is
/// stopped or `sync` answers false (the environment is gone). The thread
/// holds the environment only during a sync, never while it waits.
pub(crate) fn spawn_syncer(
    state: Arc<SyncState>,
    interval: Duration,
    sync: impl Fn() -> bool + Send + 'static,
) -> std::io::Result<()> {
    let interval = interval.max(Duration::from_millis(1));
    std::thread::Builder::new().name("rowsearch-sync".into()).spawn(move || {
        while state.wait(interval) {
            if !sync() {
                return;
            }
        }
    })?;
    Ok(())
}

/// Counts a commit made without a sync.
pub(crate) fn note_commit(state: Option<&SyncState>) {
    if let Some(state) = state {
        state.unsynced.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}
