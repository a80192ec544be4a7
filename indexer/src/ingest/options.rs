//! What an ingest is asked to do, reports while it runs, and did.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Decided per file: `.jsonl`/`.ndjson` are JSON lines, `.mbox` files
    /// and files starting with `From ` are mbox, anything else is one
    /// message (Maildir or .eml).
    #[default]
    Auto,
    /// Every file is one message; user and folder come from its path.
    Maildir,
    /// Every file is an mbox (messages separated by `From ` lines).
    Mbox,
    /// Every file is one message.
    Eml,
    /// Every file holds JSON lines of rows (the row shape of API.md).
    Jsonl,
}

impl Format {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Maildir => "maildir",
            Format::Mbox => "mbox",
            Format::Eml => "eml",
            Format::Jsonl => "jsonl",
        }
    }
}

/// Options of an ingest run.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// The target table (created with [`mail_schema`](crate::mail_schema) when missing).
    pub table: String,
    /// The input format.
    pub format: Format,
    /// The mailbox every message goes to; `None`: from each file's path
    /// (the first directory below the given root, or the directory holding
    /// a file given directly).
    pub user: Option<String>,
    /// Rows per write transaction, at most.
    pub batch_rows: usize,
    /// Bytes of input per write transaction, at most (roughly).
    pub batch_bytes: usize,
    /// Messages (and files) larger than this are skipped.
    pub max_message_bytes: u64,
    /// The nice value of the ingest's own threads (reading and parsing,
    /// writing): above 0 they yield the CPU to searches of a server on the
    /// same machine ([`crate::lower_thread_priority`]); 0 keeps the
    /// caller's priority. The calling thread (which batches) is left as it
    /// is: the CLI lowers its own.
    pub nice: i32,
    /// The shards a cluster of searchers splits the table's index into,
    /// set when the ingest creates the table (`None`: the schema's
    /// default, one); an existing table with another count is refused.
    pub shards: Option<u32>,
}

/// The least memory budget [`IngestOptions::for_memory_mb`] takes (MiB).
pub const MIN_INGEST_MEMORY_MB: u64 = 176;

/// Memory an ingest holds whatever its batches (MiB): the parser, the
/// walker, the allocator's pools (measured on the full corpus: peak
/// anonymous memory about 140 MiB + 90 KiB a row of a batch).
const FIXED_MEMORY_MB: u64 = 144;

/// Memory a row of a batch holds until its transaction commits (KiB):
/// the parsed message, its keyword cells, and the LMDB pages the
/// transaction dirties (see [`FIXED_MEMORY_MB`]; with some room).
const MEMORY_PER_ROW_KB: u64 = 96;

impl IngestOptions {
    /// These options with batches sized so that the ingest's own memory
    /// (anonymous memory: not the store's pages, which LMDB maps from the
    /// file and the kernel reclaims as it needs) stays within `mb` MiB,
    /// whatever the input's size: `(mb - 144 MiB) / 96 KiB` rows a batch
    /// (64 to 4,096), a quarter of `mb` of input. Smaller batches cost
    /// speed (search-api/BENCHMARKS.md, "Issue 40, second part").
    ///
    /// # Errors
    /// A message naming the least budget when `mb` is below
    /// [`MIN_INGEST_MEMORY_MB`].
    pub fn for_memory_mb(self, mb: u64) -> Result<IngestOptions, String> {
        if mb < MIN_INGEST_MEMORY_MB {
            return Err(format!(
                "a memory budget of {mb} MiB is too small: an ingest needs at least {MIN_INGEST_MEMORY_MB} MiB"
            ));
        }
        let rows = ((mb - FIXED_MEMORY_MB) * 1024 / MEMORY_PER_ROW_KB).clamp(64, 4096);
        Ok(IngestOptions {
            batch_rows: usize::try_from(rows).unwrap_or(4096),
            batch_bytes: usize::try_from(mb * 1024 * 1024 / 4).unwrap_or(usize::MAX),
            ..self
        })
    }
}

/// Default [`IngestOptions::nice`]: as the refresher's threads.
pub const DEFAULT_INGEST_NICE: i32 = 10;

/// Default [`IngestOptions::max_message_bytes`]: 25 MiB, the common limit
/// of mail servers.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 25 * 1024 * 1024;

impl Default for IngestOptions {
    fn default() -> IngestOptions {
        IngestOptions {
            table: "mail".into(),
            format: Format::Auto,
            user: None,
            batch_rows: 4096,
            batch_bytes: 64 * 1024 * 1024,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            nice: DEFAULT_INGEST_NICE,
            shards: None,
        }
    }
}

/// A file (or one message of it) that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file, with `#n` for the n-th message of an mbox (from 1) or
    /// `:n` for line n of a JSON lines file.
    pub source: String,
    /// Why it was skipped.
    pub reason: String,
}

/// What an ingest run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestReport {
    /// Files found under the given paths.
    pub files_seen: u64,
    /// Messages and rows found in them.
    pub messages_seen: u64,
    /// Rows written.
    pub stored: u64,
    /// Messages already in the table (same mailbox, date and id), and
    /// copies folded into another (see `folded`).
    pub duplicates: u64,
    /// Copies of a message (another folder, or another Message-ID with the
    /// same sender, date, subject and body) that gave a row a folder or id
    /// it lacked: one row carries them all.
    pub folded: u64,
    /// Files and messages skipped, in input order.
    pub skipped: Vec<Skipped>,
    /// Input bytes read.
    pub bytes_read: u64,
    /// What the run chose that the caller did not say (a mailbox named
    /// from a file's name).
    pub notes: Vec<String>,
    /// Wall time of the run.
    pub seconds: f64,
}

impl IngestReport {
    /// The one-line summary: counts, seconds and rate, and the first
    /// `names` skipped sources with their reasons.
    pub fn summary(&self, names: usize) -> String {
        let rate = if self.seconds > 0.0 { self.stored as f64 / self.seconds } else { 0.0 };
        let mut out = format!(
            "ingest: {} files, {} messages: {} stored, {} duplicates, {} skipped in {:.2} s ({:.0} messages/s)",
            self.files_seen,
            self.messages_seen,
            self.stored,
            self.duplicates,
            self.skipped.len(),
            self.seconds,
            rate
        );
        if self.folded > 0 {
            let _ = write!(out, "; {} copies folded into the message they copy", self.folded);
        }
        for note in &self.notes {
            let _ = write!(out, "\n  note: {note}");
        }
        for s in self.skipped.iter().take(names) {
            let _ = write!(out, "\n  skipped {}: {}", s.source, s.reason);
        }
        if self.skipped.len() > names {
            let _ =
                write!(out, "\n  ... and {} more (--report FILE lists them all)", self.skipped.len() - names);
        }
        out
    }

    /// Writes every skipped source as `source<TAB>reason` lines.
    ///
    /// # Errors
    /// `Report` when the file cannot be written.
    pub fn write_skipped(&self, path: &Path) -> Result<()> {
        let mut text = String::new();
        for s in &self.skipped {
            let _ = writeln!(text, "{}\t{}", s.source, s.reason.replace(['\t', '\n'], " "));
        }
        std::fs::write(path, text).map_err(|source| Error::Report { path: path.to_owned(), source })
    }
}

/// Progress of a run: files done out of files found, and rows stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestProgress {
    /// Files parsed so far.
    pub files_done: u64,
    /// Files found.
    pub files_total: u64,
    /// Rows written so far.
    pub stored: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_budget_sizes_the_batches_within_their_bounds() {
        let small = IngestOptions::default().for_memory_mb(MIN_INGEST_MEMORY_MB).unwrap();
        assert_eq!(small.batch_rows, 341);
        assert_eq!(IngestOptions::default().for_memory_mb(256).unwrap().batch_rows, 1194);
        assert_eq!(IngestOptions::default().for_memory_mb(1 << 20).unwrap().batch_rows, 4096);
        assert_eq!(IngestOptions::default().for_memory_mb(256).unwrap().batch_bytes, 64 << 20);
        let err = IngestOptions::default().for_memory_mb(MIN_INGEST_MEMORY_MB - 1).unwrap_err();
        assert!(err.contains("at least 176 MiB"), "{err}");
    }
}
