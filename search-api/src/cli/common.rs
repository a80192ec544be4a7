//! What every command group uses: opening the store, binary strings from
//! the command line, read options.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use rowsearch::store::{ALL_VERSIONS, Column, ReadOptions, Store};
use rowsearch::wire;

use super::args::{Args, ReadArgs, UsageError};
use super::progress::Progress;

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
    Ok(ReadOptions {
        columns,
        versions,
        min_ts: args.min_ts.unwrap_or(0),
        max_ts: args.max_ts,
        ..ReadOptions::default()
    })
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

/// The store of `--data`, created when missing, with the indexer's
/// analyzer; a store of an older format is upgraded, with progress on
/// stderr.
pub(super) fn create(args: &Args) -> Result<Store> {
    let progress = Mutex::new(None::<Progress>);
    let abort_after = upgrade_fail_point();
    let mut builder = rowsearch::indexer::store_builder().durability(match args.durability {
        super::args::DurabilityArg::Sync => rowsearch::store::Durability::Sync,
        super::args::DurabilityArg::Process => rowsearch::store::Durability::Process {
            sync_interval: std::time::Duration::from_millis(args.sync_interval_ms),
        },
    });
    // Pending keyword runs a write leaves (API.md; for tuning and benchmarks).
    if let Some(n) = std::env::var("ROWSEARCH_KEYWORD_PENDING_RUNS").ok().and_then(|v| v.parse().ok()) {
        builder = builder.keyword_pending_runs(n);
    }
    let store = builder
        .on_upgrade(move |p| {
            let Ok(mut slot) = progress.lock() else { return };
            if p.cells_done == 0 {
                eprintln!(
                    "upgrading the store from {} to {}: table {}, {} {}",
                    p.from, p.to, p.table, p.cells_total, p.unit
                );
                // A bar per step: what it counts changes.
                if let Some(done) = slot.take() {
                    done.finish();
                }
            }
            let unit = match p.unit {
                "rows analysed" => "rows analysed",
                "thread members" => "thread members",
                _ => "keyword cells",
            };
            let bar = slot.get_or_insert_with(|| Progress::new("upgrade", unit, Duration::from_secs(2)));
            bar.update(p.cells_done, p.cells_total, p.table);
            if abort_after.is_some_and(|n| p.cells_done >= n) {
                // What a kill -9 does: no unwinding, nothing committed.
                std::process::abort();
            }
        })
        .open(&args.data)
        .with_context(|| format!("opening store {}", args.data.display()))?;
    for table in store.reanalysed_tables() {
        eprintln!(
            "table {table}: its keyword terms changed with the upgrade (accents folded); its search index is \
             built again by `rowsearch upgrade`, `rowsearch reindex` or `serve`"
        );
    }
    for r in store.repaired_indexes() {
        eprintln!(
            "repaired index {}.{}: it held pending runs moved there by an earlier build's upgrade from \
             rowsearch-store/3 (its lookups answered nothing); rebuilt from the rows, {} entries",
            r.table, r.index, r.entries
        );
    }
    Ok(store)
}

/// `ROWSEARCH_FAIL_UPGRADE_AFTER_CELLS`: for tests of an upgrade killed
/// midway, the process aborts once the upgrade has rewritten this many
/// keyword cells of a table.
fn upgrade_fail_point() -> Option<u64> {
    std::env::var("ROWSEARCH_FAIL_UPGRADE_AFTER_CELLS").ok()?.parse().ok()
}

/// After a command that wrote much into the store of `--data` (ingest,
/// import), once it has closed it: the store packs itself when loose and
/// alone (`rowsearch::store::pack_when_loose`), saying so on stderr. Over
/// HBase, or with `--no-pack`, nothing. A failure is said, not the
/// command's: its writes are in.
pub(super) fn pack_when_loose(args: &Args, no_pack: bool) {
    if no_pack || args.hbase.is_some() {
        return;
    }
    let mb = |bytes: u64| bytes as f64 / 1e6;
    match rowsearch::store::pack_when_loose(&args.data, &mut |_| {}) {
        Ok(rowsearch::store::Packing::Packed(report)) => eprintln!(
            "packed the store: data.mdb {:.1} MB -> {:.1} MB in {:.2} s",
            mb(report.bytes_before),
            mb(report.bytes_after),
            report.seconds
        ),
        Ok(rowsearch::store::Packing::Tight { .. }) => {}
        Ok(rowsearch::store::Packing::InUse) => eprintln!(
            "not packed: another process has the store open (the next ingest, or `rowsearch repack`, packs it)"
        ),
        Err(e) => eprintln!("not packed: {e}"),
    }
}
