//! `/health`, `/cluster`, `/metrics`, `/openapi.json`.

use serde_json::json;
use warp::Reply;

use super::{Answer, json_reply, ok};
use crate::http::error::{Refusal, hide_data_path};
use crate::http::state::State;
use crate::keys::Access;

/// `GET /health`: 200 `ok`; 200 `degraded` with the reason when the last
/// write failed at the storage level (a full disk) and none has succeeded
/// since; 503 `unhealthy` with the reason when the store cannot serve. A
/// searcher of a cluster says which, and what it serves.
pub(crate) fn health(st: &State) -> Answer {
    let (mut body, status) = health_of(st);
    if let Some(cluster) = &st.cluster {
        body["cluster"] = cluster.health_json();
    }
    Ok(json_reply(&body, status))
}

fn health_of(st: &State) -> (serde_json::Value, warp::http::StatusCode) {
    use warp::http::StatusCode;
    let version = env!("CARGO_PKG_VERSION");
    let work = st.work.load();
    let no_path = |reason: &str| hide_data_path(reason, st.store().path());
    let degraded = |reason: String| {
        (json!({"status": "degraded", "reason": reason, "version": version, "work": work}), StatusCode::OK)
    };
    if let Err(e) = st.tables().ping() {
        return degraded(format!("the tables live in {}, which does not answer: {e}", st.tables().place()));
    }
    if let Some(reason) = st.tables().following().and_then(|f| f.trouble) {
        return degraded(reason);
    }
    match st.store().health() {
        Ok(None) => match st.index_trouble() {
            None => (json!({"status": "ok", "version": version, "work": work}), StatusCode::OK),
            Some(reason) => degraded(no_path(&reason)),
        },
        Ok(Some(reason)) => degraded(no_path(&reason)),
        Err(e) => (
            json!({"status": "unhealthy", "reason": no_path(&e.to_string()), "version": version, "work": work}),
            StatusCode::SERVICE_UNAVAILABLE,
        ),
    }
}

/// `GET /cluster`: the cluster of searchers this server belongs to, as it
/// last read it (`crate::cluster`); a server alone says so.
pub(crate) fn cluster(st: &State) -> Answer {
    match &st.cluster {
        Some(cluster) => ok(cluster.to_json()),
        None => ok(json!({
            "cluster": null,
            "detail": "this server is not in a cluster: serve --hbase HOST:PORT --cluster NAME joins one",
        })),
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
        st.cluster.as_ref().map(|c| c.figures()),
    );
    Ok(warp::reply::with_header(text, "content-type", "text/plain; version=0.0.4").into_response())
}

/// `GET /openapi.json`.
pub(crate) fn openapi(st: &State) -> Answer {
    let document = crate::http::openapi::document(&st.limits).to_string();
    Ok(warp::reply::with_header(document, "content-type", "application/json").into_response())
}
