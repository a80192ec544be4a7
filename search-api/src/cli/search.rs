//! The search index: `reindex`, `verify` and `search`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use rowsearch::store::{Column, TableSchema};
use rowsearch::wire;

use super::args::{Args, HitFormatArg, SearchCommand, SortArg, UsageError};
use super::progress::reindex;

/// Runs a search-index command.
pub(super) fn run(args: &Args, command: &SearchCommand, out: &mut impl Write) -> Result<ExitCode> {
    match command {
        SearchCommand::Reindex { table, full, incremental, memory_mb, threads, no_merge, shards } => {
            if let Some(n) = shards {
                let home = super::place::home(args, false)?;
                let changed = home.tables.set_shards(table, *n)?;
                let said = if changed { "now" } else { "already" };
                writeln!(out, "table {table}: {said} {n} shard(s)")?;
            }
            let mode = match (full, incremental) {
                (true, _) => rowsearch::indexer::ReindexMode::Full,
                (_, true) => rowsearch::indexer::ReindexMode::Incremental,
                _ => rowsearch::indexer::ReindexMode::Auto,
            };
            let mut options =
                rowsearch::indexer::ReindexOptions { mode, merge: !no_merge, ..Default::default() };
            if let Some(mb) = memory_mb {
                options.memory_budget_bytes = mb.saturating_mul(1 << 20);
            }
            if let Some(t) = threads {
                options.threads = (*t).max(1);
            }
            let report = reindex(&super::place::home(args, false)?, table, &options)?;
            writeln!(out, "{}", report.summary())?;
        }
        SearchCommand::Verify { table, sample } => {
            let options = rowsearch::indexer::VerifyOptions { sample: *sample, ..Default::default() };
            let report = rowsearch::indexer::verify(&super::place::home(args, false)?, table, &options)?;
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
            eprintln!("{}", report.summary());
            if !report.is_clean() {
                return Ok(ExitCode::from(1));
            }
        }
        SearchCommand::Search {
            query,
            table,
            user,
            sort,
            limit,
            offset,
            json,
            format,
            fields,
            crop,
            typos,
            facets,
            facet_limit,
            collapse,
        } => {
            let documents = *json && matches!(format, HitFormatArg::Documents);
            if !fields.is_empty() && !documents {
                return Err(UsageError(
                    "--fields shapes the documents of --json (not --format cells)".into(),
                )
                .into());
            }
            let searcher = super::place::searcher(args)?;
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
                rows_only: *json && matches!(format, HitFormatArg::Cells),
                fields: (!fields.is_empty()).then(|| fields.clone()),
                crop: rowsearch::document::parse_crop(crop).map_err(UsageError)?,
                typos: *typos,
                facets: facets.clone(),
                facet_limit: Some(*facet_limit),
                collapse: collapse.map(|_| "thread".to_owned()),
                ..Default::default()
            };
            let results = searcher.search(table, &request)?;
            let schema = searcher.rows().schema(table)?;
            if *json {
                let format = match format {
                    HitFormatArg::Documents => rowsearch::json::HitFormat::Documents,
                    HitFormatArg::Cells => rowsearch::json::HitFormat::Cells,
                };
                let body = rowsearch::json::search_json_in(
                    &results,
                    schema.row_key.as_ref(),
                    true,
                    rowsearch::json::Encoding::Binary,
                    format,
                );
                writeln!(out, "{body}")?;
            } else {
                print_hits(&results, &schema, out)?;
            }
        }
        SearchCommand::Thread { id, table, fields } => {
            // The rows and thread entries where the table lives.
            let source = super::place::tables(args, false)?;
            let request = rowsearch::threads::ThreadRequest {
                fields: (!fields.is_empty()).then(|| fields.clone()),
                columns: Vec::new(),
                scope: None,
                cancel: rowsearch::store::Cancel::default(),
            };
            let Some(view) = rowsearch::threads::thread_view(&*source, table, id, &request)? else {
                return Err(UsageError(format!("no thread {id:?} in table {table:?}")).into());
            };
            let row_key = source.schema(table)?.row_key;
            writeln!(out, "{}", rowsearch::json::thread_json(&view, row_key.as_ref()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Hits as lines (score or date, key, the first search field's text),
/// the facets, and the totals on stderr.
fn print_hits(results: &rowsearch::SearchResults, schema: &TableSchema, out: &mut impl Write) -> Result<()> {
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
        match &hit.thread {
            Some(t) => {
                writeln!(out, "{order}  {key}  {text}  [thread {} {}/{}]", t.id, t.matched, t.messages)?
            }
            None => writeln!(out, "{order}  {key}  {text}")?,
        }
    }
    for (name, values) in &results.facets {
        let values: Vec<String> = values.iter().map(|(v, n)| format!("{v} ({n})")).collect();
        writeln!(out, "{name}: {}", values.join(", "))?;
    }
    let more = results.next_cursor.as_ref().map_or(String::new(), |_| " (more with --offset)".to_owned());
    eprintln!(
        "{} matches, {} shown{more}; generation {}, {:.1} ms",
        results.total,
        results.hits.len(),
        results.generation,
        results.took_ms
    );
    if let Some(fix) = &results.did_you_mean {
        eprintln!("did you mean: {fix}");
    }
    if let Some(unknown) = &results.unknown_user {
        eprintln!("mailbox {:?} holds no mail; nearest: {}", unknown.user, unknown.nearest.join(", "));
    }
    Ok(())
}
