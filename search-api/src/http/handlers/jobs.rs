//! `/tables/{t}/reindex` (a reindex job), `/backups` (backup jobs and the
//! backups taken) and `/jobs/{id}`.

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

/// `POST /backups`: 202 with the job taking a backup of the whole store
/// into a new directory of `--backup-dir`.
pub(crate) fn backup(st: &State) -> Answer {
    let config = st.backups.as_ref().ok_or(Refusal::NoBackupDir)?;
    match st.jobs.start_backup(Arc::clone(st.store()), config.clone()) {
        Ok(job) => Ok(json_reply(&json!({"job": job}), StatusCode::ACCEPTED)),
        Err(running) => Err(Refusal::BackupRunning(running).into()),
    }
}

/// `GET /backups`: the backups of `--backup-dir`, oldest first.
pub(crate) fn backups(st: &State) -> Answer {
    let config = st.backups.as_ref().ok_or(Refusal::NoBackupDir)?;
    let backups = rowsearch_indexer::list_backups(&config.dir)?;
    ok(json!({"backups": backups, "keep": config.keep}))
}
