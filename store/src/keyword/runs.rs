//! Pending keyword runs (format 6): each write's new keyword versions as
//! one sorted run appended beside the blocks (`MDB_APPEND`: no search, full
//! pages), merged into the blocks once a table holds more runs than the
//! store's limit (`write::merge_runs`). The one owner of `t/<table>/kp`'s
//! bytes:
//!
//! ```text
//! run entry = run id (u32 BE, from 1) ‖ block key (column prefix ‖ order tail)  ->  block
//! directory = 00 00 00 00 ‖ run id  ->  versions written (u64 BE) ‖ filter
//! ```
//!
//! The filter is a Bloom filter of the run's column prefixes (xxh3-64 of
//! the prefix, [`FILTER_PROBES`] bits by double hashing, about ten bits per
//! column): a lookup opens a cursor on a run only when its filter may hold
//! the column, so runs that hold none of a lookup's columns cost it no
//! LMDB search. Deletes in a run never clear bits (a filter may only say
//! "maybe" too often).
//!
//! A run's entries are blocks exactly as `kv`'s (`block`), so a reader
//! reads a run as it reads the blocks, under a key prefix: a [`Place`]. A
//! version is in exactly one place: a write deletes (or replaces) a version
//! where it is, blocks or an earlier run, and puts the new versions into its
//! own run, so readers take the union of the places and need no tombstones.

use std::iter::Peekable;
use std::ops::Bound;

use heed::types::Bytes;
use heed::{PutFlags, RoRange, RoTxn, RwTxn};

use super::block::{ORDER_TAIL_LEN, Versions, encode, order_tail};
use super::handle::SearchHandle;
use crate::db::BytesDb;
use crate::error::{Error, ErrorKind, Result};
use crate::key;
use xxhash_rust::xxh3::xxh3_64;

/// Default most pending keyword runs of a table before a write merges them
/// into the blocks ([`crate::StoreBuilder::keyword_pending_runs`]).
pub(crate) const PENDING_RUNS: usize = 4;

/// The directory's run id.
const DIRECTORY: [u8; 4] = [0; 4];

/// Bits a filter sets and tests per column.
const FILTER_PROBES: u64 = 7;

/// Bits of filter per column of a run.
const FILTER_BITS_PER_COLUMN: usize = 10;

/// The filter bits of a column prefix's hash in a filter of `bits` bits.
fn filter_bits(hash: u64, bits: u64) -> impl Iterator<Item = u64> {
    let (h1, h2) = (hash & 0xffff_ffff, (hash >> 32) | 1);
    (0..FILTER_PROBES).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
}

/// Whether a run whose directory value is `value` may hold column
/// `prefix` (a value without a filter: it may).
fn filter_may_hold(value: &[u8], prefix: &[u8]) -> bool {
    let filter = value.get(8..).unwrap_or_default();
    if filter.is_empty() {
        return true;
    }
    let bits = filter.len() as u64 * 8;
    filter_bits(xxh3_64(prefix), bits).all(|b| filter[(b / 8) as usize] & (1 << (b % 8)) != 0)
}

fn lmdb(e: heed::Error) -> Error {
    Error::lmdb("keyword runs", e)
}

/// Where keyword blocks are kept: the table's blocks (`kv`) or one pending
/// run (`kp`, keys under the run id).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'h> {
    pub db: &'h BytesDb,
    pub name: &'h str,
    run: Option<[u8; 4]>,
    /// A run's directory value (its filter), when read.
    directory: Option<&'h [u8]>,
}

impl<'h> Place<'h> {
    /// The table's blocks.
    pub fn blocks(search: &'h SearchHandle) -> Place<'h> {
        Place { db: &search.db, name: &search.db_name, run: None, directory: None }
    }

    fn run(search: &'h SearchHandle, run: [u8; 4], directory: Option<&'h [u8]>) -> Place<'h> {
        Place { db: &search.pending, name: &search.pending_name, run: Some(run), directory }
    }

    /// Whether this place may hold column `prefix` (false only for a run
    /// whose filter says it does not).
    pub fn may_hold(&self, prefix: &[u8]) -> bool {
        self.directory.is_none_or(|value| filter_may_hold(value, prefix))
    }

    /// What every key of this place starts with: nothing for the blocks,
    /// the run id for a run.
    pub fn key_prefix(&self) -> &[u8] {
        self.run.as_ref().map_or(&[], |r| r.as_slice())
    }

    /// Block key `key` as stored in this place.
    pub fn key(&self, key: &[u8]) -> Vec<u8> {
        [self.key_prefix(), key].concat()
    }
}

/// The pending runs, oldest first.
pub(crate) fn runs(txn: &RoTxn<'_>, search: &SearchHandle) -> Result<Vec<[u8; 4]>> {
    let mut runs = Vec::new();
    for item in search.pending.prefix_iter(txn, &DIRECTORY).map_err(lmdb)? {
        let (k, _) = item.map_err(lmdb)?;
        runs.push(run_of(search, k)?);
    }
    Ok(runs)
}

/// Every place keyword blocks are read from: the blocks, then the runs
/// (with their filters).
pub(crate) fn places<'h>(txn: &'h RoTxn<'_>, search: &'h SearchHandle) -> Result<Vec<Place<'h>>> {
    let mut places = vec![Place::blocks(search)];
    for item in search.pending.prefix_iter(txn, &DIRECTORY).map_err(lmdb)? {
        let (k, v) = item.map_err(lmdb)?;
        places.push(Place::run(search, run_of(search, k)?, Some(v)));
    }
    Ok(places)
}

/// The run id of directory key `k`.
fn run_of(search: &SearchHandle, k: &[u8]) -> Result<[u8; 4]> {
    k.get(4..)
        .and_then(|r| <[u8; 4]>::try_from(r).ok())
        .ok_or_else(|| Error::corrupted(&search.pending_name, k, "bad keyword run directory key"))
}

/// The places of `runs` (from [`runs`]), without their filters.
pub(crate) fn run_places<'h>(search: &'h SearchHandle, runs: &[[u8; 4]]) -> Vec<Place<'h>> {
    runs.iter().map(|&r| Place::run(search, r, None)).collect()
}

/// Whether run `run`'s filter may hold column `prefix`.
pub(crate) fn run_may_hold(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    run: [u8; 4],
    prefix: &[u8],
) -> Result<bool> {
    let key = [DIRECTORY, run].concat();
    Ok(search.pending.get(txn, &key).map_err(lmdb)?.is_none_or(|v| filter_may_hold(v, prefix)))
}

/// How many blocks the runs hold.
pub(crate) fn block_count(txn: &RoTxn<'_>, search: &SearchHandle) -> Result<u64> {
    let entries = search.pending.stat(txn).map_err(lmdb)?.entries as u64;
    Ok(entries.saturating_sub(runs(txn, search)?.len() as u64))
}

/// Removes every run (their versions are in the blocks now).
pub(crate) fn clear(wtxn: &mut RwTxn, search: &SearchHandle) -> Result<()> {
    search.pending.clear(wtxn).map_err(lmdb)
}

/// Writes one new run: columns in ascending key order, each column's new
/// versions as blocks appended after everything in the database.
pub(crate) struct RunWriter {
    run: [u8; 4],
    written: u64,
    /// The hashes of the columns written, for the filter.
    hashes: Vec<u64>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl RunWriter {
    /// A run after `runs` (the pending ones, from [`runs`]).
    pub fn new(search: &SearchHandle, runs: &[[u8; 4]]) -> Result<RunWriter> {
        let last = runs.last().map_or(0, |r| u32::from_be_bytes(*r));
        let next = last.checked_add(1).ok_or_else(|| ErrorKind::InvalidSchema {
            table: search.db_name.clone(),
            reason: "2^32 keyword runs without a merge (keyword_pending_runs is too high)".into(),
        })?;
        Ok(RunWriter {
            run: next.to_be_bytes(),
            written: 0,
            hashes: Vec::new(),
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// Appends column `prefix`'s new versions (ascending, not empty), after
    /// every column written before in this run.
    pub fn column(
        &mut self,
        wtxn: &mut RwTxn,
        search: &SearchHandle,
        prefix: &[u8],
        versions: &Versions,
    ) -> Result<()> {
        for range in versions.cut() {
            self.key.clear();
            self.key.extend_from_slice(&self.run);
            self.key.extend_from_slice(prefix);
            self.key.extend_from_slice(&order_tail(versions.get(range.end - 1).0));
            self.value.clear();
            encode(versions, range, &mut self.value);
            search.pending.put_with_flags(wtxn, PutFlags::APPEND, &self.key, &self.value).map_err(lmdb)?;
        }
        self.written += versions.len() as u64;
        self.hashes.push(xxh3_64(prefix));
        Ok(())
    }

    /// Lists the run in the directory when it holds anything; whether it
    /// did.
    pub fn finish(self, wtxn: &mut RwTxn, search: &SearchHandle) -> Result<bool> {
        if self.written == 0 {
            return Ok(false);
        }
        let key = [DIRECTORY, self.run].concat();
        let bits = (self.hashes.len() * FILTER_BITS_PER_COLUMN).max(64).next_multiple_of(8);
        let mut value = vec![0u8; 8 + bits / 8];
        value[..8].copy_from_slice(&self.written.to_be_bytes());
        let filter = &mut value[8..];
        for &h in &self.hashes {
            for b in filter_bits(h, bits as u64) {
                filter[(b / 8) as usize] |= 1 << (b % 8);
            }
        }
        search.pending.put(wtxn, &key, &value).map_err(lmdb)?;
        Ok(true)
    }
}

/// The column prefix of a block key (what is before its order tail).
pub(crate) fn column_of(block_key: &[u8]) -> &[u8] {
    &block_key[..block_key.len().saturating_sub(ORDER_TAIL_LEN)]
}

/// One run read in chunks of owned blocks (the merge writes to the blocks
/// between reads, so it holds nothing borrowed from the transaction).
pub(crate) struct RunChunks {
    run: [u8; 4],
    /// Blocks read and not yet taken: (block key without the run id, block).
    buf: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The last key read (with the run id); `None` before the first read.
    last: Option<Vec<u8>>,
    done: bool,
}

impl RunChunks {
    const CHUNK: usize = 1024;

    pub fn new(run: [u8; 4]) -> RunChunks {
        RunChunks { run, buf: Default::default(), last: None, done: false }
    }

    /// Reads the next chunk.
    fn read(&mut self, txn: &RoTxn<'_>, search: &SearchHandle) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let first = [self.run.as_slice(), &[0]].concat();
        let lower = match &self.last {
            Some(last) => Bound::Excluded(last.as_slice()),
            None => Bound::Included(first.as_slice()),
        };
        let end = key::prefix_successor(&self.run);
        let upper = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut read = 0;
        for item in search.pending.range(txn, &(lower, upper)).map_err(lmdb)?.take(Self::CHUNK) {
            let (k, v) = item.map_err(lmdb)?;
            self.buf.push_back((k[4..].to_vec(), v.to_vec()));
            self.last = Some(k.to_vec());
            read += 1;
        }
        self.done = read < Self::CHUNK;
        Ok(())
    }

    /// The column prefix of the next block, reading on when none is held.
    pub fn head(&mut self, txn: &RoTxn<'_>, search: &SearchHandle) -> Result<Option<&[u8]>> {
        if self.buf.is_empty() {
            self.read(txn, search)?;
        }
        Ok(self.buf.front().map(|(k, _)| column_of(k)))
    }

    /// Moves every block of column `prefix` at the front into `out` (key
    /// without the run id, block), reading on as far as the column goes.
    pub fn take_column(
        &mut self,
        txn: &RoTxn<'_>,
        search: &SearchHandle,
        prefix: &[u8],
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<()> {
        loop {
            while let Some((k, _)) = self.buf.front() {
                if column_of(k) != prefix {
                    return Ok(());
                }
                out.extend(self.buf.pop_front());
            }
            if self.done {
                return Ok(());
            }
            self.read(txn, search)?;
        }
    }
}

/// The blocks of every place between two block keys, in key order (a
/// column's blocks from several places side by side): (the place, the
/// block key without the place's prefix, the block).
pub(crate) struct MergedBlocks<'t> {
    sources: Vec<(Place<'t>, Peekable<RoRange<'t, Bytes, Bytes>>)>,
}

impl<'t> MergedBlocks<'t> {
    pub fn new(
        txn: &'t RoTxn<'_>,
        search: &'t SearchHandle,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
    ) -> Result<MergedBlocks<'t>> {
        let mut sources = Vec::new();
        for place in places(txn, search)? {
            let p = place.key_prefix();
            let lo = match lower {
                Bound::Included(k) => Bound::Included(place.key(k)),
                Bound::Excluded(k) => Bound::Excluded(place.key(k)),
                Bound::Unbounded => Bound::Included(place.key(&[])),
            };
            let hi = match upper {
                Bound::Included(k) => Some(Bound::Included(place.key(k))),
                Bound::Excluded(k) => Some(Bound::Excluded(place.key(k))),
                Bound::Unbounded => key::prefix_successor(p).map(Bound::Excluded),
            };
            let range = (lo, hi.unwrap_or(Bound::Unbounded));
            let range = (range.0.as_ref().map(Vec::as_slice), range.1.as_ref().map(Vec::as_slice));
            sources.push((place, place.db.range(txn, &range).map_err(lmdb)?.peekable()));
        }
        Ok(MergedBlocks { sources })
    }
}

impl<'t> Iterator for MergedBlocks<'t> {
    type Item = Result<(Place<'t>, &'t [u8], &'t [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut best: Option<(usize, &'t [u8])> = None;
        for (i, (place, iter)) in self.sources.iter_mut().enumerate() {
            match iter.peek() {
                None => {}
                Some(Err(_)) => {
                    let Some(Err(e)) = iter.next() else { continue };
                    return Some(Err(lmdb(e)));
                }
                Some(Ok((k, _))) => {
                    let k: &'t [u8] = k;
                    let stripped = &k[place.key_prefix().len()..];
                    if best.is_none_or(|(_, b)| stripped < b) {
                        best = Some((i, stripped));
                    }
                }
            }
        }
        let (i, stripped) = best?;
        let (place, iter) = &mut self.sources[i];
        let (_, v) = iter.next()?.ok()?;
        Some(Ok((*place, stripped, v)))
    }
}
