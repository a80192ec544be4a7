//! `/health`, `/metrics`, `/openapi.json`.

use serde_json::json;
use warp::Reply;

use super::{Answer, ok};
use crate::http::state::{OPENAPI, State};

/// `GET /health`.
pub(crate) fn health(_: &State) -> Answer {
    ok(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

/// `GET /metrics`: Prometheus text.
pub(crate) fn metrics(st: &State) -> Answer {
    let text = st.metrics.render(&st.table_figures());
    Ok(warp::reply::with_header(text, "content-type", "text/plain; version=0.0.4").into_response())
}

/// `GET /openapi.json`.
pub(crate) fn openapi(_: &State) -> Answer {
    Ok(warp::reply::with_header(OPENAPI, "content-type", "application/json").into_response())
}
