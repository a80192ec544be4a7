//! Reindexing: full builds of a new generation from the keyword rows, and
//! incremental updates of the serving generation from the change feed.
//!
//! Full: the keyword rows are read in ranges of whole partitions cut where
//! the table's region splits cut its rows (for the mail table, whose
//! partition leads the row key, one range per region), by up to `threads`
//! readers at once, each in its own snapshot. Keyword cells come in key
//! order (partition, field, term, date, row), so each partition's cells are
//! grouped by row in memory and its documents handed to tantivy when the
//! partition ends; tantivy's indexing threads build segments meanwhile. A
//! partition larger than a reader's share of the grouping budget is re-read
//! in slices by a hash of the row key. The commit records the oldest
//! reader snapshot's feed sequence (the next incremental run re-applies
//! what later snapshots already held, which changes nothing); the
//! generation is checked (one document per row with cells) and only then
//! does the pointer switch.
//!
//! Incremental: the feed since the recorded sequence names the rows that
//! changed; each is deleted by key and, if it still has keyword cells,
//! added again, with its cells computed from its stored values (for a few
//! rows that is far cheaper than finding them among a partition's cells).
//! The new sequence is recorded in the same tantivy commit, so a crash
//! loses nothing and applying the same rows twice changes nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use rowsearch_store::{KeywordCell, KeywordCellRef, Store};
use serde::{Deserialize, Serialize};
use tantivy::{Index, IndexWriter, Term};
use xxhash_rust::xxh3::xxh3_64;

use crate::doc::{CellDoc, CellText, IndexSchema, register_cells};
use crate::generation::{IndexDir, ReindexLock};
use crate::{Error, Result};

/// Which kind of reindex to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReindexMode {
    /// Incremental when a generation exists and matches the schema, else full.
    #[default]
    Auto,
    /// Build a new generation from all keyword rows.
    Full,
    /// Apply the change feed to the serving generation.
    Incremental,
}

/// A planned failure, for tests of what a failed reindex leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailPoint {
    /// Full: after the documents are added, before the tantivy commit.
    BeforeCommit,
    /// Full: after the commit, before the pointer switch.
    BeforeSwitch,
    /// Incremental: after half of the changed rows, before the commit.
    MidIncremental,
}

/// Options of a reindex.
#[derive(Debug, Clone)]
pub struct ReindexOptions {
    /// Full, incremental, or whichever applies.
    pub mode: ReindexMode,
    /// Memory for tantivy's indexing buffers plus the grouping of a
    /// partition's cells (a quarter of it), in bytes.
    pub memory_budget_bytes: usize,
    /// Indexing threads (default: every core).
    pub threads: usize,
    /// Stop with an error at this point (tests).
    #[doc(hidden)]
    pub fail_at: Option<FailPoint>,
}

/// The default memory budget: 512 MiB.
pub const DEFAULT_MEMORY_BUDGET_BYTES: usize = 512 << 20;
/// tantivy's smallest buffer per indexing thread.
const MIN_BUFFER_PER_THREAD: usize = 15_000_000;

impl Default for ReindexOptions {
    fn default() -> Self {
        ReindexOptions {
            mode: ReindexMode::Auto,
            memory_budget_bytes: DEFAULT_MEMORY_BUDGET_BYTES,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            fail_at: None,
        }
    }
}

/// Where a running reindex is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReindexProgress {
    /// `"cells"` (full: keyword cells read), `"rows"` (incremental: changed
    /// rows applied) or `"commit"`.
    pub phase: &'static str,
    /// Done so far.
    pub done: u64,
    /// Expected in all.
    pub total: u64,
}

/// What a reindex did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReindexReport {
    /// The table.
    pub table: String,
    /// The kind that ran (`full` or `incremental`).
    pub mode: ReindexMode,
    /// The generation serving afterwards.
    pub generation: u64,
    /// Documents in that generation.
    pub docs: u64,
    /// Rows (re)indexed: every row for a full build, changed rows with
    /// keyword cells for an incremental one.
    pub rows_indexed: u64,
    /// Rows removed from the index (incremental).
    pub rows_removed: u64,
    /// Keyword cells read (full).
    pub cells_read: u64,
    /// Full: the ranges of whole partitions the keyword rows were read in,
    /// cut where the region splits cut the rows (for the mail table, one
    /// per region holding mail), and the threads that read them at once.
    /// Zero for an incremental run.
    pub ranges: usize,
    /// See `ranges`.
    pub readers: usize,
    /// The first feed sequence not yet in the index, afterwards.
    pub next_seq: u64,
    /// Feed entries trimmed because every index has absorbed them.
    pub feed_trimmed: u64,
    /// Generations removed (replaced ones and leftovers).
    pub removed_generations: Vec<u64>,
    /// Bytes of the serving generation's files.
    pub index_bytes: u64,
    /// Wall time.
    pub seconds: f64,
}

impl ReindexReport {
    /// The one-line summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mode = if self.mode == ReindexMode::Full { "full" } else { "incremental" };
        let rate = if self.seconds > 0.0 { self.rows_indexed as f64 / self.seconds } else { 0.0 };
        let read = if self.mode == ReindexMode::Full {
            format!(" (keyword rows read in {} ranges on {} threads)", self.ranges, self.readers)
        } else {
            String::new()
        };
        format!(
            "reindex {mode} of {:?}: generation {}, {} docs, {} rows indexed, {} removed, {:.1} MB, {:.2}s ({:.0} rows/s){read}",
            self.table,
            self.generation,
            self.docs,
            self.rows_indexed,
            self.rows_removed,
            self.index_bytes as f64 / 1e6,
            self.seconds,
            rate
        )
    }
}

/// What each commit records about the generation.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Payload {
    /// The first feed sequence not yet applied.
    pub next_seq: u64,
}

pub(crate) fn tantivy_err(
    table: &str,
    op: &'static str,
) -> impl FnOnce(tantivy::TantivyError) -> Error + use<> {
    let table = table.to_owned();
    move |source| Error::Tantivy { table, op, source }
}

/// The feed sequence a generation's last commit recorded.
pub(crate) fn indexed_next_seq(table: &str, index: &Index) -> Result<u64> {
    let metas = index.load_metas().map_err(tantivy_err(table, "read commit"))?;
    let payload = metas.payload.ok_or_else(|| Error::Corrupted {
        path: std::path::PathBuf::from(format!("index/{table}")),
        detail: "commit has no payload".into(),
    })?;
    serde_json::from_str::<Payload>(&payload).map(|p| p.next_seq).map_err(|e| Error::Corrupted {
        path: std::path::PathBuf::from(format!("index/{table}")),
        detail: format!("bad commit payload {payload:?}: {e}"),
    })
}

/// Reindexes `table`: see the module docs.
///
/// # Errors
/// `Busy` when another reindex of the table runs; `NoIndex` for an
/// incremental reindex without a generation; `Schema`; `Store`;
/// `Tantivy`; `Check`; `Io`.
pub fn reindex(
    store: &Store,
    table: &str,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let started = Instant::now();
    let schema = store.schema(table)?;
    let search = schema.search.as_ref().ok_or_else(|| Error::Schema {
        table: table.to_owned(),
        reason: "the table has no search section".into(),
    })?;
    let index_schema = IndexSchema::for_search(table, search)?;
    let dir = IndexDir::new(store.path(), table);
    let lock = dir.lock()?;
    let current = dir.current()?;

    let serving = match current {
        Some(n) => {
            let index =
                Index::open_in_dir(dir.generation_path(n)).map_err(tantivy_err(table, "open index"))?;
            Some((n, index))
        }
        None => None,
    };
    let matches = serving.as_ref().is_some_and(|(_, index)| index.schema() == index_schema.schema);
    let mut report = match (options.mode, serving) {
        (ReindexMode::Incremental, None) => return Err(Error::NoIndex { table: table.to_owned() }),
        (ReindexMode::Incremental, Some(_)) if !matches => {
            return Err(Error::Schema {
                table: table.to_owned(),
                reason: "the index was built for another search section: run a full reindex".into(),
            });
        }
        (ReindexMode::Incremental | ReindexMode::Auto, Some((n, index))) if matches => {
            // Leftovers of a killed or failed full build go here too.
            let removed = dir.remove_others(&lock, Some(n))?;
            let mut report = incremental(store, table, &index_schema, n, index, options, progress)?;
            report.removed_generations = removed;
            report
        }
        _ => full(store, table, &index_schema, &dir, &lock, current, options, progress)?,
    };
    report.feed_trimmed = trim_feed(store)?;
    report.index_bytes = dir.generation_bytes(report.generation)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn writer(table: &str, index: &Index, options: &ReindexOptions) -> Result<IndexWriter<CellDoc>> {
    let threads = options.threads.max(1);
    let budget = (options.memory_budget_bytes / 4 * 3).max(threads * MIN_BUFFER_PER_THREAD);
    index.writer_with_num_threads(threads, budget).map_err(tantivy_err(table, "open writer"))
}

fn commit(table: &str, writer: &mut IndexWriter<CellDoc>, next_seq: u64) -> Result<()> {
    let payload = serde_json::to_string(&Payload { next_seq }).unwrap_or_default();
    let mut prepared = writer.prepare_commit().map_err(tantivy_err(table, "prepare commit"))?;
    prepared.set_payload(&payload);
    prepared.commit().map_err(tantivy_err(table, "commit"))?;
    Ok(())
}

/// Builds one partition's documents, keyed by row.
///
/// Cells come by field and term, documents are by row, so nearly every
/// cell lands on another row than the cell before: the per-cell work is a
/// lookup and an append at scattered places. Row keys up to
/// [`INLINE_KEY`] bytes (the mail table's are ~30) sit in the slot table
/// itself, and the rows' texts in one flat list, so each cell touches as
/// few cache lines as it can.
struct Grouper<'a> {
    schema: &'a IndexSchema,
    /// Row key (hashed with xxh3) -> the row's index in `rows`.
    slots: hashbrown::HashTable<Slot>,
    rows: Vec<RowHead>,
    /// Row `r`'s text of field `f` at `r * fields + f`.
    texts: Vec<CellText>,
    /// The partition of the rows held (one at a time).
    partition: Vec<u8>,
    bytes: usize,
}

/// Longest row key kept in the slot table itself.
const INLINE_KEY: usize = 32;

/// What a row costs the grouping budget beside its key and texts (its slot,
/// head and text headers, roughly).
const ROW_OVERHEAD_BYTES: usize = 64;

struct Slot {
    row: usize,
    /// The key's length when it is inline, else `u8::MAX`.
    len: u8,
    key: [u8; INLINE_KEY],
}

impl Slot {
    fn new(row: usize, key: &[u8]) -> Slot {
        let mut slot = Slot { row, len: u8::MAX, key: [0; INLINE_KEY] };
        if let Some(inline) = slot.key.get_mut(..key.len()) {
            inline.copy_from_slice(key);
            slot.len = key.len() as u8;
        }
        slot
    }

    #[inline]
    fn holds(&self, key: &[u8], rows: &[RowHead]) -> bool {
        match self.key.get(..usize::from(self.len)) {
            Some(inline) => inline == key,
            None => rows[self.row].key == key,
        }
    }
}

struct RowHead {
    key: Vec<u8>,
    date_ms: u64,
}

impl<'a> Grouper<'a> {
    fn new(schema: &'a IndexSchema) -> Grouper<'a> {
        Grouper {
            schema,
            slots: hashbrown::HashTable::new(),
            rows: Vec::new(),
            texts: Vec::new(),
            partition: Vec::new(),
            bytes: 0,
        }
    }

    fn add(&mut self, cell: &KeywordCellRef<'_>) {
        // The index's text fields are the search section's fields, in order.
        let fields = self.schema.fields.len();
        if cell.field_index >= fields {
            return;
        }
        let rows = &mut self.rows;
        let hash = xxh3_64(cell.key);
        let row = match self.slots.entry(
            hash,
            |slot| slot.holds(cell.key, rows),
            |slot| xxh3_64(&rows[slot.row].key),
        ) {
            hashbrown::hash_table::Entry::Occupied(entry) => entry.get().row,
            hashbrown::hash_table::Entry::Vacant(entry) => {
                entry.insert(Slot::new(rows.len(), cell.key));
                if rows.is_empty() {
                    self.partition.clear();
                    self.partition.extend_from_slice(cell.partition);
                }
                rows.push(RowHead { key: cell.key.to_vec(), date_ms: cell.date_ms });
                self.texts.resize_with(self.texts.len() + fields, CellText::default);
                self.bytes += cell.key.len() + ROW_OVERHEAD_BYTES;
                rows.len() - 1
            }
        };
        let text = &mut self.texts[row * fields + cell.field_index];
        let before = text.len();
        text.push(cell.term, cell.positions());
        self.bytes += text.len() - before;
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.rows.clear();
        self.texts.clear();
        self.bytes = 0;
    }

    /// Hands the partition's documents to `writer`.
    fn flush(&mut self, table: &str, writer: &IndexWriter<CellDoc>) -> Result<u64> {
        let n = self.rows.len() as u64;
        self.slots.clear();
        let mut texts = self.texts.drain(..);
        for row in self.rows.drain(..) {
            let mut doc = CellDoc::new(self.schema);
            doc.key = row.key;
            doc.partition.clone_from(&self.partition);
            doc.date_ms = row.date_ms;
            for text in &mut doc.texts {
                *text = texts.next().unwrap_or_default();
            }
            writer.add_document(doc).map_err(tantivy_err(table, "add document"))?;
        }
        debug_assert_eq!(texts.len(), 0, "one text per row and field");
        self.bytes = 0;
        Ok(n)
    }
}

/// Largest number of slices a partition is split into; past it one slice
/// may exceed the grouping budget.
const MAX_SLICES: u64 = 1 << 16;

fn slice_of(key: &[u8], modulus: u64) -> u64 {
    xxh3_64(key) % modulus
}

/// Partitions `from <= p < to` (`None`: unbounded).
type PartitionRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What the readers of a full build share.
struct Readers<'a> {
    store: &'a Store,
    table: &'a str,
    schema: &'a IndexSchema,
    writer: &'a IndexWriter<CellDoc>,
    /// Partition ranges `[from, to)`, taken in order by whichever reader is
    /// free.
    ranges: &'a [PartitionRange],
    next_range: AtomicUsize,
    cells_read: AtomicU64,
    /// Set by a reader that failed, so the others stop early.
    failed: AtomicBool,
    /// Grouping memory of one reader.
    group_budget: usize,
}

/// The error a reader's scan stops with when another reader failed.
#[derive(Debug, thiserror::Error)]
#[error("stopped: another reader failed")]
struct Stopped;

impl Readers<'_> {
    /// Reads ranges until none is left, in one snapshot: the rows added and
    /// the snapshot's feed sequence, or `None` when it stopped because
    /// another reader failed.
    fn run(&self) -> Result<Option<(u64, u64)>> {
        let rtxn = self.store.begin_read()?;
        let next_seq = rtxn.next_seq()?;
        let mut rows = 0u64;
        let mut grouper = Grouper::new(self.schema);
        while let Some((from, to)) = self.ranges.get(self.next_range.fetch_add(1, Ordering::Relaxed)) {
            match self.range(&rtxn, from.as_deref(), to.as_deref(), &mut grouper) {
                Ok(Some(n)) => rows += n,
                Ok(None) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some((rows, next_seq)))
    }

    /// Groups and adds the rows of the partitions in `[from, to)`.
    fn range(
        &self,
        rtxn: &rowsearch_store::ReadTxn<'_>,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        grouper: &mut Grouper<'_>,
    ) -> Result<Option<u64>> {
        let (table, budget) = (self.table, self.group_budget);
        let mut rows = 0u64;
        let mut partition: Option<Vec<u8>> = None;
        let mut oversized: Vec<Vec<u8>> = Vec::new();
        let mut skipping = false;
        let mut unreported = 0u64;
        let read = rtxn.for_each_keyword_cell_between(table, from, to, &mut |cell| {
            unreported += 1;
            if unreported == 65_536 {
                self.cells_read.fetch_add(unreported, Ordering::Relaxed);
                unreported = 0;
                if self.failed.load(Ordering::Relaxed) {
                    return Err(rowsearch_store::Error::callback(Stopped));
                }
            }
            if partition.as_deref() != Some(cell.partition) {
                rows += grouper.flush(table, self.writer).map_err(store_err)?;
                partition = Some(cell.partition.to_vec());
                skipping = false;
            }
            if skipping {
                return Ok(());
            }
            grouper.add(cell);
            if grouper.bytes > budget {
                // Too big to group at once: do it in slices after this pass.
                grouper.clear();
                oversized.push(cell.partition.to_vec());
                skipping = true;
            }
            Ok(())
        });
        self.cells_read.fetch_add(unreported, Ordering::Relaxed);
        if let Err(e) = read {
            return match e.into_callback::<Stopped>() {
                Ok(Stopped) => Ok(None),
                Err(e) => Err(unwrap_store_err(e)),
            };
        }
        rows += grouper.flush(table, self.writer)?;
        for p in &oversized {
            rows += slices(rtxn, table, p, 2, 0, grouper, budget, self.writer)?
                + slices(rtxn, table, p, 2, 1, grouper, budget, self.writer)?;
        }
        Ok(Some(rows))
    }
}

#[allow(clippy::too_many_arguments)]
fn full(
    store: &Store,
    table: &str,
    schema: &IndexSchema,
    dir: &IndexDir,
    lock: &ReindexLock,
    current: Option<u64>,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    // Past every generation on disk and the serving one, so a number that
    // has served is never used again (a leftover's may be, once removed);
    // leftovers of a killed or failed build go first.
    let generation = dir.generations()?.last().copied().max(current).map_or(1, |n| n + 1);
    let mut removed = dir.remove_others(lock, current)?;
    let path = dir.generation_path(generation);
    std::fs::create_dir_all(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
    let index =
        Index::create_in_dir(&path, schema.schema.clone()).map_err(tantivy_err(table, "create index"))?;
    register_cells(&index);
    let mut writer = writer(table, &index, options)?;

    // The keyword rows are read in ranges of whole partitions cut where the
    // region splits cut the rows (one range per region for the mail table),
    // on up to `threads` readers, each in its own snapshot. The commit
    // records the oldest snapshot's feed sequence: changes the later
    // snapshots already saw are applied again by the next incremental
    // reindex, which is idempotent.
    let (ranges, total) = {
        let rtxn = store.begin_read()?;
        let bounds = rtxn.keyword_partition_splits(table)?;
        let total = rtxn.keyword_cell_count(table)?;
        let mut ranges: Vec<PartitionRange> = Vec::with_capacity(bounds.len() + 1);
        let mut from = None;
        for b in bounds {
            ranges.push((from, Some(b.clone())));
            from = Some(b);
        }
        ranges.push((from, None));
        (ranges, total)
    };
    let readers = ranges.len().min(options.threads.max(1));
    let shared = Readers {
        store,
        table,
        schema,
        writer: &writer,
        ranges: &ranges,
        next_range: AtomicUsize::new(0),
        cells_read: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        group_budget: (options.memory_budget_bytes / 4 / readers).max(1 << 20),
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let results: Vec<Result<Option<(u64, u64)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..readers)
            .map(|_| {
                let (shared, done) = (&shared, done_tx.clone());
                scope.spawn(move || {
                    let result = shared.run();
                    if result.is_err() {
                        shared.failed.store(true, Ordering::Relaxed);
                    }
                    let _ = done.send(());
                    result
                })
            })
            .collect();
        let mut finished = 0;
        while finished < readers {
            match done_rx.recv_timeout(std::time::Duration::from_millis(250)) {
                Ok(()) => finished += 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let done = shared.cells_read.load(Ordering::Relaxed);
            progress(&ReindexProgress { phase: "cells", done, total });
        }
        // A panicking reader is a bug: let it surface as one.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let (mut rows, mut next_seq) = (0u64, u64::MAX);
    for result in results {
        // Readers that stopped because another failed give `None`; the
        // failure itself is an `Err`.
        if let Some((r, seq)) = result? {
            rows += r;
            next_seq = next_seq.min(seq);
        }
    }
    let cells_read = shared.cells_read.load(Ordering::Relaxed);
    progress(&ReindexProgress { phase: "cells", done: cells_read, total });

    if options.fail_at == Some(FailPoint::BeforeCommit) {
        return Err(Error::FailPoint(FailPoint::BeforeCommit));
    }
    progress(&ReindexProgress { phase: "commit", done: 0, total: 1 });
    commit(table, &mut writer, next_seq)?;
    writer.wait_merging_threads().map_err(tantivy_err(table, "merge segments"))?;

    let reader = index.reader().map_err(tantivy_err(table, "open reader"))?;
    let docs = reader.searcher().num_docs();
    if docs != rows {
        return Err(Error::Check {
            table: table.to_owned(),
            generation,
            detail: format!("{docs} documents for {rows} rows with keyword cells"),
        });
    }
    if options.fail_at == Some(FailPoint::BeforeSwitch) {
        return Err(Error::FailPoint(FailPoint::BeforeSwitch));
    }
    dir.switch(lock, generation)?;
    removed.extend(dir.remove_others(lock, Some(generation))?);
    progress(&ReindexProgress { phase: "commit", done: 1, total: 1 });
    Ok(ReindexReport {
        table: table.to_owned(),
        mode: ReindexMode::Full,
        generation,
        docs,
        rows_indexed: rows,
        rows_removed: 0,
        cells_read,
        ranges: ranges.len(),
        readers,
        next_seq,
        feed_trimmed: 0,
        removed_generations: removed,
        index_bytes: 0,
        seconds: 0.0,
    })
}

/// Groups and adds the rows of partition `p` whose key hashes to `residue`
/// modulo `modulus`, halving the slice again while it exceeds the budget.
#[allow(clippy::too_many_arguments)]
fn slices(
    rtxn: &rowsearch_store::ReadTxn<'_>,
    table: &str,
    p: &[u8],
    modulus: u64,
    residue: u64,
    grouper: &mut Grouper<'_>,
    budget: usize,
    writer: &IndexWriter<CellDoc>,
) -> Result<u64> {
    grouper.clear();
    let mut over = false;
    rtxn.for_each_keyword_cell(table, Some(p), &mut |cell| {
        if !over && slice_of(cell.key, modulus) == residue {
            grouper.add(cell);
            over = grouper.bytes > budget && modulus < MAX_SLICES;
        }
        Ok(())
    })?;
    if over {
        grouper.clear();
        let m = modulus * 2;
        return Ok(slices(rtxn, table, p, m, residue, grouper, budget, writer)?
            + slices(rtxn, table, p, m, residue + modulus, grouper, budget, writer)?);
    }
    grouper.flush(table, writer)
}

/// Carries an indexer error through the store's callback error type.
fn store_err(e: Error) -> rowsearch_store::Error {
    rowsearch_store::Error::callback(e)
}

fn unwrap_store_err(e: rowsearch_store::Error) -> Error {
    e.into_callback::<Error>().unwrap_or_else(Error::Store)
}

/// One row's document from its keyword cells (in key order); `None` when
/// it has none.
pub(crate) fn doc_from_cells(schema: &IndexSchema, cells: &[KeywordCell]) -> Option<CellDoc> {
    let first = cells.first()?;
    let mut doc = CellDoc::new(schema);
    doc.key.clone_from(&first.key);
    doc.partition.clone_from(&first.partition);
    doc.date_ms = first.date_ms;
    for cell in cells {
        if let Some(field) = schema.field_index(&cell.field) {
            doc.texts[field].push(&cell.term, cell.positions.iter().copied());
        }
    }
    (!doc.is_empty()).then_some(doc)
}

const FEED_CHUNK: usize = 50_000;

/// The distinct rows of `table` the change feed names from `from_seq` on,
/// sorted, and the sequence after the last entry read.
pub(crate) fn changed_rows(store: &Store, table: &str, from_seq: u64) -> Result<(Vec<Vec<u8>>, u64)> {
    let mut changed: Vec<Vec<u8>> = Vec::new();
    let mut next_seq = from_seq;
    loop {
        let chunk = store.feed_since(next_seq, FEED_CHUNK)?;
        let Some(last) = chunk.last() else { break };
        next_seq = last.seq + 1;
        changed.extend(chunk.into_iter().filter(|e| e.table == table).map(|e| e.row));
    }
    changed.sort_unstable();
    changed.dedup();
    Ok((changed, next_seq))
}

#[allow(clippy::too_many_arguments)]
fn incremental(
    store: &Store,
    table: &str,
    schema: &IndexSchema,
    generation: u64,
    index: Index,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let from_seq = indexed_next_seq(table, &index)?;
    // Read the feed before the rows: the rows are then at least as new as
    // the feed entries, so nothing is missed (applying a newer state early
    // is harmless: the next run applies it again).
    let (changed, next_seq) = changed_rows(store, table, from_seq)?;

    register_cells(&index);
    let mut writer = writer(table, &index, options)?;
    let total = changed.len() as u64;
    let (mut indexed, mut removed) = (0u64, 0u64);
    let rtxn = store.begin_read()?;
    for (i, row) in changed.iter().enumerate() {
        if options.fail_at == Some(FailPoint::MidIncremental) && i as u64 == total / 2 {
            return Err(Error::FailPoint(FailPoint::MidIncremental));
        }
        writer.delete_term(Term::from_field_bytes(schema.key, row));
        let cells = rtxn.row_keyword_cells(table, row)?;
        match doc_from_cells(schema, &cells) {
            Some(doc) => {
                writer.add_document(doc).map_err(tantivy_err(table, "add document"))?;
                indexed += 1;
            }
            None => removed += 1,
        }
        if i.is_multiple_of(4096) {
            progress(&ReindexProgress { phase: "rows", done: i as u64, total });
        }
    }
    drop(rtxn);
    progress(&ReindexProgress { phase: "rows", done: total, total });
    if next_seq != from_seq {
        commit(table, &mut writer, next_seq)?;
    }
    writer.wait_merging_threads().map_err(tantivy_err(table, "merge segments"))?;
    let reader = index.reader().map_err(tantivy_err(table, "open reader"))?;
    Ok(ReindexReport {
        table: table.to_owned(),
        mode: ReindexMode::Incremental,
        generation,
        docs: reader.searcher().num_docs(),
        rows_indexed: indexed,
        rows_removed: removed,
        cells_read: 0,
        ranges: 0,
        readers: 0,
        next_seq,
        feed_trimmed: 0,
        removed_generations: Vec::new(),
        index_bytes: 0,
        seconds: 0.0,
    })
}

/// Trims the change feed up to what every indexed table has absorbed.
fn trim_feed(store: &Store) -> Result<u64> {
    let mut lowest: Option<u64> = None;
    for table in store.tables() {
        let Ok(schema) = store.schema(&table) else { continue };
        if schema.search.is_none() {
            continue;
        }
        let dir = IndexDir::new(store.path(), &table);
        let Some(n) = dir.current()? else { continue };
        let index = Index::open_in_dir(dir.generation_path(n)).map_err(tantivy_err(&table, "open index"))?;
        let next = indexed_next_seq(&table, &index)?;
        lowest = Some(lowest.map_or(next, |l| l.min(next)));
    }
    match lowest {
        Some(next) if next > 1 => Ok(store.trim_feed(next - 1)?),
        _ => Ok(0),
    }
}
