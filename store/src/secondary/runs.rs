//! Pending runs: an index's recent entries as sorted runs beside the main
//! B-tree, and the merge that moves them in (see the module documentation
//! of `crate::secondary`).
//!
//! ```text
//! pending key = run id (u32 BE, from 1) ‖ entry key
//! directory   = 00 00 00 00 ‖ run id  ->  entries written (u64 BE)
//! ```

use std::collections::BinaryHeap;
use std::ops::Bound;

use heed::{RoTxn, RwTxn};

use super::entry::{entry_expiry, entry_value};
use super::handle::IndexHandle;
use crate::db::BytesDb;
use crate::db::sorted::SortedPuts;
use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::stream::{Source, prefix_start};

/// Default most pending runs of an index before a write merges them
/// ([`crate::StoreBuilder::index_pending_runs`]).
pub(crate) const PENDING_RUNS: usize = 32;

/// The directory's run id in the pending database.
const DIRECTORY: [u8; 4] = [0; 4];

/// Writes entry `key` expiring at `expiry` into `db` (an empty value for
/// never, so entries without TTL take 8 bytes less).
fn put_entry(wtxn: &mut RwTxn, db: &BytesDb, key: &[u8], expiry: u64) -> Result<()> {
    db.put(wtxn, key, entry_value(&expiry.to_be_bytes(), expiry)).map_err(|e| Error::lmdb("index put", e))
}

impl IndexHandle {
    /// The pending runs, oldest first.
    pub fn runs(&self, txn: &RoTxn<'_>) -> Result<Vec<[u8; 4]>> {
        let mut runs = Vec::new();
        for item in self.pending.prefix_iter(txn, &DIRECTORY).map_err(|e| Error::lmdb("index runs", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("index runs", e))?;
            let run: [u8; 4] = k.get(4..).and_then(|r| r.try_into().ok()).ok_or_else(|| -> Error {
                ErrorKind::Corrupted {
                    db: self.db_name.clone(),
                    key: crate::error::preview(k),
                    detail: "bad pending run directory key".into(),
                }
                .into()
            })?;
            runs.push(run);
        }
        Ok(runs)
    }

    /// Every place entries are read from: the main database, then the
    /// runs, oldest first.
    pub fn sources(&self, txn: &RoTxn<'_>) -> Result<Vec<Source<'_>>> {
        let mut sources = vec![(&self.db, Vec::new())];
        sources.extend(self.runs(txn)?.into_iter().map(|r| (&self.pending, r.to_vec())));
        Ok(sources)
    }

    /// Removes every entry.
    pub fn clear(&self, wtxn: &mut RwTxn) -> Result<()> {
        for db in [&self.db, &self.pending] {
            db.clear(wtxn).map_err(|e| Error::lmdb("clear index", e))?;
        }
        Ok(())
    }

    /// Writes new entries (keys that are nowhere live), strictly ascending,
    /// as a new pending run.
    pub fn insert_sorted<'k>(
        &self,
        wtxn: &mut RwTxn,
        entries: impl IntoIterator<Item = (&'k [u8], u64)>,
    ) -> Result<()> {
        let last = self.runs(wtxn)?.last().map_or(0, |r| u32::from_be_bytes(*r));
        let next = match last.checked_add(1) {
            Some(next) => next,
            None => {
                // Ids ran out (only with an enormous `index_pending_runs`):
                // merge every run, and ids start again.
                self.merge_pending(wtxn, None)?;
                1
            }
        };
        let run = next.to_be_bytes();
        let mut written = 0u64;
        {
            let mut puts = SortedPuts::new(wtxn, &self.pending, "index put")?;
            let mut buf = run.to_vec();
            for (key, expiry) in entries {
                buf.truncate(run.len());
                buf.extend_from_slice(key);
                puts.append(&buf, entry_value(&expiry.to_be_bytes(), expiry))?;
                written += 1;
            }
        }
        if written > 0 {
            self.pending
                .put(wtxn, &[DIRECTORY, run].concat(), &written.to_be_bytes())
                .map_err(|e| Error::lmdb("index put", e))?;
        }
        Ok(())
    }

    /// The database and key holding live entry `key`: the newest of `runs`
    /// (from [`IndexHandle::runs`]) that has it, else the main database.
    fn holder(&self, wtxn: &RwTxn, runs: &[[u8; 4]], key: &[u8]) -> Result<(&BytesDb, Vec<u8>)> {
        for run in runs.iter().rev() {
            let k = [&run[..], key].concat();
            if self.pending.get(wtxn, &k).map_err(|e| Error::lmdb("index read", e))?.is_some() {
                return Ok((&self.pending, k));
            }
        }
        Ok((&self.db, key.to_vec()))
    }

    /// Writes a new expiry for an existing entry, where the entry is;
    /// `runs` as [`IndexHandle::runs`] gives them.
    pub fn replace(&self, wtxn: &mut RwTxn, runs: &[[u8; 4]], key: &[u8], expiry: u64) -> Result<()> {
        let (db, k) = self.holder(wtxn, runs, key)?;
        put_entry(wtxn, db, &k, expiry)
    }

    /// Removes an entry from where it is; `runs` as [`IndexHandle::runs`]
    /// gives them.
    pub fn remove(&self, wtxn: &mut RwTxn, runs: &[[u8; 4]], key: &[u8]) -> Result<()> {
        let (db, k) = self.holder(wtxn, runs, key)?;
        db.delete(wtxn, &k).map_err(|e| Error::lmdb("index delete", e))?;
        Ok(())
    }

    /// Writes an entry straight into the main database (building an index,
    /// where entries arrive in bulk anyway).
    pub fn build_put(&self, wtxn: &mut RwTxn, key: &[u8], expiry: u64) -> Result<()> {
        put_entry(wtxn, &self.db, key, expiry)
    }

    /// Moves every pending run into the main database when there are more
    /// than `max_runs` of them; always with `max_runs` `None`. Returns how
    /// many entries moved.
    pub fn merge_pending(&self, wtxn: &mut RwTxn, max_runs: Option<usize>) -> Result<u64> {
        let runs = self.runs(wtxn)?;
        let due = match max_runs {
            None => !runs.is_empty(),
            Some(max) => runs.len() > max,
        };
        if !due {
            return Ok(0);
        }
        let moved = self.move_to_main(wtxn, &runs)?;
        self.pending.clear(wtxn).map_err(|e| Error::lmdb("index merge", e))?;
        Ok(moved)
    }

    /// Writes the entries of the pending ranges `prefixes` (prefix
    /// stripped) into the main database in one ascending pass (so neighbouring
    /// writes share leaf pages); where a key is in several ranges, the last
    /// range's entry wins. Reads in chunks, so memory stays bounded.
    fn move_to_main(&self, wtxn: &mut RwTxn, prefixes: &[impl AsRef<[u8]>]) -> Result<u64> {
        let mut ranges: Vec<MergeRange> = prefixes.iter().map(|p| MergeRange::new(p.as_ref())).collect();
        // Keys at or below the main database's last one are inserted; the
        // rest sort after everything there and are appended.
        let main_last =
            self.db.last(wtxn).map_err(|e| Error::lmdb("index merge", e))?.map(|(k, _)| k.to_vec());
        // Heads of the ranges, smallest entry first, then oldest range.
        let mut heap: BinaryHeap<MergeHead> = BinaryHeap::new();
        let mut moved = 0u64;
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(MergeRange::CHUNK);
        loop {
            for (i, r) in ranges.iter_mut().enumerate() {
                if r.buf.is_empty() && !r.done {
                    r.refill(wtxn, &self.pending)?;
                    r.push_head(i, &mut heap);
                }
            }
            if heap.is_empty() {
                return Ok(moved);
            }
            // Emit in order until a range that has more in LMDB runs dry.
            out.clear();
            while let Some(std::cmp::Reverse((k, i, mut v))) = heap.pop() {
                let mut dry = ranges[i].push_head(i, &mut heap);
                while let Some(std::cmp::Reverse((k2, _, _))) = heap.peek()
                    && *k2 == k
                {
                    if let Some(std::cmp::Reverse((_, j, v2))) = heap.pop() {
                        v = v2;
                        dry |= ranges[j].push_head(j, &mut heap);
                    }
                }
                out.push((k, v));
                if dry {
                    break;
                }
            }
            let mut puts = SortedPuts::new(wtxn, &self.db, "index merge")?;
            for (k, v) in &out {
                if main_last.as_ref().is_some_and(|last| k <= last) {
                    puts.put(k, v)?;
                } else {
                    puts.append(k, v)?;
                }
            }
            moved += out.len() as u64;
        }
    }

    /// Moves a version 2 store's pending entries (written without a run
    /// id) into the main database (upgrading to the run layout).
    pub fn absorb_unprefixed_pending(&self, wtxn: &mut RwTxn) -> Result<u64> {
        let moved = self.move_to_main(wtxn, &[[0u8; 0]])?;
        self.pending.clear(wtxn).map_err(|e| Error::lmdb("index upgrade", e))?;
        Ok(moved)
    }

    /// Whether the main database holds entries of pending runs: keys that
    /// start `00 00 00 00` (a run directory entry) cannot be entries (region
    /// 0, then `00 00`, which no escaped value starts with). The format 3 to
    /// 4 upgrade of the build before this one moved version 3's runs there
    /// as they were, run ids and directory included, leaving lookups empty.
    pub fn holds_moved_runs(&self, txn: &RoTxn<'_>) -> Result<bool> {
        let mut iter = self.db.prefix_iter(txn, &DIRECTORY).map_err(|e| Error::lmdb("index read", e))?;
        Ok(iter.next().transpose().map_err(|e| Error::lmdb("index read", e))?.is_some())
    }

    /// Every entry still live at `now_ms`, sorted, each once.
    pub fn live_entries(&self, txn: &RoTxn<'_>, now_ms: u64) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for (db, prefix) in self.sources(txn)? {
            let lower = prefix_start(&prefix);
            let upper = key::prefix_successor(&prefix);
            let range = (lower, upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
            for item in db.range(txn, &range).map_err(|e| Error::lmdb("index read", e))? {
                let (k, v) = item.map_err(|e| Error::lmdb("index read", e))?;
                if now_ms < entry_expiry(v) {
                    out.push(k[prefix.len()..].to_vec());
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Merges the runs, then removes the entries expired at `now_ms`.
    pub fn compact(&self, wtxn: &mut RwTxn, now_ms: u64) -> Result<()> {
        self.merge_pending(wtxn, None)?;
        let mut dead = Vec::new();
        for item in self.db.iter(wtxn).map_err(|e| Error::lmdb("compact index", e))? {
            let (k, v) = item.map_err(|e| Error::lmdb("compact index", e))?;
            if entry_expiry(v) <= now_ms {
                dead.push(k.to_vec());
            }
        }
        for k in &dead {
            self.db.delete(wtxn, k).map_err(|e| Error::lmdb("compact index", e))?;
        }
        Ok(())
    }
}

/// An entry on its way to the main database: key (prefix stripped),
/// range, value; the smallest key, then the oldest range, on top.
type MergeHead = std::cmp::Reverse<(Vec<u8>, usize, Vec<u8>)>;

/// One pending range being merged into the main database, read in chunks.
struct MergeRange {
    prefix: Vec<u8>,
    upper: Option<Vec<u8>>,
    /// Entries read and not yet merged, prefix stripped.
    buf: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The last full key read.
    after: Option<Vec<u8>>,
    /// Everything read.
    done: bool,
}

impl MergeRange {
    const CHUNK: usize = 4096;

    fn new(prefix: &[u8]) -> MergeRange {
        MergeRange {
            prefix: prefix.to_vec(),
            upper: key::prefix_successor(prefix),
            buf: Default::default(),
            after: None,
            done: false,
        }
    }

    /// Reads the next chunk of the range.
    fn refill(&mut self, txn: &RoTxn<'_>, db: &BytesDb) -> Result<()> {
        let lower = self.after.as_deref().map_or_else(|| prefix_start(&self.prefix), Bound::Excluded);
        let range = (lower, self.upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
        let mut last = None;
        let mut read = 0;
        for item in db.range(txn, &range).map_err(|e| Error::lmdb("index merge", e))?.take(Self::CHUNK) {
            let (k, v) = item.map_err(|e| Error::lmdb("index merge", e))?;
            self.buf.push_back((k[self.prefix.len()..].to_vec(), v.to_vec()));
            last = Some(k);
            read += 1;
        }
        self.done = read < Self::CHUNK;
        self.after = last.map(<[u8]>::to_vec);
        Ok(())
    }

    /// Pushes the next buffered entry (of range `i`) onto the heap; true
    /// when none is buffered but LMDB holds more (the merge must refill
    /// before it goes on).
    fn push_head(&mut self, i: usize, heap: &mut BinaryHeap<MergeHead>) -> bool {
        match self.buf.pop_front() {
            Some((k, v)) => {
                heap.push(std::cmp::Reverse((k, i, v)));
                false
            }
            None => !self.done,
        }
    }
}
