//! The store: opening the LMDB environment, tables, the write path with map
//! growth, and the change feed.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions, MdbError, RwTxn, WithoutTls};

use crate::cell::{PutCell, Row};
use crate::clock::{Clock, SystemClock};
use crate::dbs;
use crate::error::{Error, ErrorKind, Result};
use crate::filter::RowRange;
use crate::index::{Entry, IndexHandle, IndexPage, IndexQuery, IndexSchema, VerifyReport};
use crate::key::{self, CellKey};
use crate::keyword::{self, Analyzer, KeywordCells, KeywordPage, KeywordQuery, SearchHandle};
use crate::mutation::{Batch, Delete, Mutation};
use crate::read::{ReadOptions, Scan};
use crate::rowkey::RowKeySchema;
use crate::schema::{FamilySchema, TableSchema};
use crate::txn::ReadTxn;
use std::ops::Bound;

pub(crate) type BytesDb = Database<Bytes, Bytes>;

/// Default initial size of the memory map (it grows on demand).
pub const DEFAULT_MAP_SIZE_BYTES: usize = 1 << 30;
/// Default limit on LMDB databases, i.e. on column families across all tables.
pub const DEFAULT_MAX_DBS: u32 = 1024;
/// How long a write that must grow the map waits for this process's open
/// read transactions to finish.
const GROW_WAIT: Duration = Duration::from_secs(10);
/// Attempts at one write before giving up on growing the map.
const MAX_GROW_ATTEMPTS: u32 = 24;

/// Options for opening a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreBuilder {
    map_size_bytes: usize,
    max_dbs: u32,
    max_readers: u32,
    clock: Arc<dyn Clock>,
    analyzer: Option<Arc<dyn Analyzer>>,
    index_pending_runs: usize,
}

impl Default for StoreBuilder {
    fn default() -> StoreBuilder {
        StoreBuilder {
            map_size_bytes: DEFAULT_MAP_SIZE_BYTES,
            max_dbs: DEFAULT_MAX_DBS,
            max_readers: 512,
            clock: Arc::new(SystemClock),
            analyzer: None,
            index_pending_runs: crate::index::PENDING_RUNS,
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

    /// Most column families across all tables (each is an LMDB database).
    pub fn max_dbs(mut self, max_dbs: u32) -> StoreBuilder {
        self.max_dbs = max_dbs;
        self
    }

    /// Most concurrent read transactions (LMDB's reader table).
    pub fn max_readers(mut self, max_readers: u32) -> StoreBuilder {
        self.max_readers = max_readers;
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
        self.index_pending_runs = runs;
        self
    }

    /// Opens the store in `dir`, creating the directory and the store when
    /// missing.
    ///
    /// # Errors
    /// `NotAStore` when `dir` is a file, or a directory holding other files or
    /// an LMDB file that is not a rowsearch store; `UnsupportedFormat`;
    /// `AlreadyOpen`; `Io`; `Lmdb`.
    pub fn open(self, dir: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(dir.as_ref(), self)
    }
}

/// A row's keyword cells computed ahead, with the table handle they were
/// computed for.
type Ahead = (Arc<TableHandle>, KeywordCells);

/// A batch with the keyword cells of the rows it creates computed ahead
/// ([`Store::prepare`]).
#[derive(Debug)]
pub struct PreparedBatch {
    batch: Batch,
    /// Per mutation, when computed: the table handle and the row's keyword
    /// cells from its puts.
    keywords: Vec<Option<Ahead>>,
}

impl PreparedBatch {
    /// The batch.
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The batch back.
    pub fn into_batch(self) -> Batch {
        self.batch
    }
}

/// A table's schema and its open family databases.
#[derive(Debug)]
pub(crate) struct TableHandle {
    pub name: String,
    pub schema: TableSchema,
    /// Region boundaries (stored keys): the schema's effective splits.
    pub splits: Vec<Vec<u8>>,
    /// Secondary indexes, in schema order.
    pub indexes: Vec<IndexHandle>,
    /// Keyword rows, for a table with a `search` section.
    pub search: Option<SearchHandle>,
    /// Sorted by family name: HBase's family order.
    pub families: Vec<Arc<FamilyHandle>>,
}

#[derive(Debug)]
pub(crate) struct FamilyHandle {
    /// The family name, shared by every cell a read returns.
    pub name: Arc<str>,
    pub schema: FamilySchema,
    pub db_name: String,
    pub db: BytesDb,
}

impl TableHandle {
    pub fn is_salted(&self) -> bool {
        self.schema.row_key.as_ref().is_some_and(RowKeySchema::is_salted)
    }

    /// The key a row is stored under: salted when the table is.
    pub fn stored_key<'k>(&self, row: &'k [u8]) -> std::borrow::Cow<'k, [u8]> {
        match &self.schema.row_key {
            Some(rk) if rk.is_salted() => std::borrow::Cow::Owned(rk.salt(row)),
            _ => std::borrow::Cow::Borrowed(row),
        }
    }

    /// Stored-key range of region `index`.
    pub fn region_range(&self, index: usize) -> Result<RowRange> {
        let splits = &self.splits;
        if index > splits.len() {
            return Err(ErrorKind::UnknownRegion {
                table: self.name.clone(),
                region: index,
                regions: splits.len() + 1,
            }
            .into());
        }
        let lo = if index == 0 { Bound::Unbounded } else { Bound::Included(splits[index - 1].clone()) };
        let hi = splits.get(index).map_or(Bound::Unbounded, |s| Bound::Excluded(s.clone()));
        Ok(RowRange { lo, hi })
    }

    pub fn regions(&self) -> Vec<Region> {
        let n = self.splits.len() + 1;
        (0..n)
            .map(|index| Region {
                index,
                start: index.checked_sub(1).map(|i| self.splits[i].clone()),
                end: self.splits.get(index).cloned(),
            })
            .collect()
    }

    /// Whether a write must read `family` to maintain indexes or keyword rows.
    pub fn watches(&self, family: &Arc<FamilyHandle>) -> bool {
        self.indexes.iter().any(|i| i.columns.iter().any(|(f, _)| Arc::ptr_eq(f, family)))
            || self.search.as_ref().is_some_and(|s| s.reads(family))
    }

    /// Whether writes maintain anything besides the cells.
    pub fn is_derived(&self) -> bool {
        !self.indexes.is_empty() || self.search.is_some()
    }

    /// The keyword rows.
    pub fn search(&self) -> Result<&SearchHandle> {
        self.search.as_ref().ok_or_else(|| ErrorKind::NotSearchable { table: self.name.clone() }.into())
    }

    pub fn index(&self, name: &str) -> Result<&IndexHandle> {
        self.indexes.iter().find(|i| i.schema.name == name).ok_or_else(|| {
            ErrorKind::UnknownIndex { table: self.name.clone(), index: name.to_owned() }.into()
        })
    }

    pub fn family(&self, name: &str) -> Result<&Arc<FamilyHandle>> {
        self.families.iter().find(|f| f.schema.name == name).ok_or_else(|| {
            ErrorKind::UnknownFamily { table: self.name.clone(), family: name.to_owned() }.into()
        })
    }
}

/// What a committed batch wrote to the change feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// Feed sequence of the first row touched; `None` for an empty batch.
    pub first_seq: Option<u64>,
    /// Feed sequence of the last row touched.
    pub last_seq: Option<u64>,
    /// Distinct rows touched.
    pub rows: usize,
}

/// One change-feed entry: a row that a commit touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEntry {
    /// Position in the feed, increasing with every row of every commit.
    pub seq: u64,
    /// The table.
    pub table: String,
    /// The row key.
    pub row: Vec<u8>,
}

/// What `compact` removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Cells past their TTL that were purged.
    pub cells_purged: u64,
    /// Rows that lost at least one cell.
    pub rows_touched: u64,
}

/// One region: a range of stored keys (salt byte included).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Region {
    /// Position in key order, from 0.
    pub index: usize,
    /// First stored key (inclusive); `None` for the first region.
    #[serde(serialize_with = "opt_binstr")]
    pub start: Option<Vec<u8>>,
    /// End (exclusive); `None` for the last region.
    #[serde(serialize_with = "opt_binstr")]
    pub end: Option<Vec<u8>>,
}

fn opt_binstr<S: serde::Serializer>(
    key: &Option<Vec<u8>>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match key {
        Some(k) => serializer.serialize_some(&crate::binstr::encode(k)),
        None => serializer.serialize_none(),
    }
}

/// What a region holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RegionStats {
    /// The region.
    #[serde(flatten)]
    pub region: Region,
    /// Rows with at least one live cell.
    pub rows: u64,
    /// Stored cells, all versions.
    pub cells: u64,
    /// Key and value bytes of those cells.
    pub bytes: u64,
}

/// Size figures of one table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    /// Stored cells (all versions, including expired ones not yet purged).
    pub cells: u64,
    /// Bytes of LMDB pages used by the table's families.
    pub bytes: u64,
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
    env: Env<WithoutTls>,
    meta: BytesDb,
    feed: BytesDb,
    tables: RwLock<BTreeMap<String, Arc<TableHandle>>>,
    clock: Arc<dyn Clock>,
    analyzer: Option<Arc<dyn Analyzer>>,
    max_dbs: u32,
    index_pending_runs: usize,
    /// Serialises writers, so schema changes and data writes never interleave.
    write_lock: Mutex<()>,
    /// Held shared by every open transaction of this process and exclusively
    /// while the map is resized (LMDB requires no open transaction then).
    resize_lock: RwLock<()>,
    poisoned: AtomicBool,
}

fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn is_map_full(err: &Error) -> bool {
    matches!(err.kind(), ErrorKind::Lmdb { source: heed::Error::Mdb(MdbError::MapFull), .. })
}

fn page_align(bytes: usize) -> usize {
    const PAGE: usize = 4096;
    bytes.max(PAGE).div_ceil(PAGE) * PAGE
}

impl Store {
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
        let io = |source| ErrorKind::Io { path: dir.to_owned(), source };
        let not_a_store = |detail: &str| -> Error {
            ErrorKind::NotAStore { path: dir.to_owned(), detail: detail.to_owned() }.into()
        };
        match std::fs::metadata(dir) {
            Ok(meta) if !meta.is_dir() => return Err(not_a_store("not a directory")),
            Ok(_) => {
                let data = dir.join("data.mdb");
                if !data.try_exists().map_err(io)? {
                    let mut entries = std::fs::read_dir(dir).map_err(io)?;
                    if entries.next().is_some() {
                        return Err(not_a_store("directory holds other files and no data.mdb"));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            Err(e) => return Err(io(e).into()),
        }

        let max_dbs = options.max_dbs.saturating_add(dbs::FIXED_DBS);
        let mut env_options = EnvOpenOptions::new().read_txn_without_tls();
        env_options
            .map_size(page_align(options.map_size_bytes))
            .max_dbs(max_dbs)
            .max_readers(options.max_readers);
        // SAFETY: LMDB's memory map is only sound while nothing else modifies
        // the file behind LMDB's back. The store only touches data.mdb through
        // this environment, LMDB's own lock file coordinates other processes,
        // and the environment is never opened on a remote file system by us.
        #[allow(unsafe_code)]
        let env = unsafe { env_options.open(dir) }.map_err(|e| match e {
            heed::Error::Mdb(MdbError::Invalid | MdbError::VersionMismatch | MdbError::Corrupted) => {
                not_a_store("data.mdb is not an LMDB environment")
            }
            heed::Error::EnvAlreadyOpened => ErrorKind::AlreadyOpen { path: dir.to_owned() }.into(),
            other => Error::lmdb("open environment", other),
        })?;

        let mut wtxn = env.write_txn().map_err(|e| Error::lmdb("begin write", e))?;
        let mut upgrading = false;
        let existing_meta: Option<BytesDb> =
            env.open_database(&wtxn, Some(dbs::META)).map_err(|e| match e {
                heed::Error::Mdb(MdbError::Incompatible) => not_a_store("no rowsearch metadata"),
                other => Error::lmdb("open meta", other),
            })?;
        let meta: BytesDb = match existing_meta {
            Some(meta) => {
                let format = meta
                    .get(&wtxn, dbs::META_FORMAT)
                    .map_err(|e| Error::lmdb("read format", e))?
                    .map(|f| String::from_utf8_lossy(f).into_owned());
                match format {
                    Some(f) if f == dbs::FORMAT => meta,
                    Some(f) if dbs::UPGRADES_FROM.contains(&f.as_str()) => {
                        // Committed with the tables opened below (which
                        // create what the new format adds, and move pending
                        // index entries of the old layout), or not at all.
                        upgrading = true;
                        meta.put(&mut wtxn, dbs::META_FORMAT, dbs::FORMAT.as_bytes())
                            .map_err(|e| Error::lmdb("write format", e))?;
                        meta
                    }
                    Some(found) => {
                        return Err(ErrorKind::UnsupportedFormat {
                            path: dir.to_owned(),
                            found,
                            expected: dbs::FORMAT.to_owned(),
                        }
                        .into());
                    }
                    None => return Err(not_a_store("no format marker")),
                }
            }
            None => {
                let main: Option<BytesDb> =
                    env.open_database(&wtxn, None).map_err(|e| Error::lmdb("open main", e))?;
                if let Some(main) = main
                    && !main.is_empty(&wtxn).map_err(|e| Error::lmdb("read main", e))?
                {
                    return Err(not_a_store("LMDB environment of another program"));
                }
                let meta = env
                    .create_database(&mut wtxn, Some(dbs::META))
                    .map_err(|e| Error::lmdb("create meta", e))?;
                meta.put(&mut wtxn, dbs::META_FORMAT, dbs::FORMAT.as_bytes())
                    .map_err(|e| Error::lmdb("write format", e))?;
                meta
            }
        };
        let feed: BytesDb =
            env.create_database(&mut wtxn, Some(dbs::FEED)).map_err(|e| Error::lmdb("create feed", e))?;

        let mut schemas = Vec::new();
        for item in
            meta.prefix_iter(&wtxn, dbs::META_SCHEMA_PREFIX).map_err(|e| Error::lmdb("read schemas", e))?
        {
            let (k, v) = item.map_err(|e| Error::lmdb("read schemas", e))?;
            let name = String::from_utf8_lossy(&k[dbs::META_SCHEMA_PREFIX.len()..]).into_owned();
            let schema: TableSchema = serde_json::from_slice(v).map_err(|e| ErrorKind::Corrupted {
                db: dbs::META.to_owned(),
                key: crate::error::preview(k),
                detail: format!("schema does not parse: {e}"),
            })?;
            schemas.push((name, schema));
        }
        let mut tables = BTreeMap::new();
        for (name, schema) in schemas {
            let handle = open_table(&env, &mut wtxn, &name, schema, options.max_dbs)?;
            if upgrading {
                for index in &handle.indexes {
                    index.absorb_unprefixed_pending(&mut wtxn)?;
                }
            }
            tables.insert(name, Arc::new(handle));
        }
        wtxn.commit().map_err(|e| Error::lmdb("commit open", e))?;

        Ok(Store {
            path: dir.to_owned(),
            env,
            meta,
            feed,
            tables: RwLock::new(tables),
            clock: options.clock,
            analyzer: options.analyzer,
            max_dbs: options.max_dbs,
            index_pending_runs: options.index_pending_runs,
            write_lock: Mutex::new(()),
            resize_lock: RwLock::new(()),
            poisoned: AtomicBool::new(false),
        })
    }

    /// The analyzer keyword rows are built with, if the store has one.
    pub fn analyzer(&self) -> Option<&Arc<dyn Analyzer>> {
        self.analyzer.as_ref()
    }

    pub(crate) fn analyzer_for(&self, table: &str) -> Result<&dyn Analyzer> {
        self.analyzer.as_deref().ok_or_else(|| ErrorKind::NoAnalyzer { table: table.to_owned() }.into())
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
        self.env.info().map_size
    }

    pub(crate) fn table_handle(&self, table: &str) -> Result<Arc<TableHandle>> {
        read_lock(&self.tables)
            .get(table)
            .cloned()
            .ok_or_else(|| ErrorKind::UnknownTable { table: table.to_owned() }.into())
    }

    /// Names of all tables, sorted.
    pub fn tables(&self) -> Vec<String> {
        read_lock(&self.tables).keys().cloned().collect()
    }

    /// A table's schema.
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn schema(&self, table: &str) -> Result<TableSchema> {
        Ok(self.table_handle(table)?.schema.clone())
    }

    /// Creates a table. Returns `true` when created, `false` when a table with
    /// an identical schema already exists.
    ///
    /// # Errors
    /// `InvalidName`, `InvalidSchema`, `SchemaConflict` (the table exists with
    /// another schema), `TooManyDatabases`.
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        schema.validate(table)?;
        let _writer = self.lock_writer()?;
        if let Ok(existing) = self.table_handle(table) {
            return if existing.schema == *schema {
                Ok(false)
            } else {
                Err(ErrorKind::SchemaConflict { table: table.to_owned() }.into())
            };
        }
        let json = serde_json::to_vec(schema)
            .map_err(|e| ErrorKind::InvalidSchema { table: table.to_owned(), reason: e.to_string() })?;
        let handle = self.write_txn(|wtxn| {
            self.meta
                .put(wtxn, &dbs::schema_key(table), &json)
                .map_err(|e| Error::lmdb("write schema", e))?;
            open_table(&self.env, wtxn, table, schema.clone(), self.max_dbs)
        })?;
        self.tables.write().unwrap_or_else(|e| e.into_inner()).insert(table.to_owned(), Arc::new(handle));
        Ok(true)
    }

    /// Drops a table and every cell in it.
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn drop_table(&self, table: &str) -> Result<()> {
        let _writer = self.lock_writer()?;
        let handle = self.table_handle(table)?;
        self.write_txn(|wtxn| {
            for family in &handle.families {
                family.db.clear(wtxn).map_err(|e| Error::lmdb("clear family", e))?;
            }
            for index in &handle.indexes {
                index.clear(wtxn)?;
            }
            if let Some(search) = &handle.search {
                search.db.clear(wtxn).map_err(|e| Error::lmdb("clear keyword rows", e))?;
            }
            self.meta.delete(wtxn, &dbs::schema_key(table)).map_err(|e| Error::lmdb("delete schema", e))?;
            Ok(())
        })?;
        self.tables.write().unwrap_or_else(|e| e.into_inner()).remove(table);
        Ok(())
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
    /// touched gets a change-feed entry in the same transaction.
    ///
    /// # Errors
    /// User errors (`UnknownTable`, `UnknownFamily`, `EmptyRowKey`,
    /// `RowKeyTooLong`, `QualifierTooLong`) are found before anything is
    /// written. `MapFull` only when the map cannot grow; `Poisoned` after an
    /// earlier failed commit; `Lmdb`.
    pub fn apply(&self, batch: &Batch) -> Result<CommitInfo> {
        self.apply_with(batch, &[])
    }

    /// Does the part of writing `batch` that needs no transaction, in the
    /// calling thread and without the writer lock: the keyword cells of
    /// each row the batch creates from its puts (tokenizing the searchable
    /// text is most of the cost of writing mail). [`Store::apply_prepared`]
    /// then writes it like [`Store::apply`], using that work for rows that
    /// turn out to be new. A bulk loader prepares the next batch on one
    /// thread while another applies the last one.
    ///
    /// Only batches that put each row once are prepared, and only rows
    /// whose searchable columns get one cell each, so which value is newest
    /// does not depend on the time of the write. Preparing never fails: a
    /// batch that [`Store::apply`] would refuse is left unprepared, and
    /// [`Store::apply_prepared`] refuses it the same way.
    pub fn prepare(&self, batch: Batch) -> PreparedBatch {
        match self.keywords_ahead(&batch) {
            Ok(keywords) => PreparedBatch { batch, keywords },
            Err(_) => PreparedBatch { batch, keywords: Vec::new() },
        }
    }

    /// Per mutation of a batch putting each row once, the keyword cells of
    /// its row from its puts where they do not depend on the time.
    fn keywords_ahead(&self, batch: &Batch) -> Result<Vec<Option<Ahead>>> {
        let handles = self.check_batch(batch)?;
        let now_ms = self.clock.now_ms();
        let mut keywords = Vec::new();
        if touched_rows(batch).len() != batch.mutations.len() {
            return Ok(keywords);
        }
        for m in &batch.mutations {
            let handle = &handles[m.table()];
            let (Mutation::Put { row, cells, .. }, Some(search)) = (m, &handle.search) else {
                keywords.push(None);
                continue;
            };
            let refs: Vec<&PutCell> = cells.iter().collect();
            let single = search.columns.iter().all(|(family, qualifier)| {
                refs.iter().filter(|c| *c.family == *family.name && c.qualifier == *qualifier).count() <= 1
            });
            if !single {
                keywords.push(None);
                continue;
            }
            let analyzer = self.analyzer_for(&handle.name)?;
            let values = search.values_from_puts(&refs, now_ms);
            keywords.push(Some((handle.clone(), search.entries(analyzer, handle, row, &values)?)));
        }
        Ok(keywords)
    }

    /// Writes a [`PreparedBatch`]: exactly what [`Store::apply`] of its
    /// batch writes.
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn apply_prepared(&self, prepared: &PreparedBatch) -> Result<CommitInfo> {
        self.apply_with(&prepared.batch, &prepared.keywords)
    }

    /// [`Store::apply`], with the keyword cells of new rows computed ahead
    /// per mutation where `keywords` has them (for the table handle they
    /// were computed with).
    fn apply_with(&self, batch: &Batch, keywords: &[Option<Ahead>]) -> Result<CommitInfo> {
        let _writer = self.lock_writer()?;
        // Checked under the writer lock, so no table is dropped meanwhile.
        let handles = self.check_batch(batch)?;
        let now_ms = self.clock.now_ms();
        let touched = touched_rows(batch);
        // Rows of indexed or searchable tables: their entries and keyword
        // cells before and after the batch.
        let indexed: Vec<(&TableHandle, &[u8])> =
            touched.iter().map(|(t, r)| (&*handles[*t], *r)).filter(|(h, _)| h.is_derived()).collect();
        // For each of them, the cells put when the batch only puts into it.
        let puts_only: Vec<Option<Vec<&PutCell>>> = if touched.len() == batch.mutations.len() {
            // One mutation per row, in order (bulk loads): no lookup needed.
            batch
                .mutations
                .iter()
                .filter(|m| handles[m.table()].is_derived())
                .map(|m| match m {
                    Mutation::Put { cells, .. } => Some(cells.iter().collect()),
                    Mutation::Delete { .. } => None,
                })
                .collect()
        } else {
            let position: HashMap<(&str, &[u8]), usize> =
                indexed.iter().enumerate().map(|(i, (h, r))| ((h.name.as_str(), *r), i)).collect();
            let mut out: Vec<Option<Vec<&PutCell>>> = vec![Some(Vec::new()); indexed.len()];
            for m in &batch.mutations {
                if let Some(&i) = position.get(&(m.table(), m.row())) {
                    match m {
                        Mutation::Put { cells, .. } => {
                            if let Some(v) = &mut out[i] {
                                v.extend(cells.iter());
                            }
                        }
                        Mutation::Delete { .. } => out[i] = None,
                    }
                }
            }
            out
        };
        // Keyword cells computed ahead, aligned with `indexed`: only for a
        // batch of one mutation per row (so the i-th derived mutation is
        // the i-th indexed row), and only if the table is unchanged since.
        let ahead: Vec<Option<&KeywordCells>> =
            if !keywords.is_empty() && touched.len() == batch.mutations.len() {
                batch
                    .mutations
                    .iter()
                    .zip(keywords)
                    .filter(|(m, _)| handles[m.table()].is_derived())
                    .map(|(m, k)| match k {
                        Some((h, entries)) if Arc::ptr_eq(h, &handles[m.table()]) => Some(entries),
                        _ => None,
                    })
                    .collect()
            } else {
                Vec::new()
            };
        self.write_txn(|wtxn| {
            let existed = rows_exist(wtxn, &indexed)?;
            let before = index_entries(wtxn, &indexed, &existed, None, now_ms)?;
            let keywords_before = self.keyword_entries(wtxn, &indexed, &existed, None, &[], now_ms)?;
            let mut buf = Vec::with_capacity(256);
            let mut handle = None::<&Arc<TableHandle>>;
            // With one mutation per row, the i-th mutation of a derived
            // table is row `indexed[i]`, whose existence is known.
            let bulk = touched.len() == batch.mutations.len();
            let mut derived = 0;
            for mutation in &batch.mutations {
                let h = match handle {
                    Some(h) if h.name == mutation.table() => h,
                    _ => &handles[mutation.table()],
                };
                handle = Some(h);
                let new_row = if h.is_derived() {
                    derived += 1;
                    bulk && !existed[derived - 1]
                } else {
                    false
                };
                let row = h.stored_key(mutation.row());
                match mutation {
                    Mutation::Put { cells, .. } => put_row(wtxn, h, &row, cells, new_row, now_ms, &mut buf)?,
                    Mutation::Delete { what, .. } => delete_row(wtxn, h, &row, what)?,
                }
            }
            let after = index_entries(wtxn, &indexed, &existed, Some(&puts_only), now_ms)?;
            update_indexes(wtxn, &indexed, &before, &after, self.index_pending_runs)?;
            let keywords_after =
                self.keyword_entries(wtxn, &indexed, &existed, Some(&puts_only), &ahead, now_ms)?;
            keyword::update(
                wtxn,
                indexed
                    .iter()
                    .zip(&keywords_before)
                    .zip(&keywords_after)
                    .filter_map(|(((t, _), b), a)| t.search.as_ref().map(|s| (s, &**b, &**a))),
            )?;
            self.append_feed(wtxn, &touched)
        })
    }

    /// Each row's keyword cells (empty for tables without a search
    /// section), as `txn` sees the data; like [`index_entries`].
    fn keyword_entries<'a>(
        &self,
        txn: &heed::RoTxn<'_>,
        rows: &[(&TableHandle, &[u8])],
        existed: &[bool],
        puts_only: Option<&[Option<Vec<&PutCell>>]>,
        ahead: &[Option<&'a KeywordCells>],
        now_ms: u64,
    ) -> Result<Vec<Cow<'a, KeywordCells>>> {
        let mut out = Vec::with_capacity(rows.len());
        for (i, (table, row)) in rows.iter().enumerate() {
            let Some(search) = &table.search else {
                out.push(Cow::Owned(KeywordCells::default()));
                continue;
            };
            let analyzer = self.analyzer_for(&table.name)?;
            let entries = match (existed[i], puts_only) {
                (false, None) => Cow::Owned(KeywordCells::default()),
                (false, Some(puts)) if puts[i].is_some() && ahead.get(i).is_some_and(Option::is_some) => {
                    ahead[i].map_or_else(|| Cow::Owned(KeywordCells::default()), Cow::Borrowed)
                }
                (false, Some(puts)) if puts[i].is_some() => {
                    let values = search.values_from_puts(puts[i].as_deref().unwrap_or_default(), now_ms);
                    Cow::Owned(search.entries(analyzer, table, row, &values)?)
                }
                _ => {
                    let values = search.values(txn, &table.stored_key(row))?;
                    Cow::Owned(search.entries(analyzer, table, row, &values)?)
                }
            };
            out.push(entries);
        }
        Ok(out)
    }

    /// Validates a batch before any write and resolves its tables.
    fn check_batch(&self, batch: &Batch) -> Result<BTreeMap<String, Arc<TableHandle>>> {
        let mut handles: BTreeMap<String, Arc<TableHandle>> = BTreeMap::new();
        for mutation in &batch.mutations {
            let table = mutation.table();
            if !handles.contains_key(table) {
                handles.insert(table.to_owned(), self.table_handle(table)?);
            }
            let handle = &handles[table];
            key::check_row_key(table, mutation.row())?;
            match mutation {
                Mutation::Put { cells, .. } => {
                    for cell in cells {
                        handle.family(&cell.family)?;
                        key::check_qualifier(&cell.family, &cell.qualifier)?;
                    }
                }
                Mutation::Delete { what, .. } => match what {
                    Delete::Row { .. } => {}
                    Delete::Family { family, .. } => {
                        handle.family(family)?;
                    }
                    Delete::Column { family, qualifier, .. } | Delete::Version { family, qualifier, .. } => {
                        handle.family(family)?;
                        key::check_qualifier(family, qualifier)?;
                    }
                },
            }
        }
        Ok(handles)
    }

    fn append_feed(&self, wtxn: &mut RwTxn, touched: &[(&str, &[u8])]) -> Result<CommitInfo> {
        if touched.is_empty() {
            return Ok(CommitInfo { first_seq: None, last_seq: None, rows: 0 });
        }
        let first = self.next_feed_seq(wtxn)?;
        let mut seq = first;
        let mut value = Vec::new();
        for (table, row) in touched {
            value.clear();
            // unwrap-free: table names are at most 64 bytes (validated).
            let len = u16::try_from(table.len()).unwrap_or(u16::MAX);
            value.extend_from_slice(&len.to_be_bytes());
            value.extend_from_slice(table.as_bytes());
            value.extend_from_slice(row);
            self.feed
                .put_with_flags(wtxn, heed::PutFlags::APPEND, &seq.to_be_bytes(), &value)
                .map_err(|e| Error::lmdb("append feed", e))?;
            seq += 1;
        }
        self.meta
            .put(wtxn, dbs::META_FEED_NEXT_SEQ, &seq.to_be_bytes())
            .map_err(|e| Error::lmdb("write feed sequence", e))?;
        Ok(CommitInfo { first_seq: Some(first), last_seq: Some(seq - 1), rows: touched.len() })
    }

    pub(crate) fn next_feed_seq(&self, rtxn: &heed::RoTxn) -> Result<u64> {
        match self
            .meta
            .get(rtxn, dbs::META_FEED_NEXT_SEQ)
            .map_err(|e| Error::lmdb("read feed sequence", e))?
        {
            None => Ok(1),
            Some(bytes) => {
                let arr: [u8; 8] = bytes.try_into().map_err(|_| ErrorKind::Corrupted {
                    db: dbs::META.to_owned(),
                    key: "feed/next_seq".to_owned(),
                    detail: "not 8 bytes".to_owned(),
                })?;
                Ok(u64::from_be_bytes(arr))
            }
        }
    }

    /// Change-feed entries with `seq >= from_seq`, at most `limit`, in order.
    ///
    /// # Errors
    /// `Corrupted`, `Lmdb`.
    pub fn feed_since(&self, from_seq: u64, limit: usize) -> Result<Vec<FeedEntry>> {
        let rtxn = self.begin_read()?;
        let range = (std::ops::Bound::Included(&from_seq.to_be_bytes()[..]), std::ops::Bound::Unbounded);
        let mut out = Vec::new();
        for item in self.feed.range(rtxn.raw(), &range).map_err(|e| Error::lmdb("read feed", e))? {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item.map_err(|e| Error::lmdb("read feed", e))?;
            out.push(decode_feed(k, v)?);
        }
        Ok(out)
    }

    /// The sequence the next committed row will get (1 for a new store).
    ///
    /// # Errors
    /// `Lmdb`.
    pub fn next_seq(&self) -> Result<u64> {
        let rtxn = self.begin_read()?;
        self.next_feed_seq(rtxn.raw())
    }

    /// Removes feed entries with `seq <= up_to_seq`; returns how many.
    ///
    /// # Errors
    /// `Lmdb`, `Poisoned`.
    pub fn trim_feed(&self, up_to_seq: u64) -> Result<u64> {
        let _writer = self.lock_writer()?;
        let upper = up_to_seq.to_be_bytes();
        let range = (std::ops::Bound::Unbounded, std::ops::Bound::Included(&upper[..]));
        self.write_txn(|wtxn| {
            let n = self.feed.delete_range(wtxn, &range).map_err(|e| Error::lmdb("trim feed", e))?;
            Ok(n as u64)
        })
    }

    /// Purges cells past their family's TTL in every table; each row that
    /// loses cells gets a change-feed entry.
    ///
    /// # Errors
    /// `Lmdb`, `Poisoned`.
    pub fn compact(&self) -> Result<CompactReport> {
        let _writer = self.lock_writer()?;
        let now_ms = self.clock.now_ms();
        let handles: Vec<Arc<TableHandle>> = read_lock(&self.tables).values().cloned().collect();
        self.write_txn(|wtxn| {
            let mut report = CompactReport::default();
            let mut touched: Vec<(String, Vec<u8>)> = Vec::new();
            let mut seen = HashSet::new();
            for handle in &handles {
                for family in handle.families.iter().filter(|f| f.schema.ttl_seconds.is_some()) {
                    let mut dead = Vec::new();
                    for item in family.db.iter(wtxn).map_err(|e| Error::lmdb("compact", e))? {
                        let (k, _) = item.map_err(|e| Error::lmdb("compact", e))?;
                        let cell = CellKey::decode(&family.db_name, k)?;
                        if !family.schema.is_live(cell.timestamp, now_ms) {
                            dead.push(k.to_vec());
                            if seen.insert((handle.name.clone(), cell.row.clone())) {
                                touched.push((handle.name.clone(), cell.row));
                            }
                        }
                    }
                    for k in &dead {
                        family.db.delete(wtxn, k).map_err(|e| Error::lmdb("compact", e))?;
                    }
                    report.cells_purged += dead.len() as u64;
                }
            }
            // Index runs merged, so a compacted index is one database
            // again, then entries whose cells expired removed.
            for handle in &handles {
                for index in &handle.indexes {
                    index.compact(wtxn, now_ms)?;
                }
            }
            report.rows_touched = touched.len() as u64;
            let refs: Vec<(&str, &[u8])> = touched.iter().map(|(t, r)| (t.as_str(), r.as_slice())).collect();
            self.append_feed(wtxn, &refs)?;
            Ok(report)
        })
    }

    /// Cell count and bytes of a table.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn stats(&self, table: &str) -> Result<TableStats> {
        let handle = self.table_handle(table)?;
        let rtxn = self.begin_read()?;
        let mut stats = TableStats::default();
        for family in &handle.families {
            let stat = family.db.stat(rtxn.raw()).map_err(|e| Error::lmdb("stat", e))?;
            stats.cells += stat.entries as u64;
            let pages = stat.branch_pages + stat.leaf_pages + stat.overflow_pages;
            stats.bytes += (pages as u64) * u64::from(stat.page_size);
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
        let mut adopted = false;
        loop {
            let guard = read_lock(&self.resize_lock);
            match self.env.read_txn() {
                Ok(txn) => return Ok(ReadTxn::new(self, txn, guard, self.clock.now_ms())),
                Err(heed::Error::Mdb(MdbError::MapResized)) if !adopted => {
                    drop(guard);
                    self.adopt_map_size()?;
                    adopted = true;
                }
                Err(e) => return Err(Error::lmdb("begin read", e)),
            }
        }
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
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<crate::txn::ScanPage> {
        self.begin_read()?.scan_page(table, scan)
    }

    /// Counts the rows a scan selects (ignoring its limit).
    ///
    /// # Errors
    /// As [`ReadTxn::count`].
    pub fn count(&self, table: &str, scan: &Scan) -> Result<u64> {
        self.begin_read()?.count(table, scan)
    }

    /// Adds an index to an existing table and builds its entries from the
    /// rows already there, in one write transaction (all or nothing).
    /// `progress(done, total)` is called as rows are indexed.
    ///
    /// # Errors
    /// `UnknownTable`; `InvalidSchema` (bad name, unknown family, a name in
    /// use); `Lmdb`.
    pub fn add_index(
        &self,
        table: &str,
        index: IndexSchema,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let _writer = self.lock_writer()?;
        let old = self.table_handle(table)?;
        if old.schema.indexes.iter().any(|i| i.name == index.name) {
            return Err(ErrorKind::InvalidSchema {
                table: table.to_owned(),
                reason: format!("index {:?} exists", index.name),
            }
            .into());
        }
        let mut schema = old.schema.clone();
        schema.indexes.push(index.clone());
        schema.validate(table)?;
        self.replace_schema(table, schema, |wtxn, handle| {
            build_index(wtxn, handle, &index.name, self.clock.now_ms(), progress)
        })?;
        Ok(())
    }

    /// Clears an index and builds it again from the rows (one write
    /// transaction).
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn rebuild_index(&self, table: &str, index: &str, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let _writer = self.lock_writer()?;
        let handle = self.table_handle(table)?;
        handle.index(index)?;
        let now_ms = self.clock.now_ms();
        self.write_txn(|wtxn| build_index(wtxn, &handle, index, now_ms, &mut *progress))
    }

    /// Removes an index and its entries.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _writer = self.lock_writer()?;
        let old = self.table_handle(table)?;
        old.index(index)?;
        let mut schema = old.schema.clone();
        schema.indexes.retain(|i| i.name != index);
        self.replace_schema(table, schema, |wtxn, _| old.index(index)?.clear(wtxn))?;
        Ok(())
    }

    /// Writes a changed schema of `table`, runs `work` with the new handle
    /// in the same transaction, then serves the new handle.
    fn replace_schema(
        &self,
        table: &str,
        schema: TableSchema,
        mut work: impl FnMut(&mut RwTxn, &TableHandle) -> Result<()>,
    ) -> Result<Arc<TableHandle>> {
        let json = serde_json::to_vec(&schema)
            .map_err(|e| ErrorKind::InvalidSchema { table: table.to_owned(), reason: e.to_string() })?;
        let handle = self.write_txn(|wtxn| {
            self.meta
                .put(wtxn, &dbs::schema_key(table), &json)
                .map_err(|e| Error::lmdb("write schema", e))?;
            let handle = open_table(&self.env, wtxn, table, schema.clone(), self.max_dbs)?;
            work(wtxn, &handle)?;
            Ok(handle)
        })?;
        let handle = Arc::new(handle);
        self.tables.write().unwrap_or_else(|e| e.into_inner()).insert(table.to_owned(), handle.clone());
        Ok(handle)
    }

    /// The rows of a partition holding every term of `query`, newest first
    /// (one snapshot). See [`ReadTxn::keyword_lookup`].
    ///
    /// # Errors
    /// As [`ReadTxn::keyword_lookup`].
    pub fn keyword_lookup(&self, table: &str, query: &KeywordQuery) -> Result<KeywordPage> {
        self.begin_read()?.keyword_lookup(table, query)
    }

    /// Looks rows up in a secondary index (one snapshot).
    ///
    /// ```
    /// use rowsearch_store::{FamilySchema, IndexQuery, IndexSchema, PutCell, Store, TableSchema};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// let schema = TableSchema::new([FamilySchema::new("m")]).index(IndexSchema::new("by_from", ["m:from"]));
    /// store.create_table("mail", &schema)?;
    /// store.put("mail", b"r1", vec![PutCell::new("m", "from", "ann")])?;
    /// store.put("mail", b"r2", vec![PutCell::new("m", "from", "bob")])?;
    /// store.put("mail", b"r3", vec![PutCell::new("m", "from", "ann")])?;
    /// let page = store.index_lookup("mail", "by_from", &IndexQuery { eq: vec![b"ann".to_vec()], ..Default::default() })?;
    /// let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
    /// assert_eq!(keys, [b"r1", b"r3"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `InvalidCursor`, `Lmdb`.
    pub fn index_lookup(&self, table: &str, index: &str, query: &IndexQuery) -> Result<IndexPage> {
        self.begin_read()?.index_lookup(table, index, query)
    }

    /// Compares an index with the data: every row's entry present, no
    /// other entry.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Corrupted`, `Lmdb`.
    pub fn verify_index(&self, table: &str, index: &str) -> Result<VerifyReport> {
        self.begin_read()?.verify_index(table, index)
    }

    /// The table's regions in key order: the key ranges its `splits` cut
    /// (one per salt bucket for a salted table without splits).
    ///
    /// # Errors
    /// `UnknownTable`.
    pub fn regions(&self, table: &str) -> Result<Vec<Region>> {
        Ok(self.table_handle(table)?.regions())
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

    fn lock_writer(&self) -> Result<std::sync::MutexGuard<'_, ()>> {
        let guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(ErrorKind::Poisoned.into());
        }
        Ok(guard)
    }

    /// Runs `op` in a write transaction and commits it. When LMDB reports
    /// `MDB_MAP_FULL` (during `op` or at commit), the transaction is aborted,
    /// the map is doubled and `op` runs again from scratch: this is the one
    /// place map growth happens. Callers hold the writer lock.
    fn write_txn<T>(&self, mut op: impl FnMut(&mut RwTxn) -> Result<T>) -> Result<T> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let guard = read_lock(&self.resize_lock);
            let mut wtxn = match self.env.write_txn() {
                Ok(wtxn) => wtxn,
                Err(heed::Error::Mdb(MdbError::MapResized)) if attempts < MAX_GROW_ATTEMPTS => {
                    drop(guard);
                    self.adopt_map_size()?;
                    continue;
                }
                Err(e) => return Err(Error::lmdb("begin write", e)),
            };
            let result = op(&mut wtxn);
            let outcome = match result {
                Ok(value) => match wtxn.commit() {
                    Ok(()) => Ok(value),
                    Err(e) => {
                        let err = Error::lmdb("commit", e);
                        if !is_map_full(&err) {
                            // LMDB leaves the environment in doubt after a
                            // failed commit: refuse writes until reopened.
                            self.poisoned.store(true, Ordering::SeqCst);
                        }
                        Err(err)
                    }
                },
                Err(err) => {
                    wtxn.abort();
                    Err(err)
                }
            };
            drop(guard);
            match outcome {
                Err(err) if is_map_full(&err) => {
                    if attempts >= MAX_GROW_ATTEMPTS {
                        return Err(ErrorKind::MapFull {
                            map_size_bytes: self.map_size_bytes(),
                            reason: format!("still full after {attempts} attempts"),
                        }
                        .into());
                    }
                    self.grow_map()?;
                }
                other => return other,
            }
        }
    }

    /// Waits (bounded) for this process's transactions to end, then doubles
    /// the map.
    fn grow_map(&self) -> Result<()> {
        let current = self.map_size_bytes();
        let guard = self.exclusive_resize_lock(current)?;
        let new_size = page_align(current.saturating_mul(2));
        // SAFETY: `resize_lock` is held exclusively, and every transaction of
        // this process holds it shared for its whole life, so none is open.
        #[allow(unsafe_code)]
        let result = unsafe { self.env.resize(new_size) };
        drop(guard);
        result.map_err(|e| {
            ErrorKind::MapFull { map_size_bytes: current, reason: format!("resize failed: {e}") }.into()
        })
    }

    /// Adopts the map size another process set (after `MDB_MAP_RESIZED`).
    fn adopt_map_size(&self) -> Result<()> {
        let current = self.map_size_bytes();
        let guard = self.exclusive_resize_lock(current)?;
        // SAFETY: as in `grow_map`; size 0 adopts the size in the file.
        #[allow(unsafe_code)]
        let result = unsafe { self.env.resize(0) };
        drop(guard);
        result.map_err(|e| Error::lmdb("adopt map size", e))
    }

    fn exclusive_resize_lock(&self, current: usize) -> Result<std::sync::RwLockWriteGuard<'_, ()>> {
        let deadline = Instant::now() + GROW_WAIT;
        loop {
            match self.resize_lock.try_write() {
                Ok(guard) => return Ok(guard),
                Err(std::sync::TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    return Err(ErrorKind::MapFull {
                        map_size_bytes: current,
                        reason:
                            "read transactions of this process stayed open; the map grows only when none is"
                                .into(),
                    }
                    .into());
                }
            }
        }
    }
}

/// The last existence seek in one family: the first key at or after
/// `from` is `next` (`None`: there is none).
struct LastSeek {
    family: *const FamilyHandle,
    from: Vec<u8>,
    next: Option<Vec<u8>>,
}

/// Whether each row has a cell in a family its table's indexes read.
///
/// One seek finds the first cell at or after a row; that answer is kept per
/// family, and a later row above the seek's start and below that cell has
/// no cell without another seek: rows loaded in key order beyond the data
/// (bulk loads) cost one seek per batch, not one each.
fn rows_exist(txn: &heed::RoTxn<'_>, rows: &[(&TableHandle, &[u8])]) -> Result<Vec<bool>> {
    let mut seen: Vec<LastSeek> = Vec::new();
    rows.iter()
        .map(|(table, row)| {
            let stored = table.stored_key(row);
            let (start, end) = (key::row_start(&stored), key::row_end(&stored));
            for family in &table.families {
                if !table.watches(family) {
                    continue;
                }
                let id = Arc::as_ptr(family);
                let at = match seen.iter().position(|s| s.family == id) {
                    Some(at) => at,
                    None => {
                        seen.push(LastSeek { family: id, from: Vec::new(), next: None });
                        seen.len() - 1
                    }
                };
                let LastSeek { from, next, .. } = &seen[at];
                let known_empty = !from.is_empty()
                    && *from <= start
                    && next.as_ref().is_none_or(|k| k.as_slice() >= end.as_slice());
                if known_empty {
                    continue;
                }
                let next = family
                    .db
                    .get_greater_than_or_equal_to(txn, &start)
                    .map_err(|e| Error::lmdb("index read", e))?
                    .map(|(k, _)| k.to_vec());
                let exists = next.as_ref().is_some_and(|k| k.as_slice() < end.as_slice());
                seen[at] = LastSeek { family: id, from: start.clone(), next };
                if exists {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .collect()
}

/// Each row's entry in each index of its table, as `txn` sees the data.
/// A row that did not exist before the batch has no entries before it, and
/// after a batch that only put into it its entries follow from the cells
/// put (`puts_only`), without reading them back.
fn index_entries(
    txn: &heed::RoTxn<'_>,
    rows: &[(&TableHandle, &[u8])],
    existed: &[bool],
    puts_only: Option<&[Option<Vec<&PutCell>>]>,
    now_ms: u64,
) -> Result<Vec<Vec<Option<Entry>>>> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, (table, row)) in rows.iter().enumerate() {
        let stored = table.stored_key(row);
        let entries = match (existed[i], puts_only) {
            (false, None) => vec![None; table.indexes.len()],
            (false, Some(puts)) if puts[i].is_some() => {
                let cells = puts[i].as_deref().unwrap_or_default();
                table
                    .indexes
                    .iter()
                    .map(|index| index.entry_from_puts(table, row, &stored, cells, now_ms))
                    .collect()
            }
            _ => table
                .indexes
                .iter()
                .map(|index| index.entry(txn, table, row, &stored, now_ms))
                .collect::<Result<_>>()?,
        };
        out.push(entries);
    }
    Ok(out)
}

/// Clears index `name` of `table` and writes every row's entry.
fn build_index(
    wtxn: &mut RwTxn,
    table: &TableHandle,
    name: &str,
    now_ms: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    let index = table.index(name)?;
    index.clear(wtxn)?;
    // Rows come from the families the index reads (a row without cells
    // there has no entry), in chunks so memory stays bounded; a row in
    // several of them is indexed again, to the same entry.
    let total: u64 = table
        .families
        .iter()
        .filter(|f| index.columns.iter().any(|(c, _)| Arc::ptr_eq(c, f)))
        .map(|f| f.db.stat(wtxn).map(|s| s.entries as u64).unwrap_or(0))
        .sum();
    let mut done = 0u64;
    let salted = table.is_salted();
    for family in table.families.iter().filter(|f| index.columns.iter().any(|(c, _)| Arc::ptr_eq(c, f))) {
        let mut after: Option<Vec<u8>> = None;
        loop {
            // Up to CHUNK distinct rows after `after` (escaped stored keys).
            const CHUNK: usize = 4096;
            let mut rows: Vec<Vec<u8>> = Vec::with_capacity(CHUNK);
            let lower = after.as_deref().map(key::row_end);
            let range = (lower.as_deref().map_or(Bound::Unbounded, Bound::Included), Bound::Unbounded);
            for item in family.db.range(wtxn, &range).map_err(|e| Error::lmdb("index build", e))? {
                let (k, _) = item.map_err(|e| Error::lmdb("index build", e))?;
                done += 1;
                let row_esc = key::RawCellKey::split(&family.db_name, k)?.row_esc;
                if rows.last().map(Vec::as_slice) != Some(row_esc) {
                    if rows.len() == CHUNK {
                        break;
                    }
                    rows.push(row_esc.to_vec());
                }
            }
            let Some(last) = rows.last() else { break };
            after = Some(key::unescape(last));
            for row_esc in &rows {
                let stored = key::unescape(row_esc);
                let row = if salted { stored.get(1..).unwrap_or_default() } else { &stored[..] };
                if let Some((k, expiry)) = index.entry(wtxn, table, row, &stored, now_ms)? {
                    index.build_put(wtxn, &k, expiry)?;
                }
            }
            progress(done.min(total), total);
        }
    }
    progress(total, total);
    Ok(())
}

/// What a write does to one index entry.
enum Change {
    Remove,
    Insert(u64),
    Replace(u64),
}

/// An entry key and its change.
type EntryChange<'a> = (&'a [u8], Change);

/// Replaces entries that changed, appends new ones as a run, then merges
/// the runs of an index that has too many (see the `index` module).
fn update_indexes(
    wtxn: &mut RwTxn,
    rows: &[(&TableHandle, &[u8])],
    before: &[Vec<Option<Entry>>],
    after: &[Vec<Option<Entry>>],
    max_runs: usize,
) -> Result<()> {
    // Changes gathered per index and applied in key order: neighbouring
    // B-tree writes touch the same pages.
    let mut changes: Vec<(&IndexHandle, Vec<EntryChange<'_>>)> = Vec::new();
    for (((table, _), old), new) in rows.iter().zip(before).zip(after) {
        for ((index, old), new) in table.indexes.iter().zip(old).zip(new) {
            if old == new {
                continue;
            }
            let at = match changes.iter().position(|(i, _)| std::ptr::eq(*i, index)) {
                Some(at) => at,
                None => {
                    changes.push((index, Vec::new()));
                    changes.len() - 1
                }
            };
            let list = &mut changes[at].1;
            match (old, new) {
                // Same values, new expiry.
                (Some((k_old, _)), Some((k_new, expiry))) if k_old == k_new => {
                    list.push((k_new, Change::Replace(*expiry)));
                }
                (old, new) => {
                    if let Some((k, _)) = old {
                        list.push((k, Change::Remove));
                    }
                    if let Some((k, expiry)) = new {
                        list.push((k, Change::Insert(*expiry)));
                    }
                }
            }
        }
    }
    for (index, mut list) in changes {
        list.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // Entry keys end with the row key, so a key is removed or inserted,
        // never both: removals and replacements first, then the inserts
        // as one run.
        let mut inserts = Vec::with_capacity(list.len());
        let runs = index.runs(wtxn)?;
        for (k, change) in list {
            match change {
                Change::Remove => index.remove(wtxn, &runs, k)?,
                Change::Insert(expiry) => inserts.push((k, expiry)),
                Change::Replace(expiry) => index.replace(wtxn, &runs, k, expiry)?,
            }
        }
        index.insert_sorted(wtxn, inserts)?;
        index.merge_pending(wtxn, Some(max_runs))?;
    }
    Ok(())
}

/// The rows a batch touches, each once, in the order of its first mutation.
fn touched_rows(batch: &Batch) -> Vec<(&str, &[u8])> {
    let rows = batch.mutations.iter().map(|m| (m.table(), m.row()));
    // Bulk loads come sorted: strictly ascending rows are already distinct.
    if batch.mutations.windows(2).all(|w| (w[0].table(), w[0].row()) < (w[1].table(), w[1].row())) {
        return rows.collect();
    }
    let mut order: Vec<((&str, &[u8]), usize)> = rows.zip(0..).collect();
    order.sort_unstable();
    order.dedup_by(|later, first| later.0 == first.0);
    order.sort_unstable_by_key(|&(_, i)| i);
    order.into_iter().map(|(row, _)| row).collect()
}

fn open_table(
    env: &Env<WithoutTls>,
    wtxn: &mut RwTxn,
    name: &str,
    schema: TableSchema,
    max_dbs: u32,
) -> Result<TableHandle> {
    let mut families = Vec::with_capacity(schema.families.len());
    for family in &schema.families {
        let db_name = dbs::family_db(name, &family.name);
        let db: BytesDb = env.create_database(wtxn, Some(&db_name)).map_err(|e| match e {
            heed::Error::Mdb(MdbError::DbsFull) => ErrorKind::TooManyDatabases { max_dbs }.into(),
            other => Error::lmdb("create family database", other),
        })?;
        families.push(Arc::new(FamilyHandle {
            name: Arc::from(family.name.as_str()),
            schema: family.clone(),
            db_name,
            db,
        }));
    }
    families.sort_by(|a, b| a.schema.name.cmp(&b.schema.name));
    let mut indexes = Vec::with_capacity(schema.indexes.len());
    for index in &schema.indexes {
        let db_name = dbs::index_db(name, &index.name);
        let db: BytesDb = env.create_database(wtxn, Some(&db_name)).map_err(|e| match e {
            heed::Error::Mdb(MdbError::DbsFull) => ErrorKind::TooManyDatabases { max_dbs }.into(),
            other => Error::lmdb("create index database", other),
        })?;
        let pending: BytesDb = env
            .create_database(wtxn, Some(&dbs::pending_index_db(name, &index.name)))
            .map_err(|e| match e {
                heed::Error::Mdb(MdbError::DbsFull) => ErrorKind::TooManyDatabases { max_dbs }.into(),
                other => Error::lmdb("create index database", other),
            })?;
        let invalid =
            |reason: String| -> Error { ErrorKind::InvalidSchema { table: name.to_owned(), reason }.into() };
        let mut columns = Vec::new();
        for (family, qualifier) in index.parsed_columns().map_err(invalid)? {
            let handle = families
                .iter()
                .find(|f| f.schema.name == family)
                .ok_or_else(|| invalid(format!("index {:?}: unknown family {family:?}", index.name)))?;
            columns.push((handle.clone(), qualifier));
        }
        indexes.push(IndexHandle { schema: index.clone(), db_name, db, pending, columns });
    }
    let search = match &schema.search {
        None => None,
        Some(search) => {
            let db_name = dbs::keyword_db(name);
            let db: BytesDb = env.create_database(wtxn, Some(&db_name)).map_err(|e| match e {
                heed::Error::Mdb(MdbError::DbsFull) => ErrorKind::TooManyDatabases { max_dbs }.into(),
                other => Error::lmdb("create keyword database", other),
            })?;
            Some(
                SearchHandle::open(search, &schema, &families, db_name, db)
                    .map_err(|reason| ErrorKind::InvalidSchema { table: name.to_owned(), reason })?,
            )
        }
    };
    let splits = schema.effective_splits();
    Ok(TableHandle { name: name.to_owned(), schema, splits, families, indexes, search })
}

/// Puts `cells` into `row`. `new_row`: the row had no cell in the families
/// the table watches before this mutation, the batch's only one for the row.
fn put_row(
    wtxn: &mut RwTxn,
    table: &TableHandle,
    row: &[u8],
    cells: &[PutCell],
    new_row: bool,
    now_ms: u64,
    buf: &mut Vec<u8>,
) -> Result<()> {
    // A column that held nothing and gets one live version here has nothing
    // to purge: its seek is skipped.
    let distinct = new_row && distinct_columns(cells);
    for cell in cells {
        let family = table.family(&cell.family)?;
        let ts = cell.timestamp.unwrap_or(now_ms);
        CellKey::encode_into(buf, row, &cell.qualifier, ts);
        family.db.put(wtxn, buf, &cell.value).map_err(|e| Error::lmdb("put cell", e))?;
        let sole_version = distinct
            && table.watches(family)
            && family.schema.max_versions >= 1
            && family.schema.is_live(ts, now_ms);
        if sole_version {
            continue;
        }
        // The column prefix is the key without its 8 timestamp bytes.
        buf.truncate(buf.len() - 8);
        purge_column(wtxn, family, buf, now_ms)?;
    }
    Ok(())
}

/// Whether no two of `cells` name the same column.
fn distinct_columns(cells: &[PutCell]) -> bool {
    let same = |a: &PutCell, b: &PutCell| a.family == b.family && a.qualifier == b.qualifier;
    if cells.len() <= 8 {
        return cells.iter().enumerate().all(|(i, a)| cells[i + 1..].iter().all(|b| !same(a, b)));
    }
    let mut columns: Vec<(&str, &[u8])> =
        cells.iter().map(|c| (&*c.family, c.qualifier.as_slice())).collect();
    columns.sort_unstable();
    columns.windows(2).all(|w| w[0] != w[1])
}

/// Removes versions past `max_versions` and versions past the TTL.
/// `prefix` is the column's key prefix (escaped row and qualifier).
fn purge_column(wtxn: &mut RwTxn, family: &FamilyHandle, prefix: &[u8], now_ms: u64) -> Result<()> {
    let max = family.schema.max_versions;
    let mut kept = 0u32;
    let mut dead = Vec::new();
    for item in family.db.prefix_iter(wtxn, prefix).map_err(|e| Error::lmdb("purge versions", e))? {
        let (k, _) = item.map_err(|e| Error::lmdb("purge versions", e))?;
        let ts_bytes: [u8; 8] = k[prefix.len()..].try_into().map_err(|_| ErrorKind::Corrupted {
            db: family.db_name.clone(),
            key: crate::error::preview(k),
            detail: "bad timestamp length".into(),
        })?;
        let ts = !u64::from_be_bytes(ts_bytes);
        if kept < max && family.schema.is_live(ts, now_ms) {
            kept += 1;
        } else {
            dead.push(k.to_vec());
        }
    }
    for k in &dead {
        family.db.delete(wtxn, k).map_err(|e| Error::lmdb("purge versions", e))?;
    }
    Ok(())
}

fn delete_row(wtxn: &mut RwTxn, table: &TableHandle, row: &[u8], what: &Delete) -> Result<()> {
    let (families, prefix, up_to): (Vec<&FamilyHandle>, Vec<u8>, Option<u64>) = match what {
        Delete::Row { up_to } => (table.families.iter().map(|f| &**f).collect(), key::row_start(row), *up_to),
        Delete::Family { family, up_to } => (vec![&**table.family(family)?], key::row_start(row), *up_to),
        Delete::Column { family, qualifier, up_to } => {
            (vec![&**table.family(family)?], key::column_prefix(row, qualifier), *up_to)
        }
        Delete::Version { family, qualifier, timestamp } => {
            let family = table.family(family)?;
            family
                .db
                .delete(wtxn, &CellKey::encode(row, qualifier, *timestamp))
                .map_err(|e| Error::lmdb("delete version", e))?;
            return Ok(());
        }
    };
    for family in families {
        let mut dead = Vec::new();
        for item in family.db.prefix_iter(wtxn, &prefix).map_err(|e| Error::lmdb("delete", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("delete", e))?;
            let keep = match up_to {
                None => false,
                Some(up_to) => CellKey::decode(&family.db_name, k)?.timestamp > up_to,
            };
            if !keep {
                dead.push(k.to_vec());
            }
        }
        for k in &dead {
            family.db.delete(wtxn, k).map_err(|e| Error::lmdb("delete", e))?;
        }
    }
    Ok(())
}

fn decode_feed(k: &[u8], v: &[u8]) -> Result<FeedEntry> {
    let corrupted = |detail: &str| -> Error {
        ErrorKind::Corrupted {
            db: dbs::FEED.to_owned(),
            key: crate::error::preview(k),
            detail: detail.to_owned(),
        }
        .into()
    };
    let seq = u64::from_be_bytes(k.try_into().map_err(|_| corrupted("sequence is not 8 bytes"))?);
    let len_bytes: [u8; 2] =
        v.get(..2).and_then(|b| b.try_into().ok()).ok_or_else(|| corrupted("short entry"))?;
    let len = usize::from(u16::from_be_bytes(len_bytes));
    let table = v.get(2..2 + len).ok_or_else(|| corrupted("short table name"))?;
    let table = std::str::from_utf8(table).map_err(|_| corrupted("table name is not UTF-8"))?;
    Ok(FeedEntry { seq, table: table.to_owned(), row: v[2 + len..].to_vec() })
}
