//! Ingest: files (Maildir trees, mbox files, single .eml files, JSON lines
//! of rows) into a table, in large sorted batches, one transaction each.
//!
//! Three threads overlap: one walks, reads and parses; the calling thread
//! batches, drops duplicates and prepares each batch (tokenizes its text
//! into keyword cells, [`Store::prepare`]); a writer thread applies the
//! batches in LMDB transactions. Memory is bounded by the batch limits (two
//! batches in flight, plus a few files between the reader and the batcher).
//!
//! A file or message that cannot be read or parsed is skipped, counted and
//! named in the [`IngestReport`]; the run goes on. Mail gets a stable id
//! (its Message-ID's hash, else its content's), so ingesting the same files
//! again stores nothing new: every message is counted as a duplicate.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

use rowsearch_store::{Batch, Column, PutCell, ReadOptions, RowKeySchema, Store, TableSchema};

use crate::error::{Error, Result};
use crate::mail::{MailMessage, mail_schema, parse_message};

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
    /// The target table (created with [`mail_schema`] when missing).
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
}

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
    /// Messages already in the table (same mailbox, date and id).
    pub duplicates: u64,
    /// Files and messages skipped, in input order.
    pub skipped: Vec<Skipped>,
    /// Input bytes read.
    pub bytes_read: u64,
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

/// One input file and how to name what it holds.
#[derive(Debug, Clone)]
struct Input {
    path: PathBuf,
    /// Path relative to the given root (stored in `m:path`).
    relative: String,
    /// Mailbox and folder from the path.
    user: String,
    folder: String,
}

/// What the reader thread hands the writer.
enum Item {
    Row {
        key: Vec<u8>,
        cells: Vec<PutCell>,
        source: String,
        dedupe: bool,
        bytes: usize,
    },
    /// A skipped file or message; `true` when it was a message (or row).
    Skip(Skipped, bool),
    FileDone {
        bytes: u64,
    },
}

/// Ingests `paths` into `options.table`, calling `progress` as files are
/// done.
///
/// # Errors
/// `Input` when a given path does not exist; `TableMismatch` when the table
/// exists without the mail table's key and families; store errors other
/// than a bad row (a bad row is skipped).
pub fn ingest(
    store: &Store,
    paths: &[PathBuf],
    options: &IngestOptions,
    progress: &mut dyn FnMut(IngestProgress),
) -> Result<IngestReport> {
    let started = Instant::now();
    let mut report = IngestReport::default();
    let mut inputs = Vec::new();
    for path in paths {
        collect_inputs(path, options, &mut inputs, &mut report.skipped)?;
    }
    report.files_seen = inputs.len() as u64 + report.skipped.len() as u64;
    let schema = ensure_table(store, &options.table, options.format)?;
    let row_key = schema.row_key.clone();
    let total = inputs.len() as u64;
    progress(IngestProgress { files_done: 0, files_total: total, stored: 0 });

    let (tx, rx) = sync_channel::<Vec<Item>>(8);
    std::thread::scope(|scope| -> Result<()> {
        let reader_options = options.clone();
        let inputs = &inputs;
        let row_key = row_key.as_ref();
        scope.spawn(move || read_inputs(inputs, &reader_options, row_key, &tx));
        write_rows(store, options, &rx, &mut report, total, progress)
    })?;
    report.seconds = started.elapsed().as_secs_f64();
    progress(IngestProgress { files_done: total, files_total: total, stored: report.stored });
    Ok(report)
}

/// Creates the mail table when missing; checks an existing one can take
/// mail.
fn ensure_table(store: &Store, table: &str, format: Format) -> Result<TableSchema> {
    let wanted = mail_schema();
    match store.schema(table) {
        Ok(schema) => {
            if format != Format::Jsonl {
                let fits =
                    schema.row_key == wanted.row_key && ["m", "b"].iter().all(|f| schema.family(f).is_some());
                if !fits {
                    return Err(Error::TableMismatch {
                        table: table.to_owned(),
                        format: format.name(),
                        reason: "mail needs the mail table's key (user string, date u64 desc, id u64) and families m and b"
                            .into(),
                    });
                }
            }
            Ok(schema)
        }
        Err(e) if matches!(e.kind(), rowsearch_store::ErrorKind::UnknownTable { .. }) => {
            store.create_table(table, &wanted)?;
            Ok(wanted)
        }
        Err(e) => Err(e.into()),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Lists the files under `path` (sorted, so runs are repeatable).
fn collect_inputs(
    path: &Path,
    options: &IngestOptions,
    out: &mut Vec<Input>,
    skipped: &mut Vec<Skipped>,
) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|source| Error::Input { path: path.to_owned(), source })?;
    if meta.is_file() {
        let parent = path.parent().map(file_name).unwrap_or_default();
        out.push(Input {
            path: path.to_owned(),
            relative: file_name(path),
            user: options.user.clone().unwrap_or(parent),
            folder: String::new(),
        });
        return Ok(());
    }
    let root_name = file_name(&std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()));
    for entry in walkdir::WalkDir::new(path).follow_links(true).sort_by_file_name() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let source = e.path().unwrap_or(path).display().to_string();
                skipped.push(Skipped { source, reason: format!("cannot list: {e}") });
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let relative = entry.path().strip_prefix(path).unwrap_or(entry.path());
        let parts: Vec<String> =
            relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        // user/folder.../file; Maildir's cur/new/tmp are not folders.
        let (user, folders) = match parts.len() {
            0 | 1 => (root_name.clone(), &parts[..0]),
            n => (parts[0].clone(), &parts[1..n - 1]),
        };
        let folders: Vec<&str> =
            folders.iter().map(String::as_str).filter(|f| !matches!(*f, "cur" | "new" | "tmp")).collect();
        out.push(Input {
            path: entry.path().to_owned(),
            relative: parts.join("/"),
            user: options.user.clone().unwrap_or(user),
            folder: folders.join("/"),
        });
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Mbox,
    Jsonl,
}

fn kind_of(format: Format, path: &Path, head: &[u8]) -> Kind {
    match format {
        Format::Maildir | Format::Eml => Kind::Message,
        Format::Mbox => Kind::Mbox,
        Format::Jsonl => Kind::Jsonl,
        Format::Auto => {
            let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
            match ext.as_str() {
                "jsonl" | "ndjson" => Kind::Jsonl,
                "mbox" => Kind::Mbox,
                _ if head.starts_with(b"From ") => Kind::Mbox,
                _ => Kind::Message,
            }
        }
    }
}

/// The reader thread: reads, parses and encodes every input in order.
fn read_inputs(
    inputs: &[Input],
    options: &IngestOptions,
    row_key: Option<&RowKeySchema>,
    tx: &SyncSender<Vec<Item>>,
) {
    for input in inputs {
        let mut items = Vec::new();
        let source = input.path.display().to_string();
        let size = std::fs::metadata(&input.path).map(|m| m.len()).unwrap_or(0);
        let bytes = match std::fs::File::open(&input.path) {
            Err(e) => {
                items.push(Item::Skip(Skipped { source, reason: format!("cannot read: {e}") }, false));
                0
            }
            Ok(file) => {
                let mut reader = BufReader::with_capacity(64 * 1024, file);
                let head = reader.fill_buf().map(<[u8]>::to_vec).unwrap_or_default();
                let kind = kind_of(options.format, &input.path, &head);
                match kind {
                    Kind::Message => read_message(&mut reader, input, size, options, row_key, &mut items),
                    Kind::Mbox => read_mbox(reader, input, options, row_key, &mut items),
                    Kind::Jsonl => read_jsonl(reader, input, row_key, &mut items),
                }
                size
            }
        };
        items.push(Item::FileDone { bytes });
        if tx.send(items).is_err() {
            return; // The writer stopped on an error.
        }
    }
}

fn mail_row(
    raw: &[u8],
    input: &Input,
    source: String,
    path_suffix: &str,
    row_key: Option<&RowKeySchema>,
    items: &mut Vec<Item>,
) {
    let message: MailMessage = match parse_message(raw) {
        Ok(m) => m,
        Err(reason) => {
            items.push(Item::Skip(Skipped { source, reason: reason.to_string() }, true));
            return;
        }
    };
    let id = message.id(raw);
    let path = format!("{}{path_suffix}", input.relative);
    let (key_values, cells) = message.row(&input.user, id, &input.folder, &path);
    let key = match row_key.map(|rk| rk.encode(&key_values)) {
        Some(Ok(key)) => key,
        Some(Err(e)) => {
            items.push(Item::Skip(Skipped { source, reason: e.to_string() }, true));
            return;
        }
        None => {
            items.push(Item::Skip(Skipped { source, reason: "the table has no typed row key".into() }, true));
            return;
        }
    };
    items.push(Item::Row { key, cells, source, dedupe: true, bytes: raw.len() });
}

fn read_message(
    reader: &mut impl Read,
    input: &Input,
    size: u64,
    options: &IngestOptions,
    row_key: Option<&RowKeySchema>,
    items: &mut Vec<Item>,
) {
    let source = input.path.display().to_string();
    if size > options.max_message_bytes {
        let reason =
            crate::mail::NotMail::TooLarge { bytes: size, max: options.max_message_bytes }.to_string();
        items.push(Item::Skip(Skipped { source, reason }, true));
        return;
    }
    let mut raw = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    if let Err(e) = reader.take(options.max_message_bytes + 1).read_to_end(&mut raw) {
        items.push(Item::Skip(Skipped { source, reason: format!("cannot read: {e}") }, false));
        return;
    }
    mail_row(&raw, input, source, "", row_key, items);
}

fn read_mbox(
    reader: impl BufRead,
    input: &Input,
    options: &IngestOptions,
    row_key: Option<&RowKeySchema>,
    items: &mut Vec<Item>,
) {
    let folder = input.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let input = Input {
        folder: if input.folder.is_empty() { folder } else { input.folder.clone() },
        ..input.clone()
    };
    for (n, message) in mail_parser::mailbox::mbox::MessageIterator::new(reader).enumerate() {
        let source = format!("{}#{}", input.path.display(), n + 1);
        match message {
            Err(e) => {
                items.push(Item::Skip(Skipped { source, reason: format!("cannot read: {e}") }, false));
                return;
            }
            Ok(message) => {
                let raw = message.contents();
                if raw.len() as u64 > options.max_message_bytes {
                    let reason = crate::mail::NotMail::TooLarge {
                        bytes: raw.len() as u64,
                        max: options.max_message_bytes,
                    }
                    .to_string();
                    items.push(Item::Skip(Skipped { source, reason }, true));
                    continue;
                }
                mail_row(raw, &input, source, &format!("#{}", n + 1), row_key, items);
            }
        }
    }
}

/// One row of a JSON lines file: API.md's row shape.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRow {
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    key_fields: Option<serde_json::Value>,
    cells: Vec<JsonCell>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonCell {
    column: String,
    value: String,
    #[serde(default)]
    timestamp: Option<u64>,
}

fn json_row(
    line: &str,
    row_key: Option<&RowKeySchema>,
) -> std::result::Result<(Vec<u8>, Vec<PutCell>), String> {
    let row: JsonRow = serde_json::from_str(line).map_err(|e| format!("bad JSON row: {e}"))?;
    let key = match (&row.key, &row.key_fields, row_key) {
        (Some(k), _, _) => rowsearch_store::binstr::decode(k).map_err(|e| format!("bad key: {e}"))?,
        (None, Some(fields), Some(rk)) => {
            let given = fields.as_object().map_or(0, serde_json::Map::len);
            if given != rk.fields.len() {
                let names: Vec<&str> = rk.fields.iter().map(|f| f.name.as_str()).collect();
                return Err(format!("key_fields must give every key field: {}", names.join(", ")));
            }
            rk.encode_json(fields).map_err(|e| e.to_string())?
        }
        (None, Some(_), None) => return Err("key_fields given, but the table has no typed row key".into()),
        (None, None, _) => return Err("a row needs \"key\" or \"key_fields\"".into()),
    };
    if row.cells.is_empty() {
        return Err("a row needs at least one cell".into());
    }
    let mut cells = Vec::with_capacity(row.cells.len());
    for cell in row.cells {
        let column = rowsearch_store::binstr::decode(&cell.column).map_err(|e| format!("bad column: {e}"))?;
        let Column::Qualifier(family, qualifier) = Column::parse(&column) else {
            return Err(format!("column {:?} must be family:qualifier", cell.column));
        };
        let value = rowsearch_store::binstr::decode(&cell.value).map_err(|e| format!("bad value: {e}"))?;
        cells.push(PutCell { family, qualifier, timestamp: cell.timestamp, value });
    }
    Ok((key, cells))
}

fn read_jsonl(reader: impl BufRead, input: &Input, row_key: Option<&RowKeySchema>, items: &mut Vec<Item>) {
    for (n, line) in reader.split(b'\n').enumerate() {
        let source = format!("{}:{}", input.path.display(), n + 1);
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                items.push(Item::Skip(Skipped { source, reason: format!("cannot read: {e}") }, false));
                return;
            }
        };
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match json_row(&text, row_key) {
            Ok((key, cells)) => {
                items.push(Item::Row { key, cells, source, dedupe: false, bytes: line.len() })
            }
            Err(reason) => items.push(Item::Skip(Skipped { source, reason }, true)),
        }
    }
}

struct Pending {
    key: Vec<u8>,
    cells: Vec<PutCell>,
    source: String,
    dedupe: bool,
}

/// Batches rows, drops duplicates and prepares each batch (its keyword
/// cells computed, [`Store::prepare`]) on the calling thread, while a
/// writer thread applies the batch before it: tokenizing and LMDB writes
/// overlap.
fn write_rows(
    store: &Store,
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
            .spawn_scoped(scope, || write_batches(store, batch_rx, &stored))
            .map_err(|source| Error::Io { path: store.path().to_owned(), source })?;
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
fn write_batches(store: &Store, rx: Receiver<Prepared>, stored: &AtomicU64) -> Result<(u64, Vec<Skipped>)> {
    let mut skipped = Vec::new();
    for Prepared { batch, sources } in rx {
        match store.apply_prepared(&batch) {
            Ok(_) => {
                stored.fetch_add(sources.len() as u64, Ordering::Relaxed);
            }
            Err(e) if e.is_user_error() => {
                // Some row is bad: write them one by one and name it.
                for (mutation, source) in batch.into_batch().mutations.into_iter().zip(sources) {
                    let one = Batch { mutations: vec![mutation] };
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
    batch: rowsearch_store::PreparedBatch,
    sources: Vec<String>,
}

/// Where the batcher hands batches to the writer, and the writer's count
/// of rows stored (for progress).
struct Handoff<'a> {
    tx: &'a SyncSender<Prepared>,
    stored: &'a AtomicU64,
}

fn batch_rows(
    store: &Store,
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
        let keys = prepared.batch.batch().mutations.iter().map(|m| m.row().to_vec()).collect();
        if handoff.tx.send(prepared).is_err() {
            // The writer stopped on an error, which it reports.
            return Ok(());
        }
        in_flight.rotate_left(1);
        in_flight[IN_FLIGHT - 1] = keys;
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
    store: &Store,
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
        let rtxn = store.begin_read()?;
        let probe = ReadOptions::default().column(Column::Family("m".into()));
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut duplicate = vec![false; pending.len()];
        for (i, p) in pending.iter().enumerate() {
            if p.dedupe
                && (!seen.insert(&p.key)
                    || in_flight.iter().any(|keys| keys.contains(&p.key))
                    || rtxn.get(table, &p.key, &probe)?.is_some())
            {
                duplicate[i] = true;
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
    let mut batch = Batch::new();
    let mut sources = Vec::with_capacity(rows.len());
    for p in rows {
        batch.put(table, p.key, p.cells);
        sources.push(p.source);
    }
    let batch = store.prepare(batch);
    Ok(Some(Prepared { batch, sources }))
}
