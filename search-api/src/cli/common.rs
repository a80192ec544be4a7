//! What every command group uses: opening the store, binary strings from
//! the command line, read options.

use anyhow::{Context, Result};
use rowsearch::store::{ALL_VERSIONS, Column, ReadOptions, Store};
use rowsearch::wire;

use super::args::{Args, ReadArgs, UsageError};

/// A binary string argument (`\xNN` escapes); `what` names it in errors.
pub(super) fn bytes(what: &str, text: &str) -> Result<Vec<u8>> {
    wire::decode(text).map_err(|e| UsageError(format!("{what}: {e}")).into())
}

/// `--columns`, `--versions`, `--min-ts`, `--max-ts`.
pub(super) fn read_options(args: &ReadArgs) -> Result<ReadOptions> {
    let versions = match args.versions.as_str() {
        "all" => ALL_VERSIONS,
        n => n.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
            UsageError(format!("--versions: expected a positive number or 'all', got {n:?}"))
        })?,
    };
    let columns =
        args.columns.iter().map(|c| Ok(Column::parse(&bytes("--columns", c)?))).collect::<Result<_>>()?;
    Ok(ReadOptions { columns, versions, min_ts: args.min_ts.unwrap_or(0), max_ts: args.max_ts })
}

/// The existing store of `--data`, with the indexer's analyzer: a command
/// that only reads (or serves) must not create a store where a mistyped
/// `--data` points (exit 2, nothing created).
pub(super) fn open(args: &Args) -> Result<Store> {
    let missing = match std::fs::metadata(&args.data) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        // An empty directory holds no store either; anything else is for
        // the store to judge (a file, another program's files: NotAStore).
        Ok(meta) => meta.is_dir() && std::fs::read_dir(&args.data)?.next().is_none(),
    };
    if missing {
        return Err(UsageError(format!(
            "no store at {} (a mistyped --data?); commands that write (ingest, create-table, put, \
             demo, serve --create) create one",
            args.data.display()
        ))
        .into());
    }
    create(args)
}

/// The store of `--data`, created when missing, with the indexer's analyzer.
pub(super) fn create(args: &Args) -> Result<Store> {
    rowsearch::indexer::store_builder()
        .open(&args.data)
        .with_context(|| format!("opening store {}", args.data.display()))
}
