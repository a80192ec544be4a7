//! The HTTP API of API.md: warp on tokio, a thin layer over the store, the
//! indexer and the [`Searcher`].
//!
//! [`serve`] takes a bound listener (so a caller can bind port 0 and learn
//! the port first) and a shutdown future; on shutdown it stops accepting
//! and lets requests in flight finish. Store and index work runs on a fixed
//! pool of worker threads fed in arrival order (`pool.rs`), never on the
//! async workers. Limits are in [`Limits`].

mod error;
mod jobs;
mod metrics;
mod pool;
mod routes;

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use rowsearch_indexer::generation::IndexDir;
use rowsearch_store::Store;

pub use error::ApiError;
pub use jobs::{JobState, Jobs};
pub use metrics::{Metrics, TableFigures};

use crate::Searcher;

/// The OpenAPI document served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_scan_limit: 10_000,
            max_filter_bytes: 64 << 10,
            request_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            workers: std::thread::available_parallelism().map_or(2, usize::from),
            idle_spin: Duration::from_micros(500),
        }
    }
}

/// What every request shares.
#[derive(Debug)]
pub struct State {
    /// The searcher (it holds the store).
    pub searcher: Searcher,
    /// Reindex jobs.
    pub jobs: Jobs,
    /// Metrics.
    pub metrics: Metrics,
    /// Limits.
    pub limits: Limits,
    /// The threads that do requests' store and index work.
    pub(crate) work: pool::WorkPool,
}

impl State {
    /// State over `store`.
    ///
    /// # Errors
    /// When the operating system refuses the worker threads.
    pub fn new(store: Arc<Store>, limits: Limits) -> std::io::Result<State> {
        let metrics = Metrics::new();
        let work = pool::WorkPool::new(limits.workers, limits.idle_spin, metrics.taken())?;
        Ok(State { searcher: Searcher::new(store), jobs: Jobs::default(), metrics, limits, work })
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        self.searcher.store()
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

    /// Figures of every table, for `/metrics`.
    pub fn table_figures(&self) -> Vec<TableFigures> {
        self.store()
            .tables()
            .into_iter()
            .map(|table| {
                let stats = self.store().stats(&table).unwrap_or_default();
                let index = self.index_figures(&table);
                TableFigures {
                    cells: stats.cells,
                    bytes: stats.bytes,
                    index: index.map(|(g, b, _)| (g, b)),
                    last_reindex_seconds: index.map(|(_, _, w)| w),
                    table,
                }
            })
            .collect()
    }
}

/// Serves the API on `listener` until `shutdown` completes, then stops
/// accepting and finishes the requests in flight.
///
/// Connections are served by hyper (HTTP/1.1 and HTTP/2) with the warp
/// routes as the service, and a timer, so a client that does not finish
/// sending its headers within [`Limits::header_read_timeout`] is
/// disconnected.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let header_timeout = state.limits.header_read_timeout;
    let service = warp::service(routes::routes(state));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    eprintln!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            // A connection that ends badly (reset, timed out) concerns only it.
            let _ = watcher.watch(connection).await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
