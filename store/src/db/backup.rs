//! A store's file copied from one snapshot while it serves and takes
//! writes, and the facts of such a copy read back.
//!
//! The copy is LMDB's compacting copy (`mdb_env_copyfd2` with
//! `MDB_CP_COMPACT`, what `mdb_copy -c` does): one read transaction, free
//! pages left out, pages renumbered. It is written into a pipe that this
//! module drains into the caller's sink, so the caller sees the bytes as
//! they come (progress, a checksum) without reading the file again. A read
//! transaction does not hold writers up; it keeps the pages it sees from
//! being reused until it ends, so the file may grow while a long copy runs.
//!
//! LMDB's copy cannot be told which transaction to copy from, so the copy's
//! sequence and tables are read from the copy itself ([`CopyFacts::read`]),
//! through a read-only environment that writes nothing, not even a lock file.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;

use heed::{EnvFlags, EnvOpenOptions};

use super::env::{Environment, not_a_store};
use super::feed::Feed;
use super::meta::Meta;
use super::{BytesDb, FEED, META, META_FORMAT};
use crate::error::{Error, ErrorKind, Result};

/// Bytes handed to the sink at a time.
const CHUNK: usize = 1 << 20;

impl Environment {
    /// Streams a compacted copy of the environment, taken from one read
    /// transaction, into `sink` in chunks; returns its length. A sink error
    /// stops the copy and is returned.
    pub fn copy_compacted(&self, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> Result<u64> {
        let io = |source| Error::from(ErrorKind::Io { path: self.dir.join("data.mdb"), source });
        let (mut reader, writer) = std::io::pipe().map_err(io)?;
        // As every read transaction: the map is not resized under it.
        let _resize = super::env::read_lock(&self.resize_lock);
        std::thread::scope(|scope| {
            let copier = scope.spawn(move || {
                // SAFETY: the descriptor is the write end of a pipe this
                // closure owns for the whole call; LMDB only write()s to it.
                #[allow(unsafe_code)]
                let copied =
                    unsafe { self.raw().copy_to_fd(writer.as_raw_fd(), heed::CompactionOption::Enabled) };
                drop(writer);
                copied
            });
            let mut total = 0u64;
            let mut buf = vec![0u8; CHUNK];
            let drained: std::io::Result<()> = loop {
                match reader.read(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(n) => {
                        total += n as u64;
                        if let Err(e) = sink(&buf[..n]) {
                            break Err(e);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            // Closing the read end makes a copy still writing fail (EPIPE)
            // instead of blocking forever.
            drop(reader);
            let copied = copier
                .join()
                .unwrap_or_else(|_| Err(heed::Error::Io(std::io::Error::other("copy panicked"))));
            drained.map_err(io)?;
            copied.map_err(|e| Error::lmdb("copy the store", e))?;
            Ok(total)
        })
    }
}

/// What a copy of a store holds, read from the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyFacts {
    /// The format marker (`rowsearch-store/N`).
    pub format: String,
    /// The change-feed sequence the next commit would have had: every
    /// commit with a smaller sequence is in the copy, none after.
    pub next_seq: u64,
    /// The tables, by name, with their ids (a table dropped and made
    /// again has a new one).
    pub tables: Vec<(String, u64)>,
}

impl CopyFacts {
    /// Reads the facts of the store file `dir/data.mdb` without writing to
    /// `dir` (read-only, no lock file: nothing else may have it open).
    ///
    /// # Errors
    /// `NotAStore` when it is not a rowsearch store; `Lmdb`, `Corrupted`.
    pub fn read(dir: &Path) -> Result<CopyFacts> {
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.max_dbs(u32::from(u16::MAX)).max_readers(4);
        // SAFETY: read-only and without LMDB's lock file: sound because the
        // caller's copy is not open anywhere else (it was just written, or
        // is being restored), so nothing changes the file while it is mapped.
        #[allow(unsafe_code)]
        let env = unsafe {
            options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_LOCK);
            options.open(dir)
        }
        .map_err(|e| match e {
            heed::Error::Mdb(heed::MdbError::Invalid | heed::MdbError::VersionMismatch) => {
                not_a_store(dir, "data.mdb is not an LMDB environment")
            }
            other => Error::lmdb("open a copy", other),
        })?;
        let facts = (|| {
            let rtxn = env.read_txn().map_err(|e| Error::lmdb("begin read", e))?;
            let open = |name: &str| -> Result<Option<BytesDb>> {
                env.open_database(&rtxn, Some(name)).map_err(|e| Error::lmdb("open database", e))
            };
            let meta = open(META)?.ok_or_else(|| not_a_store(dir, "no rowsearch metadata"))?;
            let format = meta
                .get(&rtxn, META_FORMAT)
                .map_err(|e| Error::lmdb("read format", e))?
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .ok_or_else(|| not_a_store(dir, "no format marker"))?;
            let meta = Meta { db: meta };
            let mut tables = Vec::new();
            for (name, _) in meta.schemas(&rtxn)? {
                let id = meta.table_id(&rtxn, &name)?;
                tables.push((name, id));
            }
            let next_seq = match open(FEED)? {
                Some(db) => Feed { db, meta: meta.db }.next_seq(&rtxn)?,
                None => 1,
            };
            Ok(CopyFacts { format, next_seq, tables })
        })();
        env.prepare_for_closing().wait();
        facts
    }
}
