//! Live indexes: which snapshot a search sees, and who keeps it current.
//!
//! A table's live search state has one owner, its [`LiveIndex`]: the
//! serving generation (opened once, reloaded after each commit), the
//! overlay of the rows written since the generation absorbed the change
//! feed, the snapshots cursor walks are on, and how far the background
//! [`Refresher`](crate::Refresher) knows the index reflects the store. The
//! registry, [`LiveIndexes`], holds one per table; dropping a table forgets
//! one entry.
//!
//! A search asks [`LiveIndexes::snapshot`] with what it [`Want`]s and gets
//! an immutable [`Snapshot`] (generation + overlay + the last write it
//! reflects) that parses, searches, counts facets, completes prefixes and
//! corrects words. The freshness policy lives here and nowhere else:
//! - `Eventual` takes the index as it stands (unless `min_seq` asks for
//!   more);
//! - `Snapshot` (the default) must reflect every write committed before
//!   the search: the rows of the table the feed names since the index
//!   absorbed it are matched directly, in an overlay built in memory, when
//!   there are at most `overlay_max_rows` of them; past that, or for a
//!   `min_seq` the feed has not reached in the index, the search waits for
//!   the refresher (or, without one, reindexes the table incrementally on
//!   its own thread) until its deadline, then fails with `NotFresh`.
//!
//! A cursor walk resumes on the snapshot its first page came from
//! ([`LiveIndexes::resume`]), kept here for [`WALK_KEEP`] after its last
//! page, so refreshes in between neither skip nor repeat a hit.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use std::path::{Path, PathBuf};

use rowsearch_store::{RowSource, RowView};

use crate::build::{ReindexMode, ReindexOptions, reindex_in};
use crate::changes::{TableChanges, changes_in};
use crate::overlay::Overlay;
use crate::reader::{Generation, TableIndex};
use crate::{Error, Result};

/// Most changed rows a snapshot search matches directly (an overlay built
/// in memory for the search); past it, the search waits for the index to
/// absorb them (the refresher, or an incremental reindex of its own).
pub const DEFAULT_OVERLAY_MAX_ROWS: usize = 256;

/// How long a cursor walk's snapshot is kept after its last page.
pub const WALK_KEEP: Duration = Duration::from_secs(300);
/// Most walk snapshots kept per table (the least recently used goes first).
const MAX_WALKS: usize = 64;

/// Which writes a search reflects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Every write committed before the search began, from any process:
    /// when the index has not absorbed them yet, the search has the
    /// refresher (or, without one, an incremental reindex of its own)
    /// bring it current first.
    #[default]
    Snapshot,
    /// The index as it stands (possibly behind the store), for the lowest
    /// latency.
    Eventual,
}

/// What a search needs its snapshot to reflect.
#[derive(Debug, Clone, Copy)]
pub struct Want {
    /// Which writes.
    pub consistency: Consistency,
    /// At least every write up to this feed sequence (inclusive).
    pub min_seq: Option<u64>,
    /// Waiting for the index to absorb what it must ends here.
    pub deadline: Instant,
}

/// How far a table's index is behind the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// The store's last write (feed seq).
    pub store_seq: u64,
    /// The last write the index reflects.
    pub index_seq: u64,
    /// Rows of the table written since (what a snapshot search matches
    /// directly, or waits for).
    pub lag_rows: u64,
    /// How long ago the oldest of them was written (ms; 0 when none is,
    /// or the store kept no time for it).
    pub lag_ms: u64,
}

/// What one search reads: a generation as opened at one commit, the
/// overlay of the rows written since (if any), and the last write (feed
/// seq) the two reflect together. Immutable; cheap to clone.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) generation: Arc<Generation>,
    pub(crate) overlay: Option<Arc<Overlay>>,
    seq: u64,
}

impl Snapshot {
    /// The generation.
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// The generation's number.
    pub fn number(&self) -> u64 {
        self.generation.number
    }

    /// The overlay of rows the generation has not absorbed, if any.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_deref()
    }

    /// Rows the overlay matches directly (0 without one).
    pub fn overlay_rows(&self) -> u64 {
        self.overlay.as_ref().map_or(0, |o| o.rows().len() as u64)
    }

    /// The last write (feed seq) this snapshot reflects.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// A snapshot a search answers from while its feed read confirms it
/// ([`LiveIndexes::speculate`]).
#[derive(Debug, Clone)]
pub struct Speculation {
    snapshot: Snapshot,
    /// The feed sequence the snapshot reflects the store to (exclusive).
    from: u64,
}

impl Speculation {
    /// The snapshot to search.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
}

/// Rounds of the background refresher, as the live indexes see them: the
/// refresher's thread (`refresh.rs`) runs them; searches that must wait
/// for the index ask for one and wake when it ends.
#[derive(Debug, Default)]
pub(crate) struct RoundState {
    /// A refresher runs (else searches catch up on their own thread).
    pub attached: bool,
    /// The refresher is stopping.
    pub stop: bool,
    /// A round was asked for since the last one started.
    pub requested: bool,
    /// A round is running.
    pub running: bool,
    /// Rounds completed.
    pub rounds: u64,
    /// Reindexes run by rounds.
    pub reindexes: u64,
    /// Index opens and change-feed reads rounds made.
    pub index_opens: u64,
    /// See `index_opens`.
    pub feed_reads: u64,
    /// The last round's error.
    pub last_error: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Rounds {
    state: Mutex<RoundState>,
    /// Signalled to start a round (or stop).
    pub wake: Condvar,
    /// Signalled when a round ends.
    pub done: Condvar,
}

impl Rounds {
    pub fn lock(&self) -> MutexGuard<'_, RoundState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug)]
struct Shared {
    /// Where the tables live; `source` is its read half.
    tables: Arc<dyn rowsearch_store::TableStore>,
    source: Arc<dyn RowSource>,
    dir: PathBuf,
    overlay_max_rows: usize,
    rounds: Rounds,
}

/// Every table's [`LiveIndex`], opened on first use. Share it between
/// threads (and with a [`Refresher`](crate::Refresher)).
#[derive(Debug)]
pub struct LiveIndexes {
    shared: Arc<Shared>,
    tables: Mutex<HashMap<String, Arc<LiveIndex>>>,
}

/// One table's live search state (see the module docs).
#[derive(Debug)]
pub struct LiveIndex {
    table: String,
    /// The store's id of the table this entry is for: a table dropped and
    /// created again under the name gets a new entry.
    table_id: u64,
    index: TableIndex,
    /// The last overlay built (reused while the feed names no newer write
    /// of the table).
    overlay: Mutex<Option<Arc<Overlay>>>,
    walks: Mutex<Vec<Walk>>,
    /// What the refresher knows the index reflects (feed sequence,
    /// exclusive): past the index's last commit when only other tables
    /// were written since. `None` before a round has seen the table.
    absorbed: Mutex<Option<u64>>,
    /// The last feed read that found nothing of the table: the source's
    /// version it read, from where, and the sequence it ended at. While the
    /// source's version is that one, a read from there on finds the same.
    quiet: Mutex<Option<Quiet>>,
}

#[derive(Debug, Clone, Copy)]
struct Quiet {
    version: u64,
    from: u64,
    next: u64,
}

#[derive(Debug)]
struct Walk {
    commit: u64,
    snapshot: Snapshot,
    used: Instant,
}

impl LiveIndexes {
    /// Live indexes of the tables of `home` (the embedded store: an
    /// `Arc<Store>` converts; tables elsewhere: [`crate::Home::new`]),
    /// their index generations under its data directory, with at most
    /// `overlay_max_rows` changed rows matched directly (0: every snapshot
    /// search after a write to its table waits for the index to absorb it;
    /// [`DEFAULT_OVERLAY_MAX_ROWS`] is the default).
    pub fn new(home: impl Into<crate::Home>, overlay_max_rows: usize) -> LiveIndexes {
        let home = home.into();
        let source: Arc<dyn RowSource> = home.tables.clone();
        LiveIndexes::with_source(home, source, overlay_max_rows)
    }

    /// As [`Self::new`], its indexes built and brought current from
    /// `source` (a [`crate::ShardSource`]: one shard of a table) while
    /// searches read rows from `home`'s tables.
    pub fn with_source(
        home: crate::Home,
        source: Arc<dyn RowSource>,
        overlay_max_rows: usize,
    ) -> LiveIndexes {
        let crate::Home { tables, data: dir } = home;
        LiveIndexes {
            shared: Arc::new(Shared { tables, source, dir, overlay_max_rows, rounds: Rounds::default() }),
            tables: Mutex::new(HashMap::new()),
        }
    }

    /// Where the tables live (and their index directory).
    pub fn home(&self) -> crate::Home {
        crate::Home::new(Arc::clone(&self.shared.tables), self.shared.dir.clone())
    }

    /// Where the tables live.
    pub fn tables(&self) -> &Arc<dyn rowsearch_store::TableStore> {
        &self.shared.tables
    }

    /// Where the rows are read from.
    pub fn source(&self) -> &Arc<dyn RowSource> {
        &self.shared.source
    }

    /// The directory the index generations are under.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    fn analyzer(&self, table: &str) -> Result<Arc<dyn rowsearch_store::Analyzer>> {
        self.shared.source.analyzer().ok_or_else(|| Error::Schema {
            table: table.to_owned(),
            reason: "the row source has no analyzer".into(),
        })
    }

    pub(crate) fn rounds(&self) -> &Rounds {
        &self.shared.rounds
    }

    /// The live index of `table` (whose store id is `table_id`), opened
    /// once.
    ///
    /// # Errors
    /// As [`TableIndex::open`].
    pub fn table(&self, table: &str, table_id: u64) -> Result<Arc<LiveIndex>> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(live) = tables.get(table)
            && live.table_id == table_id
        {
            return Ok(Arc::clone(live));
        }
        let live = Arc::new(LiveIndex {
            table: table.to_owned(),
            table_id,
            index: TableIndex::open_in(&self.shared.dir, table, self.analyzer(table)?),
            overlay: Mutex::new(None),
            walks: Mutex::new(Vec::new()),
            absorbed: Mutex::new(None),
            quiet: Mutex::new(None),
        });
        tables.insert(table.to_owned(), Arc::clone(&live));
        Ok(live)
    }

    /// The live index of `table` as the store has it now.
    ///
    /// # Errors
    /// `Store` (an unknown table); as [`Self::table`].
    pub fn current(&self, table: &str) -> Result<Arc<LiveIndex>> {
        let table_id = self.shared.source.table_id(table)?;
        self.table(table, table_id)
    }

    /// Forgets `table`'s live index (after the table is dropped).
    pub fn forget(&self, table: &str) {
        self.tables.lock().unwrap_or_else(|e| e.into_inner()).remove(table);
    }

    /// The tables with a live index open, with what the refresher knows
    /// each reflects.
    pub fn absorbed(&self) -> HashMap<String, u64> {
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables.iter().filter_map(|(name, live)| Some((name.clone(), live.absorbed()?))).collect()
    }

    /// The snapshot `live` answers from, brought current as `want` says
    /// (see the module docs).
    ///
    /// # Errors
    /// `BadRequest`-like `Query` for a `min_seq` past the store's last
    /// write; `NotFresh` past the deadline; `NoIndex` for an index built
    /// for an earlier table of the name; `Store`, `Tantivy`.
    pub fn snapshot(&self, live: &LiveIndex, want: &Want) -> Result<Snapshot> {
        let snapshot = self.fresh(live, want)?;
        live.check(&snapshot)?;
        Ok(snapshot)
    }

    fn fresh(&self, live: &LiveIndex, want: &Want) -> Result<Snapshot> {
        let store = &self.shared.source;
        let wanted = want.min_seq.map_or(0, |s| s.saturating_add(1));
        // A write that has not happened yet is not waited for: an error at
        // once, not a worker held until the time limit.
        if let Some(seq) = want.min_seq {
            let next = store.next_seq()?;
            if seq >= next {
                return Err(Error::FutureSeq { min_seq: seq, last: next.saturating_sub(1) });
            }
        }
        // Read before the generation is taken (see `LiveIndex::absorbed`).
        let mut reflected = live.absorbed().unwrap_or(0);
        let mut generation = match live.index.generation() {
            // A searchable table's first index is built on the way (by the
            // refresher, or here): no reindex command is needed.
            Err(Error::NoIndex { .. }) if want.consistency == Consistency::Snapshot => {
                self.catch_up(live, store.view()?.settled_seq()?.max(wanted), 0, want.deadline)?;
                live.index.generation()?
            }
            generation => generation?,
        };
        loop {
            let from = reflected.max(generation.absorbed);
            // Without min_seq, an eventual search takes the index as it is.
            if want.consistency == Consistency::Eventual && wanted <= from {
                return Ok(Snapshot { generation, overlay: None, seq: from.saturating_sub(1) });
            }
            // Nothing committed since a read of the feed found nothing of
            // this table past `from` or before: that read stands.
            if let Some(next) = live.quiet_since(store.version(), from)
                && next >= wanted
            {
                return Ok(Snapshot { generation, overlay: None, seq: next.saturating_sub(1) });
            }
            // What the index lacks: the rows of this table the feed names
            // since it absorbed it. None (writes to other tables only):
            // the index reflects the store as of the feed's end. A few:
            // matched directly, in an overlay of this snapshot.
            let view = store.view()?;
            let rtxn = &*view;
            let changes = changes_in(rtxn, &live.table, from)?;
            let next = changes.next_seq;
            if next >= wanted {
                if changes.rows.is_empty() {
                    // Nothing of this table since `from`: the index reflects
                    // it up to `next`, so the next search reads the feed
                    // from there, not every other table's write since the
                    // index last absorbed one (an ingest into another table
                    // made each search read all of it again).
                    live.set_absorbed(next);
                    if let Some(version) = rtxn.version() {
                        *live.quiet.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(Quiet { version, from, next });
                    }
                    return Ok(Snapshot { generation, overlay: None, seq: next.saturating_sub(1) });
                }
                if want.consistency == Consistency::Snapshot
                    && changes.rows.len() <= self.shared.overlay_max_rows
                {
                    let overlay = live.overlay(rtxn, &generation, from, changes)?;
                    return Ok(Snapshot { generation, overlay: Some(overlay), seq: next.saturating_sub(1) });
                }
            }
            drop(view);
            self.catch_up(live, next.max(wanted), from, want.deadline)?;
            reflected = live.absorbed().unwrap_or(0);
            generation = live.index.generation()?;
        }
    }

    /// Over a source whose reads are round trips (HBase), a snapshot
    /// search can be answered while its feed read is in flight: the
    /// snapshot the read will most likely confirm (the serving generation
    /// with the overlay kept from the last search, or none), to be passed
    /// to [`Self::confirm`] once the search has read its page. `None` when
    /// `want` asks for anything but a plain snapshot search, the source is
    /// local (its feed read costs microseconds), or the table has no index
    /// yet.
    pub fn speculate(&self, live: &LiveIndex, want: &Want) -> Option<Speculation> {
        if want.consistency != Consistency::Snapshot || want.min_seq.is_some() || !self.shared.source.remote()
        {
            return None;
        }
        let reflected = live.absorbed().unwrap_or(0);
        let generation = live.index.generation().ok().filter(|g| g.table_id == live.table_id)?;
        let from = reflected.max(generation.absorbed);
        let overlay =
            live.overlay.lock().unwrap_or_else(|e| e.into_inner()).clone().filter(|o| o.from_seq == from);
        Some(Speculation { snapshot: Snapshot { generation, overlay, seq: from.saturating_sub(1) }, from })
    }

    /// Reads the feed for `speculation` (see [`Self::speculate`]): its
    /// snapshot, with the last write it reflects, when the feed names what
    /// it holds (no row of the table since, or exactly the rows its
    /// overlay matches); `None` when writes came that it lacks (the search
    /// is answered again from [`Self::snapshot`]).
    ///
    /// # Errors
    /// `Store`.
    pub fn confirm(&self, live: &LiveIndex, speculation: &Speculation) -> Result<Option<Snapshot>> {
        let view = self.shared.source.view()?;
        let changes = changes_in(&*view, &live.table, speculation.from)?;
        let held = match &speculation.snapshot.overlay {
            None => changes.rows.is_empty(),
            Some(o) => !changes.rows.is_empty() && o.covers(speculation.from, changes.last_seq),
        };
        if !held {
            return Ok(None);
        }
        if changes.rows.is_empty() {
            live.set_absorbed(changes.next_seq);
        }
        let mut snapshot = speculation.snapshot.clone();
        snapshot.seq = changes.next_seq.saturating_sub(1);
        Ok(Some(snapshot))
    }

    /// The snapshot a cursor walk of `live` is on: the generation numbered
    /// `number` at the commit `commit`, as kept when its last page was
    /// answered, or the serving one if it is that very commit.
    ///
    /// # Errors
    /// `StaleCursor` when neither holds; as [`TableIndex::generation`].
    pub fn resume(&self, live: &LiveIndex, number: u64, commit: u64) -> Result<Snapshot> {
        if let Some(snapshot) = live.walk(number, commit) {
            return Ok(snapshot);
        }
        // Not kept here (another process, or expired): the serving
        // snapshot if it is that very one.
        let generation = live.index.generation()?;
        if generation.number != number || generation.commit() != commit {
            return Err(Error::StaleCursor { cursor_generation: number, serving: generation.number });
        }
        let seq = generation.absorbed.saturating_sub(1);
        let snapshot = Snapshot { generation, overlay: None, seq };
        live.check(&snapshot)?;
        Ok(snapshot)
    }

    /// For a searchable table with an index: how far the index is behind
    /// the store.
    pub fn freshness(&self, table: &str) -> Option<Freshness> {
        let store = &self.shared.source;
        store.schema(table).ok()?.search.as_ref()?;
        let live = self.current(table).ok()?;
        let reflected = live.absorbed().unwrap_or(0);
        let generation = live.index.generation().ok()?;
        let known = reflected.max(generation.absorbed);
        let view = store.view().ok()?;
        let rtxn = &*view;
        let changes = changes_in(rtxn, table, known).ok()?;
        let lag = changes.rows.len() as u64;
        let index_next = if lag == 0 { changes.next_seq } else { known };
        Some(Freshness {
            store_seq: changes.next_seq.saturating_sub(1),
            index_seq: index_next.saturating_sub(1),
            lag_rows: lag,
            lag_ms: changes.age_ms(rtxn).ok()?.unwrap_or(0),
        })
    }

    /// Brings `live`'s index to the feed sequence `target` (exclusive):
    /// through the refresher, or on this thread without one; `NotFresh`
    /// (naming `reflects`, what the index had) past `deadline`.
    fn catch_up(&self, live: &LiveIndex, target: u64, reflects: u64, deadline: Instant) -> Result<()> {
        let attached = self.shared.rounds.lock().attached;
        let caught_up = if attached {
            self.wait_absorbed(live, target, deadline)
        } else {
            self.reindex_inline(&live.table, deadline)?
        };
        if caught_up {
            return Ok(());
        }
        Err(Error::NotFresh {
            table: live.table.clone(),
            wanted: target.saturating_sub(1),
            reflects: reflects.saturating_sub(1),
        })
    }

    /// Waits until `live`'s index has absorbed the change feed up to
    /// `next_seq` (exclusive), asking the refresher for rounds meanwhile;
    /// false when `deadline` passes first or no refresher runs.
    pub fn wait_absorbed(&self, live: &LiveIndex, next_seq: u64, deadline: Instant) -> bool {
        let rounds = &self.shared.rounds;
        let mut state = rounds.lock();
        loop {
            if live.absorbed().is_some_and(|n| n >= next_seq) {
                return true;
            }
            if state.stop || !state.attached {
                return false;
            }
            // The round that answers must start after this call: one in
            // progress may have read the feed before the write.
            let after = state.rounds + 1 + u64::from(state.running);
            state.requested = true;
            rounds.wake.notify_all();
            while state.rounds < after && !state.stop {
                let now = Instant::now();
                if now >= deadline {
                    return false;
                }
                state = match rounds.done.wait_timeout(state, deadline - now) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                };
            }
        }
    }

    /// Brings `table`'s index current on this thread (no refresher):
    /// incremental, or the first full build; false when another reindex
    /// held it past `deadline`.
    fn reindex_inline(&self, table: &str, deadline: Instant) -> Result<bool> {
        let options = ReindexOptions {
            mode: ReindexMode::Auto,
            threads: 1,
            memory_budget_bytes: 64 << 20,
            // Another reindex of the table (it brings the index current
            // too) is waited for within the search's own deadline.
            lock_wait: deadline.saturating_duration_since(Instant::now()),
            ..Default::default()
        };
        match reindex_in(&*self.shared.source, &self.shared.dir, table, &options, &mut |_| {}) {
            Ok(_) => Ok(true),
            Err(Error::Busy { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl LiveIndex {
    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The serving generation, reloaded if a reindex changed it.
    ///
    /// # Errors
    /// As [`TableIndex::generation`].
    pub fn generation(&self) -> Result<Arc<Generation>> {
        self.index.generation()
    }

    /// What the refresher knows the index reflects (feed sequence,
    /// exclusive), if a round has seen the table. Ask before taking the
    /// generation: the generation taken after is at least that new.
    pub fn absorbed(&self) -> Option<u64> {
        *self.absorbed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a read of the feed from `from` on would end, known without
    /// one: the source is at the `version` of the last read that found
    /// nothing of the table, from `from` or before.
    fn quiet_since(&self, version: Option<u64>, from: u64) -> Option<u64> {
        let quiet = (*self.quiet.lock().unwrap_or_else(|e| e.into_inner()))?;
        (Some(quiet.version) == version && quiet.from <= from).then_some(quiet.next.max(from))
    }

    pub(crate) fn set_absorbed(&self, next_seq: u64) {
        let mut absorbed = self.absorbed.lock().unwrap_or_else(|e| e.into_inner());
        *absorbed = Some(absorbed.map_or(next_seq, |a| a.max(next_seq)));
    }

    /// Keeps `snapshot` for the cursor walk whose page saw `commit`.
    pub fn keep_walk(&self, snapshot: &Snapshot, commit: u64) {
        let mut walks = self.walks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) =
            walks.iter_mut().find(|w| w.snapshot.generation.number == snapshot.number() && w.commit == commit)
        {
            w.used = Instant::now();
            return;
        }
        if walks.len() >= MAX_WALKS
            && let Some(oldest) = walks.iter().enumerate().min_by_key(|(_, w)| w.used).map(|(i, _)| i)
        {
            walks.swap_remove(oldest);
        }
        walks.push(Walk { commit, snapshot: snapshot.clone(), used: Instant::now() });
    }

    fn walk(&self, number: u64, commit: u64) -> Option<Snapshot> {
        let mut walks = self.walks.lock().unwrap_or_else(|e| e.into_inner());
        walks.retain(|w| w.used.elapsed() < WALK_KEEP);
        let walk = walks.iter_mut().find(|w| w.snapshot.generation.number == number && w.commit == commit)?;
        walk.used = Instant::now();
        Some(walk.snapshot.clone())
    }

    /// A snapshot of an index built for an earlier table of this name
    /// (dropped since) answers nothing.
    fn check(&self, snapshot: &Snapshot) -> Result<()> {
        if snapshot.generation.table_id != self.table_id {
            return Err(Error::NoIndex { table: self.table.clone() });
        }
        Ok(())
    }

    /// The overlay of `changes` (the rows of the table written past
    /// `from`, read in `rtxn`): the one last built when it covers the same
    /// writes; that one with the rows written since added as a layer when
    /// it covers a start of them; else a new one from `rtxn`'s snapshot.
    fn overlay(
        &self,
        rtxn: &dyn RowView,
        generation: &Generation,
        from: u64,
        changes: TableChanges,
    ) -> Result<Arc<Overlay>> {
        let cached = self.overlay.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let overlay = match cached {
            Some(o) if o.covers(from, changes.last_seq) => return Ok(o),
            Some(o)
                if o.from_seq == from && o.next_seq <= changes.next_seq && o.last_seq < changes.last_seq =>
            {
                let tail = changes_in(rtxn, &self.table, o.next_seq)?;
                Arc::new(o.extend(rtxn, &generation.schema, tail)?)
            }
            _ => Arc::new(Overlay::build(rtxn, &generation.schema, from, changes)?),
        };
        *self.overlay.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&overlay));
        Ok(overlay)
    }
}
