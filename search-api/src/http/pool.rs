//! The threads that do the store and index work of requests.
//!
//! A fixed number of threads (by default one per core) take jobs from one
//! queue in arrival order, as Elasticsearch's search thread pool does. On
//! a busy server a request then runs without sharing its core, where with
//! a thread per request (tokio's blocking pool) every request in flight
//! slows down together and the slowest wait longest. A thread that ends a
//! job takes the next one at once, without a hop through the async
//! runtime.
//!
//! An idle worker does not go to sleep at once: one of them at a time keeps
//! looking for the next job for a while ([`WorkPool::new`]'s `idle_spin`),
//! giving its core to any other thread that wants it meanwhile, then
//! sleeps. A job that arrives meanwhile needs no thread woken, and on a
//! virtual machine it also runs faster: a search right after its thread
//! slept took up to twice as long as the same search run back to back
//! (search-api/BENCHMARKS.md). Like the spin-then-park of .NET's thread
//! pool or Go's scheduler.
//!
//! The sleepers wait on the pool's own condition variable, not on the
//! queue: a job queued while a worker spins wakes no one (a wake is a
//! system call on the async worker that queues the job, and a sleeper
//! woken for a job the spinner takes first runs for nothing). The spinner
//! that takes a job and sees more queued wakes a sleeper for them.
//!
//! No job is left queued with every worker asleep: a worker going to sleep
//! says so under the lock and looks at the queue again before it waits; a
//! job's submitter looks at the spinner after queueing the job, and wakes a
//! sleeper unless one spins; a spinner that gives up stops saying it spins
//! before it goes to sleep that way (sequentially consistent order: either
//! the submitter sees no spinner, or the spinner's last look at the queue
//! comes after the job).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
use prometheus_client::metrics::counter::Counter;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A fixed pool of worker threads with one FIFO queue.
#[derive(Debug)]
pub struct WorkPool {
    queue: Sender<Job>,
    shared: Arc<Shared>,
    threads: usize,
    load: Arc<Load>,
}

/// What the workers and the submitters share besides the queue.
#[derive(Debug, Default)]
struct Shared {
    /// Whether a worker is spinning (at most one is).
    spinner: AtomicBool,
    sleepers: Mutex<Sleepers>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct Sleepers {
    /// Workers waiting on `wake`.
    waiting: usize,
    /// The pool is dropped: workers end once the queue is empty.
    closed: bool,
}

impl Shared {
    fn sleepers(&self) -> std::sync::MutexGuard<'_, Sleepers> {
        // The lock guards two plain fields: a panic cannot leave them torn.
        self.sleepers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes a sleeping worker for the queued jobs, unless one spins or the
    /// queue is already empty (`empty`: an awake worker took them).
    fn wake_one(&self, empty: impl Fn() -> bool) {
        // The job queued before the spinner is looked at (see the module).
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.spinner.load(Ordering::SeqCst) || empty() {
            return;
        }
        if self.sleepers().waiting > 0 {
            self.wake.notify_one();
        }
    }
}

/// How busy the pool is: jobs waiting and running.
#[derive(Debug, Default)]
struct Load {
    queued: AtomicUsize,
    running: AtomicUsize,
}

/// How busy the pool is, as `/health` and `/metrics` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PoolLoad {
    /// Worker threads.
    pub threads: usize,
    /// Jobs running now.
    pub running: usize,
    /// Jobs waiting for a thread.
    pub queued: usize,
}

/// Jobs run, by how their worker took them.
#[derive(Debug, Clone, Default)]
pub struct Taken {
    /// By a worker that had not gone to sleep: queued when it ended its
    /// last job, or come while it spun.
    pub awake: Counter,
    /// By a worker that went to sleep waiting for it.
    pub woken: Counter,
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
    /// `rowsearch-work-N`. An idle worker, one at a time, looks for the next
    /// job for `idle_spin` before it sleeps (zero: it sleeps at once). Jobs
    /// are counted in `taken`. The threads end when the pool is dropped,
    /// after the jobs queued by then.
    ///
    /// # Errors
    /// When the operating system refuses a thread.
    pub fn new(threads: usize, idle_spin: Duration, taken: Taken) -> std::io::Result<WorkPool> {
        let threads = threads.max(1);
        let (tx, rx) = unbounded::<Job>();
        let shared = Arc::new(Shared::default());
        let pool = WorkPool { queue: tx, shared: Arc::clone(&shared), threads, load: Arc::default() };
        for n in 0..threads {
            let worker =
                Worker { jobs: rx.clone(), shared: Arc::clone(&shared), idle_spin, taken: taken.clone() };
            // On an error the pool is dropped here, which ends the threads
            // already started.
            std::thread::Builder::new().name(format!("rowsearch-work-{n}")).spawn(move || worker.run())?;
        }
        Ok(pool)
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
        let load = Arc::clone(&self.load);
        load.queued.fetch_add(1, Ordering::Relaxed);
        let boxed: Job = Box::new(move || {
            load.queued.fetch_sub(1, Ordering::Relaxed);
            load.running.fetch_add(1, Ordering::Relaxed);
            let result = std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a request's work panicked".to_owned());
                JobFailed::Panicked(message)
            });
            load.running.fetch_sub(1, Ordering::Relaxed);
            // The requester may have gone (timeout): nothing to tell.
            let _ = tx.send(result);
        });
        if self.queue.send(boxed).is_err() {
            return Err(JobFailed::PoolGone);
        }
        self.shared.wake_one(|| self.queue.is_empty());
        Ok(rx)
    }

    /// How busy it is now.
    pub fn load(&self) -> PoolLoad {
        PoolLoad {
            threads: self.threads,
            running: self.load.running.load(Ordering::Relaxed),
            queued: self.load.queued.load(Ordering::Relaxed),
        }
    }

    /// Whether a worker is looking for the next job right now.
    #[cfg(test)]
    fn spinning(&self) -> bool {
        self.shared.spinner.load(Ordering::Acquire)
    }
}

impl Drop for WorkPool {
    fn drop(&mut self) {
        self.shared.sleepers().closed = true;
        self.shared.wake.notify_all();
    }
}

/// Where a queued job's result arrives.
pub type Pending<T> = tokio::sync::oneshot::Receiver<Result<T, JobFailed>>;

struct Worker {
    jobs: Receiver<Job>,
    shared: Arc<Shared>,
    idle_spin: Duration,
    taken: Taken,
}

impl Worker {
    fn run(&self) {
        loop {
            let job = match self.next_awake() {
                Some(job) => {
                    self.taken.awake.inc();
                    job
                }
                None => match self.sleep() {
                    Some((job, true)) => {
                        self.taken.woken.inc();
                        job
                    }
                    Some((job, false)) => {
                        self.taken.awake.inc();
                        job
                    }
                    None => return,
                },
            };
            job();
        }
    }

    /// The next job if one is queued, else, if no other worker is
    /// spinning, the first to come within `idle_spin`; `None` when it is
    /// time to sleep (or the pool is gone).
    fn next_awake(&self) -> Option<Job> {
        if let Ok(job) = self.jobs.try_recv() {
            return Some(job);
        }
        let spinner = &self.shared.spinner;
        if self.idle_spin.is_zero()
            || spinner.compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed).is_err()
        {
            return None;
        }
        // Too far off to be an instant: no deadline.
        let until = Instant::now().checked_add(self.idle_spin);
        let found = loop {
            // Any other thread that wants this core gets it.
            std::thread::yield_now();
            match self.jobs.try_recv() {
                Ok(job) => break Some(job),
                Err(TryRecvError::Empty) if until.is_none_or(|until| Instant::now() < until) => {}
                Err(_) => break None,
            }
        };
        spinner.store(false, Ordering::SeqCst);
        // No longer spinning before the queue is looked at again.
        std::sync::atomic::fence(Ordering::SeqCst);
        if found.is_some() {
            // Jobs queued while this one spun woke no one.
            self.shared.wake_one(|| self.jobs.is_empty());
        }
        found
    }

    /// Waits for the next job, and whether it waited; `None` when the pool
    /// is gone and its queue is empty.
    fn sleep(&self) -> Option<(Job, bool)> {
        let mut sleepers = self.shared.sleepers();
        let mut waited = false;
        loop {
            match self.jobs.try_recv() {
                Ok(job) => return Some((job, waited)),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) if sleepers.closed => return None,
                Err(TryRecvError::Empty) => {}
            }
            sleepers.waiting += 1;
            sleepers = self.shared.wake.wait(sleepers).unwrap_or_else(PoisonError::into_inner);
            sleepers.waiting -= 1;
            waited = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn pool(threads: usize, idle_spin: Duration) -> (WorkPool, Taken) {
        let taken = Taken::default();
        (WorkPool::new(threads, idle_spin, taken.clone()).unwrap(), taken)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_run_and_panics_are_reported_without_losing_the_thread() {
        let (pool, _) = pool(1, Duration::ZERO);
        assert_eq!(pool.run(|| 6 * 7).await, Ok(42));
        let failed = pool.run(|| -> u32 { panic!("boom") }).await;
        assert_eq!(failed, Err(JobFailed::Panicked("boom".to_owned())));
        // The one thread survived its job's panic.
        assert_eq!(pool.run(|| "still here").await, Ok("still here"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_thread_runs_jobs_in_arrival_order() {
        let (pool, _) = pool(1, Duration::from_millis(1));
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

    /// Waits (at most 10 s) until a worker of `pool` is spinning.
    async fn until_spinning(pool: &WorkPool) {
        let started = Instant::now();
        while !pool.spinning() {
            assert!(started.elapsed() < Duration::from_secs(10), "no worker went looking for work");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_idle_worker_takes_the_next_job_while_it_spins() {
        // Spinning for a minute: each job comes while the worker looks.
        let (spinning, taken) = pool(1, Duration::from_secs(60));
        for i in 0..3 {
            until_spinning(&spinning).await;
            assert_eq!(spinning.run(move || i * 2).await, Ok(i * 2));
        }
        assert_eq!((taken.awake.get(), taken.woken.get()), (3, 0));
        // Without spinning the worker sleeps when it finds nothing queued
        // (whether it had by the time the next job came is up to timing).
        let (sleeping, taken) = pool(1, Duration::ZERO);
        for i in 0..3 {
            assert!(!sleeping.spinning());
            assert_eq!(sleeping.run(move || i * 2).await, Ok(i * 2));
        }
        assert_eq!(taken.awake.get() + taken.woken.get(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_that_comes_while_a_worker_spins_wakes_no_sleeper() {
        // Two workers: one spins (for a minute), the other sleeps. Woken
        // for each job, the sleeper would take some of them first.
        let (pool, taken) = pool(2, Duration::from_secs(60));
        for i in 0..200 {
            until_spinning(&pool).await;
            assert_eq!(pool.run(move || i * 3).await, Ok(i * 3));
        }
        assert_eq!((taken.awake.get(), taken.woken.get()), (200, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_spin_too_long_to_be_an_instant_spins_until_a_job_comes() {
        let (pool, taken) = pool(1, Duration::MAX);
        for i in 0..3 {
            until_spinning(&pool).await;
            assert_eq!(pool.run(move || i + 1).await, Ok(i + 1));
        }
        assert_eq!((taken.awake.get(), taken.woken.get()), (3, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_spinning_worker_gives_up_and_sleeps() {
        let (pool, taken) = pool(1, Duration::from_millis(1));
        assert_eq!(pool.run(|| 1).await, Ok(1));
        // It spins for a millisecond, then sleeps until the next job.
        let started = Instant::now();
        while pool.spinning() || started.elapsed() < Duration::from_millis(2) {
            assert!(started.elapsed() < Duration::from_secs(10), "the worker never stopped spinning");
            tokio::task::yield_now().await;
        }
        assert_eq!(pool.run(|| 2).await, Ok(2));
        assert_eq!(taken.awake.get() + taken.woken.get(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_job_is_lost_between_spinning_and_sleeping_workers() {
        // A spin about as long as a job, so jobs come to spinning, sleeping
        // and busy workers alike.
        let (pool, taken) = pool(3, Duration::from_micros(50));
        let pool = Arc::new(pool);
        let tasks: Vec<_> = (0..8u64)
            .map(|t| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    let mut sum = 0;
                    for i in 0..250u64 {
                        let n = t * 1000 + i;
                        let got = pool
                            .run(move || {
                                std::hint::black_box((0..n % 97).sum::<u64>());
                                n
                            })
                            .await;
                        assert_eq!(got, Ok(n));
                        sum += 1;
                        if i % 7 == 0 {
                            // Let the workers go idle now and then.
                            tokio::time::sleep(Duration::from_micros(100)).await;
                        }
                    }
                    sum
                })
            })
            .collect();
        let mut done = 0;
        for task in tasks {
            done += task.await.unwrap();
        }
        assert_eq!(done, 2000);
        assert_eq!(taken.awake.get() + taken.woken.get(), 2000);
    }
}
