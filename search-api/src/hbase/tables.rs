//! rowsearch's tables in an HBase cluster: the catalog (`rowsearch_catalog`)
//! and the tables' rows, through HBase's Thrift2 gateway.

use std::sync::Mutex;
use std::time::Duration;

use rowsearch_store::{FamilySchema, PutCell, Row, TableSchema};

use crate::thrift::{ClientError, HbaseClient};

/// The catalog table's name.
pub const CATALOG: &str = rowsearch_store::CATALOG_TABLE;
/// The table of writes made through rowsearch (any of its processes): row
/// `[time ms, 8 bytes] table 0x00 row-key`, kept a day (a family TTL). A
/// search reads it from what its index absorbed, so those writes are
/// searchable at once without scanning the tables; other clients' writes
/// come through the tailer's time-range scans.
pub const FEED: &str = "rowsearch_feed";
const FEED_FAMILY: &str = "f";
const FEED_TTL_SECONDS: u64 = 86_400;
/// How long the feed keeps an entry (its table's TTL), in ms.
pub const FEED_KEEPS_MS: u64 = FEED_TTL_SECONDS * 1000;
/// Recorded writes read in one call (more: a scanner).
const ONE_CALL_ROWS: usize = 1000;

const FAMILY: &str = "c";
const SCHEMA: &[u8] = b"schema";
/// The table's id: the time (ms) it was recorded, so a table dropped and
/// made again has a new one (an index built for the old is not reused).
const ID: &[u8] = b"id";

/// Why an operation on HBase tables failed.
#[derive(Debug, thiserror::Error)]
pub enum HbaseError {
    /// HBase refused, or could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// No rowsearch table of that name in the catalog.
    #[error("no table {table:?} in HBase's rowsearch catalog (rowsearch create-table --hbase ... makes one)")]
    UnknownTable {
        /// The table.
        table: String,
    },
    /// A schema the store would refuse, or one conflicting with the
    /// catalog's.
    #[error("table {table:?}: {reason}")]
    Schema {
        /// The table.
        table: String,
        /// Why.
        reason: String,
    },
    /// A write names a family the table does not have.
    #[error("table {table:?} has no family {family:?}")]
    UnknownFamily {
        /// The table.
        table: String,
        /// The family.
        family: String,
    },
    /// The table exists with another schema.
    #[error("table {table:?} exists with another schema")]
    SchemaConflict {
        /// The table.
        table: String,
    },
    /// The store's own error (a secondary index's: unknown, being built,
    /// a bad query; a write past its window).
    #[error(transparent)]
    Store(#[from] rowsearch_store::Error),
    /// The catalog holds something that is not a schema.
    #[error("the catalog's row for {table:?} does not parse: {detail}")]
    Corrupted {
        /// The table.
        table: String,
        /// What is wrong.
        detail: String,
    },
}

impl HbaseError {
    /// True for errors the caller can fix by changing the input.
    pub fn is_user_error(&self) -> bool {
        if let HbaseError::Store(e) = self {
            return e.is_user_error();
        }
        matches!(
            self,
            HbaseError::UnknownTable { .. }
                | HbaseError::Schema { .. }
                | HbaseError::UnknownFamily { .. }
                | HbaseError::SchemaConflict { .. }
        )
    }
}

/// rowsearch's tables in one HBase cluster.
#[derive(Debug)]
pub struct HbaseTables {
    addr: String,
    timeout: Duration,
    /// Connections not in use (each call takes one, or opens one, and
    /// gives it back): parallel readers each have their own.
    idle: Mutex<Vec<HbaseClient>>,
    /// Catalog entries and enabled states read lately.
    cache: Mutex<Cache>,
    /// Whether `rowsearch_feed` is known to exist.
    feed_ready: std::sync::atomic::AtomicBool,
}

/// How long a table's catalog entry and enabled state are taken as read:
/// another process's drop, re-creation or disable is seen within this
/// (this process's own at once).
pub const CATALOG_CACHE: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct Cache {
    entries: std::collections::HashMap<String, (std::time::Instant, (TableSchema, u64))>,
    enabled: std::collections::HashMap<String, (std::time::Instant, bool)>,
}

/// Most idle connections kept.
const MAX_IDLE: usize = 16;

/// A connection taken from the pool, given back when dropped.
pub(crate) struct Pooled<'t> {
    client: Option<HbaseClient>,
    pool: &'t HbaseTables,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = HbaseClient;
    fn deref(&self) -> &HbaseClient {
        self.client.as_ref().unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut HbaseClient {
        self.client.as_mut().unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push(client);
            }
        }
    }
}

impl HbaseTables {
    /// The tables behind the Thrift2 gateway at `addr`; nothing is
    /// contacted until the first call.
    pub fn new(addr: &str) -> HbaseTables {
        HbaseTables::with_timeout(addr, Duration::from_secs(30))
    }

    /// As [`Self::new`], each call failing as unavailable past `timeout`.
    pub fn with_timeout(addr: &str, timeout: Duration) -> HbaseTables {
        HbaseTables {
            addr: addr.to_owned(),
            timeout,
            idle: Mutex::new(Vec::new()),
            cache: Mutex::default(),
            feed_ready: Default::default(),
        }
    }

    /// The gateway's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub(crate) fn client(&self) -> Pooled<'_> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let client = idle.unwrap_or_else(|| HbaseClient::new(self.addr.as_str(), self.timeout));
        Pooled { client: Some(client), pool: self }
    }

    /// Names of rowsearch's tables, sorted.
    ///
    /// # Errors
    /// [`HbaseError::Client`].
    pub fn tables(&self) -> Result<Vec<String>, HbaseError> {
        let mut client = self.client();
        if !client.table_exists(CATALOG)? {
            return Ok(Vec::new());
        }
        let mut names = Vec::new();
        client.scan(CATALOG, (None, None), None, 1000, &mut |row| {
            names.push(String::from_utf8_lossy(&row.key).into_owned());
        })?;
        names.sort();
        Ok(names)
    }

    /// A table's schema.
    ///
    /// # Errors
    /// [`HbaseError::UnknownTable`], [`HbaseError::Corrupted`], `Client`.
    pub fn schema(&self, table: &str) -> Result<TableSchema, HbaseError> {
        self.entry(table).map(|(schema, _)| schema)
    }

    /// A table's id (see `ID`).
    ///
    /// # Errors
    /// As [`HbaseTables::schema`].
    pub fn table_id(&self, table: &str) -> Result<u64, HbaseError> {
        self.entry(table).map(|(_, id)| id)
    }

    /// A table's catalog row: schema and id.
    fn entry(&self, table: &str) -> Result<(TableSchema, u64), HbaseError> {
        let now = std::time::Instant::now();
        if let Some((at, entry)) = self.lock_cache().entries.get(table)
            && now.duration_since(*at) < CATALOG_CACHE
        {
            return Ok(entry.clone());
        }
        let entry = self.read_entry(table)?;
        self.lock_cache().entries.insert(table.to_owned(), (now, entry.clone()));
        Ok(entry)
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets what the cache holds of `table` (after this process changed it).
    fn forget(&self, table: &str) {
        let mut cache = self.lock_cache();
        cache.entries.remove(table);
        cache.enabled.remove(table);
    }

    /// Whether `table` is enabled (as HBase's `isTableEnabled`), as seen
    /// at most `CATALOG_CACHE` ago.
    ///
    /// # Errors
    /// As [`HbaseTables::schema`].
    pub fn is_enabled(&self, table: &str) -> Result<bool, HbaseError> {
        self.entry(table)?;
        let now = std::time::Instant::now();
        if let Some((at, enabled)) = self.lock_cache().enabled.get(table)
            && now.duration_since(*at) < CATALOG_CACHE
        {
            return Ok(*enabled);
        }
        let enabled = self.client().is_table_enabled(table)?;
        self.lock_cache().enabled.insert(table.to_owned(), (now, enabled));
        Ok(enabled)
    }

    /// Records `schema` as `table`'s (a setting changed: its display), its
    /// id kept: the same table, its index generations still its own.
    ///
    /// # Errors
    /// As [`HbaseTables::schema`].
    pub fn put_schema(&self, table: &str, schema: &TableSchema) -> Result<(), HbaseError> {
        self.forget(table);
        self.schema(table)?;
        let json = serde_json::to_vec(schema)
            .map_err(|e| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() })?;
        let cells = vec![PutCell::new(FAMILY, SCHEMA.to_vec(), json)];
        self.client().put_rows(CATALOG, &[(table.as_bytes().to_vec(), cells)])?;
        self.forget(table);
        Ok(())
    }

    /// Enables or disables `table` in HBase (its keyword table stays
    /// enabled: rowsearch's own); whether its state changed.
    ///
    /// # Errors
    /// As [`HbaseTables::schema`].
    pub fn set_enabled(&self, table: &str, enabled: bool) -> Result<bool, HbaseError> {
        self.forget(table);
        self.schema(table)?;
        let mut client = self.client();
        if client.is_table_enabled(table)? == enabled {
            return Ok(false);
        }
        client.set_table_enabled(table, enabled)?;
        drop(client);
        self.forget(table);
        Ok(true)
    }

    fn read_entry(&self, table: &str) -> Result<(TableSchema, u64), HbaseError> {
        let mut client = self.client();
        if !client.table_exists(CATALOG)? {
            return Err(HbaseError::UnknownTable { table: table.to_owned() });
        }
        let row = client.get_rows(CATALOG, &[table.as_bytes()])?.pop().flatten();
        let value = |q: &[u8]| {
            row.as_ref().and_then(|r| r.cells.iter().find(|c| &*c.family == FAMILY && c.qualifier == q))
        };
        let cell = value(SCHEMA).ok_or_else(|| HbaseError::UnknownTable { table: table.to_owned() })?;
        let schema = serde_json::from_slice(&cell.value)
            .map_err(|e| HbaseError::Corrupted { table: table.to_owned(), detail: e.to_string() })?;
        let id = value(ID)
            .and_then(|c| <[u8; 8]>::try_from(c.value.as_slice()).ok())
            .map_or(0, u64::from_be_bytes);
        Ok((schema, id))
    }

    /// Creates `table` in HBase (its families, max versions and time to
    /// live; split at the schema's region boundaries) and records its
    /// schema in the catalog; false when an identical one exists.
    ///
    /// # Errors
    /// [`HbaseError::Schema`] for a schema the store would refuse or one
    /// that differs from the catalog's; `Client`.
    pub fn create_table(&self, table: &str, schema: &TableSchema) -> Result<bool, HbaseError> {
        self.forget(table);
        schema
            .validate(table)
            .map_err(|e| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() })?;
        if table == CATALOG {
            return Err(HbaseError::Schema {
                table: table.to_owned(),
                reason: "the name of rowsearch's catalog".into(),
            });
        }
        match self.schema(table) {
            Ok(existing) if existing == *schema => return Ok(false),
            Ok(_) => {
                return Err(HbaseError::SchemaConflict { table: table.to_owned() });
            }
            Err(HbaseError::UnknownTable { .. }) => {}
            Err(e) => return Err(e),
        }
        let mut client = self.client();
        client.ensure_namespace()?;
        ensure(&mut client, CATALOG, FamilySchema::new(FAMILY).max_versions(1))?;
        ensure(
            &mut client,
            FEED,
            FamilySchema::new(FEED_FAMILY).max_versions(1).ttl_seconds(FEED_TTL_SECONDS),
        )?;
        // The table first, then its catalog row: a crash between leaves
        // an HBase table rowsearch does not list, and the next create-table
        // finds it and records it.
        // Its families replicated (scope 1): where HBase has rowsearch's
        // replication peer (hbase/replication/), every write to it, of any
        // client at any timestamp, reaches the change feed.
        if !client.table_exists(table)? {
            client.create_table_scoped(table, &schema.families, &schema.effective_splits(), 1)?;
        }
        let json = serde_json::to_vec(schema)
            .map_err(|e| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() })?;
        let id = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let cells = vec![
            PutCell::new(FAMILY, SCHEMA.to_vec(), json),
            PutCell::new(FAMILY, ID.to_vec(), id.to_be_bytes().to_vec()),
        ];
        client.put_rows(CATALOG, &[(table.as_bytes().to_vec(), cells)])?;
        Ok(true)
    }

    /// Drops `table`: its HBase table and its catalog row.
    ///
    /// # Errors
    /// [`HbaseError::UnknownTable`], `Client`.
    pub fn drop_table(&self, table: &str) -> Result<(), HbaseError> {
        self.forget(table);
        self.schema(table)?;
        let mut client = self.client();
        if client.table_exists(table)? {
            client.drop_table(table)?;
        }
        client.delete_row(CATALOG, table.as_bytes())?;
        // Read again above: gone now for this process at once.
        self.forget(table);
        Ok(())
    }

    /// Writes cells into one row.
    ///
    /// # Errors
    /// [`HbaseError::UnknownTable`], [`HbaseError::Schema`] for a family
    /// the table lacks, `Client`.
    pub fn put(&self, table: &str, row: &[u8], cells: Vec<PutCell>) -> Result<(), HbaseError> {
        let schema = self.schema(table)?;
        if let Some(c) = cells.iter().find(|c| !schema.families.iter().any(|f| f.name == c.family)) {
            return Err(HbaseError::UnknownFamily { table: table.to_owned(), family: c.family.clone() });
        }
        self.client().put_rows(table, &[(row.to_vec(), cells)])?;
        Ok(())
    }

    /// Reads rows by key, each its newest cell per column, in one call.
    ///
    /// # Errors
    /// [`HbaseError::UnknownTable`], `Client`.
    pub fn get(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Row>>, HbaseError> {
        self.schema(table)?;
        Ok(self.client().get_rows(table, keys)?)
    }
}

impl HbaseTables {
    /// Records that rows `keys` of `table` were written (or deleted) now,
    /// through rowsearch.
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn record_writes(&self, table: &str, keys: &[&[u8]], now_ms: u64) -> Result<(), HbaseError> {
        let rows: Vec<(Vec<u8>, Vec<PutCell>)> = keys
            .iter()
            .map(|key| {
                let mut row = now_ms.to_be_bytes().to_vec();
                row.extend_from_slice(table.as_bytes());
                row.push(0);
                row.extend_from_slice(key);
                (row, vec![PutCell::new(FEED_FAMILY, b"w".to_vec(), Vec::new())])
            })
            .collect();
        let mut client = self.client();
        // Made once per process (by create_table, or here for tables an
        // earlier build made), not looked for at every write.
        if !self.feed_ready.load(std::sync::atomic::Ordering::Relaxed) {
            let family = FamilySchema::new(FEED_FAMILY).max_versions(1).ttl_seconds(FEED_TTL_SECONDS);
            ensure(&mut client, FEED, family)?;
            self.feed_ready.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        client.put_rows(FEED, &rows)?;
        Ok(())
    }

    /// The writes recorded with times in `[from, before)`, oldest first:
    /// about `limit` of them, never fewer than every write of the time
    /// the `limit`th has (a reader that goes on after the last time it
    /// got misses none).
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn recorded_writes(
        &self,
        from: u64,
        before: u64,
        limit: usize,
    ) -> Result<Vec<rowsearch_store::FeedEntry>, HbaseError> {
        let mut client = self.client();
        let mut entries: Vec<rowsearch_store::FeedEntry> = Vec::new();
        let (start, stop) = (from.to_be_bytes(), before.to_be_bytes());
        // Whether to go on after `row` (added when it is one).
        let mut each = |row: Row| {
            let Some((time, rest)) = row.key.split_first_chunk::<8>() else { return true };
            let Some(end) = rest.iter().position(|&b| b == 0) else { return true };
            let seq = u64::from_be_bytes(*time);
            if entries.len() >= limit && entries.last().is_some_and(|e| e.seq != seq) {
                return false;
            }
            let table = String::from_utf8_lossy(&rest[..end]).into_owned();
            entries.push(rowsearch_store::FeedEntry { seq, table, row: rest[end + 1..].to_vec() });
            true
        };
        // Most often a few rows: one call; past that, a scanner.
        let range = (Some(&start[..]), Some(&stop[..]));
        let scanned = match client.scan_once(FEED, range, ONE_CALL_ROWS) {
            Ok(rows) if rows.len() < ONE_CALL_ROWS => {
                for row in rows {
                    if !each(row) {
                        break;
                    }
                }
                Ok(0)
            }
            Ok(_) => {
                let spec = crate::thrift::TScanSpec { start: range.0, stop: range.1, ..Default::default() };
                client.scan_spec(FEED, &spec, ONE_CALL_ROWS, &mut each)
            }
            Err(e) => Err(e),
        };
        match scanned {
            Ok(_) => Ok(entries),
            // No write recorded yet (a cluster rowsearch has only read).
            Err(_) if !client.table_exists(FEED)? => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `rows` of `table` in put calls spread over `ways`
    /// connections at once (HBase's handlers and region servers work on
    /// them in parallel); the first failure.
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn put_parallel(
        &self,
        table: &str,
        rows: &[(Vec<u8>, Vec<PutCell>)],
        ways: usize,
    ) -> Result<(), HbaseError> {
        let calls = crate::thrift::put_calls(rows);
        let ways = ways.clamp(1, calls.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Result<(), ClientError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..ways)
                .map(|_| {
                    scope.spawn(|| {
                        let mut client = self.client();
                        while let Some(call) =
                            calls.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                        {
                            client.put_call(table, call)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        Ok(())
    }
}

/// Creates rowsearch's own table `name` of one family when missing; one
/// made meanwhile by another process is as good.
pub(crate) fn ensure(client: &mut HbaseClient, name: &str, family: FamilySchema) -> Result<(), ClientError> {
    if client.table_exists(name)? {
        return Ok(());
    }
    match client.create_table(name, &[family], &[]) {
        Err(ClientError::Refused { .. }) if client.table_exists(name)? => Ok(()),
        other => other,
    }
}

/// Rows a scan reads ahead of the one being handled.
const READ_AHEAD_ROWS: usize = 64;

/// Runs a scan (`produce`, handing rows to the function it gets) on its
/// own thread, reading ahead of `consume`: the scanner is asked for its
/// next rows while the last ones are handled, so slow handling does not
/// leave it idle past HBase's scanner lease. Stops handing rows after
/// `consume` fails (the scan itself runs to its end).
///
/// # Errors
/// The scan's failure; what `consume` returns.
pub(crate) fn read_ahead(
    produce: impl FnOnce(&mut dyn FnMut(Row)) -> Result<u64, ClientError> + Send,
    consume: &mut dyn FnMut(Row) -> rowsearch_store::Result<()>,
) -> rowsearch_store::Result<()> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Row>(READ_AHEAD_ROWS);
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            let mut open = true;
            produce(&mut |row| {
                if open && tx.send(row).is_err() {
                    open = false;
                }
            })
        });
        let mut failed = None;
        for row in rx.iter() {
            if let Err(e) = consume(row) {
                failed = Some(e);
                break;
            }
        }
        drop(rx);
        let scanned = producer.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        match (failed, scanned) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(rowsearch_store::Error::callback(HbaseError::from(e))),
            (None, Ok(_)) => Ok(()),
        }
    })
}
