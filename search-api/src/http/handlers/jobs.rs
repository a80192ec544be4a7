//! `/tables/{t}/reindex` (a reindex job) and `/jobs/{id}`.

use std::sync::Arc;

use rowsearch_indexer::ReindexMode;
use rowsearch_store::ErrorKind;
use serde_json::json;
use warp::http::StatusCode;

use super::{Answer, json_reply, ok};
use crate::http::error::{Refusal, hide_data_path};
use crate::http::params::Params;
use crate::http::state::State;

/// `POST /tables/{t}/reindex?mode=auto|full|incremental`: 202 with the job.
pub(crate) fn reindex(st: &State, t: &str, p: &Params) -> Answer {
    let mode = match p.choice("mode") {
        "full" => ReindexMode::Full,
        "incremental" => ReindexMode::Incremental,
        _ => ReindexMode::Auto,
    };
    let schema = st.store().schema(t)?;
    if schema.search.is_none() {
        return Err(rowsearch_store::Error::from(ErrorKind::NotSearchable { table: t.to_owned() }).into());
    }
    match st.jobs.start_reindex(Arc::clone(st.store()), t, mode) {
        Ok(job) => Ok(json_reply(&json!({"job": job}), StatusCode::ACCEPTED)),
        Err(running) => Err(Refusal::ReindexRunning { job: running, table: t.to_owned() }.into()),
    }
}

/// `GET /jobs/{id}`.
pub(crate) fn get(st: &State, id: &str) -> Answer {
    match st.jobs.get(id) {
        Some(mut job) => {
            job.error = job.error.map(|e| hide_data_path(&e, st.store().path()));
            ok(serde_json::to_value(job).unwrap_or_default())
        }
        None => Err(Refusal::JobNotFound(id.to_owned()).into()),
    }
}
