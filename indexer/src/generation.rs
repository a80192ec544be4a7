//! Index generations on disk: `<store>/index/<table>/gen-N/` (each a
//! tantivy index), the pointer file `CURRENT` naming the serving one, and a
//! `LOCK` file that one reindex at a time holds.
//!
//! The pointer is replaced atomically (written to `CURRENT.tmp`, synced,
//! renamed over `CURRENT`, directory synced), so a reader sees the old
//! generation or the new one, never neither. A generation that no pointer
//! names is a leftover of a failed or killed build and is removed by the
//! next reindex. Removing a generation that a reader still has open is
//! safe on Unix: its files stay readable through the open maps until the
//! reader lets go; a reader that has not opened it yet reads the pointer
//! again.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::Index;

use crate::{Error, Result};

const CURRENT: &str = "CURRENT";
const CURRENT_TMP: &str = "CURRENT.tmp";
const LOCK: &str = "LOCK";
const GEN_PREFIX: &str = "gen-";

/// A table's index directory.
#[derive(Debug, Clone)]
pub struct IndexDir {
    table: String,
    root: PathBuf,
}

/// Held while a reindex runs; dropping it releases the lock.
#[derive(Debug)]
pub struct ReindexLock {
    _file: File,
}

impl IndexDir {
    /// The index directory of `table` in the store at `store_dir`.
    pub fn new(store_dir: &Path, table: &str) -> IndexDir {
        IndexDir { table: table.to_owned(), root: store_dir.join("index").join(table) }
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// `<store>/index/<table>`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of generation `n`.
    pub fn generation_path(&self, n: u64) -> PathBuf {
        self.root.join(format!("{GEN_PREFIX}{n}"))
    }

    /// The pointer file.
    pub fn pointer_path(&self) -> PathBuf {
        self.root.join(CURRENT)
    }

    fn io(&self, path: &Path) -> impl FnOnce(std::io::Error) -> Error + use<> {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    }

    /// The serving generation, `None` before the first reindex.
    ///
    /// # Errors
    /// `Io`; `Corrupted` when the pointer does not name a generation.
    pub fn current(&self) -> Result<Option<u64>> {
        let path = self.pointer_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(&path)(e)),
        };
        parse_generation(text.trim()).map(Some).ok_or_else(|| Error::Corrupted {
            path,
            detail: format!("pointer names {:?}, not a generation", text.trim()),
        })
    }

    /// Whether the pointer names a generation that is there (`Ok` too
    /// before the first reindex).
    ///
    /// # Errors
    /// `Corrupted` when the pointer does not name a generation or names
    /// one whose directory (or its `meta.json`) is missing; `Io`.
    pub fn check_pointer(&self) -> Result<()> {
        let Some(n) = self.current()? else { return Ok(()) };
        if !self.generation_path(n).join("meta.json").is_file() {
            return Err(Error::Corrupted {
                path: self.pointer_path(),
                detail: format!("the pointer names {GEN_PREFIX}{n}, which is missing"),
            });
        }
        Ok(())
    }

    /// Every generation directory present, ascending.
    ///
    /// # Errors
    /// `Io`.
    pub fn generations(&self) -> Result<Vec<u64>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(&self.root)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(self.io(&self.root))?;
            if let Some(n) = entry.file_name().to_str().and_then(parse_generation) {
                out.push(n);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Takes the reindex lock, failing at once with `Busy` when another
    /// reindex (in this process or another) holds it.
    ///
    /// # Errors
    /// `Busy`, `Io`.
    pub fn lock(&self) -> Result<ReindexLock> {
        std::fs::create_dir_all(&self.root).map_err(self.io(&self.root))?;
        let path = self.root.join(LOCK);
        let file =
            File::options().create(true).truncate(false).write(true).open(&path).map_err(self.io(&path))?;
        match file.try_lock() {
            Ok(()) => Ok(ReindexLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Busy { table: self.table.clone() }),
            Err(std::fs::TryLockError::Error(e)) => Err(self.io(&path)(e)),
        }
    }

    /// Points `CURRENT` at generation `n`, atomically and durably.
    ///
    /// # Errors
    /// `Io`.
    pub fn switch(&self, _lock: &ReindexLock, n: u64) -> Result<()> {
        let tmp = self.root.join(CURRENT_TMP);
        let mut file = File::create(&tmp).map_err(self.io(&tmp))?;
        file.write_all(format!("{GEN_PREFIX}{n}\n").as_bytes()).map_err(self.io(&tmp))?;
        file.sync_all().map_err(self.io(&tmp))?;
        drop(file);
        std::fs::rename(&tmp, self.pointer_path()).map_err(self.io(&tmp))?;
        File::open(&self.root).and_then(|dir| dir.sync_all()).map_err(self.io(&self.root))
    }

    /// Removes every generation but `keep` (leftovers of failed builds, and
    /// generations replaced since), and a stray pointer temp file. Returns
    /// the generations removed.
    ///
    /// # Errors
    /// `Io`.
    pub fn remove_others(&self, _lock: &ReindexLock, keep: Option<u64>) -> Result<Vec<u64>> {
        let mut removed = Vec::new();
        for n in self.generations()? {
            if Some(n) != keep {
                let path = self.generation_path(n);
                std::fs::remove_dir_all(&path).map_err(self.io(&path))?;
                removed.push(n);
            }
        }
        let tmp = self.root.join(CURRENT_TMP);
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io(&tmp)(e)),
        }
        Ok(removed)
    }

    /// Removes the whole index directory (when the table is dropped).
    ///
    /// # Errors
    /// `Io`.
    pub fn remove_all(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io(&self.root)(e)),
        }
    }

    /// Opens generation `n`'s tantivy index (counted, see `io_counts`).
    ///
    /// # Errors
    /// `Tantivy`.
    pub(crate) fn open_index(&self, n: u64) -> Result<Index> {
        crate::io_counts::index_opened();
        Index::open_in_dir(self.generation_path(n))
            .map_err(crate::error::tantivy_err(self.table(), "open index"))
    }

    /// Bytes of the files under generation `n`.
    ///
    /// # Errors
    /// `Io`.
    pub fn generation_bytes(&self, n: u64) -> Result<u64> {
        let path = self.generation_path(n);
        let mut total = 0;
        for entry in std::fs::read_dir(&path).map_err(self.io(&path))? {
            let meta = entry.and_then(|e| e.metadata()).map_err(self.io(&path))?;
            if meta.is_file() {
                total += meta.len();
            }
        }
        Ok(total)
    }
}

fn parse_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(GEN_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names_parse_strictly() {
        assert_eq!(parse_generation("gen-12"), Some(12));
        assert_eq!(parse_generation("gen-"), None);
        assert_eq!(parse_generation("gen-1a"), None);
        assert_eq!(parse_generation("gen--1"), None);
        assert_eq!(parse_generation("CURRENT"), None);
    }

    #[test]
    fn pointer_switch_and_cleanup() {
        let dir = tempfile::tempdir().unwrap();
        let idx = IndexDir::new(dir.path(), "mail");
        assert_eq!(idx.current().unwrap(), None);
        let lock = idx.lock().unwrap();
        assert!(matches!(idx.lock(), Err(Error::Busy { .. })), "a second lock is refused");
        for n in [1, 2, 3] {
            std::fs::create_dir_all(idx.generation_path(n)).unwrap();
        }
        idx.switch(&lock, 2).unwrap();
        assert_eq!(idx.current().unwrap(), Some(2));
        assert_eq!(idx.remove_others(&lock, Some(2)).unwrap(), vec![1, 3]);
        assert_eq!(idx.generations().unwrap(), vec![2]);
        drop(lock);
        idx.lock().expect("released on drop");
        std::fs::write(idx.pointer_path(), "gen-x\n").unwrap();
        assert!(matches!(idx.current(), Err(Error::Corrupted { .. })));
    }
}

/// What each tantivy commit of a generation records (its payload, JSON):
/// the first change-feed sequence the generation has not absorbed, and the
/// id of the table it indexes (see `Store::table_id`; absent in
/// generations built before ids existed, read as 0). The one owner of that
/// layout: builds write it with [`commit_payload`], readers read it with
/// [`indexed_next_seq`] and [`indexed_table_id`].

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Payload {
    /// The first feed sequence not yet applied.
    pub next_seq: u64,
    /// The table's id.
    #[serde(default)]
    pub table_id: u64,
}

/// The payload of a commit of table `table_id`'s index that absorbed the
/// feed below `next_seq`.
pub(crate) fn commit_payload(next_seq: u64, table_id: u64) -> String {
    serde_json::to_string(&Payload { next_seq, table_id }).unwrap_or_default()
}

/// The feed sequence a generation's last commit recorded.
pub(crate) fn indexed_next_seq(table: &str, index: &Index) -> Result<u64> {
    payload(table, index).map(|p| p.next_seq)
}

/// The id of the table a generation was built for.
pub(crate) fn indexed_table_id(table: &str, index: &Index) -> Result<u64> {
    payload(table, index).map(|p| p.table_id)
}

fn payload(table: &str, index: &Index) -> Result<Payload> {
    let metas = index.load_metas().map_err(crate::error::tantivy_err(table, "read commit"))?;
    let payload = metas.payload.ok_or_else(|| Error::Corrupted {
        path: std::path::PathBuf::from(format!("index/{table}")),
        detail: "commit has no payload".into(),
    })?;
    serde_json::from_str::<Payload>(&payload).map_err(|e| Error::Corrupted {
        path: std::path::PathBuf::from(format!("index/{table}")),
        detail: format!("bad commit payload {payload:?}: {e}"),
    })
}

#[cfg(test)]
mod payload_tests {
    use super::*;

    /// The payload is pinned: generations written by one build are read by
    /// the next.
    #[test]
    fn commit_payload_is_pinned() {
        assert_eq!(commit_payload(42, 3), r#"{"next_seq":42,"table_id":3}"#);
        let old = serde_json::from_str::<Payload>(r#"{"next_seq":7}"#).ok();
        assert_eq!(old.map(|p| (p.next_seq, p.table_id)), Some((7, 0)));
    }
}
