//! The data commands over tables in an Apache HBase cluster (`--hbase
//! HOST:PORT`): `tables`, `create-table`, `drop-table`, `put`, `get`
//! (`ingest`, `keywords`, `reindex`, `verify` and `search` take `--hbase`
//! in their own files, through [`source`]).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use rowsearch::hbase::HbaseSource;
use rowsearch::json::row_json;

use super::args::{Args, DataCommand, UsageError};
use super::common::{bytes, read_options};
use super::data::{put_cells, schema_arg};

/// The tables behind HBase's Thrift2 gateway at `addr`, with the
/// indexer's analyzer.
pub(super) fn source(addr: &str) -> HbaseSource {
    HbaseSource::new(addr, std::sync::Arc::new(rowsearch::indexer::TextAnalyzer))
}

/// Runs a data command against the HBase behind `addr`.
pub(super) fn run(addr: &str, command: &DataCommand, out: &mut impl Write) -> Result<ExitCode> {
    let source = source(addr);
    let hbase = source.tables();
    match command {
        DataCommand::Tables => {
            for t in hbase.tables()? {
                writeln!(out, "{t}")?;
            }
        }
        DataCommand::CreateTable { table, schema } => {
            let created = source.create_table(table, &schema_arg(schema)?)?;
            writeln!(
                out,
                "{} table {table} in HBase",
                if created { "created" } else { "exists, identical:" }
            )?;
        }
        DataCommand::DropTable { table } => {
            source.drop_table(table)?;
            writeln!(out, "dropped table {table} in HBase")?;
        }
        DataCommand::Put { table, key, cells, timestamp, key_fields } => {
            // With --key-fields, the first positional is a cell.
            let (key, cells): (Vec<u8>, Vec<&String>) = match key_fields {
                Some(fields) => {
                    let schema = hbase.schema(table)?;
                    let row = rowsearch::json::key_from_fields(&schema, table, fields)?;
                    (row, std::iter::once(key).chain(cells).collect())
                }
                None => (bytes("key", key)?, cells.iter().collect()),
            };
            source.put_rows(table, &[(key, put_cells(&cells, *timestamp)?)])?;
            writeln!(out, "ok")?;
        }
        DataCommand::Get { table, key: Some(key), key_fields: None, read } => {
            if read_options(read)? != rowsearch::store::ReadOptions::default() {
                return Err(UsageError(
                    "get --hbase reads the newest cell of each column; --columns, --versions and time \
                     ranges are not read from HBase yet: read them with the embedded store or HBase's shell"
                        .into(),
                )
                .into());
            }
            let key = bytes("key", key)?;
            let schema = hbase.schema(table)?;
            match hbase.get(table, &[&key])?.pop().flatten() {
                Some(row) => writeln!(out, "{}", row_json(&row, schema.row_key.as_ref()))?,
                None => {
                    eprintln!("row not found");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        _ => {
            return Err(UsageError(
                "with --hbase: tables, create-table, drop-table, put, get KEY \
                 (no --key-fields; the newest cell of each column); scans, deletes, counts and the other \
                 data commands are the embedded store's (HBase's own shell and clients do them there)"
                    .into(),
            )
            .into());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A searcher over the tables of `--data`, or of HBase with `--hbase` (its
/// index generations then in `--data`, made when missing).
pub(super) fn searcher(args: &Args) -> Result<rowsearch::Searcher> {
    Ok(match &args.hbase {
        Some(addr) => {
            let rows: std::sync::Arc<dyn rowsearch::store::RowSource> = std::sync::Arc::new(source(addr));
            rowsearch::Searcher::over(std::sync::Arc::new(super::common::create(args)?), rows)
        }
        None => rowsearch::Searcher::new(std::sync::Arc::new(super::common::open(args)?)),
    })
}
