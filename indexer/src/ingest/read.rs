//! The reading side of an ingest: walking the inputs, detecting each
//! file's format, and parsing mail (Maildir files, mbox, .eml) and JSON
//! lines into rows, on the reader thread.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rowsearch_store::{Column, PutCell, RowKeySchema};

use super::ahead::{Ahead, Item};
use super::options::{Format, IngestOptions, Skipped};
use crate::error::{Error, Result};
use crate::mail::{MailMessage, parse_message};

/// One input file and how to name what it holds.
#[derive(Debug, Clone)]
pub(super) struct Input {
    path: PathBuf,
    /// Path relative to the given root (stored in `m:path`).
    relative: String,
    /// Mailbox and folder from the path.
    user: String,
    folder: String,
}

/// How the reader makes row keys: the table's typed key, and whether
/// copies fold (a message's key from its content, not its Message-ID).
#[derive(Clone, Copy)]
pub(super) struct RowKeys<'a> {
    pub row_key: Option<&'a RowKeySchema>,
    pub fold_copies: bool,
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Lists the files under `path` (sorted, so runs are repeatable).
pub(super) fn collect_inputs(
    path: &Path,
    options: &IngestOptions,
    out: &mut Vec<Input>,
    skipped: &mut Vec<Skipped>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|source| Error::Input { path: path.to_owned(), source })?;
    if meta.is_file() {
        let parent = path.parent().map(file_name).unwrap_or_default();
        // A file given alone in the current directory (`ingest list.mbox`)
        // has no directory to name its mailbox: the file's name does.
        let user = match &options.user {
            Some(user) => user.clone(),
            None if parent.is_empty() => {
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                notes.push(format!(
                    "{}: mailbox {stem:?}, named from the file (--user NAME chooses another)",
                    path.display()
                ));
                stem
            }
            // `ingest craft/team-x.mbox`: its directory names the mailbox,
            // and the run says so (as a Maildir tree's user directory would).
            None => {
                notes.push(format!(
                    "{}: mailbox {parent:?}, named from its directory (--user NAME chooses another)",
                    path.display()
                ));
                parent
            }
        };
        out.push(Input { path: path.to_owned(), relative: file_name(path), user, folder: String::new() });
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

/// Within a file, parsed rows are handed over once they hold this many
/// bytes of input (an mbox or a JSON lines file is not held whole).
const CHUNK_BYTES: usize = 1 << 20;

/// What the reader has parsed and not yet handed over.
pub(super) struct Parsed<'a> {
    items: Vec<Item>,
    bytes: usize,
    ahead: &'a Ahead,
    /// The batching side is gone: stop reading.
    stopped: bool,
}

impl Parsed<'_> {
    fn push(&mut self, item: Item) {
        if let Item::Row { bytes, .. } = &item {
            self.bytes += bytes;
        }
        self.items.push(item);
        if self.bytes >= CHUNK_BYTES {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let items = std::mem::take(&mut self.items);
        if !items.is_empty() && !self.ahead.send(items, self.bytes) {
            self.stopped = true;
        }
        self.bytes = 0;
    }
}

/// The reader thread: reads, parses and encodes every input in order.
pub(super) fn read_inputs(inputs: &[Input], options: &IngestOptions, keys: RowKeys<'_>, ahead: &Ahead) {
    let row_key = keys.row_key;
    let mut items = Parsed { items: Vec::new(), bytes: 0, ahead, stopped: false };
    for input in inputs {
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
                    Kind::Message => read_message(&mut reader, input, size, options, keys, &mut items),
                    Kind::Mbox => read_mbox(reader, input, options, keys, &mut items),
                    Kind::Jsonl => read_jsonl(reader, input, row_key, &mut items),
                }
                size
            }
        };
        items.push(Item::FileDone { bytes });
        items.hand_over();
        if items.stopped {
            return; // The batching side stopped on an error.
        }
    }
}

fn mail_row(
    raw: &[u8],
    input: &Input,
    source: String,
    path_suffix: &str,
    keys: RowKeys<'_>,
    items: &mut Parsed<'_>,
) {
    let message: MailMessage = match parse_message(raw) {
        Ok(m) => m,
        Err(reason) => {
            items.push(Item::Skip(Skipped { source, reason: reason.to_string() }, true));
            return;
        }
    };
    let by_message_id = message.id(raw);
    let id = if keys.fold_copies { message.content_id() } else { by_message_id };
    let path = format!("{}{path_suffix}", input.relative);
    let (key_values, cells) = message.row(&input.user, id, &input.folder, &path);
    // The key an earlier build gave the message (by its Message-ID): that
    // row goes when the message is written under its content's key.
    let legacy = (id != by_message_id)
        .then(|| message.key(&input.user, by_message_id))
        .and_then(|values| keys.row_key.and_then(|rk| rk.encode(&values).ok()));
    let key = match keys.row_key.map(|rk| rk.encode(&key_values)) {
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
    items.push(Item::Row { key, cells, source, dedupe: true, bytes: raw.len(), legacy });
}

fn read_message(
    reader: &mut impl Read,
    input: &Input,
    size: u64,
    options: &IngestOptions,
    keys: RowKeys<'_>,
    items: &mut Parsed<'_>,
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
    mail_row(&raw, input, source, "", keys, items);
}

fn read_mbox(
    reader: impl BufRead,
    input: &Input,
    options: &IngestOptions,
    keys: RowKeys<'_>,
    items: &mut Parsed<'_>,
) {
    let folder = input.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let input = Input {
        folder: if input.folder.is_empty() { folder } else { input.folder.clone() },
        ..input.clone()
    };
    for (n, message) in mail_parser::mailbox::mbox::MessageIterator::new(reader).enumerate() {
        if items.stopped {
            return;
        }
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
                mail_row(raw, &input, source, &format!("#{}", n + 1), keys, items);
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

fn read_jsonl(reader: impl BufRead, input: &Input, row_key: Option<&RowKeySchema>, items: &mut Parsed<'_>) {
    for (n, line) in reader.split(b'\n').enumerate() {
        if items.stopped {
            return;
        }
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
                items.push(Item::Row { key, cells, source, dedupe: false, bytes: line.len(), legacy: None })
            }
            Err(reason) => items.push(Item::Skip(Skipped { source, reason }, true)),
        }
    }
}
