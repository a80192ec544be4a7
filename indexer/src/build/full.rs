//! Full builds: a new generation from every keyword row (see the module
//! documentation of `build`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use rowsearch_store::{KeywordCellRef, RowSource, RowView};
use tantivy::{Index, IndexWriter};
use xxhash_rust::xxh3::xxh3_64;

use super::direct::{self, Part};
use super::options::{BuildRead, RegionDone, ReindexMode, ReindexOptions, ReindexProgress, ReindexReport};
use super::writer::{commit, in_flight_budget, writer};
use crate::doc::{CellDoc, CellText, DocSchema, register_cells};
use crate::error::{FailPoint, tantivy_err};
use crate::generation::{IndexDir, ReindexLock, commit_payload};
use crate::inflight::{Held, InFlight};
use crate::{Error, Result};

/// Builds one partition's documents, keyed by row.
///
/// Cells come by field and term, documents are by row, so nearly every
/// cell lands on another row than the cell before: the per-cell work is a
/// lookup and an append at scattered places. Row keys up to
/// [`INLINE_KEY`] bytes (the mail table's are ~30) sit in the slot table
/// itself, and the rows' texts in one flat list, so each cell touches as
/// few cache lines as it can.
struct Grouper<'a> {
    schema: &'a DocSchema,
    /// Row key (hashed with xxh3) -> the row's index in `rows`.
    slots: hashbrown::HashTable<Slot>,
    rows: Vec<RowHead>,
    /// Row `r`'s text of field `f` at `r * fields + f`.
    texts: Vec<CellText>,
    /// Row `r`'s facet terms (see `CellDoc::facet_terms`), kept only
    /// while the schema has facet columns.
    facet_terms: Vec<Vec<(usize, String)>>,
    bytes: usize,
    /// The bytes of documents handed to tantivy and not indexed yet.
    in_flight: Arc<InFlight>,
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
    partition: Vec<u8>,
    date_ms: u64,
}

impl<'a> Grouper<'a> {
    fn new(schema: &'a DocSchema, in_flight: Arc<InFlight>) -> Grouper<'a> {
        Grouper {
            in_flight,
            schema,
            slots: hashbrown::HashTable::new(),
            rows: Vec::new(),
            texts: Vec::new(),
            facet_terms: Vec::new(),
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
                let partition = cell.partition.to_vec();
                self.bytes += cell.key.len() + partition.len() + ROW_OVERHEAD_BYTES;
                rows.push(RowHead { key: cell.key.to_vec(), partition, date_ms: cell.date_ms });
                self.texts.resize_with(self.texts.len() + fields, CellText::default);
                rows.len() - 1
            }
        };
        let text = &mut self.texts[row * fields + cell.field_index];
        let before = text.len();
        text.push(cell.term, cell.positions());
        self.bytes += text.len() - before;
        if self.schema.facets[cell.field_index].is_some() {
            if self.facet_terms.len() <= row {
                self.facet_terms.resize_with(row + 1, Vec::new);
            }
            self.facet_terms[row].push((cell.field_index, cell.term.to_owned()));
            self.bytes += cell.term.len() + 32;
        }
    }

    /// Hands the partition's documents to `writer`.
    fn flush(&mut self, table: &str, writer: &IndexWriter<CellDoc>) -> Result<u64> {
        let n = self.rows.len() as u64;
        self.slots.clear();
        let mut texts = self.texts.drain(..);
        let mut facet_terms = self.facet_terms.drain(..);
        for row in self.rows.drain(..) {
            let mut doc = CellDoc::new(self.schema);
            doc.facet_terms = facet_terms.next().unwrap_or_default();
            doc.key = row.key;
            doc.partition = row.partition;
            doc.date_ms = row.date_ms;
            for text in &mut doc.texts {
                *text = texts.next().unwrap_or_default();
            }
            // Waits while tantivy's queue holds its share of the budget.
            doc.ticket = Held::of(self.in_flight.take(doc.heap_bytes()));
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

/// Partitions, or row keys, `from <= k < to` (`None`: unbounded).
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What the process holds beside a direct build's parts (the allocator's
/// and the store's own, tantivy's index open), and what writing a part
/// takes whatever its size (tantivy's fast field and document store
/// writers): about 25 and 15-25 MiB, measured on the full corpus
/// (`bench/peak_memory.py`).
const PROCESS_BASE: usize = 24 << 20;
const PART_WRITE_BASE: usize = 24 << 20;

/// What the readers of a full build share.
struct Readers<'a> {
    store: &'a dyn RowSource,
    table: &'a str,
    schema: &'a DocSchema,
    /// Where the documents go.
    sink: Sink<'a>,
    /// Ranges `[from, to)` of partitions (the keyword rows) or row keys
    /// (the rows' text), taken in order by whichever reader is free.
    ranges: &'a [KeyRange],
    next_range: AtomicUsize,
    cells_read: AtomicU64,
    /// Set by a reader that failed, so the others stop early.
    failed: AtomicBool,
    /// Grouping memory of one reader.
    group_budget: usize,
    /// Readers at once.
    readers: usize,
    /// What the parts of all readers may hold together (direct builds)...
    gather_budget: usize,
    /// ...and what they hold, as each last counted its own (parts being
    /// written included, until freed)...
    gathered: AtomicUsize,
    /// ...of which parts being written, and how many.
    writing: AtomicUsize,
    writers: AtomicUsize,
    /// Documents queued for tantivy: their share of the budget.
    in_flight: Arc<InFlight>,
    /// Regions read, not reported yet.
    regions_done: std::sync::Mutex<Vec<RegionDone>>,
    /// The segments written directly.
    segments: std::sync::Mutex<Vec<tantivy::SegmentMeta>>,
    /// What each reader gathered and did not write yet.
    parts: std::sync::Mutex<Vec<Part<'a>>>,
}

/// Where a full build's documents go.
#[derive(Clone, Copy)]
enum Sink<'a> {
    /// To tantivy's index writer, as documents grouped from the cells.
    Writer(&'a IndexWriter<CellDoc>),
    /// Straight into segments of the index ([`direct`]), from the keyword
    /// rows.
    Direct(&'a Index),
}

/// The error a reader's scan stops with when another reader failed.
#[derive(Debug, thiserror::Error)]
#[error("stopped: another reader failed")]
struct Stopped;

impl<'a> Readers<'a> {
    /// Reads ranges until none is left, in one snapshot: the rows added and
    /// the snapshot's feed sequence, or `None` when it stopped because
    /// another reader failed.
    fn run(&self) -> Result<Option<(u64, u64)>> {
        let view = self.store.view()?;
        let rtxn = &*view;
        let next_seq = rtxn.settled_seq()?;
        let mut rows = 0u64;
        let mut grouper = Grouper::new(self.schema, Arc::clone(&self.in_flight));
        let mut part = Part::new(self.schema);
        loop {
            let index = self.next_range.fetch_add(1, Ordering::Relaxed);
            let Some((from, to)) = self.ranges.get(index) else { break };
            let started = std::time::Instant::now();
            let cells_before = self.cells_read.load(Ordering::Relaxed);
            let (from, to) = (from.as_deref(), to.as_deref());
            // The keyword rows go to the direct sink, the rows' text to
            // tantivy's writer (see `full`).
            let read = match self.sink {
                Sink::Direct(index) => self.range_direct(rtxn, from, to, index, &mut part),
                Sink::Writer(writer) => self.rows(rtxn, from, to, &mut grouper, writer),
            };
            if let Ok(Some(_)) = read {
                // Other readers' cells may be counted in: a region's figure
                // is approximate while readers overlap.
                let cells = self.cells_read.load(Ordering::Relaxed) - cells_before;
                let seconds = started.elapsed().as_secs_f64();
                let done = RegionDone { index, of: self.ranges.len(), cells, seconds };
                self.regions_done.lock().unwrap_or_else(|e| e.into_inner()).push(done);
            }
            match read {
                Ok(Some(n)) => rows += n,
                Ok(None) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        if let Sink::Direct(_) = self.sink {
            // Written with the other readers' as one segment.
            rows += part.rows();
            self.parts.lock().unwrap_or_else(|e| e.into_inner()).push(part);
        }
        Ok(Some((rows, next_seq)))
    }

    /// Counts one cell read, into `cells_read` every 65,536; stops the
    /// read there once another reader failed.
    fn tick(&self, unreported: &mut u64) -> rowsearch_store::Result<()> {
        *unreported += 1;
        if *unreported == 65_536 {
            self.cells_read.fetch_add(*unreported, Ordering::Relaxed);
            *unreported = 0;
            if self.failed.load(Ordering::Relaxed) {
                return Err(rowsearch_store::Error::callback(Stopped));
            }
        }
        Ok(())
    }

    /// Counts the cells not counted yet and says how a read ended: `true`
    /// read through, `false` stopped because another reader failed.
    fn settle(&self, unreported: u64, read: rowsearch_store::Result<()>) -> Result<bool> {
        self.cells_read.fetch_add(unreported, Ordering::Relaxed);
        match read {
            Ok(()) => Ok(true),
            Err(e) => match e.into_callback::<Stopped>() {
                Ok(Stopped) => Ok(false),
                Err(e) => Err(unwrap_store_err(e)),
            },
        }
    }

    /// Adds the rows with keys in `[from, to)`, from their text: each row's
    /// cells come together, so documents go to tantivy whenever the
    /// grouping budget is spent, at a row's end.
    fn rows(
        &self,
        rtxn: &dyn RowView,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        grouper: &mut Grouper<'_>,
        writer: &IndexWriter<CellDoc>,
    ) -> Result<Option<u64>> {
        let (table, budget) = (self.table, self.group_budget);
        let mut rows = 0u64;
        let mut last: Vec<u8> = Vec::new();
        let mut unreported = 0u64;
        let read = rtxn.for_each_row_keyword_cells(table, from, to, &mut |cell| {
            if cell.key != last.as_slice() {
                if grouper.bytes > budget {
                    rows += grouper.flush(table, writer).map_err(store_err)?;
                }
                last.clear();
                last.extend_from_slice(cell.key);
            }
            self.tick(&mut unreported)?;
            grouper.add(cell);
            Ok(())
        });
        if !self.settle(unreported, read)? {
            return Ok(None);
        }
        Ok(Some(rows + grouper.flush(table, writer)?))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn full(
    store: &dyn RowSource,
    table: &str,
    schema: &DocSchema,
    dir: &IndexDir,
    lock: &ReindexLock,
    current: Option<u64>,
    options: &ReindexOptions,
    started: std::time::Instant,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let table_id = store.table_id(table)?;
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

    // The keyword rows are read in ranges of whole partitions cut where the
    // region splits cut the rows (one range per region for the mail table),
    // or, where the source says so (HBase), the rows themselves region by
    // region; on up to `threads` readers, each in its own snapshot. The
    // commit records the oldest snapshot's feed sequence: changes the later
    // snapshots already saw are applied again by the next incremental
    // reindex, which is idempotent.
    let (read, ranges, total) = read_ranges(store, table)?;
    let readers = ranges.len().min(options.threads.max(1));
    // From the keyword rows, segments are written directly (tantivy's
    // writer comes for the merge only); from the rows' text, documents go
    // through tantivy's writer.
    let direct = read == BuildRead::KeywordRows;
    let mut writer = if direct { None } else { Some(merge_writer(table, &index, options)?) };
    // Without tantivy's buffers, the readers' parts together take four
    // fifths of what the process's base and a write by each reader at
    // once leave (a part's write adds a tenth of it: its term order, a
    // field's postings at a time).
    let reserved = PROCESS_BASE + readers * PART_WRITE_BASE;
    let gather_budget = (options.memory_budget_bytes.saturating_sub(reserved) / 5 * 4).max(readers << 20);
    let shared = Readers {
        store,
        table,
        schema,
        sink: match &writer {
            Some(writer) => Sink::Writer(writer),
            None => Sink::Direct(&index),
        },
        ranges: &ranges,
        next_range: AtomicUsize::new(0),
        cells_read: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        group_budget: if direct {
            (gather_budget / readers).max(1 << 20)
        } else {
            (options.memory_budget_bytes / 4 / readers).max(1 << 20)
        },
        readers,
        gather_budget,
        gathered: AtomicUsize::new(0),
        writing: AtomicUsize::new(0),
        writers: AtomicUsize::new(0),
        in_flight: InFlight::new(in_flight_budget(options.memory_budget_bytes)),
        regions_done: std::sync::Mutex::new(Vec::new()),
        segments: std::sync::Mutex::new(Vec::new()),
        parts: std::sync::Mutex::new(Vec::new()),
    };
    let (rows, next_seq) = shared.run_all(readers, total, progress)?;
    let cells_read = shared.cells_read.load(Ordering::Relaxed);
    let mut segments = shared.segments.into_inner().unwrap_or_else(|e| e.into_inner());
    if direct {
        // What the readers hold, as one segment (with nothing written
        // before, as the budget held it all, the build is merged from the
        // start); unmerged builds keep a segment per reader.
        let mut parts = shared.parts.into_inner().unwrap_or_else(|e| e.into_inner());
        // Word pairs (`pairs.rs`) when the parts hold every row: each
        // segment of the generation must hold the same pairs, and segments
        // written while reading (the budget did not hold it all) have none.
        let pairs = if segments.is_empty() {
            progress(&ReindexProgress { phase: "pairs", done: 0, total: 1, region_done: None });
            let counting = std::time::Instant::now();
            let pairs = direct::direct_pairs::select(&mut parts, options.threads);
            let ms = counting.elapsed().as_millis() as u64;
            tracing::info!(table, pairs = pairs.len(), duration_ms = ms, "word pairs chosen");
            pairs
        } else {
            crate::pairs::PairList::default()
        };
        let groups: Vec<Vec<Part<'_>>> =
            if options.merge { vec![parts] } else { parts.into_iter().map(|p| vec![p]).collect() };
        for parts in groups {
            if let Some(meta) = direct::write(&index, parts, options.threads, &pairs)
                .map_err(tantivy_err(table, "write segment"))?
            {
                segments.push(meta);
            }
        }
    }
    progress(&ReindexProgress { phase: "cells", done: cells_read, total, region_done: None });

    if options.fail_at == Some(FailPoint::BeforeCommit) {
        return Err(Error::FailPoint(FailPoint::BeforeCommit));
    }
    progress(&ReindexProgress { phase: "commit", done: 0, total: 1, region_done: None });
    match &mut writer {
        Some(writer) => commit(table, writer, next_seq, table_id)?,
        None => direct::commit(&index, segments, &commit_payload(next_seq, table_id))
            .map_err(tantivy_err(table, "commit"))?,
    }

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
    let serving_seconds = started.elapsed().as_secs_f64();
    removed.extend(dir.remove_others(lock, Some(generation))?);
    progress(&ReindexProgress { phase: "commit", done: 1, total: 1, region_done: None });
    // The new generation serves already; its segments (one per indexing
    // thread or buffer flush) are merged into one now, under the lock, so
    // every term dictionary walk (prefixes, fuzzy words, suggestions) and
    // posting list is then read once instead of once per segment. Servers
    // take the merged segment at their next reload; the merge keeps the
    // commit's payload. Killed during it, the generation serves unmerged.
    let segments = index.searchable_segment_ids().map_err(tantivy_err(table, "list segments"))?;
    if options.merge && segments.len() > 1 {
        progress(&ReindexProgress { phase: "merge", done: 0, total: 1, region_done: None });
        let writer = match writer.as_mut() {
            Some(writer) => writer,
            None => writer.insert(merge_writer(table, &index, options)?),
        };
        writer.merge(&segments).wait().map_err(tantivy_err(table, "merge segments"))?;
        progress(&ReindexProgress { phase: "merge", done: 1, total: 1, region_done: None });
    }
    if let Some(writer) = writer {
        writer.wait_merging_threads().map_err(tantivy_err(table, "merge segments"))?;
    }
    Ok(ReindexReport {
        serving_seconds,
        table: table.to_owned(),
        mode: ReindexMode::Full,
        generation,
        docs,
        rows_indexed: rows,
        rows_removed: 0,
        cells_read,
        read,
        ranges: ranges.len(),
        readers,
        next_seq,
        feed_trimmed: 0,
        removed_generations: removed,
        index_bytes: 0,
        seconds: 0.0,
    })
}

/// tantivy's index writer for `index`, without merges of its own when the
/// build merges: the merge takes every segment at once, and a background
/// merge started by a commit would hold some of them.
fn merge_writer(table: &str, index: &Index, options: &ReindexOptions) -> Result<IndexWriter<CellDoc>> {
    let writer = writer(table, index, options)?;
    if options.merge {
        writer.set_merge_policy(Box::new(tantivy::merge_policy::NoMergePolicy));
    }
    Ok(writer)
}

/// What a full build reads, in which ranges, and how many keyword cells
/// there are in all (0: unknown): the source's regions of rows when it
/// builds from the rows' text, else the keyword rows in ranges of whole
/// partitions, cut where the region splits cut the rows.
fn read_ranges(store: &dyn RowSource, table: &str) -> Result<(BuildRead, Vec<KeyRange>, u64)> {
    let view = store.view()?;
    let rtxn = &*view;
    let forced = std::env::var_os("ROWSEARCH_EXPERIMENT_ROWTEXT").is_some();
    let (read, bounds) = match rtxn.row_splits(table)? {
        Some(splits) => (BuildRead::RowText, splits),
        None if forced => {
            (BuildRead::RowText, store.regions(table)?.into_iter().filter_map(|r| r.start).collect())
        }
        None => (BuildRead::KeywordRows, rtxn.keyword_partition_splits(table)?),
    };
    let total = rtxn.keyword_cell_count(table)?;
    let mut ranges: Vec<KeyRange> = Vec::with_capacity(bounds.len() + 1);
    let mut from = None;
    for b in bounds {
        ranges.push((from, Some(b.clone())));
        from = Some(b);
    }
    ranges.push((from, None));
    Ok((read, ranges, total))
}

impl Readers<'_> {
    /// Runs `readers` readers over the ranges, reporting the cells read
    /// every 250 ms; the rows added and the oldest snapshot's next feed
    /// sequence.
    fn run_all(
        &self,
        readers: usize,
        total: u64,
        progress: &mut dyn FnMut(&ReindexProgress),
    ) -> Result<(u64, u64)> {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let results: Vec<Result<Option<(u64, u64)>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..readers)
                .map(|_| {
                    let done = done_tx.clone();
                    scope.spawn(move || {
                        let result = self.run();
                        if result.is_err() {
                            self.failed.store(true, Ordering::Relaxed);
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
                let done = self.cells_read.load(Ordering::Relaxed);
                let regions: Vec<RegionDone> =
                    std::mem::take(&mut *self.regions_done.lock().unwrap_or_else(|e| e.into_inner()));
                for region in regions {
                    progress(&ReindexProgress { phase: "cells", done, total, region_done: Some(region) });
                }
                progress(&ReindexProgress { phase: "cells", done, total, region_done: None });
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
        Ok((rows, next_seq))
    }
}

/// Carries an indexer error through the store's callback error type.
fn store_err(e: Error) -> rowsearch_store::Error {
    rowsearch_store::Error::callback(e)
}

fn unwrap_store_err(e: rowsearch_store::Error) -> Error {
    e.into_callback::<Error>().unwrap_or_else(Error::Store)
}

#[path = "direct_read.rs"]
mod direct_read;
