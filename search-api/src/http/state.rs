//! What every request shares: the searcher (and through it the store),
//! jobs, metrics, limits and the work pool.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use rowsearch_indexer::IndexDir;
use rowsearch_store::Store;

use super::jobs::Jobs;
use super::metrics::{Metrics, TableFigures};
use super::pool;
use crate::Searcher;

/// Request limits (API.md).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body (default 64 MiB).
    pub max_body_bytes: u64,
    /// Largest `limit` of a scan or lookup (default 10,000).
    pub max_scan_limit: usize,
    /// Longest filter string (default 64 KiB).
    pub max_filter_bytes: usize,
    /// Longest a request may take before it is answered 503 (default 30 s).
    pub request_timeout: Duration,
    /// Longest a client may take to send a request's headers before its
    /// connection is closed (default 10 s): slow clients cannot pile up.
    pub header_read_timeout: Duration,
    /// Longest a client may take to send a request's body (default 30 s):
    /// 408 past it.
    pub body_read_timeout: Duration,
    /// Most connections open at once (default 1,024): past it the server
    /// accepts no more until one closes.
    pub max_connections: usize,
    /// Most connections one client (address) may hold open at once
    /// (default 256, a quarter of the total): past it a new connection is
    /// closed at once, so one client cannot take every slot.
    pub max_connections_per_client: usize,
    /// Most bytes of request bodies held at once, server-wide, from the
    /// moment one starts to be read until its request is done (default
    /// 256 MiB): a body that does not fit waits, then is refused 503
    /// `busy` before it is read.
    pub max_bodies_bytes: u64,
    /// Most bytes of answers waiting to be sent, server-wide (default 256
    /// MiB): an answer over 64 KiB that does not fit is replaced by a 503
    /// `busy` (`answers.rs`).
    pub max_answers_bytes: u64,
    /// Threads doing the store and index work of requests (default: the
    /// number of cores). Requests beyond them wait their turn in arrival
    /// order: on a busy server a request then runs without sharing its
    /// core, instead of every request in flight slowing down together.
    pub workers: usize,
    /// How long an idle worker (one at a time) keeps looking for the next
    /// request before it sleeps, yielding its core to any other thread
    /// meanwhile (default 500 us; zero: sleep at once). A request that
    /// comes meanwhile needs no thread woken and runs on a warm core.
    pub idle_spin: Duration,
    /// Most rows written since the index's last commit that a snapshot
    /// search matches directly (see [`crate::Searcher::with_overlay_max_rows`]).
    pub overlay_max_rows: usize,
    /// A search query's expansion budget (default 32 units: a prefix,
    /// fuzzy word or typo-tolerant word 1, a phrase prefix 4): past it 400.
    pub max_expansions: usize,
    /// A search query's most leaf clauses (default 1,024): past it 400.
    pub max_clauses: usize,
    /// Most hits a search page holds (default [`crate::MAX_LIMIT`]).
    pub max_search_limit: usize,
    /// Most lookups an `indexes:intersect` combines (default 16).
    pub max_lookups: usize,
    /// Most bytes of a field's text a highlight looks through (default
    /// [`crate::MAX_HIGHLIGHT_TEXT_BYTES`]).
    pub max_highlight_bytes: usize,
    /// A request that takes longer is logged at `WARN` as slow (default
    /// 1 s; `request_log.rs`).
    pub slow_request: Duration,
}

/// Default most lookups one intersection or union combines (each is a
/// sorted stream read in step with the others; [`Limits::max_lookups`]).
pub const MAX_INDEX_TERMS: usize = 16;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_scan_limit: 10_000,
            max_filter_bytes: 64 << 10,
            request_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_connections_per_client: 256,
            max_bodies_bytes: 256 << 20,
            max_answers_bytes: 256 << 20,
            workers: std::thread::available_parallelism().map_or(2, usize::from),
            idle_spin: Duration::from_micros(500),
            max_expansions: rowsearch_indexer::query::DEFAULT_MAX_EXPANSIONS,
            max_clauses: rowsearch_indexer::query::DEFAULT_MAX_CLAUSES,
            max_search_limit: crate::searcher::MAX_LIMIT,
            max_lookups: MAX_INDEX_TERMS,
            max_highlight_bytes: crate::searcher::MAX_HIGHLIGHT_TEXT_BYTES,
            overlay_max_rows: crate::searcher::DEFAULT_OVERLAY_MAX_ROWS,
            slow_request: Duration::from_secs(1),
        }
    }
}

/// Who may call: the checker of access keys (none: the server runs without
/// keys) and the origins besides its own that browsers may call it from.
#[derive(Debug, Default)]
pub struct AccessConfig {
    /// Checks keys; `None` when the server has no master key.
    pub checker: Option<crate::keys::Checker>,
    /// Origins (`scheme://host[:port]`) allowed besides the server's own.
    pub allow_origins: Vec<String>,
    /// The hosts requests may name (`serve --allow-host`; `gate.rs`).
    pub hosts: super::hosts::HostRule,
}

/// What every request shares.
#[derive(Debug)]
pub struct State {
    /// The searcher (it holds where the tables live).
    pub searcher: Searcher,
    /// The local data directory's store: access keys, the index
    /// generations beside it, and, unless the tables live elsewhere
    /// (`serve --hbase`), the tables.
    store: Arc<Store>,
    /// Reindex jobs.
    pub jobs: Jobs,
    /// Metrics.
    pub metrics: Metrics,
    /// Limits.
    pub limits: Limits,
    /// The threads that do requests' store and index work.
    pub(crate) work: pool::WorkPool,
    /// Who may call (keys, origins).
    pub access: AccessConfig,
    /// The budget of request bodies in flight, in KiB
    /// ([`Limits::max_bodies_bytes`]).
    pub(crate) bodies: Arc<tokio::sync::Semaphore>,
    /// The budget of answers waiting to be sent, in KiB
    /// ([`Limits::max_answers_bytes`]).
    pub(crate) answers: Arc<tokio::sync::Semaphore>,
    /// Where backups go and how many are kept (`serve --backup-dir`);
    /// `None`: the server takes none.
    pub backups: Option<super::jobs::BackupConfig>,
    /// This server as a searcher of a cluster (`serve --cluster`).
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// Tables' row counts kept between `GET /tables/{t}` calls.
    pub(crate) row_counts: super::row_counts::RowCounts,
}

impl State {
    /// State over `store`.
    ///
    /// # Errors
    /// When the operating system refuses the worker threads.
    pub fn new(store: Arc<Store>, limits: Limits) -> std::io::Result<State> {
        let bodies = Arc::new(tokio::sync::Semaphore::new(
            usize::try_from(limits.max_bodies_bytes.div_ceil(1024))
                .unwrap_or(usize::MAX)
                .min(tokio::sync::Semaphore::MAX_PERMITS),
        ));
        let answers = super::answers::budget(limits.max_answers_bytes);
        let metrics = Metrics::new();
        let work = pool::WorkPool::new(limits.workers, limits.idle_spin, metrics.taken())?;
        Ok(State {
            searcher: Searcher::new(Arc::clone(&store)).with_overlay_max_rows(limits.overlay_max_rows),
            store,
            jobs: Jobs::default(),
            metrics,
            limits,
            work,
            bodies,
            answers,
            access: AccessConfig::default(),
            backups: None,
            cluster: None,
            row_counts: Default::default(),
        })
    }

    /// The local data directory's store (see the field).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Where the tables live: HBase with `serve --hbase`, else the store.
    pub fn tables(&self) -> &dyn rowsearch_store::TableStore {
        &**self.searcher.tables()
    }

    /// Where the tables live, shared (for a job's thread).
    pub fn shared_tables(&self) -> Arc<dyn rowsearch_store::TableStore> {
        Arc::clone(self.searcher.tables())
    }

    /// Whether the tables live elsewhere than the embedded store (what
    /// only the store keeps is then not served; see `route_table`).
    pub fn elsewhere(&self) -> bool {
        self.tables().store().is_none()
    }

    /// Starts a job for every index whose build has not finished (stopped
    /// by a restart, or by another process that stopped): (table, index,
    /// job id) of each.
    pub fn resume_index_builds(&self) -> Vec<(String, String, String)> {
        let mut started = Vec::new();
        for table in self.tables().tables().unwrap_or_default() {
            for state in self.tables().indexes(&table).unwrap_or_default() {
                if state.building {
                    let index = state.schema.name;
                    let job = self
                        .jobs
                        .start_index_build(self.shared_tables(), &table, &index)
                        .unwrap_or_else(|running| running);
                    started.push((table.clone(), index, job));
                }
            }
        }
        started
    }

    /// A table's serving generation, its bytes, and when it last changed.
    pub fn index_figures(&self, table: &str) -> Option<(u64, u64, u64)> {
        let dir = IndexDir::new(self.store().path(), table);
        let generation = dir.current().ok()??;
        let bytes = dir.generation_bytes(generation).ok()?;
        let meta = std::fs::metadata(dir.generation_path(generation).join("meta.json")).ok()?;
        let when = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Some((generation, bytes, when))
    }

    /// For a searchable table with an index: how far its index is behind.
    pub fn freshness(&self, table: &str) -> Option<crate::searcher::Freshness> {
        // A searcher of a cluster: its shards' indexes, the furthest behind.
        if let Some(indexes) = self.cluster.as_ref().and_then(|c| c.indexes()) {
            return indexes.freshness(table);
        }
        self.searcher.freshness(table)
    }

    /// What is wrong with a searchable table's index, if anything (a
    /// pointer naming no generation, or one that is missing): searches of
    /// that table answer 503 `index_unavailable` until a full reindex.
    pub fn index_trouble(&self) -> Option<String> {
        for table in self.tables().tables().ok()? {
            let searchable = self.tables().schema(&table).is_ok_and(|s| s.search.is_some());
            if !searchable {
                continue;
            }
            let dir = rowsearch_indexer::IndexDir::new(self.store().path(), &table);
            if let Err(e) = dir.check_pointer() {
                return Some(format!(
                    "the search index of table {table:?} is damaged ({e}): `rowsearch reindex --full --table {table}` rebuilds it"
                ));
            }
        }
        None
    }

    /// Figures of every table, for `/metrics`.
    pub fn table_figures(&self) -> Vec<TableFigures> {
        self.tables()
            .tables()
            .unwrap_or_default()
            .into_iter()
            .map(|table| {
                // Sizes are the store's; HBase keeps its own (its UI, its
                // metrics): none here for a table there.
                let stats = self.tables().store().and_then(|store| store.stats(&table).ok());
                let index = self.index_figures(&table);
                TableFigures {
                    freshness: self.freshness(&table),
                    cells: stats.as_ref().map(|s| s.cells),
                    bytes: stats.as_ref().map(|s| s.bytes),
                    index: index.map(|(g, b, _)| (g, b)),
                    last_reindex_seconds: index.map(|(_, _, w)| w),
                    table,
                }
            })
            .collect()
    }
}
