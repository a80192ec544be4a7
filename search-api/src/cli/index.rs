//! Secondary indexes: `index lookup`, `add`, `drop`, `rebuild`, `verify`.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use rowsearch::store::{IndexQuery, IndexSchema, ReadOptions};
use rowsearch::wire;

use super::args::{Args, IndexCommand};
use super::common::bytes;
use super::progress::Progress;
use rowsearch::json::row_json;

/// A build of an index, reporting (done, total) to the callback.
type IndexBuild<'a> = dyn Fn(&mut dyn FnMut(u64, u64)) -> rowsearch::store::Result<()> + 'a;

/// Runs an index command.
pub(super) fn run(args: &Args, command: &IndexCommand, out: &mut impl Write) -> Result<ExitCode> {
    let store = super::place::tables(args, false)?;
    let started = Instant::now();
    let build = |table: &str, index: &str, run: &IndexBuild<'_>| -> Result<()> {
        let mut progress =
            Progress::new(format!("indexing {table}/{index}"), "cells", Duration::from_secs(5));
        run(&mut |done, total| progress.update(done, total, ""))?;
        progress.finish();
        Ok(())
    };
    match command {
        IndexCommand::Lookup { table, index, eq, prefix, start, stop, limit, cursor, rows } => {
            let query = IndexQuery {
                eq: eq.iter().map(|v| bytes("--eq", v)).collect::<Result<_>>()?,
                prefix: prefix.as_deref().map(|v| bytes("--prefix", v)).transpose()?,
                start: start.as_deref().map(|v| bytes("--start", v)).transpose()?,
                stop: stop.as_deref().map(|v| bytes("--stop", v)).transpose()?,
                limit: *limit,
                cursor: cursor.clone(),
                region: None,
            };
            let row_key = store.schema(table)?.row_key;
            let next = if *rows {
                let (page, rows) = store.index_rows(table, index, &query, &ReadOptions::default())?;
                for row in rows.iter().flatten() {
                    writeln!(out, "{}", row_json(row, row_key.as_ref()))?;
                }
                page.next_cursor
            } else {
                let page = store.index_lookup(table, index, &query)?;
                for hit in &page.hits {
                    let values: Vec<String> = hit.values.iter().map(|v| wire::encode(v)).collect();
                    writeln!(
                        out,
                        "{}",
                        serde_json::json!({ "key": wire::encode(&hit.key), "values": values })
                    )?;
                }
                page.next_cursor
            };
            if let Some(next) = next {
                eprintln!("next cursor: {next}");
            }
        }
        IndexCommand::Add { table, index, columns } => {
            let schema = IndexSchema::new(index.as_str(), columns.iter().map(String::as_str));
            build(table, index, &|progress| {
                store.start_index(table, schema.clone())?;
                store.finish_index_build(table, index, progress)
            })?;
            writeln!(out, "added index {index} to {table} in {:.1}s", started.elapsed().as_secs_f64())?;
        }
        IndexCommand::Drop { table, index } => {
            store.drop_index(table, index)?;
            writeln!(out, "dropped index {index} of {table}")?;
        }
        IndexCommand::Rebuild { table, index } => {
            build(table, index, &|progress| {
                store.start_index_rebuild(table, index)?;
                store.finish_index_build(table, index, progress)
            })?;
            writeln!(out, "rebuilt index {index} of {table} in {:.1}s", started.elapsed().as_secs_f64())?;
        }
        IndexCommand::Verify { table, index } => {
            let report = store.verify_index(table, index)?;
            writeln!(out, "{}", rowsearch::json::verify_json(&report))?;
            if !report.is_clean() {
                eprintln!("index {index} of {table} disagrees with the rows");
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
