//! Keeping indexes current in the background: the [`Refresher`].
//!
//! One thread walks the store's searchable tables every interval (and
//! whenever asked): a table without an index gets a full build (so it is
//! searchable from its first write, with no reindex command), and a table
//! whose rows changed since its index absorbed the change feed gets an
//! incremental reindex. Writes come from anyone: this process, the CLI,
//! another program on the same store; the change feed names them all.
//!
//! Waiters ([`Refresher::wait_absorbed`]) ask for a round at once and wake
//! when one ends, so a search that must reflect a write does not wait for
//! the next tick; and a round comes early once [`EARLY_ROUND_WRITES`]
//! writes have come since the last one began.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rowsearch_store::Store;

use crate::build::{ReindexMode, ReindexOptions, reindex};
use crate::changes::changed_rows;
use crate::generation::IndexDir;
use crate::{Error, Result};

/// Feed entries of other tables after which a table's index records the
/// newer sequence even though none of its rows changed (an incremental
/// commit with no documents), so the feed behind it can be trimmed and
/// searches read little of it.
const MAX_FOREIGN_LAG: usize = 4096;

/// Writes (feed entries, any table) after which a round starts before the
/// interval is up, so a bulk load is absorbed in steps of about this size.
pub const EARLY_ROUND_WRITES: u64 = 16_384;

/// How often a waiting refresher looks at the store's sequence for
/// [`EARLY_ROUND_WRITES`].
const PEEK_EVERY: Duration = Duration::from_millis(50);

/// How a [`Refresher`] runs.
#[derive(Debug, Clone)]
pub struct RefreshOptions {
    /// Time between rounds; `None`: only when asked.
    pub interval: Option<Duration>,
    /// Options of the reindexes it runs (the mode is chosen per table).
    pub reindex: ReindexOptions,
    /// The nice value (CPU priority, 0 to 19) of the refresher's thread
    /// and the indexing threads it starts, so that writers (an ingest)
    /// keep the cores when they compete for them: searches do not wait for
    /// it (they match the rows it has not absorbed directly). Linux only;
    /// 0 leaves the priority alone.
    pub nice: i32,
}

impl Default for RefreshOptions {
    fn default() -> Self {
        RefreshOptions {
            interval: Some(Duration::from_millis(1000)),
            reindex: ReindexOptions {
                threads: 1,
                memory_budget_bytes: 64 << 20,
                ..ReindexOptions::default()
            },
            nice: 10,
        }
    }
}

/// Lowers the calling thread's CPU priority to `nice` (on Linux the nice
/// value is per thread, and the threads it starts inherit it); a no-op
/// elsewhere, for 0, or when the system refuses.
fn lower_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: both calls take plain integers and touch no memory of ours;
    // a failure is only a return value, ignored (the thread keeps its
    // priority).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice.min(19));
    }
}

/// What a refresher has done, for status pages and metrics.
#[derive(Debug, Clone, Default)]
pub struct RefreshStatus {
    /// Rounds completed.
    pub rounds: u64,
    /// Reindexes run (full and incremental).
    pub reindexes: u64,
    /// Per table, the feed sequence its index has absorbed up to
    /// (exclusive) as of the last round.
    pub absorbed: HashMap<String, u64>,
    /// The last round's error, if it had one (a round with an error goes
    /// on with the other tables; the next round tries again).
    pub last_error: Option<String>,
}

struct State {
    stop: bool,
    /// A round was asked for since the last one started.
    requested: bool,
    /// A round is running.
    running: bool,
    status: RefreshStatus,
}

struct Shared {
    store: Arc<Store>,
    options: RefreshOptions,
    state: Mutex<State>,
    /// Signalled to start a round (or stop).
    wake: Condvar,
    /// Signalled when a round ends.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps every searchable table's index current from the change feed, on
/// its own thread; stopped when dropped.
pub struct Refresher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Refresher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refresher").field("interval", &self.shared.options.interval).finish_non_exhaustive()
    }
}

impl Refresher {
    /// Starts the refresher's thread; with an interval the first round runs
    /// at once, without one only when a waiter asks.
    ///
    /// # Errors
    /// `Io` when the thread cannot be started.
    pub fn start(store: Arc<Store>, options: RefreshOptions) -> Result<Refresher> {
        let path = store.path().to_owned();
        // Without an interval nothing runs until a waiter asks: an
        // eventual search answers from the index as it stands.
        let first_round = options.interval.is_some();
        let shared = Arc::new(Shared {
            store,
            options,
            state: Mutex::new(State {
                stop: false,
                requested: first_round,
                running: false,
                status: RefreshStatus::default(),
            }),
            wake: Condvar::new(),
            done: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rowsearch-refresh".into())
            .spawn(move || run(&worker))
            .map_err(|source| Error::Io { path, source })?;
        Ok(Refresher { shared, thread: Some(thread) })
    }

    /// The feed sequence `table`'s index reflected (exclusive) as of the
    /// last round, if a round has seen the table. A reader that takes the
    /// index's generation after asking sees at least that much.
    pub fn absorbed(&self, table: &str) -> Option<u64> {
        self.shared.lock().status.absorbed.get(table).copied()
    }

    /// What it has done so far.
    pub fn status(&self) -> RefreshStatus {
        self.shared.lock().status.clone()
    }

    /// Waits until `table`'s index has absorbed the change feed up to
    /// `next_seq` (exclusive), asking for rounds meanwhile; false when
    /// `deadline` passes first.
    pub fn wait_absorbed(&self, table: &str, next_seq: u64, deadline: Instant) -> bool {
        let mut state = self.shared.lock();
        loop {
            if state.status.absorbed.get(table).is_some_and(|&n| n >= next_seq) {
                return true;
            }
            if state.stop {
                return false;
            }
            // The round that answers must start after this call: one in
            // progress may have read the feed before the write.
            let after = state.status.rounds + 1 + u64::from(state.running);
            state.requested = true;
            self.shared.wake.notify_all();
            while state.status.rounds < after && !state.stop {
                let now = Instant::now();
                if now >= deadline {
                    return false;
                }
                state = match self.shared.done.wait_timeout(state, deadline - now) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                };
            }
        }
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        self.shared.done.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared) {
    lower_priority(shared.options.nice);
    // The store's sequence when the last round began: a round comes early
    // once this many writes (from anyone) have come since.
    let mut seq_at_round = 0;
    loop {
        {
            let mut state = shared.lock();
            let started = Instant::now();
            while !state.requested && !state.stop {
                state = match shared.options.interval {
                    Some(every) => {
                        let Some(left) = every.checked_sub(started.elapsed()) else { break };
                        if shared
                            .store
                            .next_seq()
                            .is_ok_and(|n| n.saturating_sub(seq_at_round) >= EARLY_ROUND_WRITES)
                        {
                            break;
                        }
                        match shared.wake.wait_timeout(state, left.min(PEEK_EVERY)) {
                            Ok((s, _)) => s,
                            Err(e) => e.into_inner().0,
                        }
                    }
                    None => match shared.wake.wait(state) {
                        Ok(s) => s,
                        Err(e) => e.into_inner(),
                    },
                };
            }
            if state.stop {
                return;
            }
            state.requested = false;
            state.running = true;
        }
        seq_at_round = shared.store.next_seq().unwrap_or(seq_at_round);
        let (absorbed, reindexes, error) = round(shared);
        let mut state = shared.lock();
        state.running = false;
        state.status.rounds += 1;
        state.status.reindexes += reindexes;
        state.status.absorbed.extend(absorbed);
        state.status.last_error = error;
        drop(state);
        shared.done.notify_all();
    }
}

/// One pass over the searchable tables: (table, absorbed sequence) of each
/// brought current, reindexes run, the first error.
fn round(shared: &Shared) -> (Vec<(String, u64)>, u64, Option<String>) {
    let store = &shared.store;
    let mut absorbed = Vec::new();
    let mut reindexes = 0;
    let mut error = None;
    let tables = match store.tables() {
        Ok(t) => t,
        Err(e) => return (absorbed, 0, Some(e.to_string())),
    };
    for table in tables {
        match refresh_table(store, &table, &shared.options.reindex) {
            Ok((next_seq, ran)) => {
                absorbed.push((table, next_seq));
                reindexes += u64::from(ran);
            }
            // Another reindex of the table runs (a job, the CLI): it brings
            // the index current itself; the next round looks again.
            Err(Error::Busy { .. }) => {}
            Err(e) => {
                error.get_or_insert_with(|| format!("table {table}: {e}"));
            }
        }
    }
    (absorbed, reindexes, error)
}

/// Brings one table's index current if it is searchable: the sequence it
/// then reflects, and whether a reindex ran.
fn refresh_table(store: &Store, table: &str, options: &ReindexOptions) -> Result<(u64, bool)> {
    let schema = store.schema(table)?;
    if schema.search.is_none() {
        return Ok((store.next_seq()?, false));
    }
    let dir = IndexDir::new(store.path(), table);
    let Some(serving) = index_next_seq(&dir, table)? else {
        let report = reindex(
            store,
            table,
            &ReindexOptions { mode: ReindexMode::Full, ..options.clone() },
            &mut |_| {},
        )?;
        return Ok((report.next_seq, true));
    };
    let (changed, next_seq) = changed_rows(store, table, serving)?;
    let foreign = next_seq.saturating_sub(serving) as usize;
    if changed.is_empty() && foreign < MAX_FOREIGN_LAG {
        // Nothing of this table changed: its index reflects the store as
        // of `next_seq` without a commit.
        return Ok((next_seq, false));
    }
    let report =
        reindex(store, table, &ReindexOptions { mode: ReindexMode::Auto, ..options.clone() }, &mut |_| {})?;
    Ok((report.next_seq, true))
}

/// The serving generation's absorbed sequence, `None` without one.
fn index_next_seq(dir: &IndexDir, table: &str) -> Result<Option<u64>> {
    let Some(n) = dir.current()? else { return Ok(None) };
    let index = tantivy::Index::open_in_dir(dir.generation_path(n))
        .map_err(crate::error::tantivy_err(table, "open index"))?;
    crate::generation::indexed_next_seq(table, &index).map(Some)
}
