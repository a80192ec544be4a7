//! `/health`, `/metrics`, `/openapi.json`.

use serde_json::json;
use warp::Reply;

use super::{Answer, json_reply, ok};
use crate::http::error::{Refusal, hide_data_path};
use crate::http::state::State;
use crate::keys::Access;

/// `GET /health`: 200 `ok`; 200 `degraded` with the reason when the last
/// write failed at the storage level (a full disk) and none has succeeded
/// since; 503 `unhealthy` with the reason when the store cannot serve.
pub(crate) fn health(st: &State) -> Answer {
    let version = env!("CARGO_PKG_VERSION");
    let work = st.work.load();
    let no_path = |reason: &str| hide_data_path(reason, st.store().path());
    if let Err(e) = st.tables().ping() {
        let reason = format!("the tables live in {}, which does not answer: {e}", st.tables().place());
        return ok(json!({"status": "degraded", "reason": reason, "version": version, "work": work}));
    }
    if let Some(reason) = st.tables().following().and_then(|f| f.trouble) {
        return ok(json!({"status": "degraded", "reason": reason, "version": version, "work": work}));
    }
    match st.store().health() {
        Ok(None) => match st.index_trouble() {
            None => ok(json!({"status": "ok", "version": version, "work": work})),
            Some(reason) => ok(
                json!({"status": "degraded", "reason": no_path(&reason), "version": version, "work": work}),
            ),
        },
        Ok(Some(reason)) => {
            ok(json!({"status": "degraded", "reason": no_path(&reason), "version": version, "work": work}))
        }
        Err(e) => Ok(json_reply(
            &json!({"status": "unhealthy", "reason": no_path(&e.to_string()), "version": version, "work": work}),
            warp::http::StatusCode::SERVICE_UNAVAILABLE,
        )),
    }
}

/// `GET /metrics`: Prometheus text.
/// Its figures name every table (and count every partition), so it needs
/// a key that reaches every table (partition-confined keys may not
/// administer at all).
pub(crate) fn metrics(st: &State, access: &Access) -> Answer {
    if !access.every_table() {
        return Err(Refusal::Forbidden(
            "/metrics names every table: it needs a key without a tables limit".into(),
        )
        .into());
    }
    let text = st.metrics.render(
        &st.table_figures(),
        st.work.load(),
        st.store().group_commits(),
        st.store().sync_stats(),
    );
    Ok(warp::reply::with_header(text, "content-type", "text/plain; version=0.0.4").into_response())
}

/// `GET /openapi.json`.
pub(crate) fn openapi(st: &State) -> Answer {
    let document = crate::http::openapi::document(&st.limits).to_string();
    Ok(warp::reply::with_header(document, "content-type", "application/json").into_response())
}
