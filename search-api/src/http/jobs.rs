//! Reindex jobs: `POST /tables/{t}/reindex` starts one on its own thread,
//! `GET /jobs/{id}` reports it. Jobs live in memory (a restart forgets
//! them; the index they built stays).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rowsearch_indexer::{ReindexMode, ReindexOptions, ReindexReport};
use rowsearch_store::Store;
use serde::Serialize;

/// A job's state as `/jobs/{id}` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobState {
    /// The job id.
    pub id: String,
    /// The table.
    pub table: String,
    /// `queued`, `running`, `done` or `failed`.
    pub state: &'static str,
    /// Progress of the current phase.
    pub progress: Progress,
    /// Why it failed.
    pub error: Option<String>,
    /// What it did, once done.
    pub report: Option<ReindexReport>,
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

/// The jobs of this server.
#[derive(Debug, Default)]
pub struct Jobs {
    next: AtomicU64,
    jobs: Mutex<HashMap<String, Arc<Mutex<JobState>>>>,
}

impl Jobs {
    /// Starts a reindex of `table` on its own thread; returns the job id,
    /// or the id of the job already reindexing that table.
    ///
    /// # Errors
    /// The running job's id when one is queued or running for `table`.
    pub fn start_reindex(&self, store: Arc<Store>, table: &str, mode: ReindexMode) -> Result<String, String> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        for (id, job) in jobs.iter() {
            let job = job.lock().unwrap_or_else(|e| e.into_inner());
            if job.table == table && matches!(job.state, "queued" | "running") {
                return Err(id.clone());
            }
        }
        let id = format!("j{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let state = Arc::new(Mutex::new(JobState {
            id: id.clone(),
            table: table.to_owned(),
            state: "queued",
            progress: Progress::default(),
            error: None,
            report: None,
        }));
        jobs.insert(id.clone(), Arc::clone(&state));
        drop(jobs);
        let table = table.to_owned();
        std::thread::spawn(move || {
            let set =
                |f: &mut dyn FnMut(&mut JobState)| f(&mut state.lock().unwrap_or_else(|e| e.into_inner()));
            set(&mut |s| s.state = "running");
            let options = ReindexOptions { mode, ..ReindexOptions::default() };
            let result = rowsearch_indexer::reindex(&store, &table, &options, &mut |p| {
                set(&mut |s| s.progress = Progress { phase: p.phase, done: p.done, total: p.total });
            });
            match result {
                Ok(report) => set(&mut |s| {
                    s.state = "done";
                    s.report = Some(report.clone());
                }),
                Err(e) => set(&mut |s| {
                    s.state = "failed";
                    s.error = Some(e.to_string());
                }),
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
