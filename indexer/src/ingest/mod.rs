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
//!
//! Files: `options` (what is asked and reported), `read` (walking and
//! parsing, the reader thread), `write` (batching, preparing and the
//! writer thread). What mail is (its table, fields and parsing) is
//! `crate::mail`'s.

mod ahead;
mod options;
mod read;
mod write;

use std::path::PathBuf;
use std::time::Instant;

use rowsearch_store::TableSchema;

pub use options::{
    DEFAULT_INGEST_NICE, DEFAULT_MAX_MESSAGE_BYTES, Format, IngestOptions, IngestProgress, IngestReport,
    MIN_INGEST_MEMORY_MB, Skipped,
};

use crate::error::{Error, Result};
use crate::mail::{MAIL_DISPLAY, MAIL_TABLE_SHAPE, fits_mail, mail_schema};
use read::{collect_inputs, read_inputs};
use write::{Target, write_rows};

/// Ingests `paths` into `options.table` of `tables` (the embedded store:
/// `&store`; or tables elsewhere), calling `progress`
/// as files are done. Into the store, each batch is prepared (its keyword
/// cells computed) while the one before is written; elsewhere, each batch
/// is written with [`rowsearch_store::TableStore::put_rows`].
///
/// # Errors
/// `Input` when a given path does not exist; `TableMismatch` when the table
/// exists without the mail table's key and families; store errors other
/// than a bad row (a bad row is skipped).
pub fn ingest(
    tables: &dyn rowsearch_store::TableStore,
    paths: &[PathBuf],
    options: &IngestOptions,
    progress: &mut dyn FnMut(IngestProgress),
) -> Result<IngestReport> {
    ingest_into(Target::of(tables), paths, options, progress)
}

fn ingest_into(
    store: Target<'_>,
    paths: &[PathBuf],
    options: &IngestOptions,
    progress: &mut dyn FnMut(IngestProgress),
) -> Result<IngestReport> {
    let started = Instant::now();
    let mut report = IngestReport::default();
    let mut inputs = Vec::new();
    for path in paths {
        collect_inputs(path, options, &mut inputs, &mut report.skipped, &mut report.notes)?;
    }
    report.files_seen = inputs.len() as u64 + report.skipped.len() as u64;
    let schema = ensure_table(store, &options.table, options.format, options.shards)?;
    let row_key = schema.row_key.clone();
    let fold_copies =
        options.format != Format::Jsonl && schema.threads.as_ref().is_some_and(|t| t.fold_copies);
    let total = inputs.len() as u64;
    progress(IngestProgress { files_done: 0, files_total: total, stored: 0 });

    // Up to a batch read ahead (files and bytes): the reader parses the
    // next batch while the one before is tokenized (with 8 files, as
    // before, it waited for most of each batch's tokenizing: 0.93x the
    // time with a batch, 1.0x with a quarter; BENCHMARKS "Issue 65,
    // eleventh part").
    let (ahead, behind) = ahead::read_ahead(options.batch_rows, options.batch_bytes);
    std::thread::scope(|scope| -> Result<()> {
        let reader_options = options.clone();
        let inputs = &inputs;
        let keys = read::RowKeys { row_key: row_key.as_ref(), fold_copies };
        scope.spawn(move || {
            crate::priority::lower_thread_priority(reader_options.nice);
            read_inputs(inputs, &reader_options, keys, &ahead)
        });
        // Takes `behind`: when it returns (an error too), the reader stops.
        write_rows(store, options, behind, &mut report, total, progress)
    })?;
    report.seconds = started.elapsed().as_secs_f64();
    progress(IngestProgress { files_done: total, files_total: total, stored: report.stored });
    Ok(report)
}

/// Creates the mail table when missing; checks an existing one can take
/// mail.
fn ensure_table(store: Target<'_>, table: &str, format: Format, shards: Option<u32>) -> Result<TableSchema> {
    let mut wanted = mail_schema();
    if let Some(search) = wanted.search.as_mut() {
        search.shards = shards;
    }
    let schema = match store {
        Target::Store(store) => store.schema(table),
        Target::Elsewhere(tables) => tables.schema(table),
    };
    match schema {
        Ok(schema) => {
            let has = schema.search.as_ref().map_or(1, |s| s.shard_count());
            if let Some(asked) = shards.filter(|n| *n != has) {
                return Err(Error::TableMismatch {
                    table: table.to_owned(),
                    format: format.name(),
                    reason: format!(
                        "the table exists with {has} shard(s), not {asked}: leave --shards out, or ingest into a new table"
                    ),
                });
            }
            if format != Format::Jsonl && !fits_mail(&schema) {
                return Err(Error::TableMismatch {
                    table: table.to_owned(),
                    format: format.name(),
                    reason: MAIL_TABLE_SHAPE.into(),
                });
            }
            // A mail table an earlier build made without threads gets them
            // (its `id` and `thread` fields, its keyword cells of them; the
            // messages thread as they are ingested again).
            if let (Target::Store(store), Some(extended)) = (store, with_threads(&schema, format)) {
                store.extend_search(table, &extended)?;
                return Ok(store.schema(table)?);
            }
            // A mail table an earlier build made (no display setting, a
            // body among its fields) takes the mail table's display, as far
            // as its documents have those names.
            let search = schema.search.as_ref().filter(|s| s.display.is_none() && format != Format::Jsonl);
            if let (Target::Store(store), Some(search)) = (store, search)
                && search.fields.iter().any(|f| f.name == "body")
            {
                let names = search.document_names();
                let display: Vec<String> =
                    MAIL_DISPLAY.iter().filter(|n| names.contains(n)).map(|n| (*n).to_owned()).collect();
                store.set_display(table, Some(display))?;
                return Ok(store.schema(table)?);
            }
            Ok(schema)
        }
        Err(e) if matches!(e.kind(), rowsearch_store::ErrorKind::UnknownTable { .. }) => {
            // A table elsewhere threads and folds copies and keeps its
            // secondary indexes as the store does.
            match store {
                Target::Store(store) => store.create_table(table, &wanted)?,
                Target::Elsewhere(tables) => tables.create_table(table, &wanted)?,
            };
            Ok(wanted)
        }
        Err(e) => Err(e.into()),
    }
}

/// A mail table's schema from an earlier build, without threads, given the
/// mail table's threads, its `id` and `thread` fields, and the thread in
/// its display; `None` when it has threads (or is not mail).
fn with_threads(schema: &TableSchema, format: Format) -> Option<TableSchema> {
    let wanted = mail_schema();
    // A table with a thread field but no threads section was made so on
    // purpose (the mail schema without threads): it is left as it is.
    let has_thread_field =
        schema.search.as_ref().is_some_and(|s| s.fields.iter().any(|f| f.name == "thread"));
    if format == Format::Jsonl || schema.threads.is_some() || has_thread_field || !fits_mail(schema) {
        return None;
    }
    let mut extended = schema.clone();
    let search = extended.search.as_mut()?;
    for field in wanted.search.as_ref()?.fields.iter() {
        if !search.fields.iter().any(|f| f.name == field.name) {
            search.fields.push(field.clone());
        }
    }
    match &mut search.display {
        Some(display) if !display.iter().any(|n| n == "thread") => display.push("thread".into()),
        Some(_) => {}
        // An earlier build's table without a display (a body among its
        // fields) takes the mail table's, as far as its documents have
        // those names.
        None if search.fields.iter().any(|f| f.name == "body") => {
            let names = search.document_names();
            search.display =
                Some(MAIL_DISPLAY.iter().filter(|n| names.contains(n)).map(|n| (*n).to_owned()).collect());
        }
        None => {}
    }
    extended.threads = wanted.threads;
    Some(extended)
}
