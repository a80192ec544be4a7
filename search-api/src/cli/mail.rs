//! Mail: `ingest` (files into the mail table, with its keyword rows) and
//! `keywords` (lookups straight from the keyword rows).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use rowsearch::wire;

use super::args::{Args, FormatArg, MailCommand};
use super::progress::Progress;

/// Runs a mail command.
pub(super) fn run(args: &Args, command: &MailCommand, out: &mut impl Write) -> Result<ExitCode> {
    match command {
        MailCommand::Ingest {
            paths,
            table,
            format,
            user,
            report,
            max_message_bytes,
            batch_rows,
            memory_mb,
            nice,
            shards,
            no_pack,
        } => {
            // The process is the ingest: its batching thread yields too.
            rowsearch::indexer::lower_thread_priority(*nice);
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
                nice: *nice,
                shards: *shards,
                ..Default::default()
            };
            let options = match memory_mb {
                Some(mb) => options.for_memory_mb(*mb).map_err(super::args::UsageError)?,
                None => options,
            };
            let result = ingest(&*super::place::tables(args, true)?, paths, &options)?;
            if let Some(path) = report {
                result.write_skipped(path)?;
            }
            writeln!(out, "{}", result.summary(10))?;
            super::common::pack_when_loose(args, *no_pack);
        }
        MailCommand::Keywords { terms, user, table, limit, cursor } => {
            // The rows of the store or of HBase, and the index that knows
            // which mailboxes hold mail.
            let searcher = super::place::searcher(args)?;
            let source = searcher.rows();
            let query = rowsearch::store::KeywordQuery {
                partition: user.as_bytes().to_vec(),
                terms: terms.clone(),
                limit: *limit,
                cursor: cursor.clone(),
            };
            let page = source.keyword_lookup(table, &query)?;
            let schema = source.schema(table)?;
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
            // A mailbox that holds nothing: said, as `search` says it.
            if page.hits.is_empty()
                && cursor.is_none()
                && schema.search.is_some()
                && let Some(unknown) = searcher.unknown_user(table, user.as_bytes(), None)?
            {
                eprintln!(
                    "mailbox {:?} holds no mail; nearest: {}",
                    unknown.user,
                    unknown.nearest.join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs an ingest into `tables`, reporting progress on stderr.
pub(super) fn ingest(
    tables: &dyn rowsearch::store::TableStore,
    paths: &[std::path::PathBuf],
    options: &rowsearch::indexer::IngestOptions,
) -> Result<rowsearch::indexer::IngestReport> {
    let label = match tables.store() {
        Some(_) => "ingest".to_owned(),
        None => format!("ingest into {}", tables.place()),
    };
    let mut progress = Progress::new(label, "files", Duration::from_secs(2));
    let report = rowsearch::indexer::ingest(tables, paths, options, &mut |p| {
        progress.update(p.files_done, p.files_total, &format!("{} stored", p.stored));
    });
    progress.finish();
    Ok(report?)
}
