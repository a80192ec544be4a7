//! The LMDB environment: opening it on a directory, write transactions with
//! map growth, read transactions that hold off a resize, and poisoning
//! after a failed commit. The one place map growth happens.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError, Weak};
use std::time::{Duration, Instant};

use heed::{Env, EnvOpenOptions, MdbError, RoTxn, RwTxn, WithoutTls};

use super::BytesDb;
use super::durability::{self, Durability, SyncState};
use crate::error::{Error, ErrorKind, Result};

/// How long a write that must grow the map waits for this process's open
/// read transactions to finish.
const GROW_WAIT: Duration = Duration::from_secs(10);
/// Attempts at one write before giving up on growing the map.
const MAX_GROW_ATTEMPTS: u32 = 24;

/// Sizes the environment opens with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnvLimits {
    pub map_size_bytes: usize,
    /// LMDB databases in all (families and derived ones plus the fixed).
    pub max_dbs: u32,
    pub max_readers: u32,
    pub durability: Durability,
}

/// The file every process with the store open holds locked shared (an
/// `flock`, released when the process ends however it ends), and a repack
/// exclusively (see `repack`).
pub(crate) const OPEN_LOCK: &str = "open.lock";

/// The processes' open environments, by canonical directory.
static OPEN: Mutex<Vec<(PathBuf, Weak<Environment>)>> = Mutex::new(Vec::new());

/// Whether this process has the store in `dir` open.
pub(crate) fn is_open_here(dir: &Path) -> bool {
    let Ok(canonical) = dir.canonicalize() else { return false };
    let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.iter().any(|(path, env)| *path == canonical && env.strong_count() > 0)
}

/// `InUse` for `dir`.
pub(crate) fn in_use(dir: &Path, detail: &str) -> Error {
    ErrorKind::InUse { path: dir.to_owned(), detail: detail.to_owned() }.into()
}

/// How long an open waits for a repack (one that packs the store by
/// itself after an ingest, or `rowsearch repack`) to finish before it is
/// refused with `InUse`.
pub(crate) const REPACK_WAIT: Duration = Duration::from_secs(120);

/// Takes `open.lock` in `dir` shared, waiting up to [`REPACK_WAIT`] while a
/// repack holds it (then `InUse`).
fn lock_shared(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(OPEN_LOCK);
    let io = |source| Error::from(ErrorKind::Io { path: path.clone(), source });
    let file = std::fs::File::options().create(true).truncate(false).write(true).open(&path).map_err(io)?;
    let started = Instant::now();
    loop {
        match file.try_lock_shared() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < REPACK_WAIT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let detail = format!(
                    "a repack is rewriting it (still after waiting {} s); open it again when the repack has finished",
                    REPACK_WAIT.as_secs()
                );
                return Err(in_use(dir, &detail));
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
    }
}

/// An open LMDB environment and the locks around it.
#[derive(Debug)]
pub(crate) struct Environment {
    env: Env<WithoutTls>,
    /// `open.lock`, held shared while the environment is open.
    _open_lock: std::fs::File,
    /// Serialises writers, so schema changes and data writes never interleave.
    write_lock: Mutex<()>,
    /// Held by every transaction that opens databases, until it ends: LMDB
    /// allows one such transaction at a time in a process.
    dbi_lock: Mutex<()>,
    /// Held shared by every open transaction of this process and exclusively
    /// while the map is resized (LMDB requires no open transaction then).
    pub(super) resize_lock: RwLock<()>,
    /// The store's directory (for telling a full disk from other I/O errors).
    pub(super) dir: PathBuf,
    /// Why the last write of this process failed at the storage level
    /// (disk full, I/O), until a write succeeds again.
    write_failure: Mutex<Option<String>>,
    /// With `Durability::Process`: commits not yet synced, and the
    /// background syncer's stop switch.
    sync_state: Option<Arc<SyncState>>,
    /// Serialises syncs, so one that returns covers every commit before it.
    sync_lock: Mutex<()>,
}

/// A read transaction and the guard that keeps the map from being resized
/// under it. Field order matters: the transaction ends before the guard.
pub(crate) struct ReadGuard<'e> {
    pub txn: RoTxn<'e, WithoutTls>,
    pub guard: RwLockReadGuard<'e, ()>,
}

pub(crate) fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn is_map_full(err: &Error) -> bool {
    matches!(err.kind(), ErrorKind::Lmdb { source: heed::Error::Mdb(MdbError::MapFull), .. })
}

fn page_align(bytes: usize) -> usize {
    const PAGE: usize = 4096;
    bytes.max(PAGE).div_ceil(PAGE) * PAGE
}

/// `NotAStore` for `dir`.
pub(crate) fn not_a_store(dir: &Path, detail: &str) -> Error {
    ErrorKind::NotAStore { path: dir.to_owned(), detail: detail.to_owned() }.into()
}

impl Environment {
    /// Opens the environment in `dir`, or shares the one this process has
    /// open there already (LMDB allows one per process and file: a second
    /// would release the first one's locks when closed). `limits` apply to
    /// a new environment only.
    pub fn open_shared(dir: &Path, limits: EnvLimits) -> Result<Arc<Environment>> {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|(_, env)| env.strong_count() > 0);
        let canonical = dir.canonicalize().ok();
        if let Some(canonical) = &canonical
            && let Some(env) =
                open.iter().find(|(path, _)| path == canonical).and_then(|(_, env)| env.upgrade())
        {
            return Ok(env);
        }
        let env = Arc::new(Environment::open(dir, limits)?);
        if let (Durability::Process { sync_interval }, Some(state)) = (limits.durability, &env.sync_state) {
            let weak = Arc::downgrade(&env);
            let sync = move || {
                let Some(env) = weak.upgrade() else { return false };
                // A failed sync is remembered as a failed write (`/health`);
                // the next round tries again.
                let _ = env.sync();
                true
            };
            durability::spawn_syncer(Arc::clone(state), sync_interval, sync)
                .map_err(|source| ErrorKind::Io { path: dir.to_owned(), source })?;
        }
        let canonical =
            dir.canonicalize().map_err(|source| ErrorKind::Io { path: dir.to_owned(), source })?;
        open.push((canonical, Arc::downgrade(&env)));
        Ok(env)
    }

    /// Opens the environment in `dir`, creating the directory when missing;
    /// refuses a file, or a directory holding other files and no store.
    fn open(dir: &Path, limits: EnvLimits) -> Result<Environment> {
        let io = |source| ErrorKind::Io { path: dir.to_owned(), source };
        match std::fs::metadata(dir) {
            Ok(meta) if !meta.is_dir() => return Err(not_a_store(dir, "not a directory")),
            Ok(_) => {
                let data = dir.join("data.mdb");
                if !data.try_exists().map_err(io)? {
                    let mut entries = std::fs::read_dir(dir).map_err(io)?;
                    let other = |entry: std::io::Result<std::fs::DirEntry>| {
                        entry.map_or(true, |entry| entry.file_name() != OPEN_LOCK)
                    };
                    if entries.any(other) {
                        return Err(not_a_store(dir, "directory holds other files and no data.mdb"));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            Err(e) => return Err(io(e).into()),
        }

        let open_lock = lock_shared(dir)?;
        let mut env_options = EnvOpenOptions::new().read_txn_without_tls();
        env_options
            .map_size(page_align(limits.map_size_bytes))
            .max_dbs(limits.max_dbs)
            .max_readers(limits.max_readers);
        if limits.durability != Durability::Sync {
            // SAFETY: `MDB_NOSYNC` only changes when LMDB syncs: the pages
            // still reach the file through the page cache at commit, and the
            // background syncer and `sync` sync them (see `Durability`).
            #[allow(unsafe_code)]
            unsafe {
                env_options.flags(heed::EnvFlags::NO_SYNC);
            }
        }
        // SAFETY: LMDB's memory map is only sound while nothing else modifies
        // the file behind LMDB's back. The store only touches data.mdb through
        // this environment, LMDB's own lock file coordinates other processes,
        // and the environment is never opened on a remote file system by us.
        #[allow(unsafe_code)]
        let env = unsafe { env_options.open(dir) }.map_err(|e| match e {
            heed::Error::Mdb(MdbError::Invalid | MdbError::VersionMismatch | MdbError::Corrupted) => {
                not_a_store(dir, "data.mdb is not an LMDB environment")
            }
            heed::Error::EnvAlreadyOpened => ErrorKind::AlreadyOpen { path: dir.to_owned() }.into(),
            other => Error::lmdb("open environment", other),
        })?;
        Ok(Environment {
            env,
            _open_lock: open_lock,
            write_lock: Mutex::new(()),
            dbi_lock: Mutex::new(()),
            resize_lock: RwLock::new(()),
            dir: dir.to_owned(),
            write_failure: Mutex::new(None),
            sync_state: (limits.durability != Durability::Sync).then(Default::default),
            sync_lock: Mutex::new(()),
        })
    }

    /// Syncs the commits so far to disk (with `Durability::Process`; a
    /// no-op otherwise, every commit being synced already). When it
    /// returns, every commit that returned before it was called is on disk.
    pub fn sync(&self) -> Result<()> {
        let Some(state) = &self.sync_state else { return Ok(()) };
        let _one = self.sync_lock.lock().unwrap_or_else(|e| e.into_inner());
        let pending = state.unsynced.swap(0, std::sync::atomic::Ordering::SeqCst);
        if pending == 0 {
            return Ok(());
        }
        let outcome = {
            let _guard = read_lock(&self.resize_lock);
            self.env.force_sync().map_err(|e| self.classify("sync", e))
        };
        match &outcome {
            Ok(()) => {
                state.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // Tried again at the next round.
            Err(_) => {
                state.unsynced.fetch_add(pending, std::sync::atomic::Ordering::SeqCst);
            }
        }
        self.note_write(&outcome);
        outcome
    }

    /// With `Durability::Process`: syncs done, and commits since the last.
    pub fn sync_stats(&self) -> Option<(u64, u64)> {
        let state = self.sync_state.as_ref()?;
        Some((
            state.syncs.load(std::sync::atomic::Ordering::Relaxed),
            state.unsynced.load(std::sync::atomic::Ordering::Relaxed),
        ))
    }

    /// The heed environment, for opening databases.
    pub fn raw(&self) -> &Env<WithoutTls> {
        &self.env
    }

    /// Creates (or opens) database `name` in a write transaction;
    /// `TooManyDatabases` when the environment has no room for it.
    pub fn create_db(
        &self,
        wtxn: &mut RwTxn,
        name: &str,
        max_dbs: u32,
        what: &'static str,
    ) -> Result<BytesDb> {
        self.env.create_database(wtxn, Some(name)).map_err(|e| match e {
            heed::Error::Mdb(MdbError::DbsFull) => ErrorKind::TooManyDatabases { max_dbs }.into(),
            other => Error::lmdb(what, other),
        })
    }

    /// The current memory-map size in bytes.
    pub fn map_size_bytes(&self) -> usize {
        self.env.info().map_size
    }

    /// Takes the writer lock.
    pub fn lock_writer(&self) -> Result<MutexGuard<'_, ()>> {
        Ok(self.write_lock.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Remembers a write that failed at the storage level, forgets it when
    /// one succeeds.
    fn note_write<T>(&self, outcome: &Result<T>) {
        let failure = match outcome {
            Ok(_) => None,
            Err(e) if matches!(e.kind(), ErrorKind::DiskFull { .. } | ErrorKind::Poisoned) => {
                Some(e.to_string())
            }
            Err(e) if matches!(e.kind(), ErrorKind::Lmdb { source: heed::Error::Io(_), .. }) => {
                Some(e.to_string())
            }
            // Input the caller can fix, or the map to grow: not storage trouble.
            Err(_) => return,
        };
        *self.write_failure.lock().unwrap_or_else(|e| e.into_inner()) = failure;
    }

    /// Why the last write failed at the storage level, if no write has
    /// succeeded since.
    pub fn write_failure(&self) -> Option<String> {
        self.write_failure.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What a failed LMDB call means: `Poisoned` when LMDB could not get
    /// back to a consistent state (`MDB_PANIC`: every later transaction
    /// fails until the store is reopened); `DiskFull` for a write the file
    /// system had no room for (LMDB reports a short write as `EIO`, so an
    /// `EIO` with little space left is taken as that); else the error.
    fn classify(&self, operation: &'static str, err: heed::Error) -> Error {
        const ENOSPC: i32 = 28;
        const EIO: i32 = 5;
        /// Below this much free space an `EIO` on a write is a full disk.
        const LOW_SPACE: u64 = 64 << 20;
        match &err {
            heed::Error::Mdb(MdbError::Panic) => ErrorKind::Poisoned.into(),
            heed::Error::Io(io) if matches!(io.raw_os_error(), Some(ENOSPC | EIO)) => {
                let available = fs4::available_space(&self.dir).unwrap_or(u64::MAX);
                if io.raw_os_error() == Some(ENOSPC) || available < LOW_SPACE {
                    ErrorKind::DiskFull { path: self.dir.clone(), available_bytes: available }.into()
                } else {
                    Error::lmdb(operation, err)
                }
            }
            _ => Error::lmdb(operation, err),
        }
    }

    /// Taken around a transaction that opens or creates databases, for its
    /// whole life (a schema change, a catalog reload).
    pub fn lock_dbi(&self) -> MutexGuard<'_, ()> {
        self.dbi_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id of the last committed write transaction, in any process
    /// (LMDB's `mdb_env_info`, read from the meta pages without a
    /// transaction): a read transaction begun after sees that commit or a
    /// later one. Every commit that changes anything takes a new id.
    pub fn last_txn_id(&self) -> u64 {
        let _guard = read_lock(&self.resize_lock);
        self.env.info().last_txn_id as u64
    }

    /// Starts a read transaction, adopting a map size another process set.
    pub fn read_txn(&self) -> Result<ReadGuard<'_>> {
        let mut adopted = false;
        loop {
            let guard = read_lock(&self.resize_lock);
            match self.env.read_txn() {
                Ok(txn) => return Ok(ReadGuard { txn, guard }),
                Err(heed::Error::Mdb(MdbError::MapResized)) if !adopted => {
                    drop(guard);
                    self.adopt_map_size()?;
                    adopted = true;
                }
                Err(e) => return Err(self.classify("begin read", e)),
            }
        }
    }

    /// A transaction nested in `parent` (committed into it, or aborted
    /// alone).
    pub fn nested_write_txn<'p>(&'p self, parent: &'p mut RwTxn) -> Result<RwTxn<'p>> {
        self.env.nested_write_txn(parent).map_err(|e| self.classify("begin nested write", e))
    }

    /// Runs `op` in a write transaction and commits it. When LMDB reports
    /// `MDB_MAP_FULL` (during `op` or at commit), the transaction is aborted,
    /// the map is doubled and `op` runs again from scratch: this is the one
    /// place map growth happens. Callers hold the writer lock.
    pub fn write_txn<T>(&self, mut op: impl FnMut(&mut RwTxn) -> Result<T>) -> Result<T> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let guard = read_lock(&self.resize_lock);
            let mut wtxn = match self.env.write_txn() {
                Ok(wtxn) => wtxn,
                Err(heed::Error::Mdb(MdbError::MapResized)) if attempts < MAX_GROW_ATTEMPTS => {
                    drop(guard);
                    self.adopt_map_size()?;
                    continue;
                }
                Err(e) => return Err(self.classify("begin write", e)),
            };
            let result = op(&mut wtxn);
            let outcome = match result {
                // A failed commit is aborted by LMDB: the data stays as the
                // last commit left it, and later writes go on (LMDB itself
                // refuses them, `MDB_PANIC`, if it could not restore that).
                Ok(value) => {
                    wtxn.commit().map(|()| value).map_err(|e| self.classify("commit", e)).inspect(|_| {
                        durability::note_commit(self.sync_state.as_deref());
                    })
                }
                Err(err) => {
                    wtxn.abort();
                    // A large write spills pages to the file before its
                    // commit, so a full disk can show up here too.
                    Err(match err.into_kind() {
                        ErrorKind::Lmdb { operation, source } => self.classify(operation, source),
                        kind => kind.into(),
                    })
                }
            };
            drop(guard);
            self.note_write(&outcome);
            match outcome {
                Err(err) if is_map_full(&err) => {
                    if attempts >= MAX_GROW_ATTEMPTS {
                        return Err(ErrorKind::MapFull {
                            map_size_bytes: self.map_size_bytes(),
                            reason: format!("still full after {attempts} attempts"),
                        }
                        .into());
                    }
                    self.grow_map()?;
                }
                other => return other,
            }
        }
    }

    /// Waits (bounded) for this process's transactions to end, then doubles
    /// the map.
    fn grow_map(&self) -> Result<()> {
        let current = self.map_size_bytes();
        let guard = self.exclusive_resize_lock(current)?;
        let new_size = page_align(current.saturating_mul(2));
        // SAFETY: `resize_lock` is held exclusively, and every transaction of
        // this process holds it shared for its whole life, so none is open.
        #[allow(unsafe_code)]
        let result = unsafe { self.env.resize(new_size) };
        drop(guard);
        result.map_err(|e| {
            ErrorKind::MapFull { map_size_bytes: current, reason: format!("resize failed: {e}") }.into()
        })
    }

    /// Adopts the map size another process set (after `MDB_MAP_RESIZED`).
    fn adopt_map_size(&self) -> Result<()> {
        let current = self.map_size_bytes();
        let guard = self.exclusive_resize_lock(current)?;
        // SAFETY: as in `grow_map`; size 0 adopts the size in the file.
        #[allow(unsafe_code)]
        let result = unsafe { self.env.resize(0) };
        drop(guard);
        result.map_err(|e| Error::lmdb("adopt map size", e))
    }

    fn exclusive_resize_lock(&self, current: usize) -> Result<RwLockWriteGuard<'_, ()>> {
        let deadline = Instant::now() + GROW_WAIT;
        loop {
            match self.resize_lock.try_write() {
                Ok(guard) => return Ok(guard),
                Err(TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(ErrorKind::MapFull {
                        map_size_bytes: current,
                        reason:
                            "read transactions of this process stayed open; the map grows only when none is"
                                .into(),
                    }
                    .into());
                }
            }
        }
    }
}

impl Drop for Environment {
    /// With `Durability::Process`, the commits not yet synced are synced as
    /// the store closes, and the background syncer ends.
    fn drop(&mut self) {
        if let Some(state) = &self.sync_state {
            state.stop();
            let _ = self.sync();
        }
    }
}
