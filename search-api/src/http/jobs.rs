//! Background jobs: reindexes (`POST /tables/{t}/reindex`) and index builds
//! (`PUT /tables/{t}/indexes/{i}`, `POST .../rebuild`), each on its own
//! thread, reported by `GET /jobs/{id}`. Jobs live in memory (a restart
//! forgets them; what they built stays, and an index build stopped by the
//! restart is started again by the server from where it stood).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rowsearch_indexer::{Home, ReindexMode, ReindexOptions};
use rowsearch_store::Store;
use serde::Serialize;
use serde_json::{Value, json};

/// A job's state as `/jobs/{id}` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobState {
    /// The job id.
    pub id: String,
    /// `reindex`, `index_build` or `backup`.
    pub kind: &'static str,
    /// The table (none for a backup: it holds every table).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub table: String,
    /// The index, for an index build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// `queued`, `running`, `done` or `failed`.
    pub state: &'static str,
    /// Progress of the current phase.
    pub progress: Progress,
    /// Why it failed.
    pub error: Option<String>,
    /// What it did, once done (a reindex's report; an index's state).
    pub report: Option<Value>,
}

/// Done and total of the current phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Progress {
    /// `cells`, `rows` or `commit`.
    pub phase: &'static str,
    /// Done so far.
    pub done: u64,
    /// Expected in all.
    pub total: u64,
}

/// What a job's work reports as it goes.
pub type ProgressFn<'a> = &'a mut dyn FnMut(&'static str, u64, u64);

/// `serve --backup-dir DIR --backup-keep N`.
#[derive(Debug, Clone)]
pub struct BackupConfig {
    /// The directory of backups (each in `backup-<UTC time>/`).
    pub dir: std::path::PathBuf,
    /// Complete backups kept; older ones are removed after each backup.
    pub keep: usize,
    /// Most bytes a second a backup writes (`None`: as fast as it goes).
    pub max_bytes_per_sec: Option<u64>,
}

/// The jobs of this server.
#[derive(Debug, Default)]
pub struct Jobs {
    next: AtomicU64,
    jobs: Mutex<HashMap<String, Arc<Mutex<JobState>>>>,
}

impl Jobs {
    /// Starts a reindex of `table` of `home` on its own thread; returns
    /// the job id.
    ///
    /// # Errors
    /// The id of the job already reindexing that table.
    pub fn start_reindex(&self, home: Home, table: &str, mode: ReindexMode) -> Result<String, String> {
        self.start("reindex", table, None, move |table, progress| {
            let options = ReindexOptions { mode, ..ReindexOptions::default() };
            let mut report = |p: &rowsearch_indexer::ReindexProgress| progress(p.phase, p.done, p.total);
            let report =
                rowsearch_indexer::reindex(&home, table, &options, &mut report).map_err(|e| e.to_string())?;
            Ok(serde_json::to_value(report).unwrap_or_default())
        })
    }

    /// Builds the entries of index `index` of `table` (added or cleared for
    /// a rebuild already) on its own thread, a step at a time while writes
    /// go on; returns the job id.
    ///
    /// # Errors
    /// The id of the job already building that index.
    pub fn start_index_build(
        &self,
        store: Arc<dyn rowsearch_store::TableStore>,
        table: &str,
        index: &str,
    ) -> Result<String, String> {
        let name = index.to_owned();
        self.start("index_build", table, Some(index), move |table, progress| {
            store
                .finish_index_build(table, &name, &mut |done, total| progress("cells", done, total))
                .map_err(|e| e.to_string())?;
            let state = store.indexes(table).map_err(|e| e.to_string())?;
            let entries = state.iter().find(|s| s.schema.name == name).map(|s| s.entries);
            Ok(json!({"index": name, "state": "ready", "entries": entries}))
        })
    }

    /// Takes a backup of the whole store into a new directory of
    /// `config.dir` at its pace and keeps the newest `config.keep` there
    /// (`rowsearch_indexer::backup_into`), on its own thread; returns the
    /// job id.
    ///
    /// # Errors
    /// The id of the backup job already running.
    pub fn start_backup(&self, store: Arc<Store>, config: BackupConfig) -> Result<String, String> {
        self.start("backup", "", None, move |_, progress| {
            // This thread is the job's alone; the copy's threads inherit it.
            rowsearch_indexer::lower_thread_priority(rowsearch_indexer::DEFAULT_INGEST_NICE);
            let options = rowsearch_indexer::BackupOptions { max_bytes_per_sec: config.max_bytes_per_sec };
            let report =
                rowsearch_indexer::backup_into(&store, &config.dir, config.keep, &options, &mut |p| {
                    progress(p.phase, p.bytes, 0);
                })
                .map_err(|e| e.to_string())?;
            let name = report.dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(json!({
                "backup": name,
                "sequence": report.sequence,
                "tables": report.tables,
                "tables_to_reindex": report.tables_to_reindex,
                "bytes": report.bytes,
                "seconds": report.seconds,
            }))
        })
    }

    /// The job building index `index` of `table`, if one is queued or
    /// running.
    pub fn running_index_build(&self, table: &str, index: &str) -> Option<String> {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        running(&jobs, "index_build", table, Some(index))
    }

    fn start(
        &self,
        kind: &'static str,
        table: &str,
        index: Option<&str>,
        work: impl FnOnce(&str, ProgressFn<'_>) -> Result<Value, String> + Send + 'static,
    ) -> Result<String, String> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = running(&jobs, kind, table, index) {
            return Err(id);
        }
        let id = format!("j{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let state = Arc::new(Mutex::new(JobState {
            id: id.clone(),
            kind,
            table: table.to_owned(),
            index: index.map(str::to_owned),
            state: "queued",
            progress: Progress::default(),
            error: None,
            report: None,
        }));
        jobs.insert(id.clone(), Arc::clone(&state));
        drop(jobs);
        let job_id = id.clone();
        let table = table.to_owned();
        let index = index.map(str::to_owned);
        std::thread::spawn(move || {
            let set =
                |f: &mut dyn FnMut(&mut JobState)| f(&mut state.lock().unwrap_or_else(|e| e.into_inner()));
            set(&mut |s| s.state = "running");
            let started = std::time::Instant::now();
            let index_name = index.as_deref().unwrap_or("-");
            tracing::info!(target: "rowsearch::job", job = %job_id, kind, table = %table, index = index_name, "job started");
            let result = work(&table, &mut |phase, done, total| {
                set(&mut |s| s.progress = Progress { phase, done, total });
            });
            let seconds = started.elapsed().as_secs_f64();
            match result {
                Ok(report) => {
                    tracing::info!(target: "rowsearch::job", job = %job_id, kind, table = %table, index = index_name, seconds, "job done");
                    set(&mut |s| {
                        s.state = "done";
                        s.report = Some(report.clone());
                    })
                }
                Err(e) => {
                    tracing::error!(target: "rowsearch::job", job = %job_id, kind, table = %table, index = index_name, seconds, error = %e, "job failed");
                    set(&mut |s| {
                        s.state = "failed";
                        s.error = Some(e.clone());
                    })
                }
            }
        });
        Ok(id)
    }

    /// A job's state.
    pub fn get(&self, id: &str) -> Option<JobState> {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.get(id).map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// The id of the job of `kind` on `table` (and `index`) that is queued or
/// running, if any.
fn running(
    jobs: &HashMap<String, Arc<Mutex<JobState>>>,
    kind: &str,
    table: &str,
    index: Option<&str>,
) -> Option<String> {
    jobs.iter().find_map(|(id, job)| {
        let job = job.lock().unwrap_or_else(|e| e.into_inner());
        (job.kind == kind
            && job.table == table
            && job.index.as_deref() == index
            && matches!(job.state, "queued" | "running"))
        .then(|| id.clone())
    })
}
