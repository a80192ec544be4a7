//! The threads that do the store and index work of requests.
//!
//! A fixed number of threads (by default one per core) take jobs from one
//! queue in arrival order, as Elasticsearch's search thread pool does. On
//! a busy server a request then runs without sharing its core, where with
//! a thread per request (tokio's blocking pool) every request in flight
//! slows down together and the slowest wait longest. A thread that ends a
//! job takes the next one at once, without a hop through the async
//! runtime.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A fixed pool of worker threads with one FIFO queue.
#[derive(Debug)]
pub struct WorkPool {
    queue: Mutex<Sender<Job>>,
}

/// Why a job gave no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum JobFailed {
    /// The job panicked (its message).
    Panicked(String),
    /// The pool's threads are gone (the server is shutting down).
    PoolGone,
}

impl std::fmt::Display for JobFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobFailed::Panicked(message) => write!(f, "the request's work panicked: {message}"),
            JobFailed::PoolGone => f.write_str("the server is shutting down"),
        }
    }
}

impl WorkPool {
    /// Starts `threads` worker threads (at least one), named
    /// `rowsearch-work-N`. They end when the pool is dropped.
    ///
    /// # Errors
    /// When the operating system refuses a thread.
    pub fn new(threads: usize) -> std::io::Result<WorkPool> {
        let threads = threads.max(1);
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for n in 0..threads {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new().name(format!("rowsearch-work-{n}")).spawn(move || work(&rx))?;
        }
        Ok(WorkPool { queue: Mutex::new(tx) })
    }

    /// Queues `job` and waits for its result.
    pub async fn run<T, F>(&self, job: F) -> Result<T, JobFailed>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.submit(job)?.await.map_err(|_| JobFailed::PoolGone)?
    }

    /// Queues `job` now; its result arrives on the returned channel when a
    /// thread has run it.
    pub fn submit<T, F>(&self, job: F) -> Result<Pending<T>, JobFailed>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let boxed: Job = Box::new(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a request's work panicked".to_owned());
                JobFailed::Panicked(message)
            });
            // The requester may have gone (timeout): nothing to tell.
            let _ = tx.send(result);
        });
        let sent = match self.queue.lock() {
            Ok(queue) => queue.send(boxed).is_ok(),
            Err(_) => false,
        };
        if sent { Ok(rx) } else { Err(JobFailed::PoolGone) }
    }
}

/// Where a queued job's result arrives.
pub type Pending<T> = tokio::sync::oneshot::Receiver<Result<T, JobFailed>>;

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        // Only the wait for a job holds the lock; the job runs without it.
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_run_and_panics_are_reported_without_losing_the_thread() {
        let pool = WorkPool::new(1).unwrap();
        assert_eq!(pool.run(|| 6 * 7).await, Ok(42));
        let failed = pool.run(|| -> u32 { panic!("boom") }).await;
        assert_eq!(failed, Err(JobFailed::Panicked("boom".to_owned())));
        // The one thread survived its job's panic.
        assert_eq!(pool.run(|| "still here").await, Ok("still here"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_thread_runs_jobs_in_arrival_order() {
        let pool = WorkPool::new(1).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        // Hold the only thread until every job is queued.
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = pool.submit(move || hold.recv().is_ok()).unwrap();
        let queued: Vec<_> = (0..20)
            .map(|i| {
                let order = Arc::clone(&order);
                pool.submit(move || order.lock().unwrap().push(i)).unwrap()
            })
            .collect();
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap(), Ok(true));
        for q in queued {
            q.await.unwrap().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }
}
