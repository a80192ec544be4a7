//! What each command does.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use rowsearch::store::{
    ALL_VERSIONS, Batch, Column, Delete, FamilySchema, Filter, IndexQuery, IndexSchema, KeyField, KeyOrder,
    KeyType, KeyValue, PutCell, ReadOptions, RowKeySchema, Scan, ScanCursor, Store, TableSchema,
};
use rowsearch::wire;

use super::output::row_json;
use super::{Args, Command, FormatArg, IndexCommand, ReadArgs, SortArg, UsageError};

fn bytes(what: &str, text: &str) -> Result<Vec<u8>> {
    wire::decode(text).map_err(|e| UsageError(format!("{what}: {e}")).into())
}

fn read_options(args: &ReadArgs) -> Result<ReadOptions> {
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

fn open(args: &Args) -> Result<Store> {
    rowsearch::indexer::store_builder()
        .open(&args.data)
        .with_context(|| format!("opening store {}", args.data.display()))
}

/// Runs a parsed command line.
pub fn run(args: Args) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &args.command {
        Command::Demo { rows, listen, no_serve } => {
            let store = demo(&args, *rows, &mut out)?;
            if !*no_serve {
                drop(out);
                serve(store, listen, rowsearch::http::Limits::default(), true)?;
            }
        }
        Command::Serve { listen, max_body, timeout_ms, header_timeout_ms, workers, idle_spin_us } => {
            let defaults = rowsearch::http::Limits::default();
            let limits = rowsearch::http::Limits {
                max_body_bytes: *max_body,
                request_timeout: std::time::Duration::from_millis(*timeout_ms),
                header_read_timeout: std::time::Duration::from_millis(*header_timeout_ms),
                workers: workers.map_or(defaults.workers, |w| usize::try_from(w).unwrap_or(usize::MAX)),
                idle_spin: std::time::Duration::from_micros(*idle_spin_us),
                ..defaults
            };
            drop(out);
            serve(open(&args)?, listen, limits, false)?;
        }
        Command::Ingest { paths, table, format, user, report, max_message_bytes, batch_rows } => {
            let options = rowsearch::indexer::IngestOptions {
                table: table.clone(),
                format: match format {
                    FormatArg::Auto => rowsearch::indexer::Format::Auto,
                    FormatArg::Maildir => rowsearch::indexer::Format::Maildir,
                    FormatArg::Mbox => rowsearch::indexer::Format::Mbox,
                    FormatArg::Eml => rowsearch::indexer::Format::Eml,
                    FormatArg::Jsonl => rowsearch::indexer::Format::Jsonl,
                },
                user: user.clone(),
                batch_rows: (*batch_rows).max(1),
                max_message_bytes: *max_message_bytes,
                ..Default::default()
            };
            let result = ingest(&open(&args)?, paths, &options)?;
            if let Some(path) = report {
                result.write_skipped(path)?;
            }
            writeln!(out, "{}", result.summary(10))?;
        }
        Command::Keywords { terms, user, table, limit, cursor } => {
            let store = open(&args)?;
            let query = rowsearch::store::KeywordQuery {
                partition: user.as_bytes().to_vec(),
                terms: terms.clone(),
                limit: *limit,
                cursor: cursor.clone(),
            };
            let page = store.keyword_lookup(table, &query)?;
            let schema = store.schema(table)?;
            for hit in &page.hits {
                let mut line = serde_json::json!({"key": wire::encode(&hit.key), "date_ms": hit.date_ms});
                if let Some(rk) = &schema.row_key {
                    line["key_fields"] = rk.decode_json(&hit.key)?;
                }
                writeln!(out, "{line}")?;
            }
            if let Some(next) = &page.next_cursor {
                eprintln!("next cursor: {next}");
            }
        }
        Command::Reindex { table, full, incremental, memory_mb, threads } => {
            let mode = match (full, incremental) {
                (true, _) => rowsearch::indexer::ReindexMode::Full,
                (_, true) => rowsearch::indexer::ReindexMode::Incremental,
                _ => rowsearch::indexer::ReindexMode::Auto,
            };
            let mut options = rowsearch::indexer::ReindexOptions {
                mode,
                memory_budget_bytes: memory_mb.saturating_mul(1 << 20),
                ..Default::default()
            };
            if let Some(t) = threads {
                options.threads = (*t).max(1);
            }
            let report = reindex(&open(&args)?, table, &options)?;
            writeln!(out, "{}", report.summary())?;
        }
        Command::Verify { table, sample } => {
            let store = open(&args)?;
            let options = rowsearch::indexer::VerifyOptions { sample: *sample, ..Default::default() };
            let report = rowsearch::indexer::verify(&store, table, &options)?;
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
            eprintln!("{}", report.summary());
            if !report.is_clean() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Search { query, table, user, sort, limit, offset, json } => {
            let store = std::sync::Arc::new(open(&args)?);
            let searcher = rowsearch::Searcher::new(std::sync::Arc::clone(&store));
            let request = rowsearch::SearchRequest {
                query: query.clone(),
                partition: user.as_deref().map(|u| u.as_bytes().to_vec()),
                sort: match sort {
                    SortArg::Relevance => rowsearch::indexer::SortBy::Relevance,
                    SortArg::Newest => rowsearch::indexer::SortBy::Newest,
                    SortArg::Oldest => rowsearch::indexer::SortBy::Oldest,
                },
                limit: Some(*limit),
                offset: *offset,
                highlight: *json,
                ..Default::default()
            };
            let results = searcher.search(table, &request)?;
            let schema = store.schema(table)?;
            if *json {
                writeln!(out, "{}", rowsearch::json::search_json(&results, schema.row_key.as_ref(), true))?;
            } else {
                let fields: Vec<String> =
                    schema.search.iter().flat_map(|s| s.fields.iter().map(|f| f.column.clone())).collect();
                for hit in &results.hits {
                    let order = match (hit.score, hit.date_ms) {
                        (Some(score), _) => format!("{score:6.2}"),
                        (_, Some(ms)) => jiff::Timestamp::from_millisecond(ms as i64)
                            .map_or_else(|_| ms.to_string(), |t| t.strftime("%Y-%m-%d %H:%M").to_string()),
                        _ => String::new(),
                    };
                    let key = match &schema.row_key {
                        Some(rk) if !rk.fields.is_empty() => rk.decode_json(&hit.row.key)?.to_string(),
                        _ => wire::encode(&hit.row.key),
                    };
                    // The first search field with a value (the subject, for mail).
                    let text = fields
                        .iter()
                        .find_map(|c| match Column::parse(c.as_bytes()) {
                            Column::Qualifier(f, q) => hit.row.value(&f, &q),
                            Column::Family(_) => None,
                        })
                        .map(|v| String::from_utf8_lossy(v).chars().take(80).collect::<String>())
                        .unwrap_or_default();
                    writeln!(out, "{order}  {key}  {text}")?;
                }
                let more = results
                    .next_cursor
                    .as_ref()
                    .map_or(String::new(), |_| " (more with --offset)".to_owned());
                eprintln!(
                    "{} matches, {} shown{more}; generation {}, {:.1} ms",
                    results.total,
                    results.hits.len(),
                    results.generation,
                    results.took_ms
                );
            }
        }
        Command::Tables => {
            for t in open(&args)?.tables() {
                writeln!(out, "{t}")?;
            }
        }
        Command::CreateTable { table, schema } => {
            let text = match schema.strip_prefix('@') {
                Some(path) => {
                    std::fs::read_to_string(path).with_context(|| format!("reading schema {path}"))?
                }
                None => schema.clone(),
            };
            let schema: TableSchema =
                serde_json::from_str(&text).map_err(|e| UsageError(format!("schema does not parse: {e}")))?;
            let created = open(&args)?.create_table(table, &schema)?;
            writeln!(out, "{} table {table}", if created { "created" } else { "exists, identical:" })?;
        }
        Command::DropTable { table } => {
            rowsearch::indexer::drop_table(&open(&args)?, table)?;
            writeln!(out, "dropped table {table}")?;
        }
        Command::Put { table, key, cells, timestamp } => {
            let cells = cells
                .iter()
                .map(|spec| {
                    let (column, value) = spec.split_once('=').ok_or_else(|| {
                        UsageError(format!("cell {spec:?}: expected family:qualifier=value"))
                    })?;
                    let column = Column::parse(&bytes("column", column)?);
                    let Column::Qualifier(family, qualifier) = column else {
                        return Err(UsageError(format!("cell {spec:?}: a put needs family:qualifier")).into());
                    };
                    Ok(PutCell { family, qualifier, timestamp: *timestamp, value: bytes("value", value)? })
                })
                .collect::<Result<Vec<_>>>()?;
            let info = open(&args)?.put(table, &bytes("key", key)?, cells)?;
            writeln!(out, "ok (feed seq {})", info.last_seq.unwrap_or(0))?;
        }
        Command::Get { table, key, read } => {
            let store = open(&args)?;
            match store.get(table, &bytes("key", key)?, &read_options(read)?)? {
                Some(row) => writeln!(out, "{}", row_json(&row, store.schema(table)?.row_key.as_ref()))?,
                None => {
                    eprintln!("row not found");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        Command::Delete { table, key, columns, timestamp } => {
            let key = bytes("key", key)?;
            let mut batch = Batch::new();
            if columns.is_empty() {
                batch.delete(table.as_str(), key.clone(), Delete::Row { up_to: *timestamp });
            }
            for c in columns {
                let what = match Column::parse(&bytes("--columns", c)?) {
                    Column::Family(family) => Delete::Family { family, up_to: *timestamp },
                    Column::Qualifier(family, qualifier) => {
                        Delete::Column { family, qualifier, up_to: *timestamp }
                    }
                };
                batch.delete(table.as_str(), key.clone(), what);
            }
            open(&args)?.apply(&batch)?;
            writeln!(out, "ok")?;
        }
        Command::Scan {
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
        } => {
            let store = open(&args)?;
            let schema = store.schema(table)?;
            let prefix = match prefix_fields {
                Some(json) => {
                    let value: serde_json::Value = serde_json::from_str(json)
                        .map_err(|e| UsageError(format!("--prefix-fields: not JSON: {e}")))?;
                    let row_key =
                        schema.row_key.as_ref().filter(|rk| !rk.fields.is_empty()).ok_or_else(|| {
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
        }
        Command::Index(command) => return index(&args, command, &mut out),
        Command::Regions { table, threads } => {
            for region in open(&args)?.region_stats(table, *threads)? {
                writeln!(out, "{}", serde_json::to_string(&region)?)?;
            }
        }
        Command::Stats { table } => {
            let stats = open(&args)?.stats(table)?;
            writeln!(out, "{}", serde_json::to_string(&stats)?)?;
        }
        Command::Compact => {
            let report = open(&args)?.compact()?;
            writeln!(out, "purged {} cells from {} rows", report.cells_purged, report.rows_touched)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A build of an index, reporting (done, total) to the callback.
type IndexBuild<'a> = dyn Fn(&mut dyn FnMut(u64, u64)) -> rowsearch::store::Result<()> + 'a;

/// A progress bar on a terminal, periodic lines otherwise (API.md).
/// Runs an ingest with a progress bar on a terminal, plain progress lines
/// every two seconds otherwise.
fn ingest(
    store: &Store,
    paths: &[std::path::PathBuf],
    options: &rowsearch::indexer::IngestOptions,
) -> Result<rowsearch::indexer::IngestReport> {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("ingest [{bar:30}] {pos}/{len} files, {msg} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut last_line = Instant::now();
    let report = rowsearch::indexer::ingest(store, paths, options, &mut |p| {
        if terminal {
            bar.set_length(p.files_total);
            bar.set_position(p.files_done);
            bar.set_message(format!("{} stored", p.stored));
        } else if last_line.elapsed().as_secs() >= 2 {
            eprintln!("ingest: {}/{} files, {} stored", p.files_done, p.files_total, p.stored);
            last_line = Instant::now();
        }
    });
    bar.finish_and_clear();
    Ok(report?)
}

/// Runs a reindex with a progress bar on a terminal, plain progress lines
/// every two seconds otherwise.
fn reindex(
    store: &Store,
    table: &str,
    options: &rowsearch::indexer::ReindexOptions,
) -> Result<rowsearch::indexer::ReindexReport> {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) = indicatif::ProgressStyle::with_template("reindex {msg} [{bar:30}] {pos}/{len} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut last_line = Instant::now();
    let report = rowsearch::indexer::reindex(store, table, options, &mut |p| {
        if terminal {
            bar.set_message(p.phase);
            bar.set_length(p.total);
            bar.set_position(p.done);
        } else if last_line.elapsed().as_secs() >= 2 {
            eprintln!("reindex {table}: {} {}/{}", p.phase, p.done, p.total);
            last_line = Instant::now();
        }
    });
    bar.finish_and_clear();
    Ok(report?)
}

fn progress_bar(what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} cells ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}

fn index(args: &Args, command: &IndexCommand, out: &mut impl Write) -> Result<ExitCode> {
    let store = open(args)?;
    let started = Instant::now();
    let build = |table: &str, index: &str, run: &IndexBuild<'_>| -> Result<()> {
        let bar = progress_bar(&format!("indexing {table}/{index}"));
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mut last_line = Instant::now();
        run(&mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
            if !tty && last_line.elapsed().as_secs() >= 5 {
                eprintln!("indexing {table}/{index}: {done}/{total} cells");
                last_line = Instant::now();
            }
        })?;
        bar.finish_and_clear();
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
            let rtxn = store.begin_read()?;
            let next = if *rows {
                let (rows, next) = rtxn.index_rows(table, index, &query, &ReadOptions::default())?;
                for row in &rows {
                    writeln!(out, "{}", row_json(row, row_key.as_ref()))?;
                }
                next
            } else {
                let page = rtxn.index_lookup(table, index, &query)?;
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
            build(table, index, &|progress| store.add_index(table, schema.clone(), progress))?;
            writeln!(out, "added index {index} to {table} in {:.1}s", started.elapsed().as_secs_f64())?;
        }
        IndexCommand::Drop { table, index } => {
            store.drop_index(table, index)?;
            writeln!(out, "dropped index {index} of {table}")?;
        }
        IndexCommand::Rebuild { table, index } => {
            build(table, index, &|progress| store.rebuild_index(table, index, progress))?;
            writeln!(out, "rebuilt index {index} of {table} in {:.1}s", started.elapsed().as_secs_f64())?;
        }
        IndexCommand::Verify { table, index } => {
            let report = store.verify_index(table, index)?;
            writeln!(
                out,
                "{}",
                serde_json::to_string(&serde_json::json!({
                    "entries": report.entries,
                    "missing": report.missing_count,
                    "extra": report.extra_count,
                    "missing_keys": report.missing.iter().map(|k| wire::encode(k)).collect::<Vec<_>>(),
                    "extra_entries": report.extra.iter().map(|k| wire::encode(k)).collect::<Vec<_>>(),
                }))?
            )?;
            if !report.is_clean() {
                eprintln!("index {index} of {table} disagrees with the rows");
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The demo: everything the store can do today, on a fresh table.
/// The mail fixture of the repository (real Enron messages), found from the
/// checkout this binary was built in.
const DEMO_MAIL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/mail/maildir");

/// Serves HTTP on `listen` until SIGINT or SIGTERM. Prints the bound
/// address (and, for the demo, example requests) once it accepts.
fn serve(store: Store, listen: &str, limits: rowsearch::http::Limits, demo: bool) -> Result<()> {
    let addr: std::net::SocketAddr =
        listen.parse().map_err(|e| UsageError(format!("--listen {listen:?}: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| UsageError(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener.local_addr()?;
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            writeln!(out, "listening on http://{bound}")?;
            if demo {
                writeln!(out, "Try:")?;
                for example in demo_requests(bound) {
                    writeln!(out, "  {example}")?;
                }
                writeln!(out, "(Ctrl-C stops the server.)")?;
            }
            out.flush()?;
        }
        let state = std::sync::Arc::new(rowsearch::http::State::new(std::sync::Arc::new(store), limits)?);
        rowsearch::http::serve(listener, state, shutdown_signal()).await;
        Ok(())
    })
}

/// The example requests the demo prints (and its tests run as printed).
fn demo_requests(addr: std::net::SocketAddr) -> [String; 3] {
    [
        format!(
            "curl -s 'http://{addr}/tables/mail/search?q=enron+meeting&user=cash-m&sort=newest&limit=3&columns=m:subject'"
        ),
        format!(
            "curl -s 'http://{addr}/tables/mail/search?q=%22natural+gas%22+price&highlight=true&limit=2&columns=m:subject,m:from'"
        ),
        format!("curl -s 'http://{addr}/tables/mail/keywords?user=cash-m&terms=enron,meeting&limit=3'"),
    ]
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    eprintln!("shutting down: finishing requests in flight");
}

fn demo(args: &Args, rows: u32, out: &mut impl Write) -> Result<Store> {
    let store = open(args)?;
    let table = "demo";
    // The mail table's key of API.md: user, date (newest first), id, salted
    // over 4 buckets against hot-spotting of monotonic dates.
    let row_key = RowKeySchema::new([
        KeyField::new("user", KeyType::String, KeyOrder::Asc),
        KeyField::new("date", KeyType::U64, KeyOrder::Desc),
        KeyField::new("id", KeyType::U64, KeyOrder::Asc),
    ])
    .salted(4);
    let schema = TableSchema::new([FamilySchema::new("m").max_versions(3), FamilySchema::new("b")])
        .row_key(row_key.clone());
    store.create_table(table, &schema)?;
    writeln!(
        out,
        "store: {} (table {table}: families m (3 versions), b; key user, date desc, id; 4 salt buckets)",
        store.path().display()
    )?;

    let users = ["allen-p", "badeer-r", "cash-m", "gay-r"];
    let started = Instant::now();
    let mut batch = Batch::new();
    for i in 0..rows {
        let user = users[i as usize % users.len()];
        let date_ms = 988_000_000_000u64 + u64::from(i) * 3_600_000;
        let key = row_key.encode(&[
            KeyValue::String(user.into()),
            KeyValue::U64(date_ms),
            KeyValue::U64(u64::from(i)),
        ])?;
        batch.put(
            table,
            key,
            vec![
                PutCell::new("m", "subject", format!("message {i} for {user}")).at(date_ms),
                PutCell::new("m", "from", format!("sender{}@enron.com", i % 7)).at(date_ms),
                PutCell::new("b", "text", format!("body of message {i}")).at(date_ms),
            ],
        );
    }
    let info = store.apply(&batch)?;
    let secs = started.elapsed().as_secs_f64();
    writeln!(
        out,
        "wrote {rows} rows in one atomic batch in {secs:.3}s ({:.0} rows/s), change feed up to seq {}",
        f64::from(rows) / secs.max(1e-9),
        info.last_seq.unwrap_or(0)
    )?;

    let newest = Scan::new()
        .prefix(row_key.encode_prefix(&[KeyValue::String("badeer-r".into())])?)
        .limit(3)
        .read(ReadOptions::default().column(Column::Qualifier("m".into(), b"subject".to_vec())));
    let page = store.scan(table, &newest)?;
    writeln!(
        out,
        "
newest 3 rows of badeer-r (prefix scan merged over the salt buckets):"
    )?;
    for row in &page.rows {
        writeln!(out, "  {}", row_json(row, Some(&row_key)))?;
    }
    if let Some(cursor) = page.next_cursor {
        let next = store.scan(table, &newest.clone().cursor(cursor.clone()))?;
        writeln!(out, "next page after cursor {}:", cursor.to_token())?;
        for row in &next.rows {
            writeln!(out, "  {}", row_json(row, Some(&row_key)))?;
        }
    }
    let filter =
        "SingleColumnValueFilter('m', 'from', =, 'binary:sender3@enron.com', true, true) AND PageFilter(2)";
    let scan = Scan::new()
        .prefix(row_key.encode_prefix(&[KeyValue::String("cash-m".into())])?)
        .filter(Filter::parse(filter)?);
    writeln!(
        out,
        "
cash-m's mail from sender3, first 2 ({filter}):"
    )?;
    for row in store.scan(table, &scan)?.rows {
        writeln!(out, "  {}", row_json(&row, Some(&row_key)))?;
    }
    writeln!(
        out,
        "
rows per user: "
    )?;
    for user in users {
        let prefix = row_key.encode_prefix(&[KeyValue::String(user.into())])?;
        writeln!(out, "  {user}: {}", store.count(table, &Scan::new().prefix(prefix))?)?;
    }
    writeln!(
        out,
        "
regions (one per salt bucket):"
    )?;
    for region in store.region_stats(table, 2)? {
        writeln!(out, "  {}", serde_json::to_string(&region)?)?;
    }
    let stats = store.stats(table)?;
    writeln!(out, "table {table}: {} cells, {} bytes", stats.cells, stats.bytes)?;
    writeln!(
        out,
        "\nTry: rowsearch --data {} scan {table} --prefix-fields '{{\"user\":\"cash-m\"}}' --limit 2 \\\n       --filter \"ValueFilter(=, 'substring:MESSAGE 1')\"",
        args.data.display()
    )?;
    // Real mail: the fixture bundled in the repository, into the mail table.
    let fixture = std::path::Path::new(DEMO_MAIL);
    if fixture.is_dir() {
        let report = ingest(&store, &[fixture.to_owned()], &rowsearch::indexer::IngestOptions::default())?;
        writeln!(out, "\nBundled sample mail ({DEMO_MAIL}):\n  {}", report.summary(3))?;
        let query = rowsearch::store::KeywordQuery {
            partition: b"cash-m".to_vec(),
            terms: vec!["meeting".into(), "enron".into()],
            limit: Some(3),
            cursor: None,
        };
        let page = store.keyword_lookup("mail", &query)?;
        writeln!(out, "newest 3 messages of cash-m holding 'meeting' and 'enron', from the keyword rows:")?;
        let rk = store.schema("mail")?.row_key;
        for hit in page.hits {
            let row =
                store.get("mail", &hit.key, &ReadOptions::default().column(Column::parse(b"m:subject")))?;
            let subject = row.as_ref().and_then(|r| r.value("m", b"subject")).unwrap_or_default();
            let fields = match &rk {
                Some(rk) => rk.decode_json(&hit.key)?,
                None => serde_json::Value::Null,
            };
            writeln!(out, "  {fields}  {}", String::from_utf8_lossy(subject))?;
        }
        writeln!(
            out,
            "Try: rowsearch --data {} keywords --user cash-m contract --limit 5",
            args.data.display()
        )?;
        // The search index, built from those keyword rows.
        let report = reindex(&store, "mail", &rowsearch::indexer::ReindexOptions::default())?;
        writeln!(out, "\n{}", report.summary())?;
        let index = rowsearch::indexer::TableIndex::open(&store, "mail")?;
        let query = "\"natural gas\" price";
        let hits =
            index.generation()?.search_keys(query, None, rowsearch::indexer::SortBy::Relevance, 0, 3)?;
        writeln!(out, "search {query:?}: {} matches in all mailboxes, best 3 by BM25:", hits.total)?;
        for (key, score) in &hits.keys {
            let row = store.get("mail", key, &ReadOptions::default().column(Column::parse(b"m:subject")))?;
            let subject = row.as_ref().and_then(|r| r.value("m", b"subject")).unwrap_or_default();
            let fields = match &rk {
                Some(rk) => rk.decode_json(key)?,
                None => serde_json::Value::Null,
            };
            writeln!(out, "  {score:5.2}  {fields}  {}", String::from_utf8_lossy(subject))?;
        }
        writeln!(
            out,
            "Try: rowsearch --data {} search 'gas deal' --user cash-m --sort newest",
            args.data.display()
        )?;
    } else {
        writeln!(out, "\n(no bundled mail at {DEMO_MAIL}: run the demo from a checkout to ingest it)")?;
    }
    Ok(store)
}
