//! The shards a searcher holds, each with an index of its own: a live
//! index over a [`ShardSource`] (the table's rows of that shard only) kept
//! current by a refresher of its own, under
//! `DATA/shards/TABLE/SHARD-of-COUNT/`. The cluster's rounds say what is
//! held ([`ShardIndexes::hold`]): a shard taken is opened (its refresher's
//! first round builds it from HBase, or brings the generation left from an
//! earlier hold current from the change feed), a shard given up is closed
//! (its files stay, for a later take).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rowsearch_indexer::{Home, LiveIndexes, RefreshOptions, Refresher, ShardSource};
use rowsearch_store::TableStore;

use super::plan::ShardId;
use crate::Searcher;

/// One shard's index.
#[derive(Debug)]
pub struct ShardIndex {
    /// Which.
    pub id: ShardId,
    /// The table's shard count it was opened for.
    pub count: u32,
    /// Searches it (rows are read from the table).
    pub searcher: Searcher,
}

/// The shards' indexes of this searcher (see the module docs).
pub struct ShardIndexes {
    tables: Arc<dyn TableStore>,
    data: PathBuf,
    refresh: RefreshOptions,
    overlay_max_rows: usize,
    open: Mutex<BTreeMap<ShardId, Arc<ShardIndex>>>,
    /// Shards given up, still answering until the instant beside them.
    retiring: Mutex<Vec<(Arc<ShardIndex>, std::time::Instant)>>,
}

/// How long a shard given up still answers: searchers whose view of the
/// leases is a round old (rounds run every second) still ask it.
const RETIRING: std::time::Duration = std::time::Duration::from_secs(3);

impl std::fmt::Debug for ShardIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardIndexes").field("data", &self.data).finish_non_exhaustive()
    }
}

impl ShardIndexes {
    /// Shards of `tables`' tables, their indexes under `data/shards`,
    /// each kept current as `refresh` says.
    pub fn new(
        tables: Arc<dyn TableStore>,
        data: &std::path::Path,
        refresh: RefreshOptions,
        overlay_max_rows: usize,
    ) -> ShardIndexes {
        ShardIndexes {
            tables,
            data: data.join("shards"),
            refresh,
            overlay_max_rows,
            open: Mutex::new(BTreeMap::new()),
            retiring: Mutex::new(Vec::new()),
        }
    }

    fn open_map(&self) -> std::sync::MutexGuard<'_, BTreeMap<ShardId, Arc<ShardIndex>>> {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens the shards of `held` not open, closes those open and not in
    /// it (or opened for another shard count); each shard with its
    /// table's count.
    ///
    /// # Errors
    /// When the operating system refuses a refresher's thread.
    pub fn hold(&self, held: &[(ShardId, u32)]) -> std::io::Result<()> {
        let mut closed = Vec::new();
        {
            let mut open = self.open_map();
            open.retain(|id, index| {
                let keep = held.iter().any(|(h, count)| h == id && *count == index.count);
                if !keep {
                    closed.push(Arc::clone(index));
                }
                keep
            });
            for (id, count) in held {
                if open.contains_key(id) {
                    continue;
                }
                let index = self.start(id, *count)?;
                tracing::info!(target: "rowsearch::cluster", shard = %id, "serving a shard");
                open.insert(id.clone(), Arc::new(index));
            }
        }
        let now = std::time::Instant::now();
        let mut retiring = self.retiring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        retiring.extend(closed.into_iter().map(|index| (index, now + RETIRING)));
        // Taken again while it retired: the open one answers.
        retiring.retain(|(index, _)| !held.iter().any(|(h, _)| *h == index.id));
        let (done, kept): (Vec<_>, Vec<_>) = retiring.drain(..).partition(|(_, until)| *until <= now);
        *retiring = kept;
        if !done.is_empty() {
            // A refresher stops after its round (a build may be under
            // way): not on the cluster's thread, whose rounds renew leases.
            std::thread::spawn(move || {
                for (index, _) in done {
                    tracing::info!(target: "rowsearch::cluster", shard = %index.id, "no longer serving a shard");
                    drop(index);
                }
            });
        }
        Ok(())
    }

    fn start(&self, id: &ShardId, count: u32) -> std::io::Result<ShardIndex> {
        let data = self.data.join(&id.table).join(format!("{}-of-{count}", id.shard));
        std::fs::create_dir_all(&data)?;
        let home = Home::new(Arc::clone(&self.tables), data);
        let source = Arc::new(ShardSource::new(Arc::clone(&self.tables) as _, &id.table, id.shard, count));
        let live = LiveIndexes::with_source(home, source, self.overlay_max_rows);
        let refresher =
            Refresher::start(Arc::new(live), self.refresh.clone()).map_err(std::io::Error::other)?;
        Ok(ShardIndex { id: id.clone(), count, searcher: Searcher::with_refresher(Arc::new(refresher)) })
    }

    /// Shard `id`'s index, when this searcher has it open (or gave it up
    /// less than 3 s ago: `RETIRING`).
    pub fn get(&self, id: &ShardId) -> Option<Arc<ShardIndex>> {
        if let Some(index) = self.open_map().get(id) {
            return Some(Arc::clone(index));
        }
        let retiring = self.retiring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        retiring
            .iter()
            .find(|(index, until)| index.id == *id && *until > now)
            .map(|(index, _)| Arc::clone(index))
    }

    /// Shard `id`'s index when this searcher holds it (not one retiring).
    pub fn held(&self, id: &ShardId) -> Option<Arc<ShardIndex>> {
        self.open_map().get(id).cloned()
    }

    /// The shards open.
    pub fn open_ids(&self) -> Vec<ShardId> {
        self.open_map().keys().cloned().collect()
    }

    /// How far behind the furthest behind of `table`'s shards open here
    /// is, if any has an index.
    pub fn freshness(&self, table: &str) -> Option<rowsearch_indexer::Freshness> {
        let open = self.open_map();
        open.values()
            .filter(|i| i.id.table == table)
            .filter_map(|i| i.searcher.freshness(table))
            .max_by_key(|f| (f.lag_ms, f.lag_rows))
    }
}
