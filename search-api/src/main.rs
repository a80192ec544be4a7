//! The `rowsearch` binary: parse, run, map the outcome to an exit code.
//!
//! Exit status: 0 success; 1 the job ran and found a problem (or the store
//! failed underneath it); 2 bad usage or unusable input.

mod alloc;
mod cli;

// The server hands every request between a tokio worker and a work-pool
// thread, and frees on one thread what it allocated on another; glibc's
// malloc spent ~12% of a search's CPU on that (search-api/BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    alloc::without_transparent_huge_pages();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = cli::Args::parse_from(&argv);
    if args.keeps_a_memory_budget() {
        alloc::run_with_lazy_allocator(&argv);
    }
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            // A closed stdout (`rowsearch scan ... | head`) is not a failure.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            cli::exit_code_for(&err)
        }
    }
}
