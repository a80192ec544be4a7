//! What a reindex is asked to do, what it reports while it runs, and what
//! it did.

use serde::{Deserialize, Serialize};

use crate::error::FailPoint;

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

/// Options of a reindex.
#[derive(Debug, Clone)]
pub struct ReindexOptions {
    /// Full, incremental, or whichever applies.
    pub mode: ReindexMode,
    /// Memory of a full build, in bytes. From the keyword rows: the
    /// readers' gathered partitions together take four fifths of what it
    /// leaves past 24 MiB for the process and 24 MiB per reader for
    /// writing a part (past it, the reader holding the most of what still
    /// gathers writes a segment). From the rows'
    /// text: tantivy's indexing buffers (5/8), the grouping of cells into
    /// documents (1/4) and the documents queued for tantivy (1/8).
    pub memory_budget_bytes: usize,
    /// Indexing threads (default: every core).
    pub threads: usize,
    /// One segment for a full build (default true): term dictionary walks
    /// (prefixes, fuzzy words, suggestions) and posting lists are then
    /// read once per search instead of once per segment (fuzzy `~2`
    /// searches ~0.7x the time). From the keyword rows, what the readers
    /// hold is written as one segment (without this: one per reader), and
    /// segments written before (a reader past its memory share) are merged
    /// into it while the generation serves; from the rows' text, the
    /// indexing threads' segments are merged while it serves.
    pub merge: bool,
    /// How long to wait for another reindex of the table (another
    /// process's, or the background refresher's) to let go of it before
    /// failing with `Busy` (default 30 s; zero: fail at once).
    pub lock_wait: std::time::Duration,
    /// Stop with an error at this point (tests).
    #[doc(hidden)]
    pub fail_at: Option<FailPoint>,
}

/// The default memory budget: 512 MiB.
pub const DEFAULT_MEMORY_BUDGET_BYTES: usize = 512 << 20;
/// tantivy's smallest buffer per indexing thread.
pub(super) const MIN_BUFFER_PER_THREAD: usize = 15_000_000;

impl Default for ReindexOptions {
    fn default() -> Self {
        ReindexOptions {
            mode: ReindexMode::Auto,
            memory_budget_bytes: DEFAULT_MEMORY_BUDGET_BYTES,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            merge: true,
            lock_wait: std::time::Duration::from_secs(30),
            fail_at: None,
        }
    }
}

/// Where a running reindex is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReindexProgress {
    /// `"cells"` (full: keyword cells read), `"rows"` (incremental: changed
    /// rows applied), `"pairs"` (full: the word pairs to keep counted),
    /// `"commit"` or `"merge"` (full: the segments merged into one).
    pub phase: &'static str,
    /// Done so far.
    pub done: u64,
    /// Expected in all.
    pub total: u64,
    /// A full build's region (partition range) just read: its number (of
    /// [`ReindexReport::ranges`]), the keyword cells it held and the
    /// seconds it took; reported once per region.
    pub region_done: Option<RegionDone>,
}

/// One region of a full build read (see [`ReindexProgress::region_done`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionDone {
    /// Its number, 0-based, in key order.
    pub index: usize,
    /// Regions in all.
    pub of: usize,
    /// Keyword cells it held.
    pub cells: u64,
    /// Seconds its reading took.
    pub seconds: f64,
}

/// What a full build read its documents from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildRead {
    /// The keyword rows, in ranges of whole partitions (the embedded
    /// store; an incremental run reads changed rows and says this too).
    #[default]
    KeywordRows,
    /// The rows themselves, region by region, their keyword cells made
    /// from their text as they are scanned (over HBase).
    RowText,
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
    /// Full: what the documents were read from.
    pub read: BuildRead,
    /// Full: the ranges read, and the threads that read them at once. From
    /// the keyword rows: ranges of whole partitions cut where the region
    /// splits cut the rows (for the mail table, one per region holding
    /// mail); from the rows' text: the table's regions. Zero for an
    /// incremental run.
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
    /// Wall time until the new generation served: a full build serves
    /// before its segments are merged into one (the rest of `seconds`);
    /// an incremental run serves when it ends.
    pub serving_seconds: f64,
}

impl ReindexReport {
    /// The one-line summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mode = if self.mode == ReindexMode::Full { "full" } else { "incremental" };
        let rate = if self.seconds > 0.0 { self.rows_indexed as f64 / self.seconds } else { 0.0 };
        let read = if self.mode == ReindexMode::Full {
            let what = match self.read {
                BuildRead::KeywordRows => format!("keyword rows read in {} ranges", self.ranges),
                BuildRead::RowText => format!("rows' text read in {} regions", self.ranges),
            };
            format!(" ({what} on {} threads; serving after {:.2}s)", self.readers, self.serving_seconds)
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
