//! Moving rows out of the store and between stores: `changes` (the change
//! feed, followed), `export`, `import` and `copy-table`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use rowsearch::feed::{DEFAULT_LIMIT, PageRequest, read_page};
use rowsearch::json::Encoding;

use super::args::Args;
use super::common::open;
use super::move_args::MoveCommand;

/// How often `changes --follow` looks for new changes.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Runs a move command.
pub(super) fn run(args: &Args, command: &MoveCommand, out: &mut impl Write) -> Result<ExitCode> {
    match command {
        MoveCommand::Changes { table, since, consumer, follow, cells, limit } => {
            let store = open(args)?;
            let mut since = match (since, consumer) {
                (Some(since), _) => *since,
                (None, Some(name)) => store.set_consumer(name, None, None)?.position,
                (None, None) => store.begin_read()?.feed_oldest()? - 1,
            };
            loop {
                let request = PageRequest {
                    table,
                    since,
                    limit: usize::try_from(*limit).unwrap_or(DEFAULT_LIMIT),
                    cells: *cells,
                    encoding: Encoding::Binary,
                };
                let page = read_page::<rowsearch::store::Error>(&store, &request, &|_, _| Ok(true))?;
                for change in &page.changes {
                    writeln!(out, "{change}")?;
                }
                out.flush()?;
                if page.cursor > since {
                    if let Some(name) = consumer {
                        store.set_consumer(name, Some(page.cursor), None)?;
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
    }
    Ok(ExitCode::SUCCESS)
}
