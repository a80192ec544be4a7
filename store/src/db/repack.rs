//! Repacking: every database of a store rewritten in key order into a new
//! file, which then replaces `data.mdb`.
//!
//! Random inserts leave LMDB's B-trees about two-thirds full (a page split
//! halves a page), and LMDB never merges half-empty pages back. Writing
//! every entry again in key order with `MDB_APPEND` fills each page
//! completely: the same entries in fewer pages (a smaller file, fewer pages
//! read by every scan). LMDB's own compacting copy (`mdb_copy -c`) only
//! leaves out free pages; it copies each page as it is, half-empty ones too.
//!
//! A store packs itself: [`pack_when_loose`] (called by the commands that
//! write much, `ingest` and `import`, once they have closed the store)
//! repacks when `data.mdb` has grown past [`LOOSE_RATIO`] times its size
//! after the last pack (recorded in the file `packed`: that size in
//! decimal) and nothing else has the store open. A process that opens the
//! store meanwhile waits for the pack to end (`super::env`).
//!
//! Safety: a repack runs alone. Every process with the store open holds
//! `open.lock` shared (see [`super::env`]); a repack takes it exclusively,
//! or refuses with `InUse` at once. The new file is written beside the old
//! one (`repack.tmp/`), synced, and renamed over `data.mdb`: killed at any
//! point before the rename, the store is as it was (the next repack removes
//! the leftover); after it, the store is repacked. Every entry is copied
//! byte for byte, so a repack is the same for every format.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions};

use super::env::{OPEN_LOCK, in_use, is_open_here, not_a_store};
use super::sorted::SortedPuts;
use crate::error::{Error, ErrorKind, Result};

/// Where the new file is written before it replaces `data.mdb`.
const REPACK_DIR: &str = "repack.tmp";
/// The file holding `data.mdb`'s size after the last pack, in decimal
/// (this module owns it; missing: never packed).
const PACKED_FILE: &str = "packed";
/// A store is loose (worth packing) once `data.mdb` is this many times its
/// size after the last pack...
pub const LOOSE_RATIO: f64 = 1.25;
/// ...and at least this large (smaller ones are not worth the rewrite).
pub const LOOSE_MIN_BYTES: u64 = 8 << 20;
/// Entries copied per write transaction (bounds LMDB's dirty page list).
const ENTRIES_PER_TXN: u64 = 200_000;

/// One database's entries and pages before and after a repack.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RepackedDatabase {
    /// The LMDB database name (`t/<table>/kb`, `meta`, ...).
    pub name: String,
    /// Entries copied.
    pub entries: u64,
    /// Pages (branch, leaf and overflow) before.
    pub pages_before: u64,
    /// Pages after.
    pub pages_after: u64,
}

/// What a repack did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RepackReport {
    /// `data.mdb`'s size before, bytes.
    pub bytes_before: u64,
    /// `data.mdb`'s size after, bytes.
    pub bytes_after: u64,
    /// Every database, in name order.
    pub databases: Vec<RepackedDatabase>,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Rewrites every database of the store in `dir` in key order with full
/// pages, replacing `data.mdb` (see the module docs). `on_database` is
/// called after each database is copied. Refuses with `InUse` while any
/// other process (or this one) has the store open; `DiskFull` up front
/// when the file system has no room for a second copy.
pub fn repack(dir: &Path, on_database: &mut dyn FnMut(&RepackedDatabase)) -> Result<RepackReport> {
    let lock = lock_alone(dir)?;
    repack_locked(dir, lock, on_database)
}

/// What [`pack_when_loose`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "packing")]
pub enum Packing {
    /// The store was loose and is packed now.
    Packed(RepackReport),
    /// Not loose.
    Tight {
        /// `data.mdb`'s size now.
        bytes: u64,
        /// Its size after the last pack (`None`: never packed).
        packed_bytes: Option<u64>,
    },
    /// Another process (or this one) has the store open: left for later.
    InUse,
}

/// Repacks the store in `dir` when it is loose ([`LOOSE_RATIO`],
/// [`LOOSE_MIN_BYTES`]) and nothing else has it open; never waits for
/// other processes (`InUse` is an outcome here, not an error).
pub fn pack_when_loose(dir: &Path, on_database: &mut dyn FnMut(&RepackedDatabase)) -> Result<Packing> {
    let lock = match lock_alone(dir) {
        Ok(lock) => lock,
        Err(e) if matches!(e.kind(), ErrorKind::InUse { .. }) => return Ok(Packing::InUse),
        Err(e) => return Err(e),
    };
    let data = dir.join("data.mdb");
    let bytes = std::fs::metadata(&data).map_err(io(&data))?.len();
    let packed_bytes = packed_bytes(dir);
    let loose = bytes >= LOOSE_MIN_BYTES
        && packed_bytes.is_none_or(|packed| bytes as f64 > packed as f64 * LOOSE_RATIO);
    if !loose {
        return Ok(Packing::Tight { bytes, packed_bytes });
    }
    repack_locked(dir, lock, on_database).map(Packing::Packed)
}

/// `data.mdb`'s size after the last pack, if one is recorded.
fn packed_bytes(dir: &Path) -> Option<u64> {
    std::fs::read_to_string(dir.join(PACKED_FILE)).ok()?.trim().parse().ok()
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + use<> {
    let path = path.to_owned();
    move |source| Error::from(ErrorKind::Io { path, source })
}

/// `open.lock` held exclusively: the store is this caller's alone, or
/// `InUse`.
fn lock_alone(dir: &Path) -> Result<File> {
    let data = dir.join("data.mdb");
    if !data.try_exists().map_err(io(&data))? {
        return Err(not_a_store(dir, "no data.mdb"));
    }
    if is_open_here(dir) {
        return Err(in_use(dir, "this process has the store open"));
    }
    let lock_path = dir.join(OPEN_LOCK);
    let lock =
        File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(io(&lock_path))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(in_use(
            dir,
            "another process has the store open (a server or a command); stop it and repack again",
        )),
        Err(std::fs::TryLockError::Error(source)) => Err(io(&lock_path)(source)),
    }
}

/// The repack itself, `lock` (from [`lock_alone`]) held throughout.
fn repack_locked(
    dir: &Path,
    lock: File,
    on_database: &mut dyn FnMut(&RepackedDatabase),
) -> Result<RepackReport> {
    let started = Instant::now();
    let data = dir.join("data.mdb");
    let bytes_before = std::fs::metadata(&data).map_err(io(&data))?.len();
    let available = fs4::available_space(dir).map_err(io(dir))?;
    if available < bytes_before {
        return Err(ErrorKind::DiskFull { path: dir.to_owned(), available_bytes: available }.into());
    }
    let scratch = dir.join(REPACK_DIR);
    if scratch.try_exists().map_err(io(&scratch))? {
        std::fs::remove_dir_all(&scratch).map_err(io(&scratch))?;
    }
    std::fs::create_dir(&scratch).map_err(io(&scratch))?;

    let source = open_env(dir, 0)?;
    let map_size = source.info().map_size.max(bytes_before as usize);
    let target = open_env(&scratch, map_size)?;
    let databases = copy_all(&source, &target, on_database);
    let databases = match databases {
        Ok(databases) => databases,
        Err(e) => {
            close(source);
            close(target);
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(e);
        }
    };
    target.force_sync().map_err(|e| Error::lmdb("sync the repacked file", e))?;
    close(source);
    close(target);

    let new_data = scratch.join("data.mdb");
    File::open(&new_data).and_then(|f| f.sync_all()).map_err(io(&new_data))?;
    std::fs::rename(&new_data, &data).map_err(io(&data))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    std::fs::remove_dir_all(&scratch).map_err(io(&scratch))?;
    let bytes_after = std::fs::metadata(&data).map_err(io(&data))?.len();
    // Only a hint for `pack_when_loose`: a failure to record it is not the
    // repack's (the next one just comes sooner).
    let _ = std::fs::write(dir.join(PACKED_FILE), format!("{bytes_after}\n"));
    drop(lock);
    Ok(RepackReport { bytes_before, bytes_after, databases, seconds: started.elapsed().as_secs_f64() })
}

/// Opens an environment for the repack alone: the store's (`map_size` 0
/// keeps the file's), or the new file's (`map_size` given), whose commits
/// are not synced one by one: nothing reads it before the one sync that
/// comes before its rename, and killed before that it is thrown away.
/// (A sync per commit, one per database and per `ENTRIES_PER_TXN`, was
/// ~0.2 s of a 1.3 s pack of the full corpus: BENCHMARKS "Issue 65,
/// eighteenth part".)
fn open_env(dir: &Path, map_size: usize) -> Result<Env> {
    let mut options = EnvOpenOptions::new();
    options.max_dbs(u32::from(u16::MAX)).max_readers(8);
    if map_size > 0 {
        options.map_size(map_size.div_ceil(4096) * 4096);
        // SAFETY: `NO_SYNC` only leaves syncing to the caller, which syncs
        // the new file (`force_sync`, then `sync_all`) before renaming it
        // over `data.mdb`; nothing else has it open.
        #[allow(unsafe_code)]
        unsafe {
            options.flags(heed::EnvFlags::NO_SYNC);
        }
    }
    // SAFETY: as in `Environment::open`: the file is only touched through
    // LMDB, and the exclusive `open.lock` keeps every other rowsearch
    // process away from it for the repack's whole life.
    #[allow(unsafe_code)]
    let env = unsafe { options.open(dir) };
    env.map_err(|e| match e {
        heed::Error::Mdb(heed::MdbError::Invalid | heed::MdbError::VersionMismatch) => {
            not_a_store(dir, "data.mdb is not an LMDB environment")
        }
        other => Error::lmdb("open for repack", other),
    })
}

fn close(env: Env) {
    env.prepare_for_closing().wait();
}

/// The names of the named databases: the keys of LMDB's main database.
fn database_names(env: &Env) -> Result<Vec<String>> {
    let rtxn = env.read_txn().map_err(|e| Error::lmdb("begin read", e))?;
    let main: Database<Bytes, Bytes> = env
        .open_database(&rtxn, None)
        .map_err(|e| Error::lmdb("open main database", e))?
        .ok_or_else(|| Error::lmdb("open main database", heed::Error::Mdb(heed::MdbError::NotFound)))?;
    let mut names = Vec::new();
    for entry in main.iter(&rtxn).map_err(|e| Error::lmdb("list databases", e))? {
        let (name, _) = entry.map_err(|e| Error::lmdb("list databases", e))?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| {
            Error::from(ErrorKind::Corrupted {
                db: "(main)".into(),
                key: format!("{name:?}"),
                detail: "a database name that is not UTF-8".into(),
            })
        })?;
        names.push(name);
    }
    Ok(names)
}

fn pages(stat: &heed::DatabaseStat) -> u64 {
    (stat.branch_pages + stat.leaf_pages + stat.overflow_pages) as u64
}

fn copy_all(
    source: &Env,
    target: &Env,
    on_database: &mut dyn FnMut(&RepackedDatabase),
) -> Result<Vec<RepackedDatabase>> {
    let mut report = Vec::new();
    for name in database_names(source)? {
        let lmdb = |what: &'static str| move |e| Error::lmdb(what, e);
        let rtxn = source.read_txn().map_err(lmdb("begin read"))?;
        let from: Database<Bytes, Bytes> = source
            .open_database(&rtxn, Some(&name))
            .map_err(lmdb("open database"))?
            .ok_or_else(|| Error::lmdb("open database", heed::Error::Mdb(heed::MdbError::NotFound)))?;
        let pages_before = pages(&from.stat(&rtxn).map_err(lmdb("stat"))?);
        let mut wtxn = target.write_txn().map_err(lmdb("begin write"))?;
        let to: Database<Bytes, Bytes> =
            target.create_database(&mut wtxn, Some(&name)).map_err(lmdb("create database"))?;
        let mut entries = 0u64;
        let mut iter = from.iter(&rtxn).map_err(lmdb("read for repack"))?;
        loop {
            let mut puts = SortedPuts::new(&mut wtxn, &to, "repack")?;
            let mut in_txn = 0;
            let mut done = true;
            for entry in iter.by_ref() {
                let (key, value) = entry.map_err(lmdb("read for repack"))?;
                puts.append(key, value)?;
                entries += 1;
                in_txn += 1;
                if in_txn == ENTRIES_PER_TXN {
                    done = false;
                    break;
                }
            }
            drop(puts);
            wtxn.commit().map_err(lmdb("commit repack"))?;
            if done {
                break;
            }
            wtxn = target.write_txn().map_err(lmdb("begin write"))?;
        }
        drop(iter);
        let rtxn_after = target.read_txn().map_err(lmdb("begin read"))?;
        let pages_after = pages(&to.stat(&rtxn_after).map_err(lmdb("stat"))?);
        let database = RepackedDatabase { name, entries, pages_before, pages_after };
        on_database(&database);
        report.push(database);
    }
    Ok(report)
}
