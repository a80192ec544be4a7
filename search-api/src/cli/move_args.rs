//! The arguments of `changes`, `export`, `import` and `copy-table`
//! (`moves.rs` runs them).

use clap::Subcommand;

/// The change feed, exports and imports, copies between sources.
#[derive(Debug, Subcommand)]
pub enum MoveCommand {
    /// Print the changes of a table's rows after a sequence as JSON lines
    /// (`seq`, `kind` put or delete, `key`, and with --cells the row's
    /// cells): the change feed GET /tables/{t}/changes serves. With
    /// --consumer it starts after that consumer's position and
    /// acknowledges each page once printed (created at the feed's end when
    /// new); with --follow it waits for more until stopped.
    Changes {
        /// Table name.
        table: String,
        /// Start after this sequence (default: the consumer's position,
        /// else the oldest change the feed holds).
        #[arg(long)]
        since: Option<u64>,
        /// A named consumer (PUT /consumers/{name}): start after its
        /// position and acknowledge what was printed.
        #[arg(long)]
        consumer: Option<String>,
        /// Keep following the feed until stopped (SIGINT).
        #[arg(long)]
        follow: bool,
        /// Print each changed row's cells as it stands now.
        #[arg(long)]
        cells: bool,
        /// Changes read at a time.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        limit: u64,
    },
}
