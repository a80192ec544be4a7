//! What searchers of a cluster ask each other, and how: a shard's part of
//! a search ([`ShardCall`] → [`ShardAnswer`]) over `POST /cluster/shard`
//! with the cluster's secret, and a whole search passed on to the searcher
//! that should coordinate it (the holder of a mailbox's shard).
//!
//! Calls are HTTP/1.1 with hyper's client, made from the work pool's
//! threads on the server's runtime, each bounded by the search's time
//! left.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use rowsearch_indexer::ShardStats;

/// The header carrying the cluster's secret.
pub const SECRET_HEADER: &str = "x-rowsearch-cluster";
/// The header marking a search passed on by another searcher: it is not
/// passed on again.
pub const HOP_HEADER: &str = "x-rowsearch-hop";

/// Which part of a search a shard is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// What scoring the query asks of BM25 statistics.
    Stats,
    /// The best hits, the total, facets and groups.
    Keys,
}

/// A shard's part of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardCall {
    /// Which part.
    pub phase: Phase,
    /// The table.
    pub table: String,
    /// The shard.
    pub shard: u32,
    /// The table's shard count the caller planned with.
    pub count: u32,
    /// The query text.
    pub query: String,
    /// The partitions the query is confined to (empty: all).
    pub partitions: Vec<Vec<u8>>,
    /// Whether the partitions' own statistics score it (a confined key).
    pub scoped_stats: bool,
    /// `relevance`, `newest` or `oldest`.
    pub sort: String,
    /// Typo tolerance.
    pub typos: bool,
    /// The query's expansion budget (0: the default).
    pub max_expansions: usize,
    /// The query's clause budget (0: the default).
    pub max_clauses: usize,
    /// `eventual` or `snapshot`.
    pub consistency: String,
    /// Answer only once the shard's index reflects this write.
    pub min_seq: Option<u64>,
    /// Facets to count (names, as `facets=`).
    pub facets: Vec<String>,
    /// The best hits asked for (the page's offset plus its limit).
    pub window: usize,
    /// The field hits collapse by.
    pub collapse: Option<String>,
    /// The summed statistics to score with (phase `keys`, by relevance).
    pub stats: Option<ShardStats>,
    /// How long the shard may take (ms).
    pub wait_ms: u64,
    /// Phase `keys`: the snapshot its `stats` answer was read from
    /// (generation, walk), so both phases read one point in time.
    #[serde(default)]
    pub resume: Option<(u64, u64)>,
}

/// A shard's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardAnswer {
    /// Phase `stats`: the statistics asked.
    pub stats: Option<ShardStats>,
    /// Matches (groups when collapsed).
    pub total: u64,
    /// The best `window` keys with their score or date.
    pub keys: Vec<(Vec<u8>, f64)>,
    /// Per facet asked, every value's matches.
    pub facets: Vec<Vec<(String, u64)>>,
    /// Collapsed: per key, its group's value and matches.
    pub groups: Vec<(String, u64)>,
    /// The commit its index answered from.
    pub commit: u64,
    /// Phase `stats`: the snapshot it read, kept for the `keys` call
    /// (generation, walk).
    #[serde(default)]
    pub snapshot: Option<(u64, u64)>,
}

/// Why a call to another searcher failed.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// It could not be reached, or did not answer in time.
    #[error("searcher {addr} could not be reached: {reason}")]
    Unreachable {
        /// Its address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// It answered with an error.
    #[error("searcher {addr} answered {status}: {body}")]
    Refused {
        /// Its address.
        addr: String,
        /// The HTTP status.
        status: u16,
        /// The answer's body.
        body: String,
    },
}

/// The client searchers call each other with.
pub struct Peers {
    client: Client<HttpConnector, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
    secret: String,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers").finish_non_exhaustive()
    }
}

/// A passed-on answer: status, content type, `Server-Timing`, body.
pub type Relayed = (u16, Option<String>, Option<String>, Bytes);

impl Peers {
    /// A client on `runtime` sending `secret`.
    pub fn new(runtime: tokio::runtime::Handle, secret: String) -> Peers {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Peers { client, runtime, secret }
    }

    /// Whether `presented` is the cluster's secret (compared in constant
    /// time).
    pub fn admits(&self, presented: Option<&str>) -> bool {
        let Some(presented) = presented else { return false };
        blake3::hash(presented.as_bytes()) == blake3::hash(self.secret.as_bytes())
    }

    /// Asks the searcher at `addr` for a shard's part, by `deadline`.
    ///
    /// # Errors
    /// `Unreachable`, `Refused`.
    pub fn call(&self, addr: &str, call: &ShardCall, deadline: Instant) -> Result<ShardAnswer, PeerError> {
        let body = serde_json::to_vec(call).unwrap_or_default();
        let request = hyper::Request::post(format!("http://{addr}/cluster/shard"))
            .header("content-type", "application/json")
            .header(SECRET_HEADER, &self.secret)
            .body(Full::new(Bytes::from(body)));
        let (status, _, _, body) = self.send(addr, request, deadline)?;
        if status != 200 {
            let body = String::from_utf8_lossy(&body).into_owned();
            return Err(PeerError::Refused { addr: addr.to_owned(), status, body });
        }
        serde_json::from_slice(&body).map_err(|e| PeerError::Unreachable {
            addr: addr.to_owned(),
            reason: format!("its answer did not parse: {e}"),
        })
    }

    /// Passes a search on to the searcher at `addr`: the same path and
    /// query, the caller's `Authorization`, marked as passed on.
    ///
    /// # Errors
    /// `Unreachable`.
    pub fn relay(
        &self,
        addr: &str,
        path_and_query: &str,
        authorization: Option<&str>,
        deadline: Instant,
    ) -> Result<Relayed, PeerError> {
        let mut request =
            hyper::Request::get(format!("http://{addr}{path_and_query}")).header(HOP_HEADER, "1");
        if let Some(auth) = authorization {
            request = request.header("authorization", auth);
        }
        self.send(addr, request.body(Full::new(Bytes::new())), deadline)
    }

    fn send(
        &self,
        addr: &str,
        request: Result<hyper::Request<Full<Bytes>>, hyper::http::Error>,
        deadline: Instant,
    ) -> Result<Relayed, PeerError> {
        let unreachable = |reason: String| PeerError::Unreachable { addr: addr.to_owned(), reason };
        let request = request.map_err(|e| unreachable(e.to_string()))?;
        let left = deadline.saturating_duration_since(Instant::now());
        let client = self.client.clone();
        self.runtime.block_on(async move {
            let exchange = async {
                let response = client.request(request).await.map_err(|e| e.to_string())?;
                let status = response.status().as_u16();
                let header = |name: &str| {
                    response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
                };
                let (content_type, timing) = (header("content-type"), header("server-timing"));
                let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
                Ok::<_, String>((status, content_type, timing, body))
            };
            match tokio::time::timeout(left, exchange).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(reason)) => Err(unreachable(reason)),
                Err(_) => Err(unreachable(format!("no answer within {} ms", left.as_millis()))),
            }
        })
    }
}
