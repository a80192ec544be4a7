//! The writing side of an ingest: batching rows, dropping duplicates,
//! preparing each batch's keyword cells, and a writer thread applying
//! batches while the next one is prepared.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

use rowsearch_store::{Batch, PutCell, Store};

use super::sink::RowSink;

use super::options::{IngestOptions, IngestProgress, IngestReport, Skipped};
use super::read::Item;
use crate::error::{Error, Result};
use crate::mail;

struct Pending {
    key: Vec<u8>,
    cells: Vec<PutCell>,
    source: String,
    dedupe: bool,
}

/// Where an ingest writes: the embedded store, or another sink.
#[derive(Clone, Copy)]
pub(super) enum Target<'a> {
    Store(&'a Store),
    Sink(&'a dyn RowSink),
}

impl Target<'_> {
    fn io_error(&self, source: std::io::Error) -> Error {
        match self {
            Target::Store(store) => Error::Io { path: store.path().to_owned(), source },
            Target::Sink(sink) => Error::Io { path: sink.name().into(), source },
        }
    }

    /// Whether each of `keys` of `table` is a row already.
    fn exist(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<bool>> {
        match self {
            Target::Store(store) => {
                let rtxn = store.begin_read()?;
                let probe = mail::existence_probe();
                keys.iter().map(|k| Ok(rtxn.get(table, k, &probe)?.is_some())).collect()
            }
            Target::Sink(sink) => Ok(sink.exist(table, keys)?),
        }
    }

    fn apply(&self, batch: &Rows) -> rowsearch_store::Result<()> {
        match (self, batch) {
            (Target::Store(store), Rows::Prepared(batch)) => store.apply_prepared(batch).map(|_| ()),
            (Target::Store(store), Rows::Batch(batch)) => store.apply(batch).map(|_| ()),
            (Target::Sink(sink), Rows::Plain(table, rows)) => sink.put_rows(table, rows.clone()),
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
    fn keys(&self) -> Vec<Vec<u8>> {
        match self {
            Rows::Prepared(b) => b.batch().mutations.iter().map(|m| m.row().to_vec()).collect(),
            Rows::Batch(b) => b.mutations.iter().map(|m| m.row().to_vec()).collect(),
            Rows::Plain(_, rows) => rows.iter().map(|(k, _)| k.clone()).collect(),
        }
    }

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
    rx: &Receiver<Vec<Item>>,
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
        let batched = batch_rows(store, options, rx, report, total, progress, &handoff);
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
    for Prepared { batch, sources } in rx {
        match store.apply(&batch) {
            Ok(()) => {
                stored.fetch_add(sources.len() as u64, Ordering::Relaxed);
            }
            Err(e) if e.is_user_error() => {
                // Some row is bad: write them one by one and name it.
                for (one, source) in batch.one_by_one().into_iter().zip(sources) {
                    match store.apply(&one) {
                        Ok(_) => {
                            stored.fetch_add(1, Ordering::Relaxed);
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
}

/// Where the batcher hands batches to the writer, and the writer's count
/// of rows stored (for progress).
struct Handoff<'a> {
    tx: &'a SyncSender<Prepared>,
    stored: &'a AtomicU64,
}

fn batch_rows(
    store: Target<'_>,
    options: &IngestOptions,
    rx: &Receiver<Vec<Item>>,
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
    let mut in_flight: [HashSet<Vec<u8>>; IN_FLIGHT] = Default::default();
    let mut send = |pending: &mut Vec<Pending>, report: &mut IngestReport| -> Result<()> {
        let Some(prepared) = prepare(store, table, pending, &in_flight, report)? else { return Ok(()) };
        let keys = prepared.batch.keys();
        if handoff.tx.send(prepared).is_err() {
            // The writer stopped on an error, which it reports.
            return Ok(());
        }
        in_flight.rotate_left(1);
        in_flight[IN_FLIGHT - 1] = keys.into_iter().collect();
        Ok(())
    };
    for items in rx {
        for item in items {
            match item {
                Item::Row { key, cells, source, dedupe, bytes } => {
                    report.messages_seen += 1;
                    pending_bytes += bytes;
                    pending.push(Pending { key, cells, source, dedupe });
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
        if pending.len() >= options.batch_rows || pending_bytes >= options.batch_bytes {
            send(&mut pending, report)?;
            pending_bytes = 0;
        }
        if last_progress.elapsed().as_millis() >= 100 {
            let stored = handoff.stored.load(Ordering::Relaxed);
            progress(IngestProgress { files_done, files_total: total, stored });
            last_progress = Instant::now();
        }
    }
    send(&mut pending, report)
}

/// Sorts `pending` by key, drops duplicates (of an earlier row of the
/// batch, of a batch still in flight, or of a row in the store) and
/// prepares the rest; `None` when nothing is left.
fn prepare(
    store: Target<'_>,
    table: &str,
    pending: &mut Vec<Pending>,
    in_flight: &[HashSet<Vec<u8>>; IN_FLIGHT],
    report: &mut IngestReport,
) -> Result<Option<Prepared>> {
    if pending.is_empty() {
        return Ok(None);
    }
    // Sorted by key (stable: the first of equal keys stays first), so the
    // batch writes in B-tree order.
    pending.sort_by(|a, b| a.key.cmp(&b.key));
    let mut rows: Vec<Pending> = Vec::with_capacity(pending.len());
    {
        // One look at the target for the rows that may be duplicates.
        let probed: Vec<&[u8]> = pending.iter().filter(|p| p.dedupe).map(|p| p.key.as_slice()).collect();
        let exists = store.exist(table, &probed)?;
        let mut exists = exists.into_iter();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut duplicate = vec![false; pending.len()];
        for (i, p) in pending.iter().enumerate() {
            if p.dedupe {
                let stored = exists.next().unwrap_or(false);
                if !seen.insert(&p.key) || in_flight.iter().any(|keys| keys.contains(&p.key)) || stored {
                    duplicate[i] = true;
                }
            }
        }
        for (p, dup) in pending.drain(..).zip(duplicate) {
            if dup {
                report.duplicates += 1;
            } else {
                rows.push(p);
            }
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    let mut sources = Vec::with_capacity(rows.len());
    let batch = match store {
        Target::Store(store) => {
            let mut batch = Batch::new();
            for p in rows {
                batch.put(table, p.key, p.cells);
                sources.push(p.source);
            }
            Rows::Prepared(store.prepare(batch))
        }
        Target::Sink(_) => {
            let mut plain = Vec::with_capacity(rows.len());
            for p in rows {
                plain.push((p.key, p.cells));
                sources.push(p.source);
            }
            Rows::Plain(table.to_owned(), plain)
        }
    };
    Ok(Some(Prepared { batch, sources }))
}
