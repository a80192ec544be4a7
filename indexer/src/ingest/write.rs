//! The writing side of an ingest: batching rows, dropping duplicates,
//! preparing each batch's keyword cells, and a writer thread applying
//! batches while the next one is prepared.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

use rowsearch_store::{Batch, PutCell, ReadOptions, Store, TableStore};

use super::ahead::{Behind, Item};
use super::options::{IngestOptions, IngestProgress, IngestReport, Skipped};
use crate::error::{Error, Result};
use crate::mail;

struct Pending {
    key: Vec<u8>,
    cells: Vec<PutCell>,
    source: String,
    dedupe: bool,
    legacy: Option<Vec<u8>>,
}

/// The folders, Message-IDs and paths one row carries (one per line in
/// `m:folder`, `m:message_id` and `m:path`): copies of a message add
/// theirs, so a row is the same whatever order its copies come in.
type Lines = [BTreeSet<String>; 3];

/// The columns of [`Lines`], in order.
const COPY_COLUMNS: [&[u8]; 3] = [b"folder", b"message_id", b"path"];

/// The folders, ids and paths in `cells` (of family `m`).
fn copies_in<'c>(cells: impl IntoIterator<Item = (&'c [u8], &'c [u8])>) -> Lines {
    let mut out: Lines = Default::default();
    for (qualifier, value) in cells {
        let Some(n) = COPY_COLUMNS.iter().position(|c| *c == qualifier) else { continue };
        for line in String::from_utf8_lossy(value).lines().map(str::trim).filter(|l| !l.is_empty()) {
            out[n].insert(line.to_owned());
        }
    }
    out
}

fn put_copies(cells: &[PutCell]) -> Lines {
    copies_in(cells.iter().filter(|c| c.family == "m").map(|c| (c.qualifier.as_slice(), c.value.as_slice())))
}

/// `cells` carrying `copies`' folders, ids and paths (one per line,
/// sorted), stamped as the row's other cells are; with `only_copies`,
/// those cells alone (for a row the store holds, whose other cells a copy
/// repeats).
fn with_copies(mut cells: Vec<PutCell>, copies: &Lines, only_copies: bool) -> Vec<PutCell> {
    let at = cells.first().and_then(|c| c.timestamp);
    if only_copies {
        cells.clear();
    }
    cells.retain(|c| !(c.family == "m" && COPY_COLUMNS.contains(&c.qualifier.as_slice())));
    for (qualifier, set) in COPY_COLUMNS.into_iter().zip(copies) {
        if !set.is_empty() {
            let mut cell =
                PutCell::new("m", qualifier.to_vec(), set.iter().cloned().collect::<Vec<_>>().join("\n"));
            cell.timestamp = at;
            cells.push(cell);
        }
    }
    cells
}

/// Where an ingest writes: the embedded store (its prepared batches, the
/// upgrade of an earlier build's table), or a place elsewhere, written
/// through [`TableStore`] alone.
#[derive(Clone, Copy)]
pub(super) enum Target<'a> {
    Store(&'a Store),
    Elsewhere(&'a dyn TableStore),
}

impl<'a> Target<'a> {
    /// The target writing into `tables`.
    pub(super) fn of(tables: &'a dyn TableStore) -> Target<'a> {
        match tables.store() {
            Some(store) => Target::Store(store),
            None => Target::Elsewhere(tables),
        }
    }

    fn io_error(&self, source: std::io::Error) -> Error {
        match self {
            Target::Store(store) => Error::Io { path: store.path().to_owned(), source },
            Target::Elsewhere(tables) => Error::Io { path: tables.place().to_string().into(), source },
        }
    }

    /// For each of `keys` of `table`: `None` when it is no row, else the
    /// folders, ids and paths it carries.
    fn stored(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Lines>>> {
        let lines = |row: rowsearch_store::Row| {
            copies_in(
                row.cells
                    .iter()
                    .filter(|c| &*c.family == "m")
                    .map(|c| (c.qualifier.as_slice(), c.value.as_slice())),
            )
        };
        match self {
            Target::Store(store) => {
                let rtxn = store.begin_read()?;
                let probe = mail::existence_probe();
                keys.iter().map(|k| Ok(rtxn.get(table, k, &probe)?.map(lines))).collect()
            }
            Target::Elsewhere(_) if keys.is_empty() => Ok(Vec::new()),
            Target::Elsewhere(tables) => {
                let rows = tables.rows(table, keys, &ReadOptions::default())?;
                Ok(rows.into_iter().map(|row| row.map(lines)).collect())
            }
        }
    }

    fn apply(&self, batch: &Rows) -> rowsearch_store::Result<()> {
        match (self, batch) {
            (Target::Store(store), Rows::Prepared(batch)) => store.apply_prepared(batch).map(|_| ()),
            (Target::Store(store), Rows::Batch(batch)) => store.apply(batch).map(|_| ()),
            (Target::Elsewhere(tables), Rows::Plain(table, rows)) => tables.put_rows(table, rows).map(|_| ()),
            // A batch is made for its target (`prepare`).
            _ => Err(rowsearch_store::Error::callback(std::io::Error::other(
                "a batch made for another target",
            ))),
        }
    }
}

/// A batch ready to write: prepared for the store (or one row of such a
/// batch), or plain rows for a sink.
enum Rows {
    Prepared(rowsearch_store::PreparedBatch),
    Batch(Batch),
    Plain(String, Vec<(Vec<u8>, Vec<PutCell>)>),
}

impl Rows {
    /// Each row as a batch of its own (to name a bad one).
    fn one_by_one(self) -> Vec<Rows> {
        match self {
            Rows::Prepared(b) => b
                .into_batch()
                .mutations
                .into_iter()
                .map(|m| Rows::Batch(Batch { mutations: vec![m] }))
                .collect(),
            Rows::Batch(b) => {
                b.mutations.into_iter().map(|m| Rows::Batch(Batch { mutations: vec![m] })).collect()
            }
            Rows::Plain(table, rows) => {
                rows.into_iter().map(|r| Rows::Plain(table.clone(), vec![r])).collect()
            }
        }
    }
}

/// Batches rows, drops duplicates and prepares each batch (its keyword
/// cells computed, [`Store::prepare`]) on the calling thread, while a
/// writer thread applies the batch before it: tokenizing and LMDB writes
/// overlap.
pub(super) fn write_rows(
    store: Target<'_>,
    options: &IngestOptions,
    behind: Behind,
    report: &mut IngestReport,
    total: u64,
    progress: &mut dyn FnMut(IngestProgress),
) -> Result<()> {
    // QUEUED batches wait while one is written: when a send returns, every
    // batch but the last IN_FLIGHT sent is in the store.
    let (batch_tx, batch_rx) = sync_channel::<Prepared>(QUEUED);
    let stored = AtomicU64::new(0);
    let (written, skipped) = std::thread::scope(|scope| -> Result<(u64, Vec<Skipped>)> {
        let writer = std::thread::Builder::new()
            .name("rowsearch-write".into())
            .spawn_scoped(scope, || {
                crate::priority::lower_thread_priority(options.nice);
                write_batches(store, batch_rx, &stored)
            })
            .map_err(|source| store.io_error(source))?;
        let handoff = Handoff { tx: &batch_tx, stored: &stored };
        let batched = batch_rows(store, options, &behind, report, total, progress, &handoff);
        // The reader stops at its next hand-over when this stopped early.
        drop(behind);
        drop(batch_tx);
        let written = writer.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        // The writer's error is the cause when both failed (a send fails
        // once the writer has stopped).
        let written = written?;
        batched?;
        Ok(written)
    })?;
    report.stored = written;
    report.skipped.extend(skipped);
    Ok(())
}

/// The writer thread: applies each batch in one transaction (row by row
/// when the batch is refused, to name the bad row). Returns the rows stored
/// and the rows skipped.
fn write_batches(
    store: Target<'_>,
    rx: Receiver<Prepared>,
    stored: &AtomicU64,
) -> Result<(u64, Vec<Skipped>)> {
    let mut skipped = Vec::new();
    for Prepared { batch, sources, fresh, .. } in rx {
        match store.apply(&batch) {
            Ok(()) => {
                stored.fetch_add(fresh.iter().filter(|f| **f).count() as u64, Ordering::Relaxed);
            }
            Err(e) if e.is_user_error() => {
                // Some row is bad: write them one by one and name it.
                for ((one, source), fresh) in batch.one_by_one().into_iter().zip(sources).zip(fresh) {
                    match store.apply(&one) {
                        Ok(_) => {
                            stored.fetch_add(u64::from(fresh), Ordering::Relaxed);
                        }
                        Err(e) if e.is_user_error() => {
                            skipped.push(Skipped { source, reason: e.to_string() })
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((stored.load(Ordering::Relaxed), skipped))
}

/// Prepared batches waiting for the writer.
const QUEUED: usize = 1;
/// Batches sent that may not be in the store yet: the queued ones and the
/// one being written.
const IN_FLIGHT: usize = QUEUED + 1;

/// A batch ready to write, with each row's source for naming a bad one.
struct Prepared {
    batch: Rows,
    sources: Vec<String>,
    /// Per mutation: a message stored as a row of its own (not a row
    /// written again for a copy's folder, nor an earlier build's row
    /// deleted).
    fresh: Vec<bool>,
    /// The folders and ids of each message row it writes.
    copies: InFlight,
}

/// The rows of a batch sent, with the folders and ids each carries.
type InFlight = HashMap<Vec<u8>, Lines>;

/// Where the batcher hands batches to the writer, and the writer's count
/// of rows stored (for progress).
struct Handoff<'a> {
    tx: &'a SyncSender<Prepared>,
    stored: &'a AtomicU64,
}

fn batch_rows(
    store: Target<'_>,
    options: &IngestOptions,
    behind: &Behind,
    report: &mut IngestReport,
    total: u64,
    progress: &mut dyn FnMut(IngestProgress),
    handoff: &Handoff<'_>,
) -> Result<()> {
    let table = options.table.as_str();
    let mut pending: Vec<Pending> = Vec::new();
    let mut pending_bytes = 0usize;
    let mut files_done = 0u64;
    let mut last_progress = Instant::now();
    // Keys of the last batches sent, which may not be in the store yet.
    let mut in_flight: [InFlight; IN_FLIGHT] = Default::default();
    let mut trained = false;
    let mut first = true;
    // Whether the writer goes on: once it has stopped on an error (which
    // it reports), nothing more is read.
    let mut send = |pending: &mut Vec<Pending>, report: &mut IngestReport| -> Result<bool> {
        if !trained && let Target::Store(store) = store {
            trained = train_dictionaries(store, table, pending)?;
        }
        let Some(mut prepared) = prepare(store, table, pending, &in_flight, report)? else { return Ok(true) };
        let sent = std::mem::take(&mut prepared.copies);
        if handoff.tx.send(prepared).is_err() {
            return Ok(false);
        }
        in_flight.rotate_left(1);
        in_flight[IN_FLIGHT - 1] = sent;
        Ok(true)
    };
    while let Some(items) = behind.recv() {
        for item in items {
            match item {
                Item::Row { key, cells, source, dedupe, bytes, legacy } => {
                    report.messages_seen += 1;
                    pending_bytes += bytes;
                    pending.push(Pending { key, cells, source, dedupe, legacy });
                }
                Item::Skip(s, message) => {
                    report.messages_seen += u64::from(message);
                    report.skipped.push(s);
                }
                Item::FileDone { bytes } => {
                    files_done += 1;
                    report.bytes_read += bytes;
                }
            }
        }
        let (rows, bytes) = batch_limits(options, first, total.saturating_sub(files_done));
        if pending.len() >= rows || pending_bytes >= bytes {
            if !send(&mut pending, report)? {
                return Ok(());
            }
            pending_bytes = 0;
            first = false;
        }
        if last_progress.elapsed().as_millis() >= 100 {
            let stored = handoff.stored.load(Ordering::Relaxed);
            progress(IngestProgress { files_done, files_total: total, stored });
            last_progress = Instant::now();
        }
    }
    send(&mut pending, report).map(|_| ())
}

/// The rows and bytes of input the next batch holds at most: the full
/// batch of `options`, but a quarter of it (and at least the dictionary's
/// samples) for the `first` batch, so the writer starts sooner, and once
/// fewer than two full batches of files are left, so the writer's work
/// after the last batch is prepared (alone on a core: up to the batch
/// queued and the one being written) is two small batches. On two cores,
/// full batches there left ~1.6 s of a 12.5 s ingest with one core idle
/// (BENCHMARKS "Issue 65, eighteenth part").
fn batch_limits(options: &IngestOptions, first: bool, files_left: u64) -> (usize, usize) {
    let (rows, bytes) = (options.batch_rows, options.batch_bytes);
    if first || files_left < 2 * rows as u64 {
        let small_rows = (rows / 4).max(DICTIONARY_MAX_SAMPLES).min(rows);
        (small_rows, (bytes / 4).max(1))
    } else {
        (rows, bytes)
    }
}

/// Values a zstd family's dictionary is trained from: at least this many,
/// and at most `DICTIONARY_MAX_SAMPLES` (training takes ~0.3 s on 1,024 mail
/// bodies, ~0.9 s on 4,096, for a dictionary 3% better: Enron's bodies in
/// 37.2% of their size against 36.2%).
const DICTIONARY_SAMPLES: usize = 256;
const DICTIONARY_MAX_SAMPLES: usize = 1024;

/// Before the store's first batch: trains the dictionary of each zstd
/// family of `table` that has none from the batch's values of it
/// (`Store::train_dictionary`), so that batch and every later one is
/// compressed with it. Whether that is settled (each such family has one,
/// or this batch was large enough to try): then it is not asked again.
fn train_dictionaries(store: &Store, table: &str, pending: &[Pending]) -> Result<bool> {
    let schema = match store.schema(table) {
        Ok(schema) => schema,
        // Made by this ingest's first write.
        Err(e) if matches!(e.kind(), rowsearch_store::ErrorKind::UnknownTable { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let mut settled = true;
    for family in schema.families.iter().filter(|f| f.compression == rowsearch_store::Compression::Zstd) {
        let samples: Vec<&[u8]> = pending
            .iter()
            .flat_map(|p| p.cells.iter())
            .filter(|c| *c.family == *family.name && c.value.len() >= 64)
            .map(|c| c.value.as_slice())
            .take(DICTIONARY_MAX_SAMPLES)
            .collect();
        if samples.len() < DICTIONARY_SAMPLES {
            settled = false;
            continue;
        }
        store.train_dictionary(table, &family.name, &samples)?;
    }
    Ok(settled)
}

/// Sorts `pending` by key, folds copies of one message (rows of one key:
/// the store's row, a row of a batch still in flight, and the pending
/// ones) into one row carrying every folder and id, drops what adds
/// nothing, and prepares the rest; `None` when nothing is left. A row an
/// earlier build keyed by Message-ID (`legacy`) is deleted in the same
/// batch, its folders and ids kept.
fn prepare(
    store: Target<'_>,
    table: &str,
    pending: &mut Vec<Pending>,
    in_flight: &[InFlight; IN_FLIGHT],
    report: &mut IngestReport,
) -> Result<Option<Prepared>> {
    if pending.is_empty() {
        return Ok(None);
    }
    // Sorted by key (stable: the first of equal keys stays first), so the
    // batch writes in B-tree order.
    pending.sort_by(|a, b| a.key.cmp(&b.key));
    // One look at the target for the rows that may be copies, and for
    // the keys an earlier build gave them.
    let found: HashMap<Vec<u8>, Option<Lines>> = {
        let mut probed: Vec<&[u8]> = pending.iter().filter(|p| p.dedupe).map(|p| p.key.as_slice()).collect();
        probed.extend(pending.iter().filter_map(|p| p.legacy.as_deref()));
        let stored = store.stored(table, &probed)?;
        probed.into_iter().map(<[u8]>::to_vec).zip(stored).collect()
    };
    let mut rows: Vec<(Vec<u8>, Vec<PutCell>, String, bool)> = Vec::with_capacity(pending.len());
    let mut deletes: Vec<Vec<u8>> = Vec::new();
    let mut copies = InFlight::new();
    let mut pending = std::mem::take(pending).into_iter().peekable();
    while let Some(first) = pending.next() {
        if !first.dedupe {
            rows.push((first.key, first.cells, first.source, true));
            continue;
        }
        let mut group = vec![first];
        while let Some(next) = pending.next_if(|p| p.dedupe && p.key == group[0].key) {
            group.push(next);
        }
        let key = group[0].key.clone();
        // What the row carries already: in flight (the newest), else stored.
        let flying: Option<Lines> = in_flight.iter().rev().find_map(|sent| sent.get(&key).cloned());
        let stored = flying.is_none().then(|| found.get(key.as_slice()).cloned().flatten()).flatten();
        let only_copies = stored.is_some();
        let before: Option<Lines> = flying.or(stored);
        let mut union = before.clone().unwrap_or_default();
        let add = |union: &mut Lines, more: Lines| {
            for (set, lines) in union.iter_mut().zip(more) {
                set.extend(lines);
            }
        };
        for p in &group {
            add(&mut union, put_copies(&p.cells));
            if let Some(legacy) = p.legacy.as_deref()
                && let Some(old) = found.get(legacy).cloned().flatten()
            {
                add(&mut union, old);
                if !deletes.iter().any(|d| d.as_slice() == legacy) {
                    deletes.push(legacy.to_vec());
                }
            }
        }
        let adds = before.as_ref() != Some(&union);
        // The rows past the one that makes the message a row.
        let copies_of = group.len() as u64 - u64::from(before.is_none());
        report.duplicates += copies_of;
        if !adds {
            continue;
        }
        report.folded += copies_of;
        let p = group.swap_remove(0);
        copies.insert(key.clone(), union.clone());
        // A row the store holds gains the copy's folder, id and path alone:
        // sender, date, subject and body make its key, so they are the
        // copy's; its other headers stay the first copy's. A row in flight
        // is written whole: its batch may yet be refused.
        rows.push((key, with_copies(p.cells, &union, only_copies), p.source, before.is_none()));
    }
    if rows.is_empty() && deletes.is_empty() {
        return Ok(None);
    }
    let mut sources = Vec::with_capacity(rows.len());
    let mut fresh = Vec::with_capacity(rows.len());
    let batch = match store {
        Target::Store(store) => {
            let mut batch = Batch::new();
            for (key, cells, source, new) in rows {
                batch.put(table, key, cells);
                sources.push(source);
                fresh.push(new);
            }
            for key in deletes {
                batch.delete(table, key, rowsearch_store::Delete::Row { up_to: None });
                sources.push("(the row an earlier build wrote)".into());
                fresh.push(false);
            }
            Rows::Prepared(store.prepare(batch))
        }
        Target::Elsewhere(_) => {
            let mut plain = Vec::with_capacity(rows.len());
            for (key, cells, source, new) in rows {
                plain.push((key, cells));
                sources.push(source);
                fresh.push(new);
            }
            Rows::Plain(table.to_owned(), plain)
        }
    };
    Ok(Some(Prepared { batch, sources, fresh, copies }))
}

#[cfg(test)]
mod tests {
    use super::super::options::MIN_INGEST_MEMORY_MB;
    use super::*;

    #[test]
    fn the_first_batch_and_the_last_ones_are_small_the_rest_full() {
        let options = IngestOptions::default();
        let (full_rows, full_bytes) = (options.batch_rows, options.batch_bytes);
        let middle = batch_limits(&options, false, 10 * full_rows as u64);
        assert_eq!(middle, (full_rows, full_bytes));
        let first = batch_limits(&options, true, 10 * full_rows as u64);
        assert_eq!(first, (full_rows / 4, full_bytes / 4));
        // Small once fewer than two full batches of files are left.
        assert_eq!(batch_limits(&options, false, 2 * full_rows as u64), middle);
        assert_eq!(batch_limits(&options, false, 2 * full_rows as u64 - 1), first);
        assert_eq!(batch_limits(&options, false, 0), first);
        // The first batch still holds the dictionary's samples...
        let mid_sized = IngestOptions { batch_rows: 2 * DICTIONARY_MAX_SAMPLES, ..IngestOptions::default() };
        assert_eq!(batch_limits(&mid_sized, true, u64::MAX).0, DICTIONARY_MAX_SAMPLES);
        // ...but is never larger than a full one (a small memory budget's).
        let small = IngestOptions::default().for_memory_mb(MIN_INGEST_MEMORY_MB).unwrap();
        assert_eq!(batch_limits(&small, true, u64::MAX).0, small.batch_rows);
    }
}
