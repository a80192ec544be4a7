//! Moving rows out of the store and between stores: `changes` (the change
//! feed, followed), `export`, `import` and `copy-table`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use rowsearch::feed::{DEFAULT_LIMIT, PageRequest, read_page};
use rowsearch::json::Encoding;
use rowsearch::transfer::{self, Counts, Place};

use super::args::{Args, UsageError};
use super::move_args::MoveCommand;
use super::progress::Progress;

/// How often `changes --follow` looks for new changes.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Runs a move command.
pub(super) fn run(args: &Args, command: &MoveCommand, out: &mut impl Write) -> Result<ExitCode> {
    match command {
        MoveCommand::Changes { table, since, consumer, follow, cells, limit } => {
            let tables = super::place::tables(args, false)?;
            let mut since = match (since, consumer) {
                (Some(since), _) => *since,
                (None, Some(name)) => tables.set_consumer(name, None, None)?.position,
                (None, None) => tables.feed_oldest()? - 1,
            };
            // What is left to print under --limit.
            let mut left = limit.map_or(u64::MAX, |l| l);
            while left > 0 {
                let request = PageRequest {
                    table,
                    since,
                    limit: usize::try_from(left).unwrap_or(DEFAULT_LIMIT).min(DEFAULT_LIMIT),
                    cells: *cells,
                    encoding: Encoding::Binary,
                };
                let page = read_page::<rowsearch::store::Error>(&*tables, &request, &|_| Ok(true))?;
                for change in &page.changes {
                    writeln!(out, "{change}")?;
                }
                left -= page.changes.len() as u64;
                out.flush()?;
                if page.cursor > since {
                    if let Some(name) = consumer {
                        tables.set_consumer(name, Some(page.cursor), None)?;
                    }
                    since = page.cursor;
                }
                if page.changes.len() < request.limit {
                    if !*follow {
                        break;
                    }
                    std::thread::sleep(FOLLOW_POLL);
                }
            }
        }
        MoveCommand::Export { table, output, force } => {
            if let Some(path) = output {
                check_output(args, path, *force)?;
            }
            export(args, table, output.as_deref(), out)?;
        }
        MoveCommand::Import { input, table, no_pack } => {
            let opened = super::place::tables(args, true)?;
            let to = Place(&*opened);
            let mut progress = Progress::new("import", "rows", Duration::from_secs(2));
            let mut report = |c: Counts| progress.update(c.rows, 0, &format!("{} cells", c.cells));
            let counts = if input.as_os_str() == "-" {
                transfer::import(to, &mut std::io::stdin().lock(), table.as_deref(), &mut report)?
            } else {
                let file = std::fs::File::open(input)
                    .map_err(|e| UsageError(format!("cannot read {}: {e}", input.display())))?;
                transfer::import(to, &mut std::io::BufReader::new(file), table.as_deref(), &mut report)?
            };
            progress.finish();
            writeln!(out, "{}", serde_json::json!({"imported": counts}))?;
            drop(opened);
            super::common::pack_when_loose(args, *no_pack);
        }
        MoveCommand::CopyTable { table, to_hbase, from_hbase, to_table, checkpoint, batch_rows } => {
            let (addr, direction) = match (to_hbase, from_hbase) {
                (Some(addr), None) => (addr, "to"),
                (None, Some(addr)) => (addr, "from"),
                _ => return Err(UsageError("give one of --to-hbase and --from-hbase".into()).into()),
            };
            let store = super::common::create(args)?;
            let hbase = super::place::hbase(addr);
            let (from, to) = match direction {
                "to" => (Place(&store), Place(&hbase)),
                _ => (Place(&hbase), Place(&store)),
            };
            let checkpoint = match checkpoint {
                Some(path) => path.clone(),
                None => {
                    let dir = args.data.join("copies");
                    std::fs::create_dir_all(&dir)?;
                    let safe: String =
                        addr.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
                    dir.join(format!("{table}-{direction}-{safe}.json"))
                }
            };
            if let Some(earlier) = transfer::Checkpoint::read(&checkpoint)?
                && !earlier.complete
            {
                eprintln!(
                    "copy-table: going on from {} (after {} rows)",
                    checkpoint.display(),
                    earlier.copied.rows
                );
            }
            let mut progress = Progress::new("copy-table", "rows", Duration::from_secs(2));
            let done = transfer::copy_table(
                from,
                to,
                table,
                to_table.as_deref().unwrap_or(table),
                &checkpoint,
                usize::try_from(*batch_rows).unwrap_or(500),
                &mut |c| progress.update(c.copied.rows, 0, &format!("{} cells", c.copied.cells)),
            )?;
            progress.finish();
            writeln!(out, "{}", serde_json::to_string(&done)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses an export's `output` that would destroy something: a path
/// inside the data directory (the store's own files), an existing path
/// that is not a regular file (a device, a directory, a symlink), or an
/// existing regular file unless `force`. The `.partial` beside it is
/// checked the same way (it is created, then renamed over `output`).
fn check_output(args: &Args, output: &Path, force: bool) -> Result<()> {
    let absolute = |p: &Path| -> std::path::PathBuf {
        let p =
            if p.is_absolute() { p.to_owned() } else { std::env::current_dir().unwrap_or_default().join(p) };
        // The parent resolved (symlinks, `..`), the name kept: the file
        // itself may not exist yet.
        match (p.parent().and_then(|d| d.canonicalize().ok()), p.file_name()) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => p,
        }
    };
    let data = args.data.canonicalize().unwrap_or_else(|_| absolute(&args.data));
    let target = absolute(output);
    if target.starts_with(&data) {
        return Err(UsageError(format!(
            "--output {} is inside the data directory {}: an export goes elsewhere",
            output.display(),
            args.data.display()
        ))
        .into());
    }
    let mut partial = output.as_os_str().to_owned();
    partial.push(".partial");
    for (path, replaceable) in [(output, force), (Path::new(&partial), true)] {
        let Ok(meta) = std::fs::symlink_metadata(path) else { continue };
        let what = if meta.file_type().is_symlink() {
            "a symbolic link"
        } else if meta.is_dir() {
            "a directory"
        } else if !meta.is_file() {
            "not a regular file"
        } else if !replaceable {
            return Err(UsageError(format!(
                "--output {} exists; give --force to replace it",
                output.display()
            ))
            .into());
        } else {
            continue;
        };
        return Err(
            UsageError(format!("{} is {what}: an export writes a regular file", path.display())).into()
        );
    }
    Ok(())
}

/// `rowsearch export`: into `output` through `output.partial` (renamed
/// once the export is whole and synced), or standard output.
fn export(args: &Args, table: &str, output: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let opened = super::place::tables(args, false)?;
    let from = Place(&*opened);
    let total = opened.store().map_or(0, |store| store.stats(table).map_or(0, |s| s.cells));
    let mut progress = Progress::new("export", "cells", Duration::from_secs(2));
    let mut report = |c: Counts| progress.update(c.cells, total.max(c.cells), &format!("{} rows", c.rows));
    let counts = match output {
        None => transfer::export(from, table, out, &mut report)?,
        Some(path) => {
            let mut partial = path.as_os_str().to_owned();
            partial.push(".partial");
            let partial = std::path::PathBuf::from(partial);
            let file = std::fs::File::create(&partial)
                .map_err(|e| UsageError(format!("cannot write {}: {e}", partial.display())))?;
            let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
            let counts = transfer::export(from, table, &mut writer, &mut report)?;
            let file = writer.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            std::fs::rename(&partial, path)?;
            counts
        }
    };
    progress.finish();
    eprintln!("exported {} rows, {} cells of table {table}", counts.rows, counts.cells);
    Ok(())
}
