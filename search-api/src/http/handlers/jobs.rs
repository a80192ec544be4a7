//! `/tables/{t}/reindex` (a reindex job), `/backups` (backup jobs and the
//! backups taken) and `/jobs/{id}`.

use std::sync::Arc;

use rowsearch_indexer::ReindexMode;
use rowsearch_store::ErrorKind;
use serde_json::json;
use warp::http::StatusCode;

use super::{Answer, json_reply, ok};
use crate::http::error::{Refusal, hide_data_path, hide_path};
use crate::http::params::Params;
use crate::http::state::State;
use crate::keys::Access;

/// `POST /tables/{t}/reindex?mode=auto|full|incremental`: 202 with the job.
pub(crate) fn reindex(st: &State, t: &str, p: &Params) -> Answer {
    let mode = match p.choice("mode") {
        "full" => ReindexMode::Full,
        "incremental" => ReindexMode::Incremental,
        _ => ReindexMode::Auto,
    };
    let schema = st.tables().schema(t)?;
    if schema.search.is_none() {
        return Err(rowsearch_store::Error::from(ErrorKind::NotSearchable { table: t.to_owned() }).into());
    }
    // A searcher of a cluster indexes shards, each built by its holder.
    if st.cluster.is_some() {
        return Err(super::super::error::ApiError::cluster_unsupported(
            "a searcher of a cluster builds the index of each shard it holds when it takes it, and keeps it current; a reindex of the whole table is not one of its jobs",
        ));
    }
    // Wherever the tables live (over HBase the rows are read from HBase,
    // region by region), the generations go to the local data directory.
    match st.jobs.start_reindex(st.searcher.live().home(), t, mode) {
        Ok(job) => Ok(json_reply(&json!({"job": job}), StatusCode::ACCEPTED)),
        Err(running) => Err(Refusal::ReindexRunning { job: running, table: t.to_owned() }.into()),
    }
}

/// `GET /jobs/{id}`: a job of a table the key reaches (a backup, of every
/// table, for a key that reaches every table); another key is told there
/// is no such job. Its error names neither the data directory nor the
/// backup directory.
pub(crate) fn get(st: &State, access: &Access, id: &str) -> Answer {
    let job = st
        .jobs
        .get(id)
        .filter(|job| if job.table.is_empty() { access.every_table() } else { access.may_touch(&job.table) });
    match job {
        Some(mut job) => {
            job.error = job.error.map(|e| {
                let e = hide_data_path(&e, st.store().path());
                match &st.backups {
                    Some(config) => hide_path(&e, &config.dir, "<backup-dir>"),
                    None => e,
                }
            });
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
