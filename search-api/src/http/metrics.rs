//! `/metrics`: Prometheus text. Request counts and latency histograms per
//! route; store and index sizes, generations and the last reindex, read
//! at scrape time; stale hits dropped; jobs of the work pool.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TakenLabels {
    taken: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThriftLabels {
    method: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabels {
    table: String,
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    stale_hits: Counter,
    idle_closed: Counter,
    refused: Family<ReasonLabels, Counter>,
    work_jobs: Family<TakenLabels, Counter>,
    store_bytes: Family<TableLabels, Gauge>,
    store_cells: Family<TableLabels, Gauge>,
    index_bytes: Family<TableLabels, Gauge>,
    index_generation: Family<TableLabels, Gauge>,
    last_reindex: Family<TableLabels, Gauge>,
    store_seq: Family<TableLabels, Gauge>,
    index_seq: Family<TableLabels, Gauge>,
    index_lag_rows: Family<TableLabels, Gauge>,
    index_lag_seconds: Family<TableLabels, Gauge<f64, AtomicU64>>,
    work_running: Gauge,
    work_queued: Gauge,
    thrift_calls: Family<ThriftLabels, Counter>,
    commits: Gauge,
    committed_batches: Gauge,
    syncs: Gauge,
    unsynced_commits: Gauge,
    cluster_shards_held: Gauge,
    cluster_searchers_live: Gauge,
    cluster_round_failures: Gauge,
    cluster_shard_searches: Gauge,
    cluster_shard_statistics: Gauge,
}

/// One table's figures at scrape time.
#[derive(Debug, Clone, Default)]
pub struct TableFigures {
    /// The table.
    pub table: String,
    /// Cells stored (`None` for a table in HBase, whose own metrics say).
    pub cells: Option<u64>,
    /// Bytes of its LMDB pages (`None` as above).
    pub bytes: Option<u64>,
    /// Serving generation and its bytes, if indexed.
    pub index: Option<(u64, u64)>,
    /// Unix seconds of the last reindex (the pointer's or meta's mtime).
    pub last_reindex_seconds: Option<u64>,
    /// For a searchable table with an index: how far its index is behind.
    pub freshness: Option<crate::searcher::Freshness>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics, registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("rowsearch");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 50 us .. ~3 s.
            Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
        });
        let stale_hits = Counter::default();
        let idle_closed = Counter::default();
        let refused = Family::<ReasonLabels, Counter>::default();
        let work_jobs = Family::<TakenLabels, Counter>::default();
        let store_bytes = Family::<TableLabels, Gauge>::default();
        let store_cells = Family::<TableLabels, Gauge>::default();
        let index_bytes = Family::<TableLabels, Gauge>::default();
        let index_generation = Family::<TableLabels, Gauge>::default();
        let last_reindex = Family::<TableLabels, Gauge>::default();
        let store_seq = Family::<TableLabels, Gauge>::default();
        let index_seq = Family::<TableLabels, Gauge>::default();
        let index_lag_rows = Family::<TableLabels, Gauge>::default();
        let index_lag_seconds = Family::<TableLabels, Gauge<f64, AtomicU64>>::default();
        let work_running = Gauge::default();
        let work_queued = Gauge::default();
        let thrift_calls = Family::<ThriftLabels, Counter>::default();
        let commits = Gauge::default();
        let committed_batches = Gauge::default();
        let syncs = Gauge::default();
        let unsynced_commits = Gauge::default();
        registry.register(
            "store_syncs",
            "syncs of the store by the background syncer and FSYNC_WAL writes (--durability process; \
             0 with --durability sync, where every commit is synced)",
            syncs.clone(),
        );
        registry.register(
            "store_unsynced_commits",
            "commits not yet on disk (--durability process: in the page cache, synced within \
             --sync-interval-ms)",
            unsynced_commits.clone(),
        );
        registry.register(
            "store_commits",
            "write transactions committed (writes arriving together share one)",
            commits.clone(),
        );
        registry.register(
            "store_committed_batches",
            "write batches committed (over store_commits: writes per commit)",
            committed_batches.clone(),
        );
        registry.register(
            "thrift_calls",
            "calls to the Thrift gateway by method (unknown for a method it does not serve) and outcome \
             (ok, or the exception: io_error, illegal_argument, already_exists, application); method \
             connection with outcome refused_per_client: a connection closed as its client held its share",
            thrift_calls.clone(),
        );
        registry.register(
            "work_running",
            "requests' jobs running on the work pool now",
            work_running.clone(),
        );
        registry.register(
            "work_queued",
            "requests' jobs waiting for a work pool thread now",
            work_queued.clone(),
        );
        registry.register("http_requests", "HTTP requests by route and status", requests.clone());
        registry.register("http_request_seconds", "HTTP request latency by route", latency.clone());
        registry.register("search_stale_hits_dropped", "search hits whose row was gone", stale_hits.clone());
        registry.register(
            "http_connections_closed_idle",
            "connections closed for sending no request within the header timeout",
            idle_closed.clone(),
        );
        registry.register(
            "http_refused",
            "requests refused before their route ran, by reason (missing_key, invalid_key, forbidden, \
             forbidden_origin)",
            refused.clone(),
        );
        registry.register(
            "work_jobs",
            "requests' store and index work run by the work pool, by whether the worker that took \
             it was awake (the job was queued when it ended its last one, or came while it spun) \
             or had gone to sleep (woken)",
            work_jobs.clone(),
        );
        registry.register("table_bytes", "bytes of a table's LMDB pages", store_bytes.clone());
        registry.register("table_cells", "cells stored in a table (all versions)", store_cells.clone());
        registry.register("index_bytes", "bytes of a table's serving index generation", index_bytes.clone());
        registry.register("index_generation", "a table's serving index generation", index_generation.clone());
        registry.register(
            "index_last_reindex_timestamp_seconds",
            "when a table's index last changed (unix seconds)",
            last_reindex.clone(),
        );
        registry.register("store_seq", "the store's last write (change feed seq)", store_seq.clone());
        registry.register(
            "index_seq",
            "the last write a table's index reflects (change feed seq)",
            index_seq.clone(),
        );
        registry.register(
            "index_lag_rows",
            "rows of a table written since the last write its index reflects",
            index_lag_rows.clone(),
        );
        registry.register(
            "index_lag_seconds",
            "how long ago the oldest write a table's index lacks was committed (0: it lacks none)",
            index_lag_seconds.clone(),
        );
        let cluster_shards_held = Gauge::default();
        let cluster_searchers_live = Gauge::default();
        let cluster_round_failures = Gauge::default();
        let cluster_shard_searches = Gauge::default();
        let cluster_shard_statistics = Gauge::default();
        registry.register(
            "cluster_shards_held",
            "shards this searcher serves (serve --cluster)",
            cluster_shards_held.clone(),
        );
        registry.register(
            "cluster_searchers_live",
            "live searchers of its cluster, itself included, as it last read them",
            cluster_searchers_live.clone(),
        );
        registry.register(
            "cluster_round_failures",
            "its cluster rounds (heartbeat, leases) that failed since it started",
            cluster_round_failures.clone(),
        );
        registry.register(
            "cluster_shard_searches",
            "searches of a shard this searcher ran for its cluster (each search runs one per shard it covers: a mailbox's one)",
            cluster_shard_searches.clone(),
        );
        registry.register(
            "cluster_shard_statistics",
            "a shard's BM25 statistics this searcher gathered for a search by relevance of its cluster",
            cluster_shard_statistics.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
            latency,
            stale_hits,
            idle_closed,
            refused,
            work_jobs,
            store_bytes,
            store_cells,
            index_bytes,
            index_generation,
            last_reindex,
            store_seq,
            index_seq,
            index_lag_rows,
            index_lag_seconds,
            work_running,
            work_queued,
            thrift_calls,
            commits,
            committed_batches,
            syncs,
            unsynced_commits,
            cluster_shards_held,
            cluster_searchers_live,
            cluster_round_failures,
            cluster_shard_searches,
            cluster_shard_statistics,
        }
    }

    /// Counts one call to the Thrift gateway (`method` is one it serves, or
    /// `unknown`: a client's method names do not grow the label set).
    pub fn thrift_call(&self, method: &str, outcome: &'static str) {
        self.thrift_calls.get_or_create(&ThriftLabels { method: method.to_owned(), outcome }).inc();
    }

    /// Counts one request.
    pub fn observe(&self, route: &'static str, status: u16, seconds: f64) {
        self.requests.get_or_create(&RequestLabels { route, status }).inc();
        self.latency.get_or_create(&RouteLabels { route }).observe(seconds);
    }

    /// Counts stale hits dropped by a search.
    pub fn stale(&self, n: u64) {
        self.stale_hits.inc_by(n);
    }

    /// Counts a request refused for `reason` (an error code).
    pub fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Counts a connection closed for sending nothing.
    pub fn connection_closed_idle(&self) {
        self.idle_closed.inc();
    }

    /// The work pool's counters.
    pub(super) fn taken(&self) -> super::pool::Taken {
        // One at a time: the family stays locked while a counter it lent is
        // in scope, and creating the second needs the lock.
        let counter = |taken| self.work_jobs.get_or_create(&TakenLabels { taken }).clone();
        let awake = counter("awake");
        let woken = counter("woken");
        super::pool::Taken { awake, woken }
    }

    /// The text exposition, with table figures and the work pool's load
    /// read just now.
    pub fn render(
        &self,
        tables: &[TableFigures],
        work: super::pool::PoolLoad,
        commits: (u64, u64),
        syncs: Option<(u64, u64)>,
        cluster: Option<crate::cluster::ClusterFigures>,
    ) -> String {
        let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        if let Some(c) = cluster {
            self.cluster_shards_held.set(gauge(c.shards_held));
            self.cluster_searchers_live.set(gauge(c.searchers_live));
            self.cluster_round_failures.set(gauge(c.round_failures));
            self.cluster_shard_searches.set(gauge(c.keys_answered));
            self.cluster_shard_statistics.set(gauge(c.stats_answered));
        }
        let (synced, unsynced) = syncs.unwrap_or_default();
        self.syncs.set(gauge(synced));
        self.unsynced_commits.set(gauge(unsynced));
        self.commits.set(gauge(commits.0));
        self.committed_batches.set(gauge(commits.1));
        self.work_running.set(gauge(work.running as u64));
        self.work_queued.set(gauge(work.queued as u64));
        for t in tables {
            let labels = TableLabels { table: t.table.clone() };
            if let (Some(bytes), Some(cells)) = (t.bytes, t.cells) {
                self.store_bytes.get_or_create(&labels).set(gauge(bytes));
                self.store_cells.get_or_create(&labels).set(gauge(cells));
            }
            if let Some((generation, bytes)) = t.index {
                self.index_generation.get_or_create(&labels).set(gauge(generation));
                self.index_bytes.get_or_create(&labels).set(gauge(bytes));
            }
            if let Some(s) = t.last_reindex_seconds {
                self.last_reindex.get_or_create(&labels).set(gauge(s));
            }
            if let Some(f) = t.freshness {
                self.store_seq.get_or_create(&labels).set(gauge(f.store_seq));
                self.index_seq.get_or_create(&labels).set(gauge(f.index_seq));
                self.index_lag_rows.get_or_create(&labels).set(gauge(f.lag_rows));
                self.index_lag_seconds.get_or_create(&labels).set(f.lag_ms as f64 / 1e3);
            }
        }
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}
