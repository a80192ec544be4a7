//! `/health`, `/metrics`, `/openapi.json`.

use serde_json::json;
use warp::Reply;

use super::{Answer, json_reply, ok};
use crate::http::state::State;

/// `GET /health`: 200 `ok`; 200 `degraded` with the reason when the last
/// write failed at the storage level (a full disk) and none has succeeded
/// since; 503 `unhealthy` with the reason when the store cannot serve.
pub(crate) fn health(st: &State) -> Answer {
    let version = env!("CARGO_PKG_VERSION");
    match st.store().health() {
        Ok(None) => ok(json!({"status": "ok", "version": version})),
        Ok(Some(reason)) => ok(json!({"status": "degraded", "reason": reason, "version": version})),
        Err(e) => Ok(json_reply(
            &json!({"status": "unhealthy", "reason": e.to_string(), "version": version}),
            warp::http::StatusCode::SERVICE_UNAVAILABLE,
        )),
    }
}

/// `GET /metrics`: Prometheus text.
pub(crate) fn metrics(st: &State) -> Answer {
    let text = st.metrics.render(&st.table_figures());
    Ok(warp::reply::with_header(text, "content-type", "text/plain; version=0.0.4").into_response())
}

/// `GET /openapi.json`.
pub(crate) fn openapi(st: &State) -> Answer {
    let document = crate::http::openapi::document(&st.limits).to_string();
    Ok(warp::reply::with_header(document, "content-type", "application/json").into_response())
}
