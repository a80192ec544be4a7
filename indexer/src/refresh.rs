//! Keeping indexes current in the background: the [`Refresher`].
//!
//! One thread walks the store's searchable tables every interval (and
//! whenever asked): a table without an index gets a full build (so it is
//! searchable from its first write, with no reindex command), and a table
//! whose rows changed since its index absorbed the change feed gets an
//! incremental reindex. Writes come from anyone: this process, the CLI,
//! another program on the same store; the change feed names them all.
//!
//! Waiters ([`LiveIndexes::wait_absorbed`]) ask for a round at once and
//! wake when one ends, so a search that must reflect a write does not wait
//! for the next tick; and a round comes early once [`EARLY_ROUND_WRITES`]
//! writes have come since the last one began.
//!
//! A round reads what each table's index absorbed from its [`LiveIndex`]
//! (the generation searches use, opened once), reads the change feed once
//! for every table, hands each changed table's rows to its incremental
//! reindex, records what each index then reflects in its live index, and
//! trims the feed once. Its index opens and feed reads are counted in the
//! status.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::build::{Changed, ReindexMode, ReindexOptions, reindex_changed, reindex_in};
use crate::changes::FeedRead;
use crate::live::{LiveIndex, LiveIndexes};
use crate::reader::Generation;
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
    /// Index generations opened by rounds (a commit's reload of a
    /// generation the live index holds is not an open).
    pub index_opens: u64,
    /// Reads of the change feed by rounds.
    pub feed_reads: u64,
}

/// Keeps every searchable table's index current from the change feed, on
/// its own thread; stopped when dropped.
pub struct Refresher {
    live: Arc<LiveIndexes>,
    options: RefreshOptions,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Refresher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refresher").field("interval", &self.options.interval).finish_non_exhaustive()
    }
}

impl Refresher {
    /// Starts the refresher's thread on `live`'s store and indexes; with
    /// an interval the first round runs at once, without one only when a
    /// waiter asks. Searches through `live` wait on it from then on.
    ///
    /// # Errors
    /// `Io` when the thread cannot be started.
    pub fn start(live: Arc<LiveIndexes>, options: RefreshOptions) -> Result<Refresher> {
        let path = live.dir().to_owned();
        {
            let mut state = live.rounds().lock();
            state.attached = true;
            state.stop = false;
            // Without an interval nothing runs until a waiter asks: an
            // eventual search answers from the index as it stands.
            state.requested = options.interval.is_some();
        }
        let worker = Arc::clone(&live);
        let worker_options = options.clone();
        let thread = std::thread::Builder::new()
            .name("rowsearch-refresh".into())
            .spawn(move || run(&worker, &worker_options))
            .map_err(|source| Error::Io { path, source })?;
        Ok(Refresher { live, options, thread: Some(thread) })
    }

    /// How often it runs a round unasked (`None`: only when asked).
    pub fn interval(&self) -> Option<Duration> {
        self.options.interval
    }

    /// The live indexes it keeps current.
    pub fn live(&self) -> &Arc<LiveIndexes> {
        &self.live
    }

    /// The feed sequence `table`'s index reflected (exclusive) as of the
    /// last round, if a round has seen the table. A reader that takes the
    /// index's generation after asking sees at least that much.
    pub fn absorbed(&self, table: &str) -> Option<u64> {
        self.live.current(table).ok()?.absorbed()
    }

    /// What it has done so far.
    pub fn status(&self) -> RefreshStatus {
        let state = self.live.rounds().lock();
        RefreshStatus {
            rounds: state.rounds,
            reindexes: state.reindexes,
            absorbed: self.live.absorbed(),
            last_error: state.last_error.clone(),
            index_opens: state.index_opens,
            feed_reads: state.feed_reads,
        }
    }

    /// Waits until `table`'s index has absorbed the change feed up to
    /// `next_seq` (exclusive), asking for rounds meanwhile; false when
    /// `deadline` passes first (see [`LiveIndexes::wait_absorbed`]).
    pub fn wait_absorbed(&self, table: &str, next_seq: u64, deadline: Instant) -> bool {
        match self.live.current(table) {
            Ok(live) => self.live.wait_absorbed(&live, next_seq, deadline),
            Err(_) => false,
        }
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        {
            let mut state = self.live.rounds().lock();
            state.stop = true;
            state.attached = false;
        }
        self.live.rounds().wake.notify_all();
        self.live.rounds().done.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(live: &LiveIndexes, options: &RefreshOptions) {
    crate::priority::lower_thread_priority(options.nice);
    let rounds = live.rounds();
    // The store's sequence when the last round began: a round comes early
    // once this many writes (from anyone) have come since.
    let mut seq_at_round = 0;
    // After a failed round the next waits, twice as long after each
    // failure in a row (a full disk must not be retried hundreds of times
    // a second); a round that succeeds ends it.
    let mut failures: u32 = 0;
    let mut not_before: Option<Instant> = None;
    loop {
        {
            let mut state = rounds.lock();
            while let Some(at) = not_before.filter(|_| !state.stop) {
                let Some(left) = at.checked_duration_since(Instant::now()) else { break };
                state = match rounds.wake.wait_timeout(state, left) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                };
            }
            let started = Instant::now();
            while !state.requested && !state.stop {
                state = match options.interval {
                    Some(every) => {
                        let Some(left) = every.checked_sub(started.elapsed()) else { break };
                        if live
                            .source()
                            .next_seq()
                            .is_ok_and(|n| n.saturating_sub(seq_at_round) >= EARLY_ROUND_WRITES)
                        {
                            break;
                        }
                        match rounds.wake.wait_timeout(state, left.min(PEEK_EVERY)) {
                            Ok((s, _)) => s,
                            Err(e) => e.into_inner().0,
                        }
                    }
                    None => match rounds.wake.wait(state) {
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
        seq_at_round = live.source().next_seq().unwrap_or(seq_at_round);
        let (opens, reads) = crate::io_counts::counts();
        let (reindexes, error) = round(live, &options.reindex);
        let (opens_after, reads_after) = crate::io_counts::counts();
        let mut state = rounds.lock();
        state.running = false;
        state.rounds += 1;
        state.reindexes += reindexes;
        state.index_opens += opens_after - opens;
        state.feed_reads += reads_after - reads;
        if error.is_some() {
            failures = failures.saturating_add(1);
            not_before = Some(Instant::now() + backoff(failures));
        } else {
            failures = 0;
            not_before = None;
        }
        state.last_error = error;
        drop(state);
        rounds.done.notify_all();
    }
}

/// How long the refresher waits after `failures` failed rounds in a row:
/// 100 ms, doubling, at most [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    let ms = 100u64.saturating_mul(1u64 << failures.saturating_sub(1).min(20));
    Duration::from_millis(ms).min(MAX_BACKOFF)
}

/// The longest wait between failed rounds.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One pass over the searchable tables (see the module docs): reindexes
/// run, and the first error.
fn round(live: &LiveIndexes, options: &ReindexOptions) -> (u64, Option<String>) {
    let mut reindexes = 0;
    let mut error = None;
    let mut fail = |table: &str, e: Error| {
        // Another reindex of the table runs (a job, the CLI): it brings
        // the index current itself; the next round looks again.
        if !matches!(e, Error::Busy { .. }) {
            tracing::warn!(target: "rowsearch::refresh", table, error = %e, "refresh failed");
            error.get_or_insert_with(|| format!("table {table}: {e}"));
        }
    };
    // Each searchable table's live index, with its serving generation
    // (none before the first build).
    let mut tables: Vec<(Arc<LiveIndex>, Option<Arc<Generation>>)> = Vec::new();
    match searchable(live) {
        Ok(found) => {
            for table in found {
                match table.generation() {
                    Ok(generation) => tables.push((table, Some(generation))),
                    Err(Error::NoIndex { .. }) => tables.push((table, None)),
                    Err(e) => fail(table.table(), e),
                }
            }
        }
        Err(e) => return (0, Some(e.to_string())),
    }
    // One read of the feed, from the oldest of what the indexes absorbed.
    let from = tables.iter().filter_map(|(_, g)| g.as_ref().map(|g| g.absorbed)).min();
    let feed = match from
        .map(|from| live.source().tail_view().map_err(Error::from).and_then(|r| FeedRead::read(&*r, from)))
    {
        Some(Ok(feed)) => Some(feed),
        Some(Err(e)) => return (0, Some(e.to_string())),
        None => None,
    };
    for (table, generation) in &tables {
        let started = std::time::Instant::now();
        match refresh_table(live, table, generation.as_deref(), feed.as_ref(), options) {
            Ok((next_seq, ran)) => {
                table.set_absorbed(next_seq);
                reindexes += u64::from(ran);
                if ran {
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    tracing::info!(target: "rowsearch::refresh", table = table.table(), absorbed_seq = next_seq, duration_ms = ms, "index refreshed");
                }
            }
            Err(e) => fail(table.table(), e),
        }
    }
    // The feed is trimmed once, up to what every index has committed.
    let committed = tables.iter().filter_map(|(table, _)| table.generation().ok().map(|g| g.absorbed)).min();
    if let Some(next) = committed
        && next > 1
        && let Err(e) = live.source().trim_feed(next - 1)
    {
        error.get_or_insert_with(|| format!("trimming the change feed: {e}"));
    }
    (reindexes, error)
}

/// The live indexes of the store's searchable tables.
fn searchable(live: &LiveIndexes) -> Result<Vec<Arc<LiveIndex>>> {
    let store = live.source();
    // One snapshot for every table's schema and id.
    let view = store.view()?;
    let rtxn = &*view;
    let mut searchable = Vec::new();
    for table in store.tables()? {
        let (Ok(schema), Ok(table_id)) = (rtxn.schema(&table), rtxn.table_id(&table)) else { continue };
        if schema.search.is_some() {
            searchable.push((table, table_id));
        }
    }
    drop(view);
    searchable.into_iter().map(|(table, table_id)| live.table(&table, table_id)).collect()
}

/// Brings one table's index current: the sequence it then reflects, and
/// whether a reindex ran.
fn refresh_table(
    live: &LiveIndexes,
    table: &LiveIndex,
    generation: Option<&Generation>,
    feed: Option<&FeedRead>,
    options: &ReindexOptions,
) -> Result<(u64, bool)> {
    let (store, dir) = (&**live.source(), live.dir());
    let name = table.table();
    let (Some(generation), Some(feed)) = (generation, feed) else {
        let options = ReindexOptions { mode: ReindexMode::Full, ..options.clone() };
        let report = reindex_in(store, dir, name, &options, &mut |_| {})?;
        return Ok((report.next_seq, true));
    };
    let serving = generation.absorbed;
    let changed = feed.rows_since(name, serving);
    let foreign = feed.next_seq.saturating_sub(serving) as usize;
    if changed.is_empty() && foreign < MAX_FOREIGN_LAG {
        // Nothing of this table changed: its index reflects the store as
        // of the feed's end without a commit.
        return Ok((feed.next_seq, false));
    }
    let changed = Changed { rows: changed, next_seq: feed.next_seq };
    let report = reindex_changed(store, dir, name, options, generation, changed)?;
    Ok((report.next_seq, true))
}
