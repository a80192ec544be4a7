//! The command line as clap parses it: every command and flag, grouped as
//! the files that run them (`serve.rs`, `data.rs`, `index.rs`, `mail.rs`,
//! `search.rs`); usage errors and exit codes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// rowsearch: an embedded wide-row store (HBase's data model on LMDB), made
/// searchable by keyword.
#[derive(Debug, Parser)]
#[command(
    name = "rowsearch",
    version,
    about,
    long_about = None,
    after_help = "Start with `rowsearch demo`. Typical use: `rowsearch ingest ~/Maildir`, `rowsearch reindex`, \
                  `rowsearch serve`, then GET /tables/mail/search?q=... (see README.md and API.md).\n\
                  Exit status: 0 success, 1 the job found a problem, 2 bad usage or unusable input."
)]
pub struct Args {
    /// Data directory of the store.
    #[arg(long, global = true, env = "ROWSEARCH_DATA", default_value = "./rowsearch-data")]
    pub data: PathBuf,
    /// Tables in an Apache HBase cluster, through its Thrift2 gateway at
    /// HOST:PORT, or HOST:PORT/NAMESPACE for tables in an HBase namespace
    /// (made when missing) (tables, create-table, drop-table, put, get,
    /// ingest, keywords, reindex, verify, search, export, import, serve;
    /// --data then keeps rowsearch's own: index generations and access
    /// keys).
    #[arg(long, global = true, env = "ROWSEARCH_HBASE")]
    pub hbase: Option<String>,
    /// When a write that was answered is on disk: `sync`, before the
    /// answer (survives a power loss); `process`, in the page cache before
    /// the answer and on disk within --sync-interval-ms (survives the
    /// process being killed, not an OS crash: HBase's default `SYNC_WAL`).
    #[arg(long, global = true, env = "ROWSEARCH_DURABILITY", value_enum, default_value = "sync")]
    pub durability: DurabilityArg,
    /// With --durability process: how often changes are synced.
    #[arg(long, global = true, env = "ROWSEARCH_SYNC_INTERVAL_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub sync_interval_ms: u64,
    #[command(subcommand)]
    pub command: Command,
}

impl Args {
    /// Whether this run is a batch job that was given a memory budget to
    /// keep: a reindex or an ingest given `--memory-mb`. main.rs then has the allocator give freed memory back
    /// at once (`crate::alloc`).
    pub fn keeps_a_memory_budget(&self) -> bool {
        match &self.command {
            Command::Search(SearchCommand::Reindex { memory_mb, .. }) => memory_mb.is_some(),
            Command::Mail(MailCommand::Ingest { memory_mb, .. }) => memory_mb.is_some(),
            _ => false,
        }
    }
}

/// `rowsearch keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key; prints it once (as JSON with its uid), never again.
    Create {
        /// What it may do: search, read, write, admin (comma-separated), or *.
        #[arg(long, value_delimiter = ',', required = true)]
        actions: Vec<String>,
        /// The tables it may touch (comma-separated); default all.
        #[arg(long, value_delimiter = ',')]
        tables: Vec<String>,
        /// The partitions (mailboxes) it is confined to (comma-separated);
        /// default all.
        #[arg(long, value_delimiter = ',')]
        partitions: Vec<String>,
        /// When it stops working (RFC 3339).
        #[arg(long)]
        expires_at: Option<String>,
        /// What it is for.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// The keys (never the keys themselves), as JSON lines.
    List,
    /// Delete a key by its uid.
    Delete {
        /// The key's uid.
        uid: String,
    },
}

/// `rowsearch index ...`.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Keys (or rows, with --rows) matching a lookup, as JSON lines in index
    /// order; prints the next cursor on stderr when --limit cut it short.
    Lookup {
        /// Table name.
        table: String,
        /// Index name.
        index: String,
        /// Value of the next leading column (repeat for a composite index).
        #[arg(long)]
        eq: Vec<String>,
        /// Prefix of the column after the --eq ones.
        #[arg(long)]
        prefix: Option<String>,
        /// Lower bound (inclusive) of the column after the --eq ones.
        #[arg(long)]
        start: Option<String>,
        /// Upper bound (exclusive) of the column after the --eq ones.
        #[arg(long)]
        stop: Option<String>,
        /// Most matches.
        #[arg(long)]
        limit: Option<usize>,
        /// Resume after a cursor printed by an earlier lookup.
        #[arg(long)]
        cursor: Option<String>,
        /// Print the rows instead of their keys.
        #[arg(long)]
        rows: bool,
    },
    /// Add an index to a table and build it from the rows already there.
    Add {
        /// Table name.
        table: String,
        /// Index name.
        index: String,
        /// Comma-separated columns, family:qualifier, most significant first.
        #[arg(long, value_delimiter = ',', required = true)]
        columns: Vec<String>,
    },
    /// Remove an index and its entries.
    Drop {
        /// Table name.
        table: String,
        /// Index name.
        index: String,
    },
    /// Clear an index and build it again from the rows.
    Rebuild {
        /// Table name.
        table: String,
        /// Index name.
        index: String,
    },
    /// Compare an index with the rows; exit status 1 when they differ.
    Verify {
        /// Table name.
        table: String,
        /// Index name.
        index: String,
    },
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Serve(ServeCommand),
    #[command(flatten)]
    Data(DataCommand),
    /// Secondary indexes: look up, add, drop, rebuild, verify.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Access keys for `serve --master-key`: create, list, delete (on the
    /// data directory; a running server sees the change at once).
    #[command(subcommand)]
    Keys(KeysCommand),
    #[command(flatten)]
    Mail(MailCommand),
    #[command(flatten)]
    Search(SearchCommand),
    #[command(flatten)]
    Move(super::move_args::MoveCommand),
}

/// Running the demo and the HTTP server.
// Parsed once per process: `serve`'s many options need no box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// The whole product on sample data: store tour, the bundled mail
    /// ingested, the search index built, HTTP served with example curl
    /// commands (start here).
    Demo {
        /// Rows to write.
        #[arg(long, default_value_t = 1000)]
        rows: u32,
        /// Address to serve HTTP on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:7311")]
        listen: String,
        /// Stop after loading and indexing instead of serving.
        #[arg(long)]
        no_serve: bool,
    },
    /// Serve the HTTP API (API.md) until SIGINT or SIGTERM; prints
    /// `listening on http://HOST:PORT` once it accepts connections.
    Serve {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:7311")]
        listen: String,
        /// Also serve HBase's Thrift API (the `Hbase` service of HBase's
        /// Thrift gateway: happybase and generated clients) on this address
        /// (port 0 picks a free one; printed as `thrift listening on
        /// HOST:PORT`). It has no authentication, as HBase's has none:
        /// loopback only, and not beside --master-key.
        #[arg(long)]
        thrift: Option<String>,
        /// Also serve HBase's Thrift2 API (`THBaseService`, of HBase's
        /// Thrift2 gateway) on this address (printed as `thrift2 listening
        /// on HOST:PORT`); loopback only, and not beside --master-key, as
        /// --thrift.
        #[arg(long)]
        thrift2: Option<String>,
        /// Let --thrift and --thrift2 listen on a non-loopback address.
        /// They have no authentication (HBase's gateways have none): anyone
        /// who reaches the port can read, write and drop every table. Put
        /// them behind a firewall or an authenticating proxy.
        #[arg(long)]
        thrift_open_network: bool,
        /// Create the store when --data holds none (without it, a missing
        /// store is exit 2: a mistyped --data must not serve an empty one).
        #[arg(long)]
        create: bool,
        /// Turns access keys on: every request but /health then needs
        /// `Authorization: Bearer <key>` (this key, or one made with it).
        /// At least 16 bytes. Needed to listen on anything but loopback.
        #[arg(long, env = "ROWSEARCH_MASTER_KEY", hide_env_values = true)]
        master_key: Option<String>,
        /// An origin (`https://app.example.com`) whose pages may call the
        /// server besides its own; repeatable. Requests from any other
        /// origin are refused with 403.
        #[arg(long)]
        allow_origin: Vec<String>,
        /// A host name (`search.example.com`, or with its port) requests may
        /// name in `Host` besides loopback names and addresses and the
        /// address listened on; repeatable; `*` allows any (behind a proxy
        /// that checks it). Other requests are refused with 403, which
        /// stops DNS rebinding.
        #[arg(long)]
        allow_host: Vec<String>,
        /// Largest request body in bytes.
        #[arg(long, default_value_t = 64 << 20)]
        max_body: u64,
        /// Longest a request may run, in milliseconds, before it is answered 503.
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
        /// Longest a client may take to send a request's headers, in
        /// milliseconds, before its connection is closed.
        #[arg(long, default_value_t = 10_000)]
        header_timeout_ms: u64,
        /// Longest a client may take to send a request's body, in
        /// milliseconds, before it is answered 408.
        #[arg(long, default_value_t = 30_000)]
        body_timeout_ms: u64,
        /// Most connections open at once; past it the server accepts no
        /// more until one closes.
        #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
        max_connections: u64,
        /// Most connections one client (address) may hold open at once;
        /// past it a new connection from it is closed at once.
        #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_connections_per_client: usize,
        /// Most bytes of request bodies held at once, server-wide, from the
        /// moment one is read until its request is done; a body that does
        /// not fit within its read time is refused 503 unread.
        #[arg(long, default_value_t = 256 << 20, value_parser = clap::value_parser!(u64).range(1..))]
        max_bodies_bytes: u64,
        /// Most bytes of answers waiting to be sent to their clients, held
        /// at once, server-wide; a read's answer over 64 KiB that does not
        /// fit is refused 503 `busy` (a client that never reads cannot
        /// hold more).
        #[arg(long, default_value_t = 256 << 20, value_parser = clap::value_parser!(u64).range(1..))]
        max_answers_bytes: u64,
        /// A search query's expansion budget: a prefix, a fuzzy word or a
        /// typo-tolerant word counts 1, a phrase prefix 4; a query past it
        /// is refused with 400 before it runs.
        #[arg(long, default_value_t = rowsearch::indexer::query::DEFAULT_MAX_EXPANSIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_expansions: usize,
        /// Most leaf clauses (terms, phrase words, expanding words) of a
        /// search query; past it 400.
        #[arg(long, default_value_t = rowsearch::indexer::query::DEFAULT_MAX_CLAUSES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_clauses: usize,
        /// Most hits a search answers per page (`limit`); past it 400.
        #[arg(long, default_value_t = rowsearch::MAX_LIMIT, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_search_limit: usize,
        /// Most rows a scan, count page or index lookup answers (`limit`);
        /// past it 400.
        #[arg(long, default_value_t = 10_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_scan_limit: usize,
        /// Most index lookups one `indexes:intersect` combines; past it 400.
        #[arg(long, default_value_t = rowsearch::http::MAX_INDEX_TERMS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_lookups: usize,
        /// Most bytes of a field's text a highlight looks through (a word
        /// only past them is not marked).
        #[arg(long, default_value_t = rowsearch::MAX_HIGHLIGHT_TEXT_BYTES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_highlight_bytes: usize,
        /// Most requests doing store or index work at once; the others
        /// wait in arrival order (default: the number of cores).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workers: Option<u64>,
        /// How long an idle worker keeps looking for the next request
        /// before it sleeps, in microseconds (0: at once). One worker at a
        /// time does it, giving its core to any other thread that wants it.
        #[arg(long, default_value_t = 500)]
        idle_spin_us: u64,
        /// Milliseconds between the background refreshes that keep every
        /// searchable table's index current from the change feed (0: only
        /// when a search needs one).
        #[arg(long, default_value_t = 1000)]
        refresh_ms: u64,
        /// With --hbase: join the cluster of searchers of this name over
        /// that HBase (1-64 of A-Z a-z 0-9 _ . -), sharing the shards of
        /// every searchable table's index through leases kept in HBase
        /// (`GET /cluster`; README "A cluster of searchers").
        #[arg(long, env = "ROWSEARCH_CLUSTER")]
        cluster: Option<String>,
        /// Most rows written since the index's last commit that a search
        /// matches directly (in memory) to reflect them; past it, a search
        /// waits for the index to absorb them (0: always waits).
        #[arg(long, default_value_t = rowsearch::DEFAULT_OVERLAY_MAX_ROWS)]
        overlay_max_rows: usize,
        /// Where `POST /backups` and scheduled backups go, each into a new
        /// `backup-<UTC time>` directory (outside --data).
        #[arg(long, value_name = "DIR")]
        backup_dir: Option<PathBuf>,
        /// Take a backup this often (`90s`, `30m`, `6h`, `1d`); needs
        /// --backup-dir.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "backup_dir")]
        backup_every: Option<std::time::Duration>,
        /// Complete backups kept in --backup-dir; older ones are removed
        /// after each backup.
        #[arg(long, default_value_t = 7, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        backup_keep: usize,
        /// Most MB a second a backup of the server writes (0: as fast as
        /// it goes), so that searches keep their speed beside it.
        #[arg(long, default_value_t = 150)]
        backup_max_mb_per_s: u64,
        /// How log lines (one per request, jobs, refreshes) are written on
        /// stderr: text, or json (one object per line).
        #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
        log_format: LogFormatArg,
        /// Requests slower than this many milliseconds are logged as slow
        /// (at WARN).
        #[arg(long, default_value_t = 1000)]
        slow_ms: u64,
    },
}

/// `serve --log-format`.
/// `--durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DurabilityArg {
    Sync,
    Process,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormatArg {
    /// `TIME LEVEL target: message key=value ...`.
    Text,
    /// One JSON object per line.
    Json,
}

/// Tables, rows, scans and maintenance.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// List tables.
    Tables,
    /// Create a table from a JSON schema (inline, or @FILE).
    CreateTable {
        /// Table name.
        table: String,
        /// Schema JSON, e.g. '{"families":[{"name":"m","max_versions":3}]}', or @path.
        #[arg(long)]
        schema: String,
    },
    /// Drop a table and all its cells.
    DropTable {
        /// Table name.
        table: String,
    },
    /// Write cells into one row: COLUMN=VALUE pairs (binary strings).
    Put {
        /// Table name.
        table: String,
        /// Row key (binary string); with --key-fields, the first cell.
        #[arg(required = true)]
        key: String,
        /// Cells as family:qualifier=value.
        cells: Vec<String>,
        /// The row by its typed key's fields (JSON), in place of KEY:
        /// `put notes --key-fields '{"user":"ann","id":1}' n:s=hi`.
        #[arg(long)]
        key_fields: Option<String>,
        /// Timestamp in ms (default: now).
        #[arg(long)]
        timestamp: Option<u64>,
    },
    /// Read one row as JSON.
    Get {
        /// Table name.
        table: String,
        /// Row key (binary string).
        #[arg(required_unless_present = "key_fields", conflicts_with = "key_fields")]
        key: Option<String>,
        /// The row by its typed key's fields (JSON), in place of KEY.
        #[arg(long)]
        key_fields: Option<String>,
        #[command(flatten)]
        read: ReadArgs,
    },
    /// Delete a row, a family (`--columns f`) or a column (`--columns f:q`),
    /// optionally only versions up to `--timestamp`.
    Delete {
        /// Table name.
        table: String,
        /// Row key (binary string).
        #[arg(required_unless_present = "key_fields", conflicts_with = "key_fields")]
        key: Option<String>,
        /// The row by its typed key's fields (JSON), in place of KEY.
        #[arg(long)]
        key_fields: Option<String>,
        /// Comma-separated families or columns; default the whole row.
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
        /// Only versions with timestamp <= this.
        #[arg(long)]
        timestamp: Option<u64>,
        /// Delete exactly the version at --timestamp of each family:qualifier
        /// of --columns (HBase's Delete.addColumn), not every version up to it.
        #[arg(long, requires = "timestamp")]
        exact: bool,
    },
    /// Scan rows as JSON lines; prints the next cursor on stderr when the limit cut it short.
    Scan(ScanArgs),
    /// A table's regions as JSON lines: key range, rows, cells, bytes.
    Regions {
        /// Table name.
        table: String,
        /// Threads walking regions in parallel.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// The fields a table's search documents carry when a search names
    /// none (Meilisearch's displayed attributes): set them (search fields,
    /// the partition, date, family:qualifier columns), `--all` for every
    /// field, or nothing to print the current setting.
    Display {
        /// Table name.
        table: String,
        /// The names, comma-separated or as separate arguments.
        #[arg(value_delimiter = ',')]
        names: Vec<String>,
        /// Every field (the setting removed).
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Cell count and bytes of a table.
    Stats {
        /// Table name.
        table: String,
    },
    /// Purge cells past their TTL.
    Compact,
    /// Rewrite a store written by an older on-disk format in this build's
    /// format, with progress. Any command upgrades a store it opens; this
    /// one does only that and says what it did. Killed at any point, it
    /// leaves the old store, which the next run upgrades again. A rewrite
    /// that left data.mdb past 1.25x its packed size ends by repacking it
    /// when no other process has it open.
    Upgrade {
        /// Leave the store as the upgrade left it (the next ingest, or
        /// `repack`, packs it).
        #[arg(long)]
        no_pack: bool,
    },
    /// Rewrite every database of the store in key order with full pages
    /// (random inserts leave B-tree pages about two-thirds full): a smaller
    /// data.mdb and fewer pages per scan. Needs the store alone (refused
    /// while a server or another command has it open) and free space for a
    /// second copy; killed at any point, the store is as it was before.
    Repack,
    /// Copy the store into DEST while it serves and takes writes: its file
    /// from one snapshot (compacted), each table's serving index
    /// generation, the access keys, and manifest.json (format, sequence,
    /// tables, every file's length and checksum) written last. DEST must be
    /// new or empty (a backup killed before it finished is cleared).
    Backup {
        /// The backup directory.
        dest: PathBuf,
        /// CPU priority of the backup (a nice value, 0-19), as ingest's:
        /// above 0 it yields the cores to a server's searches.
        #[arg(long, default_value_t = rowsearch::indexer::DEFAULT_INGEST_NICE,
              value_parser = clap::value_parser!(i32).range(0..=19))]
        nice: i32,
        /// Write at most this many MB a second (default: as fast as it
        /// goes); beside a busy server, 150 keeps its searches' p99 within
        /// 2x.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_mb_per_s: Option<u64>,
    },
    /// Make the store of --data (a new or empty directory) from the backup
    /// in SRC, checking the manifest and every file's checksum first: a
    /// partial, corrupt or newer-format backup is refused and nothing is
    /// written. Tables whose index the backup lacks are reindexed.
    Restore {
        /// The backup directory.
        src: PathBuf,
    },
}

/// Mail ingest and keyword lookups.
#[derive(Debug, Subcommand)]
pub enum MailCommand {
    /// Load mail (Maildir trees, mbox files, .eml files) or JSON lines of
    /// rows into a table; the mail table is created when missing. Files that
    /// cannot be read or parsed are skipped and listed; the run goes on.
    Ingest {
        /// Files and directories (walked recursively).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Target table.
        #[arg(long, default_value = "mail")]
        table: String,
        /// Input format; auto decides per file (.jsonl, .mbox or a leading
        /// "From " line, else one message per file).
        #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
        format: FormatArg,
        /// Put every message in this mailbox (default: the first directory
        /// below each given path).
        #[arg(long)]
        user: Option<String>,
        /// Write every skipped file with its reason to FILE (tab-separated).
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Skip messages larger than this many bytes.
        #[arg(long, default_value_t = rowsearch::indexer::DEFAULT_MAX_MESSAGE_BYTES)]
        max_message_bytes: u64,
        /// Rows per write transaction.
        #[arg(long, default_value_t = 4096, conflicts_with = "memory_mb")]
        batch_rows: usize,
        /// Memory budget in MiB for the ingest's own memory (batches, the
        /// batch read ahead, their keyword cells and dirtied pages; not the
        /// store's mapped pages): sizes the batches to fit (at least 176;
        /// default: batches of 4,096 rows, about 570 MiB). Given, the process's allocator
        /// also returns freed memory at once (a little slower).
        #[arg(long)]
        memory_mb: Option<u64>,
        /// CPU priority of the ingest (a nice value, 0-19): above 0 it
        /// yields the cores to the searches of a server on the same
        /// machine; 0 runs it at the priority it was started with.
        #[arg(long, default_value_t = rowsearch::indexer::DEFAULT_INGEST_NICE,
              value_parser = clap::value_parser!(i32).range(0..=19))]
        nice: i32,
        /// When the ingest creates the table: the shards a cluster of
        /// searchers splits its index into, by mailbox (1-1024; default 1;
        /// docs/cluster.md).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        shards: Option<u32>,
        /// Leave the store as the writes left it: by default an ingest that
        /// grew data.mdb past 1.25x its packed size ends by repacking it
        /// when no other process has it open.
        #[arg(long)]
        no_pack: bool,
    },
    /// Keys of one mailbox's rows holding every term, newest first, read
    /// straight from the keyword rows (JSON lines); prints the next cursor
    /// on stderr when --limit cut it short.
    Keywords {
        /// Terms: word (any search field) or field:word.
        #[arg(required = true)]
        terms: Vec<String>,
        /// The mailbox (partition).
        #[arg(long)]
        user: String,
        /// Table name.
        #[arg(long, default_value = "mail")]
        table: String,
        /// Most keys.
        #[arg(long)]
        limit: Option<usize>,
        /// Resume after a cursor printed by an earlier lookup.
        #[arg(long)]
        cursor: Option<String>,
    },
}

/// The search index: reindexing, checking, searching.
#[derive(Debug, Subcommand)]
pub enum SearchCommand {
    /// Build the table's search index from its keyword rows: a new
    /// generation (--full), or the changes since the last run applied to
    /// the serving one (--incremental). Default: incremental if an index
    /// exists, else full.
    Reindex {
        /// Table name.
        #[arg(long, default_value = "mail")]
        table: String,
        /// Build a new generation from all keyword rows.
        #[arg(long, conflicts_with = "incremental")]
        full: bool,
        /// Apply the change feed to the serving generation.
        #[arg(long)]
        incremental: bool,
        /// Memory budget in MiB (indexing buffers, grouping, documents
        /// queued; default 512). Given, the process's allocator also returns
        /// freed memory at once, so the peak stays near it (a little slower).
        #[arg(long)]
        memory_mb: Option<usize>,
        /// Indexing threads, and regions read in parallel (default: every
        /// core).
        #[arg(long, visible_alias = "parallel")]
        threads: Option<usize>,
        /// Leave a full build's segments unmerged (faster to build, slower
        /// to search: each segment's terms are walked separately).
        #[arg(long)]
        no_merge: bool,
        /// First set how many shards a cluster of searchers splits the
        /// table's index into (1-1024; docs/cluster.md): its searchers
        /// build the shards of the new count.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        shards: Option<u32>,
    },
    /// Check the store, its keyword rows and the search index against each
    /// other; exit status 1 on a mismatch (listed on stdout as JSON).
    Verify {
        /// Table name.
        #[arg(long, default_value = "mail")]
        table: String,
        /// About how many rows to compare term by term.
        #[arg(long, default_value_t = 100)]
        sample: u64,
    },
    /// Search the index: the matching rows, best first or by date, with
    /// the total; --json prints the HTTP API's search response.
    Search {
        /// Query: words (ANDed), OR, NOT/-, "phrases", field:word,
        /// date:[2001-01-01T00:00:00Z TO 2001-02-01T00:00:00Z].
        query: String,
        /// Table name.
        #[arg(long, default_value = "mail")]
        table: String,
        /// Only this mailbox (partition).
        #[arg(long)]
        user: Option<String>,
        /// Order of the hits.
        #[arg(long, value_enum, default_value_t = SortArg::Relevance)]
        sort: SortArg,
        /// Most hits.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Hits to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print the HTTP API's JSON response instead of lines.
        #[arg(long)]
        json: bool,
        /// Tolerate typos in plain words (API.md's `typos=auto`: 5+
        /// characters one typo, 9+ two, a typo on the first character
        /// counting as two; exact matches first).
        #[arg(long)]
        typos: bool,
        /// With --json: hits as documents, or as rows of cells.
        #[arg(long, value_enum, default_value_t = HitFormatArg::Documents)]
        format: HitFormatArg,
        /// With --json documents: only these names in each (search fields,
        /// the partition, date, family:qualifier columns; comma-separated;
        /// `*` every one). Default: the table's display (`rowsearch display`).
        #[arg(long, value_delimiter = ',')]
        fields: Vec<String>,
        /// With --json documents: search fields cropped to WORDS words
        /// around the first match (FIELD or FIELD:WORDS, default 10;
        /// comma-separated), each in the document.
        #[arg(long, value_delimiter = ',')]
        crop: Vec<String>,
        /// Count these facets over every match (comma-separated: the
        /// partition's name, fields declared facet, month, year).
        #[arg(long, value_delimiter = ',')]
        facets: Vec<String>,
        /// Values per facet, most matches first.
        #[arg(long, default_value_t = rowsearch::DEFAULT_FACET_LIMIT)]
        facet_limit: usize,
        /// One hit per thread (its best matching message; the thread's id,
        /// matches and messages printed with it); the total counts threads.
        #[arg(long, value_enum)]
        collapse: Option<CollapseArg>,
    },
    /// A conversation in reading order (JSON): each message a document
    /// with its depth and the message it answers.
    Thread {
        /// The thread id (16 hex digits: a document's `thread`).
        id: String,
        /// Table name.
        #[arg(long, default_value = "mail")]
        table: String,
        /// Only these names in each document (comma-separated; `*` every
        /// one). Default: the table's display.
        #[arg(long, value_delimiter = ',')]
        fields: Vec<String>,
    },
}

/// `--collapse` values of `search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CollapseArg {
    /// One hit per thread.
    Thread,
}

/// `--format` values of `search --json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HitFormatArg {
    /// Search fields by name, partition, date (API.md's default).
    Documents,
    /// The row's cells as binary strings (`format=cells`).
    Cells,
}

/// `--sort` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SortArg {
    /// BM25, best first.
    Relevance,
    /// Newest first.
    Newest,
    /// Oldest first.
    Oldest,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Decided per file.
    Auto,
    /// One message per file, user/folder from the path.
    Maildir,
    /// mbox files.
    Mbox,
    /// One message per file.
    Eml,
    /// JSON lines of rows.
    Jsonl,
}

/// Which cells to read.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// Comma-separated `f` or `f:q` selections.
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Versions per column: a number or `all`.
    #[arg(long, default_value = "1")]
    pub versions: String,
    /// Inclusive lower bound on timestamps.
    #[arg(long)]
    pub min_ts: Option<u64>,
    /// Exclusive upper bound on timestamps.
    #[arg(long)]
    pub max_ts: Option<u64>,
}

/// A usage error found after parsing (bad binary string, bad JSON...).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// 2 for bad usage or unusable input, 1 otherwise.
pub fn exit_code_for(err: &anyhow::Error) -> ExitCode {
    let bad_input = err.chain().any(|e| {
        e.downcast_ref::<UsageError>().is_some()
            || e.downcast_ref::<rowsearch::indexer::Error>().is_some_and(rowsearch::indexer::Error::is_usage)
            || e.downcast_ref::<rowsearch::Error>().is_some_and(rowsearch::Error::is_usage)
            || e.downcast_ref::<rowsearch::hbase::HbaseError>()
                .is_some_and(rowsearch::hbase::HbaseError::is_user_error)
            || e.downcast_ref::<rowsearch::store::Error>().is_some_and(|e| {
                e.is_user_error()
                    || matches!(
                        e.kind(),
                        rowsearch::store::ErrorKind::NotAStore { .. }
                            | rowsearch::store::ErrorKind::InUse { .. }
                    )
            })
    });
    ExitCode::from(if bad_input { 2 } else { 1 })
}

/// `rowsearch scan`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Table name.
    pub table: String,
    /// First row, inclusive (the upper bound with --reverse).
    #[arg(long)]
    pub start: Option<String>,
    /// Stop row, exclusive (the lower bound with --reverse).
    #[arg(long)]
    pub stop: Option<String>,
    /// Only keys with this prefix.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Walk down.
    #[arg(long)]
    pub reverse: bool,
    /// Most rows.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Rows to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Resume after a cursor printed by an earlier scan.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Cells without values.
    #[arg(long)]
    pub keys_only: bool,
    /// Print only the number of rows.
    #[arg(long)]
    pub count: bool,
    /// HBase filter language, e.g. "PrefixFilter('a') AND ValueFilter(=, 'binary:x')".
    #[arg(long)]
    pub filter: Option<String>,
    /// Only this region (see `rowsearch regions`).
    #[arg(long)]
    pub region: Option<usize>,
    /// For a typed row key: leading key fields as JSON, e.g. '{"user":"ann"}'.
    #[arg(long, conflicts_with = "prefix")]
    pub prefix_fields: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// A duration as `--backup-every` takes it: a number and a unit, `s`, `m`,
/// `h` or `d` (`90s`, `30m`, `6h`, `1d`), at least a second.
pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 =
        number.parse().map_err(|_| format!("{text:?}: a number and a unit (90s, 30m, 6h, 1d)"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d (90s, 30m, 6h, 1d)")),
    };
    match number.checked_mul(seconds) {
        Some(0) => Err(format!("{text:?}: at least 1s")),
        Some(s) => Ok(std::time::Duration::from_secs(s)),
        None => Err(format!("{text:?}: too long")),
    }
}

#[cfg(test)]
mod duration_tests {
    use crate::cli::args::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_a_number_and_a_unit() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("6h"), Ok(Duration::from_secs(21_600)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        for bad in ["", "6", "h", "0s", "6 h", "6hours", "-1s", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
