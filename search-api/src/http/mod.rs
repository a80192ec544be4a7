//! The HTTP API of API.md: warp on tokio, a thin layer over the store, the
//! indexer and the [`Searcher`](crate::Searcher).
//!
//! [`serve`] takes a bound listener (so a caller can bind port 0 and learn
//! the port first) and a shutdown future; on shutdown it stops accepting
//! and lets requests in flight finish. Store and index work runs on a fixed
//! pool of worker threads fed in arrival order (`pool.rs`), never on the
//! async workers. Limits are in [`Limits`].
//!
//! Files: `server.rs` (accepting connections), `conn.rs` (a connection's
//! idle timer and hyper's own error answers in the JSON shape),
//! `framing.rs` (request heads with both Content-Length and
//! Transfer-Encoding refused), `gate.rs` (what every request passes before routing: Host, framing,
//! HEAD), `hosts.rs` (the hosts a request may name), `route_table.rs` (every route: name, action, method, path, example,
//! parameters), `routes.rs` (their warp filters), `auth.rs` (admitting a
//! request), `params.rs` (every request parameter), `handlers/` (one file
//! per resource), `error.rs` (every status and code), `state.rs`,
//! `pool.rs`, `jobs.rs`, `metrics.rs`, `openapi.rs` (the OpenAPI document,
//! from the route table).

mod answers;
mod auth;
mod conn;
mod error;
mod framing;
mod gate;
mod handlers;
mod hosts;
mod jobs;
mod metrics;
mod openapi;
mod over_hbase;
mod param_spec;
mod params;
mod pool;
mod request_log;
mod route_table;
mod routes;
mod row_counts;
mod server;
mod state;

pub use error::{ApiError, Refusal};
pub use hosts::HostRule;
pub use jobs::{BackupConfig, JobState, Jobs};
pub use metrics::{Metrics, TableFigures};
pub use openapi::document as openapi_document;
pub use request_log::{LogFormat, REQUEST_ID, init as init_log};
pub use route_table::{Needs, ROUTES, RouteSpec, allowed_methods};
pub use server::serve;
pub use state::{AccessConfig, Limits, MAX_INDEX_TERMS, State};
