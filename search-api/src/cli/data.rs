//! Tables, rows, scans and maintenance: `tables`, `create-table`,
//! `drop-table`, `put`, `get`, `delete`, `scan`, `regions`, `stats`,
//! `compact`, `upgrade`, `repack`, `backup`, `restore`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use rowsearch::store::{Column, Delete, Filter, PutCell, Scan, ScanCursor, TableSchema};

use super::args::{Args, DataCommand, ScanArgs, UsageError};
use super::common::{bytes, read_options};
use super::place;
use super::progress::Progress;
use rowsearch::json::row_json;

/// Runs a data command.
pub(super) fn run(args: &Args, command: &DataCommand, out: &mut impl Write) -> Result<ExitCode> {
    match command {
        DataCommand::Tables => {
            for t in place::tables(args, false)?.tables()? {
                writeln!(out, "{t}")?;
            }
        }
        DataCommand::CreateTable { table, schema } => {
            let schema = schema_arg(schema)?;
            let tables = place::tables(args, true)?;
            let created = tables.create_table(table, &schema)?;
            let at = tables.store().map_or_else(|| format!(" in {}", tables.place()), |_| String::new());
            writeln!(out, "{} table {table}{at}", if created { "created" } else { "exists, identical:" })?;
        }
        DataCommand::DropTable { table } => {
            let home = place::home(args, false)?;
            rowsearch::indexer::drop_table(&home, table)?;
            let at =
                home.tables.store().map_or_else(|| format!(" in {}", home.tables.place()), |_| String::new());
            writeln!(out, "dropped table {table}{at}")?;
        }
        DataCommand::Put { table, key, cells, timestamp, key_fields } => {
            put(args, table, key, cells, *timestamp, key_fields.as_deref(), out)?
        }
        DataCommand::Get { table, key, read, key_fields } => {
            let tables = place::tables(args, false)?;
            let key = row_key(&*tables, table, key.as_deref(), key_fields.as_deref())?;
            let read = read_options(read)?;
            let schema = tables.schema(table)?;
            let row = tables.get(table, &key, &read)?;
            match row {
                Some(row) => writeln!(out, "{}", row_json(&row, schema.row_key.as_ref()))?,
                None => {
                    eprintln!("row not found");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        DataCommand::Delete { table, key, columns, timestamp, key_fields, exact } => {
            let tables = place::tables(args, false)?;
            let key = row_key(&*tables, table, key.as_deref(), key_fields.as_deref())?;
            let mut whats = Vec::new();
            if columns.is_empty() {
                if *exact {
                    return Err(UsageError(
                        "--exact deletes one version of --columns family:qualifier".into(),
                    )
                    .into());
                }
                whats.push(Delete::Row { up_to: *timestamp });
            }
            for c in columns {
                let what = match (Column::parse(&bytes("--columns", c)?), *exact, *timestamp) {
                    (Column::Qualifier(family, qualifier), true, Some(timestamp)) => {
                        Delete::Version { family, qualifier, timestamp }
                    }
                    (Column::Family(family), true, _) => {
                        return Err(UsageError(format!(
                            "--exact deletes one version of a column: {family:?} is a family; name family:qualifier"
                        ))
                        .into());
                    }
                    (Column::Family(family), _, up_to) => Delete::Family { family, up_to },
                    (Column::Qualifier(family, qualifier), _, up_to) => {
                        Delete::Column { family, qualifier, up_to }
                    }
                };
                whats.push(what);
            }
            let seq = tables.delete(table, &key, &whats)?;
            writeln!(out, "ok (feed seq {seq})")?;
        }
        DataCommand::Scan(scan) => scan_rows(args, scan, out)?,
        DataCommand::Regions { table, threads } => {
            for region in place::store_only(args, "regions", false)?.region_stats(table, *threads)? {
                writeln!(out, "{}", serde_json::to_string(&region)?)?;
            }
        }
        DataCommand::Display { table, names, all } => {
            let store = place::tables(args, false)?;
            if *all || !names.is_empty() {
                // `*`: every field, chosen (an ingest then leaves it).
                let display = if *all { vec!["*".to_owned()] } else { names.clone() };
                store.set_display(table, Some(display))?;
            }
            let schema = store.schema(table)?;
            match schema.search.and_then(|s| s.display).filter(|names| !names.iter().any(|n| n == "*")) {
                Some(names) => writeln!(out, "{table}: documents carry {}", names.join(", "))?,
                None => writeln!(out, "{table}: documents carry every field")?,
            }
        }
        DataCommand::Stats { table } => {
            let stats = place::store_only(args, "stats", false)?.stats(table)?;
            writeln!(out, "{}", serde_json::to_string(&stats)?)?;
        }
        DataCommand::Compact => {
            let report = place::store_only(args, "compact", false)?.compact()?;
            writeln!(out, "purged {} cells from {} rows", report.cells_purged, report.rows_touched)?;
        }
        DataCommand::Repack => {
            // Opened (and upgraded) first, so a repack writes this build's format.
            drop(place::store_only(args, "repack", false)?);
            let mb = |bytes: u64| bytes as f64 / 1e6;
            let report = rowsearch::store::repack(&args.data, &mut |db| {
                eprintln!(
                    "repacked {}: {} entries, {} pages -> {}",
                    db.name, db.entries, db.pages_before, db.pages_after
                );
            })?;
            writeln!(
                out,
                "repacked {}: data.mdb {:.1} MB -> {:.1} MB ({} databases) in {:.2} s",
                args.data.display(),
                mb(report.bytes_before),
                mb(report.bytes_after),
                report.databases.len(),
                report.seconds
            )?;
        }
        DataCommand::Backup { dest, nice, max_mb_per_s } => {
            // Threads started from here (the copy's) inherit it.
            rowsearch::indexer::lower_thread_priority(*nice);
            let store = place::store_only(args, "backup", false)?;
            let total = std::fs::metadata(args.data.join("data.mdb")).map_or(0, |m| m.len());
            let mut progress = Progress::new("backup", "MB", Duration::from_secs(2));
            let options = rowsearch::indexer::BackupOptions {
                max_bytes_per_sec: max_mb_per_s.map(|mb| mb * 1_000_000),
            };
            let report = rowsearch::indexer::backup(&store, dest, &options, &mut |p| {
                progress.update(p.bytes >> 20, total.max(p.bytes) >> 20, p.phase);
            })?;
            progress.finish();
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        }
        DataCommand::Restore { src } => {
            place::refuse_elsewhere(args, "restore")?;
            let mut progress = Progress::new("restore", "MB", Duration::from_secs(2));
            let total = rowsearch::indexer::read_manifest(src)?.files.iter().map(|f| f.bytes).sum::<u64>();
            let report = rowsearch::indexer::restore(src, &args.data, &mut |p| {
                progress.update(p.bytes >> 20, total >> 20, p.phase);
            })?;
            progress.finish();
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        }
        DataCommand::Upgrade { .. } if args.hbase.is_some() => {
            // Over HBase: the keyword rows an older build wrote there.
            let source = place::hbase(args.hbase.as_deref().unwrap_or_default());
            for table in source.tables().tables()? {
                let started = std::time::Instant::now();
                // Progress lines every 2 s (the total is not known ahead).
                let moved = source.upgrade_keywords(&table, &mut |partitions, cells| {
                    eprintln!(
                        "keyword upgrade of {table}: {cells} cells moved, {partitions} partitions seen"
                    );
                })?;
                match moved {
                    Some(cells) => writeln!(
                        out,
                        "upgraded the keyword rows of {table} in HBase: {cells} cells made runs in {:.2} s",
                        started.elapsed().as_secs_f64()
                    )?,
                    None => writeln!(out, "{table}: nothing to upgrade")?,
                }
            }
        }
        DataCommand::Upgrade { no_pack } => {
            let started = std::time::Instant::now();
            let store = place::store_only(args, "upgrade", false)?;
            let rebuild = stale_indexes(&store)?;
            match store.upgraded_from() {
                Some(from) => writeln!(
                    out,
                    "upgraded {} from {from} to {} in {:.2} s",
                    args.data.display(),
                    rowsearch::store::FORMAT,
                    started.elapsed().as_secs_f64()
                )?,
                None if rebuild.is_empty() => writeln!(
                    out,
                    "{} is already {}: nothing to do",
                    args.data.display(),
                    rowsearch::store::FORMAT
                )?,
                None => {}
            }
            // The tables whose terms changed (this upgrade's, or one killed
            // after its commit), and those whose index keeps positions in
            // `_all` or has no word pairs (built before): their indexes now.
            for table in rebuild {
                let started = std::time::Instant::now();
                let options = rowsearch::indexer::ReindexOptions {
                    mode: rowsearch::indexer::ReindexMode::Full,
                    ..Default::default()
                };
                let report = super::progress::reindex(&store, &table, &options)?;
                writeln!(
                    out,
                    "rebuilt the search index of table {table}: {} documents, {:.1} MB, in {:.2} s",
                    report.docs,
                    report.index_bytes as f64 / 1e6,
                    started.elapsed().as_secs_f64()
                )?;
            }
            // An upgrade that rewrote much leaves the file loose (LMDB
            // copies what it rewrites): packed once the store is closed.
            let upgraded = store.upgraded_from().is_some();
            drop(store);
            if upgraded {
                super::common::pack_when_loose(args, *no_pack);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `rowsearch put`: the cells into one row.
fn put(
    args: &Args,
    table: &str,
    key: &String,
    cells: &[String],
    timestamp: Option<u64>,
    key_fields: Option<&str>,
    out: &mut impl Write,
) -> Result<()> {
    let tables = place::tables(args, true)?;
    // With --key-fields, the first positional is a cell.
    let (key, cells): (Vec<u8>, Vec<&String>) = match key_fields {
        Some(fields) => {
            (row_by_fields(&*tables, table, fields)?, std::iter::once(key).chain(cells).collect())
        }
        None => (bytes("key", key)?, cells.iter().collect()),
    };
    let cells = put_cells(&cells, timestamp)?;
    // The write's sequence (over HBase its clock, ms): a `min_seq` for
    // a search that must see it.
    let seq = tables.put_rows(table, &[(key, cells)])?;
    writeln!(out, "ok (feed seq {seq})")?;
    Ok(())
}

/// `--schema`: JSON inline, or `@FILE`.
pub(super) fn schema_arg(schema: &str) -> Result<TableSchema> {
    let text = match schema.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading schema {path}"))?,
        None => schema.to_owned(),
    };
    Ok(serde_json::from_str(&text).map_err(|e| UsageError(format!("schema does not parse: {e}")))?)
}

/// A put's cells from `family:qualifier=value` arguments.
pub(super) fn put_cells(cells: &[&String], timestamp: Option<u64>) -> Result<Vec<PutCell>> {
    if cells.is_empty() {
        return Err(UsageError("give at least one cell, family:qualifier=value".into()).into());
    }
    cells
        .iter()
        .map(|spec| {
            let (column, value) = spec
                .split_once('=')
                .ok_or_else(|| UsageError(format!("cell {spec:?}: expected family:qualifier=value")))?;
            let column = Column::parse(&bytes("column", column)?);
            let Column::Qualifier(family, qualifier) = column else {
                return Err(UsageError(format!("cell {spec:?}: a put needs family:qualifier")).into());
            };
            Ok(PutCell { family, qualifier, timestamp, value: bytes("value", value)? })
        })
        .collect()
}

/// `rowsearch scan`: rows as JSON lines (or their count), the next cursor
/// on stderr.
fn scan_rows(args: &Args, scan_args: &ScanArgs, out: &mut impl Write) -> Result<()> {
    let ScanArgs {
        table,
        start,
        stop,
        prefix,
        reverse,
        limit,
        offset,
        cursor,
        keys_only,
        count,
        filter,
        region,
        prefix_fields,
        read,
    } = scan_args;
    let store = place::store_only(args, "scan", false)?;
    let schema = store.schema(table)?;
    let prefix = match prefix_fields {
        Some(json) => {
            let value: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| UsageError(format!("--prefix-fields: not JSON: {e}")))?;
            let row_key = schema.row_key.as_ref().filter(|rk| !rk.fields.is_empty()).ok_or_else(|| {
                UsageError(format!("--prefix-fields: table {table:?} has no typed row key"))
            })?;
            Some(row_key.encode_json(&value)?)
        }
        None => prefix.as_deref().map(|s| bytes("--prefix", s)).transpose()?,
    };
    let scan = Scan {
        start: start.as_deref().map(|s| bytes("--start", s)).transpose()?,
        stop: stop.as_deref().map(|s| bytes("--stop", s)).transpose()?,
        prefix,
        reverse: *reverse,
        read: read_options(read)?,
        offset: *offset,
        limit: *limit,
        cursor: cursor.as_deref().map(ScanCursor::from_token).transpose()?,
        keys_only: *keys_only,
        filter: filter.as_deref().map(Filter::parse).transpose()?,
        region: *region,
    };
    if *count {
        writeln!(out, "{}", store.count(table, &scan)?)?;
    } else {
        let rtxn = store.begin_read()?;
        let page = rtxn.scan_page(table, &scan)?;
        drop(rtxn);
        for row in &page.rows {
            writeln!(out, "{}", row_json(row, schema.row_key.as_ref()))?;
        }
        if let Some(next) = page.next_cursor {
            eprintln!("next cursor: {}", next.to_token());
        }
    }
    Ok(())
}

/// A row's key from KEY or `--key-fields` (clap makes it one of them).
fn row_key(
    store: &dyn rowsearch::store::TableStore,
    table: &str,
    key: Option<&str>,
    fields: Option<&str>,
) -> Result<Vec<u8>> {
    match (key, fields) {
        (_, Some(fields)) => row_by_fields(store, table, fields),
        (Some(key), None) => Ok(bytes("key", key)?),
        (None, None) => Err(UsageError("give KEY or --key-fields".into()).into()),
    }
}

/// The key of a row of `table` named by its typed key's fields (JSON).
fn row_by_fields(store: &dyn rowsearch::store::TableStore, table: &str, fields: &str) -> Result<Vec<u8>> {
    Ok(rowsearch::json::key_from_fields(&store.schema(table)?, table, fields)?)
}

/// The searchable tables whose index was built for an earlier table of the
/// name (an upgrade that changed their terms gave them a new id), before
/// `_all` went without positions (it serves as it is, a quarter bigger), or
/// before word pairs (it serves as it is, its two-word phrases from
/// positions); a table never indexed is not one.
fn stale_indexes(store: &rowsearch::store::Store) -> Result<Vec<String>> {
    let mut stale = Vec::new();
    for table in store.tables()? {
        if store.schema(&table)?.search.is_none() {
            continue;
        }
        match rowsearch::indexer::TableIndex::open(store, &table)?.generation() {
            Ok(generation)
                if generation.table_id != store.table_id(&table)?
                    || generation.schema.all_positions
                    || generation.schema.pairs.is_none() =>
            {
                stale.push(table)
            }
            Ok(_) | Err(rowsearch::indexer::Error::NoIndex { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(stale)
}
