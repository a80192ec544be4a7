//! Open tables: a table's schema with its family databases, indexes and
//! keyword rows resolved ([`TableHandle`]), its regions, and the catalog of
//! the open tables of a store.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock};

use heed::{RoTxn, RwTxn, WithoutTls};

use crate::db::BytesDb;
use crate::db::env::{Environment, ReadGuard, read_lock};
use crate::db::family::FamilyHandle;
use crate::db::meta::Meta;
use crate::db::{self as dbs};
use crate::error::{Error, ErrorKind, Result};
use crate::key::range::RowRange;
use crate::key::rowkey::RowKeySchema;
use crate::keyword::SearchHandle;
use crate::schema::{Analyzer, TableSchema};
use crate::secondary::IndexHandle;

/// A table's schema and its open family databases.
#[derive(Debug)]
pub(crate) struct TableHandle {
    pub name: String,
    /// The table's id: a table dropped and created again gets a new one.
    pub id: u64,
    /// Shared: a search takes it without a copy.
    pub schema: Arc<TableSchema>,
    /// Region boundaries (stored keys): the schema's effective splits.
    pub splits: Vec<Vec<u8>>,
    /// Secondary indexes, in schema order.
    pub indexes: Vec<IndexHandle>,
    /// Keyword rows, for a table with a `search` section.
    pub search: Option<SearchHandle>,
    /// Thread entries, for a table with a `threads` section.
    pub threads: Option<crate::threads::ThreadsHandle>,
    /// Sorted by family name: HBase's family order.
    pub families: Vec<Arc<FamilyHandle>>,
    /// Disabled (HBase's `disableTable`): rows are neither read nor
    /// written until the table is enabled again.
    pub disabled: bool,
}

impl TableHandle {
    /// `TableDisabled` when the table is disabled: what every read and
    /// write of rows asks first.
    pub fn check_enabled(&self) -> Result<()> {
        if self.disabled {
            return Err(ErrorKind::TableDisabled { table: self.name.clone() }.into());
        }
        Ok(())
    }

    pub fn is_salted(&self) -> bool {
        self.schema.row_key.as_ref().is_some_and(RowKeySchema::is_salted)
    }

    /// The key a row is stored under: salted when the table is.
    pub fn stored_key<'k>(&self, row: &'k [u8]) -> Cow<'k, [u8]> {
        match &self.schema.row_key {
            Some(rk) if rk.is_salted() => Cow::Owned(rk.salt(row)),
            _ => Cow::Borrowed(row),
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

    /// An index that lookups may read: `IndexBuilding` while its entries
    /// are being built.
    pub fn ready_index(&self, name: &str) -> Result<&IndexHandle> {
        let index = self.index(name)?;
        if index.building {
            return Err(ErrorKind::IndexBuilding { table: self.name.clone(), index: name.to_owned() }.into());
        }
        Ok(index)
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
    /// The families whose values are compressed with a dictionary (zstd
    /// families, once one was trained), in name order.
    pub dictionaries: Vec<String>,
}

/// The tables of one catalog version: what every transaction that sees
/// that version reads and writes through.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    /// The catalog version (see `db::meta`) these tables were loaded at.
    pub version: u64,
    map: BTreeMap<String, Arc<TableHandle>>,
}

impl Tables {
    pub fn new(version: u64, map: BTreeMap<String, Arc<TableHandle>>) -> Tables {
        Tables { version, map }
    }

    /// An open table; `UnknownTable` when there is none of that name.
    pub fn table(&self, table: &str) -> Result<Arc<TableHandle>> {
        self.map.get(table).cloned().ok_or_else(|| ErrorKind::UnknownTable { table: table.to_owned() }.into())
    }

    /// Names of all tables, sorted.
    pub fn names(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// Every open table.
    pub fn all(&self) -> Vec<Arc<TableHandle>> {
        self.map.values().cloned().collect()
    }

    /// These tables with `handle` served for its table, at `version`.
    pub fn with(&self, version: u64, handle: Arc<TableHandle>) -> Tables {
        let mut map = self.map.clone();
        map.insert(handle.name.clone(), handle);
        Tables { version, map }
    }

    /// These tables without `table`, at `version`.
    pub fn without(&self, version: u64, table: &str) -> Tables {
        let mut map = self.map.clone();
        map.remove(table);
        Tables { version, map }
    }
}

/// The tables of a store as of the newest catalog version this process has
/// seen, and the analyzer that keyword rows are built with. Shared by
/// readers and the writer.
///
/// The schemas live in the metadata database, so each LMDB transaction
/// sees one catalog version. A transaction whose version is not the one
/// held here (another process, or another `Store` in this one, changed a
/// schema) has the catalog reloaded from its snapshot before it reads or
/// writes anything: no process reads or writes under a stale schema.
#[derive(Debug)]
pub(crate) struct Catalog {
    current: RwLock<Arc<Tables>>,
    /// The tables a read transaction saw, with its id ([`Self::as_of`]).
    seen: Mutex<Option<(u64, Arc<Tables>)>>,
    analyzer: Option<Arc<dyn Analyzer>>,
    meta: Meta,
    max_dbs: u32,
}

impl Catalog {
    pub fn new(tables: Tables, analyzer: Option<Arc<dyn Analyzer>>, meta: Meta, max_dbs: u32) -> Catalog {
        Catalog { current: RwLock::new(Arc::new(tables)), seen: Mutex::new(None), analyzer, meta, max_dbs }
    }

    /// Remembers `tables` as what the read transaction `txn_id` saw.
    pub fn remember(&self, txn_id: u64, tables: Arc<Tables>) {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some((txn_id, tables));
    }

    /// The tables remembered for the transaction `txn_id`: the store's when
    /// `txn_id` is its last committed one (no schema, table or index state
    /// can have changed since, in any process).
    pub fn as_of(&self, txn_id: u64) -> Option<Arc<Tables>> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.as_ref().filter(|(id, _)| *id == txn_id).map(|(_, tables)| tables.clone())
    }

    /// The newest tables this process has loaded (possibly older than the
    /// store's: transactions check the version they see).
    pub fn current(&self) -> Arc<Tables> {
        read_lock(&self.current).clone()
    }

    /// Serves `tables` from now on, unless newer ones are served already.
    pub fn install(&self, tables: Arc<Tables>) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if tables.version > current.version {
            *current = tables;
        }
    }

    /// The catalog version `txn` sees.
    pub fn version_in(&self, txn: &RoTxn<'_>) -> Result<u64> {
        self.meta.catalog_version(txn)
    }

    /// Loads the tables of the newest catalog version (when it is not the
    /// one held), opening the databases of tables created elsewhere, and
    /// serves them. Call it with no transaction of this thread open.
    pub fn refresh(&self, env: &Environment) -> Result<Arc<Tables>> {
        let _dbi = env.lock_dbi();
        let read = env.read_txn()?;
        let version = self.meta.catalog_version(&read.txn)?;
        let current = self.current();
        if version == current.version {
            return Ok(current);
        }
        let mut map = BTreeMap::new();
        for (name, schema) in self.meta.schemas(&read.txn)? {
            // Opened again even when the schema is unchanged: what changed
            // may be an index build's state.
            let id = self.meta.table_id(&read.txn, &name)?;
            let handle =
                open_table(env, &self.meta, &mut DbSource::Open(&read.txn), &name, id, schema, self.max_dbs)?;
            map.insert(name, Arc::new(handle));
        }
        // Committing a read transaction that opened databases keeps their
        // handles open for every later transaction (LMDB's rule).
        let ReadGuard { txn, guard } = read;
        txn.commit().map_err(|e| Error::lmdb("open databases", e))?;
        drop(guard);
        let tables = Arc::new(Tables { version, map });
        self.install(tables.clone());
        Ok(self.current())
    }

    /// The analyzer, if the store has one.
    pub fn analyzer(&self) -> Option<&Arc<dyn Analyzer>> {
        self.analyzer.as_ref()
    }

    /// The analyzer for writing or reading `table`'s keyword rows;
    /// `NoAnalyzer` without one.
    pub fn analyzer_for(&self, table: &str) -> Result<&dyn Analyzer> {
        self.analyzer.as_deref().ok_or_else(|| ErrorKind::NoAnalyzer { table: table.to_owned() }.into())
    }
}

/// Where `open_table` gets its databases: created (when missing) in a
/// write transaction, or opened in a read transaction (they must exist).
pub(crate) enum DbSource<'a, 'e> {
    Create(&'a mut RwTxn<'e>),
    Open(&'a RoTxn<'e, WithoutTls>),
}

impl DbSource<'_, '_> {
    /// The transaction databases are opened in.
    fn txn(&self) -> &RoTxn<'_, WithoutTls> {
        match self {
            DbSource::Create(wtxn) => wtxn,
            DbSource::Open(rtxn) => rtxn,
        }
    }

    fn db(&mut self, env: &Environment, name: &str, max_dbs: u32, what: &'static str) -> Result<BytesDb> {
        match self {
            DbSource::Create(wtxn) => env.create_db(wtxn, name, max_dbs, what),
            DbSource::Open(rtxn) => {
                env.raw().open_database(rtxn, Some(name)).map_err(|e| Error::lmdb(what, e))?.ok_or_else(
                    || {
                        ErrorKind::Corrupted {
                            db: name.to_owned(),
                            key: String::new(),
                            detail: "a table's schema names this database, but it does not exist".to_owned(),
                        }
                        .into()
                    },
                )
            }
        }
    }
}

/// Opens (creating what is missing) the databases of table `name`.
pub(crate) fn open_table(
    env: &Environment,
    meta: &Meta,
    source: &mut DbSource<'_, '_>,
    name: &str,
    id: u64,
    schema: TableSchema,
    max_dbs: u32,
) -> Result<TableHandle> {
    let splits = schema.effective_splits();
    let mut families = Vec::with_capacity(schema.families.len());
    for family in &schema.families {
        let db_name = dbs::family_db(name, &family.name);
        let db = source.db(env, &db_name, max_dbs, "open family database")?;
        let dict = meta.dictionary(source.txn(), name, &family.name)?;
        families.push(Arc::new(FamilyHandle {
            name: Arc::from(family.name.as_str()),
            schema: family.clone(),
            db_name,
            db,
            dict,
        }));
    }
    families.sort_by(|a, b| a.schema.name.cmp(&b.schema.name));
    let mut indexes = Vec::with_capacity(schema.indexes.len());
    for index in &schema.indexes {
        let db_name = dbs::index_db(name, &index.name);
        let db = source.db(env, &db_name, max_dbs, "open index database")?;
        let pending =
            source.db(env, &dbs::pending_index_db(name, &index.name), max_dbs, "open index database")?;
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
        let building = meta.index_build(source.txn(), name, &index.name)?.is_some();
        indexes.push(IndexHandle {
            building,
            schema: index.clone(),
            table: name.to_owned(),
            splits: splits.clone(),
            db_name,
            db,
            pending,
            columns,
            row_key: schema.row_key.clone(),
        });
    }
    let search = match &schema.search {
        None => None,
        Some(search) => {
            let db_name = dbs::keyword_db(name);
            let db = source.db(env, &db_name, max_dbs, "open keyword database")?;
            let rows_name = dbs::keyword_rows_db(name);
            let rows = source.db(env, &rows_name, max_dbs, "open keyword database")?;
            let pending_name = dbs::keyword_runs_db(name);
            let pending = source.db(env, &pending_name, max_dbs, "open keyword database")?;
            Some(
                SearchHandle::open(
                    search,
                    &schema,
                    &families,
                    (db_name, db),
                    (rows_name, rows),
                    (pending_name, pending),
                )
                .map_err(|reason| ErrorKind::InvalidSchema { table: name.to_owned(), reason })?,
            )
        }
    };
    let threads = match &schema.threads {
        None => None,
        Some(threads) => {
            let db = source.db(env, &dbs::threads_db(name), max_dbs, "open thread database")?;
            let columns = threads
                .parsed()
                .map_err(|reason| ErrorKind::InvalidSchema { table: name.to_owned(), reason })?;
            Some(crate::threads::ThreadsHandle { schema: threads.clone(), columns, db })
        }
    };
    let disabled = meta.is_disabled(source.txn(), name)?;
    Ok(TableHandle {
        name: name.to_owned(),
        id,
        schema: Arc::new(schema),
        splits,
        families,
        indexes,
        search,
        threads,
        disabled,
    })
}
