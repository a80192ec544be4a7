//! The store: the public face of the layers below. It opens the
//! environment and the catalog, and hands each call to its layer: reads to
//! `read`, writes and schema changes to `write`, the feed to `db::feed`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::cell::{PutCell, Row};
use crate::clock::{Clock, SystemClock};
use crate::db::durability::Durability;
use crate::db::env::{EnvLimits, Environment};
use crate::db::feed::{CommitInfo, Feed};
use crate::db::keys::{KeyRecord, Keys};
use crate::db::meta::Meta;
use crate::db::{self as dbs};
use crate::error::{Error, ErrorKind, Result};
use crate::keyword::{KeywordPage, KeywordQuery};
use crate::read::{ReadOptions, ReadTxn, Scan, ScanPage};
use crate::schema::{Analyzer, TableSchema};
use crate::table::{Catalog, DbSource, Region, RegionStats, TableStats, Tables, open_table};
use crate::upgrade::{UpgradeObserver, UpgradeProgress};
use crate::write::{Batch, CompactReport, Delete, PendingRuns, PreparedBatch, Writer};
use crate::write::{RepairedIndex, repair_moved_runs};

mod feed;
mod indexes;

/// Default initial size of the memory map (it grows on demand).
pub const DEFAULT_MAP_SIZE_BYTES: usize = 1 << 30;
/// Default limit on the LMDB databases of a store's tables: one per column
/// family, two per secondary index (its entries and its pending runs) and
/// one for a table's keyword rows, across all tables. The store's own
/// databases (metadata and change feed) come on top.
pub const DEFAULT_MAX_DBS: u32 = 1024;

/// Rows one step of an index build covers ([`Store::finish_index_build`]):
/// each step holds the writer for about as long as a batch of ingest does.
pub const INDEX_BUILD_STEP_ROWS: usize = 4096;

/// Options for opening a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreBuilder {
    on_upgrade: UpgradeObserver,
    map_size_bytes: usize,
    max_dbs: u32,
    max_readers: u32,
    clock: Arc<dyn Clock>,
    analyzer: Option<Arc<dyn Analyzer>>,
    pending_runs: PendingRuns,
    durability: Durability,
}

impl Default for StoreBuilder {
    fn default() -> StoreBuilder {
        StoreBuilder {
            on_upgrade: UpgradeObserver(None),
            map_size_bytes: DEFAULT_MAP_SIZE_BYTES,
            max_dbs: DEFAULT_MAX_DBS,
            max_readers: 512,
            clock: Arc::new(SystemClock),
            analyzer: None,
            pending_runs: PendingRuns {
                index: crate::secondary::PENDING_RUNS,
                keyword: crate::keyword::PENDING_RUNS,
            },
            durability: Durability::Sync,
        }
    }
}

impl StoreBuilder {
    /// Initial memory-map size; rounded up to the page size. The map doubles
    /// whenever a write needs more room.
    pub fn map_size_bytes(mut self, bytes: usize) -> StoreBuilder {
        self.map_size_bytes = bytes;
        self
    }

    /// Most LMDB databases for tables (see [`DEFAULT_MAX_DBS`]).
    pub fn max_dbs(mut self, max_dbs: u32) -> StoreBuilder {
        self.max_dbs = max_dbs;
        self
    }

    /// Most concurrent read transactions (LMDB's reader table).
    pub fn max_readers(mut self, max_readers: u32) -> StoreBuilder {
        self.max_readers = max_readers;
        self
    }

    /// When a write that returned is on disk (default [`Durability::Sync`]:
    /// before it returns). Another `Store` of this process already open on
    /// the same directory shares its environment, and its durability.
    pub fn durability(mut self, durability: Durability) -> StoreBuilder {
        self.durability = durability;
        self
    }

    /// The clock used for default timestamps and TTL.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> StoreBuilder {
        self.clock = clock;
        self
    }

    /// The analyzer that turns searchable columns into keyword rows (the
    /// indexer's, so ingest, index and queries agree). Without one, writes
    /// to a table with a `search` section fail with `NoAnalyzer`.
    pub fn analyzer(mut self, analyzer: Arc<dyn Analyzer>) -> StoreBuilder {
        self.analyzer = Some(analyzer);
        self
    }

    /// Most sorted runs of new entries a secondary index keeps beside its
    /// main B-tree (default 32): each write appends its new entries as one
    /// run, and a write that leaves more runs than this moves them all into
    /// the main B-tree. More runs make merges rarer but lookups read more
    /// ranges; 0 merges on every write. See "Secondary indexes" in
    /// `store/FORMAT.md`.
    pub fn index_pending_runs(mut self, runs: usize) -> StoreBuilder {
        self.pending_runs.index = runs;
        self
    }

    /// Most pending keyword runs a table keeps beside its keyword blocks
    /// (default 4): each write appends its new keyword versions as one run,
    /// and a write that leaves more runs moves them all into the blocks.
    /// More runs make merges rarer but lookups read more places; 0 writes
    /// every change straight into the blocks. See "Keyword rows" in
    /// `store/FORMAT.md`.
    pub fn keyword_pending_runs(mut self, runs: usize) -> StoreBuilder {
        self.pending_runs.keyword = runs;
        self
    }

    /// Calls `observer` while opening upgrades a store written by an older
    /// format: at the start of each table's conversion, every few thousand
    /// keyword cells, and at its end. The upgrade runs in the opening
    /// transaction, so it commits whole with the new format marker or not
    /// at all: a process killed during it leaves the old store, which the
    /// next open upgrades again.
    pub fn on_upgrade(
        mut self,
        observer: impl Fn(&UpgradeProgress<'_>) + Send + Sync + 'static,
    ) -> StoreBuilder {
        self.on_upgrade = UpgradeObserver(Some(Arc::new(observer)));
        self
    }

    /// Opens the store in `dir`, creating the directory and the store when
    /// missing.
    ///
    /// # Errors
    /// `NotAStore` when `dir` is a file, or a directory holding other files or
    /// an LMDB file that is not a rowsearch store; `UnsupportedFormat`;
    /// `Io`; `Lmdb`; `Poisoned` when another handle of this process on the
    /// same directory is.
    ///
    /// Opening a directory this process has open already gives a second
    /// handle on the same LMDB environment (the first one's map size and
    /// database limits apply); each handle sees the other's writes and
    /// schema changes like those of another process.
    pub fn open(self, dir: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(dir.as_ref(), self)
    }
}

/// An embedded wide-row store on LMDB. Share it between threads with `Arc`.
///
/// ```
/// use rowsearch_store::{FamilySchema, PutCell, ReadOptions, Store, TableSchema};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path())?;
/// store.create_table("mail", &TableSchema::new([FamilySchema::new("m")]))?;
/// store.put("mail", b"row1", vec![PutCell::new("m", "subject", "hello").at(5)])?;
/// let row = store.get("mail", b"row1", &ReadOptions::default())?.unwrap();
/// assert_eq!(row.value("m", b"subject"), Some(&b"hello"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    pub(crate) env: Arc<Environment>,
    meta: Meta,
    feed: Feed,
    keys: Keys,
    catalog: Catalog,
    clock: Arc<dyn Clock>,
    max_dbs: u32,
    pending_runs: PendingRuns,
    pub(crate) group: crate::write::group::GroupQueue,
    upgraded_from: Option<String>,
    repaired: Vec<RepairedIndex>,
    reanalysed: Vec<String>,
}

impl Store {
    /// For tests of the upgrade: rewrites every table's keyword rows as the
    /// format 4 build kept them (blocks with row keys, no row numbers) and
    /// marks the store format 4, so that the next opening upgrades it.
    /// The handle must be dropped right after (its tables no longer match
    /// the store).
    #[doc(hidden)]
    pub fn write_format_4_for_tests(&self) -> Result<()> {
        self.writer().write_format_4()
    }

    /// For tests of the upgrade: rewrites every keyword block as formats 5
    /// to 9 kept them (Δdates in milliseconds) and marks the store format
    /// 9; as [`Store::write_format_4_for_tests`].
    #[doc(hidden)]
    pub fn write_format_9_for_tests(&self) -> Result<()> {
        self.writer().write_format_9()
    }

    /// Opens (or creates) the store in `dir` with default options.
    ///
    /// # Errors
    /// See [`StoreBuilder::open`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        StoreBuilder::default().open(dir)
    }

    /// Options for opening a store.
    pub fn builder() -> StoreBuilder {
        StoreBuilder::default()
    }

    fn open_with(dir: &Path, options: StoreBuilder) -> Result<Store> {
        let limits = EnvLimits {
            map_size_bytes: options.map_size_bytes,
            max_dbs: options.max_dbs.saturating_add(dbs::FIXED_DBS),
            max_readers: options.max_readers,
            durability: options.durability,
        };
        let env = Environment::open_shared(dir, limits)?;
        // Another `Store` of this process may share the environment.
        let writer = env.lock_writer()?;
        let dbi = env.lock_dbi();
        let mut repaired = Vec::new();
        let mut reanalysed = Vec::new();
        let (meta, feed, keys, tables, upgraded_from) = env.write_txn(|wtxn| {
            let (meta, upgraded_from) = Meta::open(&env, wtxn, dir)?;
            let feed =
                Feed { db: env.create_db(wtxn, dbs::FEED, options.max_dbs, "create feed")?, meta: meta.db };
            let keys =
                Keys { db: env.create_db(wtxn, dbs::KEYS, options.max_dbs, "create keys")?, meta: meta.db };
            let mut tables = BTreeMap::new();
            repaired.clear();
            reanalysed.clear();
            // A table opened again under `id` (after its databases changed).
            let reopen = |wtxn: &mut heed::RwTxn, name: &str, id, schema| {
                open_table(&env, &meta, &mut DbSource::Create(wtxn), name, id, schema, options.max_dbs)
            };
            for (name, schema) in meta.schemas(wtxn)? {
                let id = meta.table_id(wtxn, &name)?;
                let mut handle =
                    open_table(&env, &meta, &mut DbSource::Create(wtxn), &name, id, schema, options.max_dbs)?;
                if let Some(from) = &upgraded_from {
                    // Committed with the new format marker, or not at all.
                    let report = |unit: &str, cells_done, cells_total| {
                        if let Some(observer) = &options.on_upgrade.0 {
                            observer(&UpgradeProgress {
                                from,
                                to: crate::db::FORMAT,
                                table: &name,
                                unit,
                                cells_done,
                                cells_total,
                            });
                        }
                    };
                    let analyzer = options.analyzer.as_deref();
                    if crate::upgrade::table(&env, wtxn, &handle, from, analyzer, report)? {
                        // Other terms: a new id, so the search index
                        // generations built on the old ones are not used.
                        let id = meta.bump_catalog_version(wtxn)?;
                        meta.put_table_id(wtxn, &name, id)?;
                        handle = reopen(wtxn, &name, id, TableSchema::clone(&handle.schema))?;
                        reanalysed.push(name.clone());
                    }
                }
                let handle = match repair_moved_runs(
                    wtxn,
                    &meta,
                    handle,
                    INDEX_BUILD_STEP_ROWS,
                    options.clock.now_ms(),
                )? {
                    (handle, found) if found.is_empty() => handle,
                    (handle, found) => {
                        repaired.extend(found);
                        // Opened again: a build the repair finished is done.
                        reopen(wtxn, &name, handle.id, TableSchema::clone(&handle.schema))?
                    }
                };
                tables.insert(name, Arc::new(handle));
            }
            let version = meta.catalog_version(wtxn)?;
            Ok((meta, feed, keys, Tables::new(version, tables), upgraded_from))
        })?;
        drop(dbi);
        drop(writer);
        Ok(Store {
            path: dir.to_owned(),
            env,
            meta,
            feed,
            keys,
            catalog: Catalog::new(tables, options.analyzer, meta, options.max_dbs),
            clock: options.clock,
            max_dbs: options.max_dbs,
            pending_runs: options.pending_runs,
            group: crate::write::group::GroupQueue::default(),
            upgraded_from,
            repaired,
            reanalysed,
        })
    }

    /// The older on-disk format this handle's opening upgraded the store
    /// from (`None`: it was current, or new).
    pub fn upgraded_from(&self) -> Option<&str> {
        self.upgraded_from.as_deref()
    }

    /// The tables whose keyword terms this handle's opening changed when it
    /// upgraded the store (format 7 folds accents): each took a new table
    /// id, so its search index must be built again (`rowsearch reindex`;
    /// a server's refresher does it). Empty for a store without such text.
    pub fn reanalysed_tables(&self) -> &[String] {
        &self.reanalysed
    }

    /// The indexes this handle's opening found broken and rebuilt from
    /// their rows (see [`RepairedIndex`]); empty almost always.
    pub fn repaired_indexes(&self) -> &[RepairedIndex] {
        &self.repaired
    }

    /// The writer's view of this store, for one call.
    pub(crate) fn writer(&self) -> Writer<'_> {
        Writer {
            env: &self.env,
            catalog: &self.catalog,
            meta: self.meta,
            feed: self.feed,
            clock: &*self.clock,
            max_dbs: self.max_dbs,
            pending_runs: self.pending_runs,
            group: &self.group,
        }
    }

    /// Commits made by [`Store::apply`] since the store was opened, and the
    /// batches they wrote (more batches than commits: writers shared
    /// commits).
    pub fn group_commits(&self) -> (u64, u64) {
        self.group.stats()
    }

    /// Puts every write that has returned on disk. Only a store opened with
    /// [`Durability::Process`] leaves any off it; for the others this
    /// returns at once.
    ///
    /// # Errors
    /// The file system's, as a failed write (`DiskFull`, `Lmdb`).
    pub fn sync(&self) -> Result<()> {
        self.env.sync()
    }

    /// With [`Durability::Process`]: the syncs done since the store was
    /// opened, and the commits made since the last one began; `None` for a
    /// store that syncs every commit.
    pub fn sync_stats(&self) -> Option<(u64, u64)> {
        self.env.sync_stats()
    }

    /// The analyzer keyword rows are built with, if the store has one.
    pub fn analyzer(&self) -> Option<&Arc<dyn Analyzer>> {
        self.catalog.analyzer()
    }

    /// Whether the store can serve: `Err` when it cannot (LMDB refuses
    /// every transaction after a failure it could not recover from, say);
    /// `Ok(Some(reason))` when it serves but the last write of this process
    /// failed at the storage level (a full disk) and none has succeeded
    /// since; `Ok(None)` when all is well.
    ///
    /// # Errors
    /// `Poisoned`, `Lmdb`.
    pub fn health(&self) -> Result<Option<String>> {
        self.env.read_txn()?;
        Ok(self.env.write_failure())
    }

    /// Every access key record (never a key itself: see `KeyRecord`).
    ///
    /// # Errors
    /// `Lmdb`, `Corrupted`.
    pub fn keys(&self) -> Result<Vec<KeyRecord>> {
        let rtxn = self.env.read_txn()?;
        self.keys.all(&rtxn.txn)
    }

    /// The version of the key set, bumped by every change (from any
    /// process): a cache of [`Store::keys`] is current while it holds.
    ///
    /// # Errors
    /// `Lmdb`, `Corrupted`.
    pub fn keys_version(&self) -> Result<u64> {
        let rtxn = self.env.read_txn()?;
        self.keys.version(&rtxn.txn)
    }

    /// Stores a new access key record; `false` when its uid is taken.
    ///
    /// # Errors
    /// `Lmdb`.
    pub fn insert_key(&self, record: &KeyRecord) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| self.keys.insert(wtxn, record))
    }

    /// Removes an access key record; `false` when there was none.
    ///
    /// # Errors
    /// `Lmdb`.
    pub fn delete_key(&self, uid: &str) -> Result<bool> {
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| self.keys.remove(wtxn, uid))
    }

    /// The store's secret for hashing access keys: the one it has, else
    /// `fresh` (random bytes from the caller), stored from now on.
    ///
    /// # Errors
    /// `Lmdb`.
    pub fn key_secret(&self, fresh: [u8; 32]) -> Result<[u8; 32]> {
        if let Some(secret) = self.keys.secret(&self.env.read_txn()?.txn)? {
            return Ok(secret);
        }
        let _writer = self.env.lock_writer()?;
        self.env.write_txn(|wtxn| self.keys.init_secret(wtxn, fresh))
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The clock's current time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The current memory-map size in bytes.
    pub fn map_size_bytes(&self) -> usize {
        self.env.map_size_bytes()
    }

    /// Names of all tables, sorted, as of now (a schema change made by
    /// another process included).
    ///
    /// # Errors
    /// `Lmdb`, `Corrupted`.
    pub fn tables(&self) -> Result<Vec<String>> {
        Ok(self.begin_read()?.table_names())
    }

    /// A table's schema.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn schema(&self, table: &str) -> Result<TableSchema> {
        self.begin_read()?.schema(table)
    }

    /// A table's id: a table dropped and created again (by any process)
    /// has a new one, so a search index built for the old table can tell.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn table_id(&self, table: &str) -> Result<u64> {
        self.begin_read()?.table_id(table)
    }

    /// Creates a table. Returns `true` when created, `false` when a table with
    /// an identical schema already exists.
    ///
    /// # Errors
    /// `InvalidName`, `InvalidSchema`, `SchemaConflict` (the table exists with
    /// another schema), `TooManyDatabases`.
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        self.writer().create_table(table, schema)
    }

    /// Drops a table and every cell in it.
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn drop_table(&self, table: &str) -> Result<()> {
        self.writer().drop_table(table)
    }

    /// Sets the names a table's search documents carry by default (`None`:
    /// all of them; see [`crate::SearchSchema::display`]): a presentation
    /// setting, changed on a table that holds rows, seen by every handle
    /// and process at their next transaction. `false` when it already was.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable` (no search section),
    /// `InvalidSchema` (a name no document carries).
    pub fn set_display(&self, table: &str, display: Option<Vec<String>>) -> Result<bool> {
        self.writer().set_display(table, display)
    }

    /// Trains the zstd dictionary of `table`'s `family` from `samples`
    /// (values as the family will hold them; a few hundred or more), when
    /// the family is compressed with zstd and has none yet; whether it now
    /// has one from this call. Values written from then on are compressed
    /// with it (the ones already stored stay as they are, and read as
    /// before). An ingest calls it with its first batch.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn train_dictionary(&self, table: &str, family: &str, samples: &[&[u8]]) -> Result<bool> {
        self.writer().train_dictionary(table, family, samples)
    }

    /// Sets how many shards a cluster of searchers splits searchable
    /// table `table`'s index into ([`TableSchema::with_shards`]); whether
    /// it changed. The rows and keyword rows stay as they are: a searcher
    /// builds each shard of the new count from them.
    ///
    /// # Errors
    /// `UnknownTable`, `NotSearchable`, `InvalidSchema` (a count past
    /// 1..=1024).
    pub fn set_shards(&self, table: &str, shards: u32) -> Result<bool> {
        self.writer().set_shards(table, shards)
    }

    /// Gives searchable table `table` the schema `schema`: its search
    /// fields with more appended, a threads section added, another display.
    /// The rows' keyword cells of the new fields are written in the same
    /// transaction, and the table takes a new id, so search index
    /// generations of the old fields are built again (a reindex). `false`
    /// when the schema is already `schema`.
    ///
    /// # Errors
    /// `InvalidSchema` for any other change; `NotSearchable`; as
    /// [`Store::create_table`].
    pub fn extend_search(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        self.writer().extend_search(table, schema)
    }

    /// Enables or disables a table, as HBase's `enableTable` and
    /// `disableTable`: a disabled table keeps its schema, rows, indexes
    /// and keyword rows, and every read or write of its rows answers
    /// `TableDisabled` (in every process of the store) until it is enabled
    /// again. Returns whether the state changed.
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn set_table_enabled(&self, table: &str, enabled: bool) -> Result<bool> {
        self.writer().set_table_enabled(table, enabled)
    }

    /// Whether a table is enabled (see [`Store::set_table_enabled`]).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn is_table_enabled(&self, table: &str) -> Result<bool> {
        self.begin_read()?.is_enabled(table)
    }

    /// Writes cells into one row (one atomic commit).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn put(&self, table: &str, row: &[u8], cells: Vec<PutCell>) -> Result<CommitInfo> {
        let mut batch = Batch::new();
        batch.put(table, row, cells);
        self.apply(&batch)
    }

    /// Deletes from one row (one atomic commit).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn delete(&self, table: &str, row: &[u8], what: Delete) -> Result<CommitInfo> {
        let mut batch = Batch::new();
        batch.delete(table, row, what);
        self.apply(&batch)
    }

    /// Applies every mutation of `batch` in one LMDB write transaction: all
    /// of them become visible and durable together, or none does. Each row
    /// touched gets a change-feed entry in the same transaction. Batches
    /// applied at the same time by other threads share the commit (one
    /// sync to disk for all), each still all or nothing on its own, and
    /// each durable when its call returns.
    ///
    /// # Errors
    /// User errors (`UnknownTable`, `UnknownFamily`, `EmptyRowKey`,
    /// `RowKeyTooLong`, `QualifierTooLong`) are found before anything is
    /// written. `MapFull` only when the map cannot grow; `Poisoned` after an
    /// earlier failed commit; `Lmdb`.
    pub fn apply(&self, batch: &Batch) -> Result<CommitInfo> {
        self.writer().apply_grouped(batch)
    }

    /// Writes the batches `produce` hands to its sink, in order, in one
    /// transaction: all or nothing, as [`Store::apply`] of their
    /// concatenation writes, except that a row touched by two of them gets
    /// a feed entry (and a count in [`CommitInfo::rows`]) for each. A
    /// caller that reads a large request into batches of a few thousand
    /// mutations writes it atomically without ever holding it all as one
    /// batch (HTTP's `mutate`). `produce` is called again, from the
    /// start, when the transaction must run again (the map grew, another
    /// process changed the catalog): it must hand the same batches each
    /// time. An error it returns (wrap a caller's own with
    /// [`Error::callback`]) aborts the transaction.
    ///
    /// ```
    /// use rowsearch_store::{Batch, FamilySchema, PutCell, Scan, Store, TableSchema};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// store.create_table("t", &TableSchema::new([FamilySchema::new("f")]))?;
    /// let info = store.apply_each(&mut |sink| {
    ///     for part in 0..3 {
    ///         let mut batch = Batch::new();
    ///         batch.put("t", format!("r{part}"), vec![PutCell::new("f", "q", "v")]);
    ///         sink(batch)?;
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!((info.rows, store.scan("t", &Scan::new())?.rows.len()), (3, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Store::apply`], and what `produce` returns.
    pub fn apply_each(&self, produce: &mut crate::write::Produce<'_>) -> Result<CommitInfo> {
        self.writer().apply_each(produce)
    }

    /// Does the part of writing `batch` that needs no transaction, in the
    /// calling thread and without the writer lock: the keyword cells of
    /// each row the batch creates from its puts (tokenizing the searchable
    /// text is most of the cost of writing mail), and the values of
    /// compressed families compressed. [`Store::apply_prepared`] then
    /// writes it like [`Store::apply`], using that work for rows that turn
    /// out to be new, and where the table is as it was when prepared (a
    /// table given a dictionary, or dropped and made again, in between is
    /// written as [`Store::apply`] writes). A bulk loader prepares the next
    /// batch on one thread while another applies the last one.
    ///
    /// Only batches that put each row once are prepared, and only rows
    /// whose searchable columns get one cell each, so which value is newest
    /// does not depend on the time of the write. Preparing never fails: a
    /// batch that [`Store::apply`] would refuse is left unprepared, and
    /// [`Store::apply_prepared`] refuses it the same way.
    pub fn prepare(&self, batch: Batch) -> PreparedBatch {
        self.writer().prepare(batch)
    }

    /// Writes a [`PreparedBatch`]: exactly what [`Store::apply`] of its
    /// batch writes.
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn apply_prepared(&self, prepared: &PreparedBatch) -> Result<CommitInfo> {
        self.writer().apply(prepared.batch(), prepared.computed())
    }

    /// Streams a compacted copy of `data.mdb` from one snapshot into `sink`
    /// (writes go on); returns its length. `Io` (the sink's too), `Lmdb`.
    pub fn copy_compacted(&self, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> Result<u64> {
        self.env.copy_compacted(sink)
    }

    /// Purges cells past their family's TTL in every table; each row that
    /// loses cells gets a change-feed entry.
    ///
    /// # Errors
    /// `Lmdb`, `Poisoned`.
    pub fn compact(&self) -> Result<CompactReport> {
        self.writer().compact()
    }

    /// Cell count and bytes of a table.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn stats(&self, table: &str) -> Result<TableStats> {
        let rtxn = self.begin_read()?;
        let handle = rtxn.handle(table)?;
        let mut stats = TableStats::default();
        for family in &handle.families {
            let stat = family.db.stat(rtxn.raw()).map_err(|e| Error::lmdb("stat", e))?;
            stats.cells += stat.entries as u64;
            let pages = stat.branch_pages + stat.leaf_pages + stat.overflow_pages;
            stats.bytes += (pages as u64) * u64::from(stat.page_size);
            if family.dict.is_some() {
                stats.dictionaries.push(family.schema.name.clone());
            }
        }
        Ok(stats)
    }

    /// Starts a read transaction: a consistent snapshot of every table until
    /// it is dropped. Keep it short: an open reader keeps LMDB from reusing
    /// pages freed since, and the map cannot grow while this process holds one.
    ///
    /// # Errors
    /// `Lmdb` (for example when the reader table is full).
    pub fn begin_read(&self) -> Result<ReadTxn<'_>> {
        loop {
            let read = self.env.read_txn()?;
            let version = self.catalog.version_in(&read.txn)?;
            let tables = self.catalog.current();
            if tables.version == version {
                return Ok(ReadTxn::new(read, &self.catalog, tables, self.feed, self.clock.now_ms()));
            }
            // A schema changed since the catalog was loaded (or, rarely,
            // another thread loaded a newer one after this snapshot began):
            // reload with no transaction open, then take a new snapshot.
            drop(read);
            self.catalog.refresh(&self.env)?;
        }
    }

    /// The id of the last write committed to the store, by any process
    /// (see [`ReadTxn::version`]), read without a transaction.
    pub fn version(&self) -> u64 {
        self.env.last_txn_id()
    }

    /// A table's schema, id and whether it is enabled, as of now: with no
    /// read transaction when nothing was committed since the last answer.
    pub(crate) fn table_state(&self, table: &str) -> Result<(Arc<TableSchema>, u64, bool)> {
        let tables = match self.catalog.as_of(self.version()) {
            Some(tables) => tables,
            None => {
                let rtxn = self.begin_read()?;
                self.catalog.remember(rtxn.version(), rtxn.tables().clone());
                rtxn.tables().clone()
            }
        };
        let handle = tables.table(table)?;
        Ok((Arc::clone(&handle.schema), handle.id, !handle.disabled))
    }

    /// Reads one row. Opens and closes its own read transaction.
    ///
    /// # Errors
    /// As [`ReadTxn::get`].
    pub fn get(&self, table: &str, row: &[u8], read: &ReadOptions) -> Result<Option<Row>> {
        self.begin_read()?.get(table, row, read)
    }

    /// Reads several rows from one snapshot; missing rows are `None`.
    ///
    /// # Errors
    /// As [`ReadTxn::multi_get`].
    pub fn multi_get(&self, table: &str, rows: &[&[u8]], read: &ReadOptions) -> Result<Vec<Option<Row>>> {
        self.begin_read()?.multi_get(table, rows, read)
    }

    /// Runs a scan to completion (bounded by its limit) in one snapshot.
    ///
    /// # Errors
    /// As [`ReadTxn::scan_page`].
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<ScanPage> {
        self.begin_read()?.scan_page(table, scan)
    }

    /// Counts the rows a scan selects (ignoring its limit).
    ///
    /// # Errors
    /// As [`ReadTxn::count`].
    pub fn count(&self, table: &str, scan: &Scan) -> Result<u64> {
        self.begin_read()?.count(table, scan)
    }

    /// The rows of a partition holding every term of `query`, newest first
    /// (one snapshot). See [`ReadTxn::keyword_lookup`].
    ///
    /// # Errors
    /// As [`ReadTxn::keyword_lookup`].
    pub fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        self.begin_read()?.keyword_lookup(table, query)
    }

    /// The table's regions in key order: the key ranges its `splits` cut
    /// (one per salt bucket for a salted table without splits).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn regions(&self, table: &str) -> Result<Vec<Region>> {
        self.begin_read()?.regions(table)
    }

    /// Rows, cells and bytes of each region, walked on up to `threads`
    /// threads (each region in its own snapshot).
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn region_stats(&self, table: &str, threads: usize) -> Result<Vec<RegionStats>> {
        self.for_each_region(table, threads, |region, rtxn| rtxn.region_stats(table, region))
    }

    /// Runs `work` once per region of `table` on up to `threads` threads,
    /// each region with its own read transaction, and returns the results
    /// in region order. The first error stops the remaining work.
    ///
    /// ```
    /// use rowsearch_store::{FamilySchema, PutCell, Scan, Store, TableSchema};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// store.create_table("t", &TableSchema::new([FamilySchema::new("f")]).splits(["m"]))?;
    /// for key in ["a", "k", "m", "z"] {
    ///     store.put("t", key.as_bytes(), vec![PutCell::new("f", "q", "v")])?;
    /// }
    /// let counts = store.for_each_region("t", 2, |region, rtxn| {
    ///     rtxn.count("t", &Scan::new().region(region.index))
    /// })?;
    /// assert_eq!(counts, vec![2, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `UnknownTable`, and the first error `work` returns.
    pub fn for_each_region<T, F>(&self, table: &str, threads: usize, work: F) -> Result<Vec<T>>
    where
        T: Send,
        F: Fn(&Region, &ReadTxn<'_>) -> Result<T> + Sync,
    {
        let regions = self.regions(table)?;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let results: Mutex<Vec<Option<Result<T>>>> = Mutex::new((0..regions.len()).map(|_| None).collect());
        let workers = threads.clamp(1, regions.len().max(1));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= regions.len() || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let result = self.begin_read().and_then(|rtxn| work(&regions[i], &rtxn));
                        if result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
                    }
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Some(Ok(value)) => out.push(value),
                Some(Err(e)) => return Err(e),
                // Skipped after another region failed; that error comes first
                // only if it is earlier, so look on.
                None => continue,
            }
        }
        if out.len() != regions.len() {
            // Unreachable unless a worker failed without recording: report it.
            return Err(ErrorKind::Poisoned.into());
        }
        Ok(out)
    }
}
