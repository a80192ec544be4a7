//! The command line: arguments (`args.rs`), one file per command group
//! (`serve.rs` with `demo.rs`, `data.rs`, `index.rs`, `keys.rs`, `mail.rs`,
//! `search.rs`), what they share (`common.rs`, `progress.rs`,
//! `output.rs`). anyhow lives only here and in main.

mod args;
mod common;
mod data;
mod demo;
mod index;
mod keys;
mod mail;
mod move_args;
mod moves;
mod place;
mod progress;
mod sample;
mod search;
mod serve;

use std::process::ExitCode;

use anyhow::Result;

use args::Command;
pub use args::{Args, exit_code_for};
use move_args::MoveCommand;

/// Runs a parsed command line.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Command::Serve(command) = &args.command {
        return serve::run(&args, command);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // What only the embedded store keeps, refused with --hbase in one
    // place (`place::store_only`); every other command takes its tables
    // from `place`.
    let store_only = match &args.command {
        Command::Move(MoveCommand::CopyTable { .. }) => {
            Some("copy-table (it names HBase with --to-hbase or --from-hbase)")
        }
        _ => None,
    };
    if let Some(what) = store_only {
        place::refuse_elsewhere(&args, what)?;
    }
    match &args.command {
        Command::Serve(_) => Ok(ExitCode::SUCCESS),
        Command::Data(command) => data::run(&args, command, &mut out),
        Command::Index(command) => index::run(&args, command, &mut out),
        Command::Keys(command) => keys::run(&args, command, &mut out),
        Command::Mail(command) => mail::run(&args, command, &mut out),
        Command::Search(command) => search::run(&args, command, &mut out),
        Command::Move(command) => moves::run(&args, command, &mut out),
    }
}
