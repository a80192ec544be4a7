//! The arguments of `changes`, `export`, `import` and `copy-table`
//! (`moves.rs` runs them).

use std::path::PathBuf;

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
        /// Print at most this many changes, then stop (default: every
        /// change there is; with --follow, no end).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
    },
    /// Write every version of every cell of a table, with its schema, as
    /// JSON lines (a header, a row a line in key order, a last line with
    /// the counts): from one snapshot of the store, or from HBase with
    /// --hbase. Into --output (written as FILE.partial, renamed once
    /// complete) or standard output. An existing --output is refused
    /// unless --force is given and it is a regular file; a path inside
    /// --data never.
    Export {
        /// Table name.
        table: String,
        /// The file to write (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Replace --output when it is an existing regular file.
        #[arg(long)]
        force: bool,
    },
    /// Read an export into a table (created from the export's schema when
    /// missing), in the store or in HBase with --hbase. Idempotent: the
    /// same cells at the same timestamps; rows the export lacks are left
    /// alone. An export without its last line is imported and reported
    /// incomplete (exit 2).
    Import {
        /// The export file, or - for standard input.
        input: PathBuf,
        /// Import into this table instead of the export's.
        #[arg(long)]
        table: Option<String>,
        /// Leave the store as the writes left it (by default an import that
        /// grew data.mdb past 1.25x its packed size ends by repacking it
        /// when no other process has it open).
        #[arg(long)]
        no_pack: bool,
    },
    /// Copy a table between the store (--data) and HBase, every version of
    /// every cell, in key order, a checkpoint after each batch: killed, the
    /// same command goes on where it stopped.
    CopyTable {
        /// Table name.
        table: String,
        /// Copy the store's table into the HBase behind this Thrift2
        /// gateway (HOST:PORT).
        #[arg(long, conflicts_with = "from_hbase", required_unless_present = "from_hbase")]
        to_hbase: Option<String>,
        /// Copy the table of the HBase behind this gateway into the store.
        #[arg(long)]
        from_hbase: Option<String>,
        /// The destination table (default: the same name).
        #[arg(long)]
        to_table: Option<String>,
        /// The checkpoint file (default: copies/TABLE-to|from-HOST_PORT.json
        /// in the data directory).
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// Rows written at a time (a checkpoint after each batch).
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        batch_rows: u64,
    },
}
