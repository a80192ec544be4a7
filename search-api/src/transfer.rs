//! Exports, imports and copies of a table, between the embedded store and
//! HBase (`rowsearch export`, `import`, `copy-table`). One owner of the
//! export's layout, JSON lines:
//!
//! ```text
//! {"rowsearch_export":1,"table":T,"schema":{..},"encoding":"binary","sequence":N|null}
//! {"key":K,"cells":[{"column":"f:q","timestamp":MS,"value":V}, ..]}     one per row, in key order
//! {"rowsearch_export_end":{"rows":R,"cells":C}}
//! ```
//!
//! Every version of every cell is there with its timestamp, so importing
//! an export twice writes the same cells again: an import is idempotent
//! (it merges into the table; rows the export lacks are left alone). An
//! export without its last line is incomplete and an import says so.

use std::io::{BufRead, Write};

use rowsearch_store::{Batch, Row, Store, TableSchema, TableStore};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::json::Encoding;

/// The export layout this build writes and reads.
pub const EXPORT_LAYOUT: u64 = 1;

/// Rows written to the destination at a time (and between checkpoints of
/// a copy).
pub const BATCH_ROWS: usize = 500;

/// The bytes of cells written at a time, at most (a batch of wide rows
/// stops early).
const BATCH_BYTES: usize = 8 << 20;

/// Where rows come from or go to: wherever tables live.
#[derive(Clone, Copy)]
pub struct Place<'a>(pub &'a dyn TableStore);

impl Place<'_> {
    /// What to call it in messages.
    pub fn name(&self) -> String {
        self.0.place().to_string()
    }

    /// The place's own failure, said as the input's for a place elsewhere
    /// (a schema HBase refuses), as the store's error otherwise.
    fn err(&self, e: rowsearch_store::Error) -> Error {
        match self.0.store() {
            Some(_) => e.into(),
            None => Error::BadRequest(e.to_string()),
        }
    }

    /// Creates `table` with `schema` unless it exists (with any schema:
    /// the writes then say which family is missing). Secondary indexes
    /// are the embedded store's alone for now: a table elsewhere goes
    /// without them (a copy back rebuilds none).
    fn ensure_table(&self, table: &str, schema: &TableSchema) -> Result<()> {
        if self.0.schema(table).is_ok() {
            return Ok(());
        }
        let schema = match self.0.store() {
            Some(_) => schema.clone(),
            None => TableSchema { indexes: Vec::new(), ..schema.clone() },
        };
        self.0.create_table(table, &schema).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every row of `table` after `after` (all when `None`), in key order,
    /// each with every version of its cells, to `f`, after `opened` got
    /// the table's schema and the store's last sequence of the snapshot
    /// read (`None` for HBase), from that snapshot.
    fn each_row(
        &self,
        table: &str,
        after: Option<&[u8]>,
        opened: &mut dyn FnMut(TableSchema, Option<u64>) -> Result<()>,
        f: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
    ) -> Result<()> {
        // The first key after `after`: it with a zero byte.
        let start = after.map(|k| [k, &[0u8][..]].concat());
        let mut failed = None;
        let mut opened = |schema, seq| {
            opened(schema, seq).map_err(|e| {
                failed = Some(e);
                rowsearch_store::Error::callback(std::io::Error::other("stopped"))
            })
        };
        match self.0.each_version(table, start.as_deref(), &mut opened, f) {
            Ok(()) => Ok(()),
            Err(e) => Err(failed.take().unwrap_or_else(|| e.into())),
        }
    }

    /// Writes `rows` (each cell at its own timestamp).
    fn put_rows(&self, table: &str, rows: Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>) -> Result<()> {
        self.0.put_rows(table, &rows).map_err(|e| self.err(e))?;
        Ok(())
    }
}

/// The first line of an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportHeader {
    /// [`EXPORT_LAYOUT`].
    pub rowsearch_export: u64,
    /// The table exported.
    pub table: String,
    /// Its schema.
    pub schema: TableSchema,
    /// How keys, columns and values are written (`binary`, `base64`, `hex`).
    pub encoding: String,
    /// The store's last sequence in the snapshot exported (`null` from
    /// HBase): follow the change feed after it to stay current.
    pub sequence: Option<u64>,
}

/// One row of an export.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportRow {
    key: String,
    cells: Vec<ExportCell>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportCell {
    column: String,
    timestamp: u64,
    value: String,
}

/// The last line of an export.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportEnd {
    rowsearch_export_end: Counts,
}

/// Rows and cells moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Rows.
    pub rows: u64,
    /// Cells (every version).
    pub cells: u64,
}

fn export_row(row: &Row, encoding: Encoding) -> ExportRow {
    let cells = row
        .cells
        .iter()
        .map(|c| {
            let column = [c.family.as_bytes(), b":", &c.qualifier].concat();
            ExportCell {
                column: encoding.encode(&column),
                timestamp: c.timestamp,
                value: encoding.encode(&c.value),
            }
        })
        .collect();
    ExportRow { key: encoding.encode(&row.key), cells }
}

fn import_row(
    line: &ExportRow,
    encoding: Encoding,
    at: usize,
) -> Result<(Vec<u8>, Vec<rowsearch_store::PutCell>)> {
    let bad = |what: &str, e: String| Error::BadRequest(format!("line {at}: {what}: {e}"));
    let key = encoding.decode(&line.key).map_err(|e| bad("key", e))?;
    let mut cells = Vec::with_capacity(line.cells.len());
    for c in &line.cells {
        let column = encoding.decode(&c.column).map_err(|e| bad("column", e))?;
        let Some(colon) = column.iter().position(|&b| b == b':') else {
            return Err(bad("column", format!("{:?} is not family:qualifier", c.column)));
        };
        let family = std::str::from_utf8(&column[..colon])
            .map_err(|_| bad("column", format!("the family of {:?} is not UTF-8", c.column)))?;
        let value = encoding.decode(&c.value).map_err(|e| bad("value", e))?;
        cells
            .push(rowsearch_store::PutCell::new(family, column[colon + 1..].to_vec(), value).at(c.timestamp));
    }
    Ok((key, cells))
}

/// Writes `table` of `from` to `out` as an export (one snapshot of the
/// store; HBase's rows as its scan reads them), calling `progress` with
/// the counts so far now and then.
///
/// # Errors
/// `UnknownTable`; the source's failures; `out`'s as `BadRequest`.
pub fn export(
    from: Place<'_>,
    table: &str,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(Counts),
) -> Result<Counts> {
    let encoding = Encoding::Binary;
    let io = |e: std::io::Error| Error::BadRequest(format!("writing the export: {e}"));
    let mut counts = Counts::default();
    let mut failed = None;
    // The header is written once the snapshot is open: its schema and
    // sequence are the rows'.
    let out = std::cell::RefCell::new(out);
    let mut header = |schema: TableSchema, sequence: Option<u64>| -> Result<()> {
        let header = ExportHeader {
            rowsearch_export: EXPORT_LAYOUT,
            table: table.to_owned(),
            schema,
            encoding: "binary".to_owned(),
            sequence,
        };
        let line = serde_json::to_string(&header).map_err(|e| Error::BadRequest(e.to_string()))?;
        writeln!(out.borrow_mut(), "{line}").map_err(io)
    };
    let read = from.each_row(table, None, &mut header, &mut |row| {
        counts.rows += 1;
        counts.cells += row.cells.len() as u64;
        let line = serde_json::to_string(&export_row(&row, encoding)).unwrap_or_default();
        if let Err(e) = writeln!(out.borrow_mut(), "{line}") {
            failed = Some(e);
            return Err(rowsearch_store::Error::callback(std::io::Error::other(
                "the export's output failed",
            )));
        }
        if counts.rows % 1000 == 0 {
            progress(counts);
        }
        Ok(())
    });
    if let Some(e) = failed {
        return Err(io(e));
    }
    read?;
    let end = serde_json::to_string(&ExportEnd { rowsearch_export_end: counts }).unwrap_or_default();
    let out = out.into_inner();
    writeln!(out, "{end}").map_err(io)?;
    out.flush().map_err(io)?;
    progress(counts);
    Ok(counts)
}

/// Reads an export from `input` into `to` (as table `rename`, or the
/// export's), creating the table from the export's schema when it is
/// missing, `BATCH_ROWS` rows per write.
///
/// # Errors
/// `BadRequest` for a line that is not the export's (named by number), a
/// newer layout, or an export without its last line (after importing what
/// it held); the destination's failures.
pub fn import(
    to: Place<'_>,
    input: &mut dyn BufRead,
    rename: Option<&str>,
    progress: &mut dyn FnMut(Counts),
) -> Result<Counts> {
    let mut lines = input.lines().enumerate();
    let io = |e: std::io::Error| Error::BadRequest(format!("reading the export: {e}"));
    let Some((_, first)) = lines.next() else {
        return Err(Error::BadRequest("the export is empty: no header line".into()));
    };
    let header: ExportHeader = serde_json::from_str(&first.map_err(io)?)
        .map_err(|e| Error::BadRequest(format!("line 1 is not an export header: {e}")))?;
    if header.rowsearch_export != EXPORT_LAYOUT {
        return Err(Error::BadRequest(format!(
            "the export's layout is {}; this build reads layout {EXPORT_LAYOUT}",
            header.rowsearch_export
        )));
    }
    let encoding = Encoding::parse(Some(&header.encoding)).map_err(|e| Error::BadRequest(e.to_string()))?;
    let table = rename.unwrap_or(&header.table);
    to.ensure_table(table, &header.schema)?;
    let mut counts = Counts::default();
    let mut ended = None;
    // Batches are read, parsed and prepared here while the one before is
    // written on another thread (bench/export_import.py).
    let read = std::thread::scope(|scope| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Work<'_>>(1);
        let writer = scope.spawn(move || -> Result<()> {
            for work in rx {
                work.write(table)?;
            }
            Ok(())
        });
        let mut batch = Vec::new();
        let mut batch_bytes = 0;
        let hand = move |batch: Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>, counts: &mut Counts| {
            counts.rows += batch.len() as u64;
            // A failed writer has dropped its end: its error is the one.
            tx.send(Work::of(to, table, batch)).is_ok()
        };
        let parsed = (|| -> Result<()> {
            for (i, line) in lines {
                let line = line.map_err(io)?;
                let at = i + 1;
                if ended.is_some() {
                    return Err(Error::BadRequest(format!("line {at}: a line after the export's last")));
                }
                if line.starts_with("{\"rowsearch_export_end\"") {
                    let end: ExportEnd = serde_json::from_str(&line)
                        .map_err(|e| Error::BadRequest(format!("line {at}: {e}")))?;
                    ended = Some(end.rowsearch_export_end);
                    continue;
                }
                let row: ExportRow = serde_json::from_str(&line)
                    .map_err(|e| Error::BadRequest(format!("line {at}: not a row: {e}")))?;
                let (key, cells) = import_row(&row, encoding, at)?;
                batch_bytes += cells.iter().map(|c| c.value.len() + c.qualifier.len()).sum::<usize>();
                counts.cells += cells.len() as u64;
                batch.push((key, cells));
                if batch.len() >= BATCH_ROWS || batch_bytes >= BATCH_BYTES {
                    batch_bytes = 0;
                    if !hand(std::mem::take(&mut batch), &mut counts) {
                        return Ok(());
                    }
                    progress(counts);
                }
            }
            if !batch.is_empty() {
                hand(std::mem::take(&mut batch), &mut counts);
            }
            Ok(())
        })();
        drop(hand);
        let written = writer.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        written.and(parsed)
    });
    read?;
    progress(counts);
    match ended {
        Some(end) if end == counts => Ok(counts),
        Some(end) => Err(Error::BadRequest(format!(
            "the export says it holds {} rows and {} cells, but {} rows and {} cells were read",
            end.rows, end.cells, counts.rows, counts.cells
        ))),
        None => Err(Error::BadRequest(format!(
            "the export ends without its last line: it is incomplete (its {} rows were imported; import a complete export again)",
            counts.rows
        ))),
    }
}

/// A batch on its way to the destination: the store's prepared (its
/// keyword cells made before the write transaction), HBase's as rows.
enum Work<'a> {
    Prepared(&'a Store, rowsearch_store::PreparedBatch),
    Rows(Place<'a>, Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>),
}

impl<'a> Work<'a> {
    fn of(to: Place<'a>, table: &str, rows: Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>) -> Work<'a> {
        match to.0.store() {
            Some(store) => {
                let rows = unchanged_left_out(store, table, rows);
                let mut batch = Batch::new();
                for (key, cells) in rows {
                    batch.put(table, key, cells);
                }
                Work::Prepared(store, store.prepare(batch))
            }
            None => Work::Rows(to, rows),
        }
    }

    fn write(self, table: &str) -> Result<()> {
        match self {
            Work::Prepared(store, prepared) => {
                store.apply_prepared(&prepared)?;
                Ok(())
            }
            Work::Rows(to, rows) => to.put_rows(table, rows),
        }
    }
}

/// `rows` without the cells the store already holds as they are (same
/// column, timestamp and value), and without the rows left with none: an
/// import of what a table holds writes nothing (no change-feed entry, no
/// keyword cells made again). A batch whose rows cannot be read is written
/// whole (the write says what is wrong).
fn unchanged_left_out(
    store: &Store,
    table: &str,
    rows: Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>,
) -> Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)> {
    let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| k.as_slice()).collect();
    let read = rowsearch_store::ReadOptions { versions: rowsearch_store::ALL_VERSIONS, ..Default::default() };
    let Ok(stored) = store.multi_get(table, &keys, &read) else { return rows };
    rows.into_iter()
        .zip(stored)
        .filter_map(|((key, cells), stored)| {
            let Some(stored) = stored else { return Some((key, cells)) };
            let held = |c: &rowsearch_store::PutCell| {
                c.timestamp.is_some_and(|ts| {
                    stored.cells.iter().any(|s| {
                        s.timestamp == ts
                            && *s.family == *c.family
                            && s.qualifier == c.qualifier
                            && s.value == c.value
                    })
                })
            };
            let cells: Vec<_> = cells.into_iter().filter(|c| !held(c)).collect();
            (!cells.is_empty()).then_some((key, cells))
        })
        .collect()
}

/// Where a copy stands, kept in its checkpoint file after each batch the
/// destination has taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// The table copied.
    pub table: String,
    /// The source's name.
    pub from: String,
    /// The destination's name (and table).
    pub to: String,
    /// The last row key copied, hex (`None`: none yet).
    pub last_key: Option<String>,
    /// What was copied so far.
    pub copied: Counts,
    /// Whether the copy finished.
    pub complete: bool,
}

impl Checkpoint {
    fn write(&self, path: &std::path::Path) -> Result<()> {
        let io =
            |e: std::io::Error| Error::BadRequest(format!("writing the checkpoint {}: {e}", path.display()));
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self).unwrap_or_default();
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        file.write_all(&text).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(())
    }

    /// The checkpoint in `path`, if any.
    ///
    /// # Errors
    /// `BadRequest` for a file that is not one.
    pub fn read(path: &std::path::Path) -> Result<Option<Checkpoint>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::BadRequest(format!("{} is not a copy checkpoint: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::BadRequest(format!("reading {}: {e}", path.display()))),
        }
    }
}

/// Copies `table` of `from` into table `to_table` of `to` (created with the
/// source's schema when missing), in key order, `batch_rows` rows at a
/// time ([`BATCH_ROWS`] is a good number), writing `checkpoint` after each: killed, the next run with the
/// same checkpoint goes on after the last batch the destination took (the
/// rows of a batch cut short are written again: writes of the same cells
/// at the same timestamps change nothing). A checkpoint of a finished copy
/// starts a new one. `progress` gets the counts so far.
///
/// # Errors
/// `BadRequest` for a checkpoint of another copy; either side's failures.
pub fn copy_table(
    from: Place<'_>,
    to: Place<'_>,
    table: &str,
    to_table: &str,
    checkpoint: &std::path::Path,
    batch_rows: usize,
    progress: &mut dyn FnMut(&Checkpoint),
) -> Result<Checkpoint> {
    let mut state = Checkpoint {
        table: table.to_owned(),
        from: from.name(),
        to: format!("{} table {to_table}", to.name()),
        ..Checkpoint::default()
    };
    if let Some(earlier) = Checkpoint::read(checkpoint)? {
        if (&earlier.table, &earlier.from, &earlier.to) != (&state.table, &state.from, &state.to) {
            return Err(Error::BadRequest(format!(
                "the checkpoint {} is of another copy (table {} from {} to {}): give another --checkpoint",
                checkpoint.display(),
                earlier.table,
                earlier.from,
                earlier.to
            )));
        }
        if !earlier.complete {
            state = earlier;
        }
    }
    let schema = from.0.schema(table)?;
    to.ensure_table(to_table, &schema)?;
    let after = match &state.last_key {
        Some(hex) => Some(Encoding::Hex.decode(hex).map_err(Error::BadRequest)?),
        None => None,
    };
    state.write(checkpoint)?;
    let mut batch: Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)> = Vec::new();
    let mut batch_bytes = 0;
    let mut flush =
        |batch: &mut Vec<(Vec<u8>, Vec<rowsearch_store::PutCell>)>, state: &mut Checkpoint| -> Result<()> {
            let Some((last, _)) = batch.last() else { return Ok(()) };
            state.last_key = Some(Encoding::Hex.encode(last));
            state.copied.rows += batch.len() as u64;
            state.copied.cells += batch.iter().map(|(_, c)| c.len() as u64).sum::<u64>();
            to.put_rows(to_table, std::mem::take(batch))?;
            state.write(checkpoint)?;
            progress(state);
            Ok(())
        };
    let mut failed = None;
    let read = from.each_row(table, after.as_deref(), &mut |_, _| Ok(()), &mut |row| {
        batch_bytes += row.cells.iter().map(|c| c.value.len() + c.qualifier.len()).sum::<usize>();
        let cells = row
            .cells
            .into_iter()
            .map(|c| rowsearch_store::PutCell::new(&*c.family, c.qualifier, c.value).at(c.timestamp))
            .collect();
        batch.push((row.key, cells));
        if batch.len() >= batch_rows.max(1) || batch_bytes >= BATCH_BYTES {
            batch_bytes = 0;
            if let Err(e) = flush(&mut batch, &mut state) {
                failed = Some(e);
                return Err(rowsearch_store::Error::callback(std::io::Error::other(
                    "the copy's write failed",
                )));
            }
        }
        Ok(())
    });
    if let Some(e) = failed {
        return Err(e);
    }
    read?;
    flush(&mut batch, &mut state)?;
    state.complete = true;
    state.write(checkpoint)?;
    progress(&state);
    Ok(state)
}
