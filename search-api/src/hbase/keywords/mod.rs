//! rowsearch's keyword rows in HBase: where they are kept and how they
//! are written and read (the bytes: [`block`]; the upgrade from the build
//! before: [`upgrade`]).
//!
//! Each rowsearch table `T` that rowsearch writes has a companion HBase
//! table `T.keywords`, family `k`: one row per partition (mailbox), the
//! HBase shape of Facebook's inbox search, holding per keyword column
//! `(field, term)` one cell per write that changed it (a *run*: the
//! versions it added or removed, as a block of versions). A write of a
//! batch of messages is one cell per term it holds in each partition, not
//! one per (term, message); a column's cells sort by its term, so a
//! lookup is one get of the partition's row with a
//! `MultipleColumnPrefixFilter` of every required term's prefix, and a
//! full reindex scans the companion region by region. The companion's row
//! key is `k` + the partition (HBase refuses an empty row key; a table
//! without partitions has the one partition ``""``), split where the rows'
//! table is when the partition leads the row key; the row `00` holds the
//! layout's marker (`k:layout` = `2`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

use rowsearch_store::{
    Analyzer, Cell, KeywordCellRef, KeywordHit, KeywordPage, KeywordQuery, PutCell, Row, TableSchema,
};

use super::tables::{CATALOG_CACHE, HbaseError, HbaseTables, read_ahead};
use crate::thrift::HbaseClient;

mod block;
mod changes;
mod follow;
pub(crate) mod upgrade;

pub use block::{FAMILY, SUFFIX, companion};
use block::{
    META_ROW, RECORDS_COLUMN, ROW_PREFIX, Version, row_key, split_qualifier, split_tail, term_prefix,
};

const LAYOUT_COLUMN: &[u8] = b"layout";
/// The layout of blocks of runs (the build before: `1`, a cell per
/// version, no marker).
const LAYOUT: &[u8] = b"2";

const CURSOR_PREFIX: &str = "hk1.";

fn corrupted(table: &str, detail: impl Into<String>) -> HbaseError {
    block::corrupted(table, detail)
}

/// Creates `table`'s companion (when missing), split where the rows'
/// table is when the schema's partition is the row key's first field,
/// with its layout's marker.
///
/// # Errors
/// `Client`.
pub fn create(client: &mut HbaseClient, table: &str, schema: &TableSchema) -> Result<(), HbaseError> {
    let name = companion(table);
    if client.table_exists(&name)? {
        return Ok(());
    }
    let leads = match (&schema.search, &schema.row_key) {
        (Some(search), Some(key)) => {
            search.partition.as_deref().is_some_and(|p| key.fields.first().is_some_and(|f| f.name == p))
        }
        _ => false,
    };
    let splits: Vec<Vec<u8>> =
        if leads { schema.effective_splits().iter().map(|s| row_key(s)).collect() } else { Vec::new() };
    match client.create_table(&name, &[rowsearch_store::FamilySchema::new(FAMILY).max_versions(1)], &splits) {
        // Made meanwhile by another process.
        Err(crate::thrift::ClientError::Refused { .. }) if client.table_exists(&name)? => {}
        other => other?,
    }
    client.put_rows(&name, &[(META_ROW.to_vec(), vec![PutCell::new(FAMILY, RECORDS_COLUMN, "1")])])?;
    mark(client, table)
}

/// Writes the marker of this build's layout into `table`'s companion.
fn mark(client: &mut HbaseClient, table: &str) -> Result<(), HbaseError> {
    client.put_rows(
        &companion(table),
        &[(META_ROW.to_vec(), vec![PutCell::new(FAMILY, LAYOUT_COLUMN, LAYOUT)])],
    )?;
    Ok(())
}

/// Whether `table`'s companion carries this build's marker.
fn marked(client: &mut HbaseClient, table: &str) -> Result<bool, HbaseError> {
    let row = client.get_rows(&companion(table), &[META_ROW])?.pop().flatten();
    Ok(row.is_some_and(|r| r.cells.iter().any(|c| c.qualifier == LAYOUT_COLUMN && c.value == LAYOUT)))
}

/// Which tables have companions, as seen at most `CATALOG_CACHE` ago; the
/// first time a process meets a companion of the build before, it is
/// upgraded ([`upgrade::run`]) before anything reads or writes it.
#[derive(Debug, Default)]
pub struct Companions {
    seen: Mutex<HashMap<String, (bool, Instant)>>,
    checked: Mutex<HashSet<String>>,
}

impl Companions {
    /// Whether rowsearch keeps keyword rows for `table` (its companion
    /// exists), upgraded to this build's layout.
    ///
    /// # Errors
    /// `Client`; the upgrade's errors.
    pub fn kept(&self, tables: &HbaseTables, table: &str) -> Result<bool, HbaseError> {
        let lock = |m: &Mutex<HashMap<String, (bool, Instant)>>| {
            m.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(table).copied()
        };
        if let Some((kept, at)) = lock(&self.seen)
            && at.elapsed() < CATALOG_CACHE
        {
            return Ok(kept);
        }
        let kept = tables.client().table_exists(&companion(table))?;
        if kept {
            self.upgrade(tables, table, &mut |rows, cells| {
                tracing::info!(table, rows, cells, "keyword upgrade: partitions seen, cells moved");
            })?;
        }
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(table.to_owned(), (kept, Instant::now()));
        Ok(kept)
    }

    /// Upgrades `table`'s companion when an older build wrote it (once per
    /// process; one upgrade at a time), `progress(partitions, cells moved)`
    /// every 2 s or so: the cells moved, `None` when there was nothing to do
    /// (no companion, or this build's already).
    ///
    /// # Errors
    /// `Client`; the upgrade's errors.
    pub fn upgrade(
        &self,
        tables: &HbaseTables,
        table: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Option<u64>, HbaseError> {
        let mut checked = self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if checked.contains(table) {
            return Ok(None);
        }
        let mut client = tables.client();
        if !client.table_exists(&companion(table))? || marked(&mut client, table)? {
            checked.insert(table.to_owned());
            return Ok(None);
        }
        tracing::info!(table, "upgrading the keyword rows in HBase to runs of versions");
        let started = Instant::now();
        let mut last = Instant::now();
        let moved = upgrade::run(tables, table, &mut |rows, cells| {
            if last.elapsed().as_secs() >= 2 {
                progress(rows, cells);
                last = Instant::now();
            }
        })?;
        mark(&mut client, table)?;
        tracing::info!(table, cells = moved, secs = started.elapsed().as_secs_f64(), "keyword rows upgraded");
        checked.insert(table.to_owned());
        Ok(Some(moved))
    }

    /// Forgets what was seen of `table` (created or dropped here).
    pub fn forget(&self, table: &str) {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(table);
        self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(table);
    }
}

/// Drops `table`'s companion, if it has one.
///
/// # Errors
/// `Client`.
pub fn drop_companion(client: &mut HbaseClient, table: &str) -> Result<(), HbaseError> {
    let name = companion(table);
    if client.table_exists(&name)? {
        client.drop_table(&name)?;
    }
    Ok(())
}

/// Each row as a read would answer it after `rows`' puts onto `old` (the
/// row before the batch, in order): a key put twice in the batch is read
/// as after its first puts the second time.
pub fn merged(rows: &[(Vec<u8>, Vec<PutCell>)], old: &[Option<Row>]) -> Vec<(Option<Row>, Row)> {
    let mut latest: HashMap<&[u8], Row> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for ((key, puts), old) in rows.iter().zip(old) {
        let before = latest.get(key.as_slice()).cloned().or_else(|| old.clone());
        let mut columns: BTreeMap<(String, Vec<u8>), Vec<u8>> = BTreeMap::new();
        for c in before.as_ref().map(|r| r.cells.as_slice()).unwrap_or_default() {
            columns.entry((c.family.to_string(), c.qualifier.clone())).or_insert_with(|| c.value.clone());
        }
        for p in puts {
            columns.insert((p.family.clone(), p.qualifier.clone()), p.value.clone());
        }
        let cells = columns
            .into_iter()
            .map(|((family, qualifier), value)| Cell {
                family: family.into(),
                qualifier,
                timestamp: 0,
                value,
            })
            .collect();
        let after = Row { key: key.clone(), cells };
        latest.insert(key, after.clone());
        out.push((before, after));
    }
    out
}

/// The partitions the companion's regions start at (after the first).
///
/// # Errors
/// `Client`.
pub fn partition_splits(client: &mut HbaseClient, table: &str) -> Result<Vec<Vec<u8>>, HbaseError> {
    let regions = client.regions(&companion(table))?;
    Ok(regions
        .into_iter()
        .filter_map(|r| r.start)
        .filter_map(|s| s.strip_prefix(&[ROW_PREFIX]).map(<[u8]>::to_vec))
        .collect())
}

/// A column's cells as they come, gathered until the column ends.
#[derive(Default)]
struct Column {
    row: Vec<u8>,
    /// The first cell's qualifier (its term prefix names the column).
    qualifier: Vec<u8>,
    runs: Vec<Vec<u8>>,
}

impl Column {
    fn same(&self, row: &[u8], qualifier: &[u8]) -> bool {
        !self.runs.is_empty()
            && self.row == row
            && block::prefix_len(&self.qualifier)
                .is_some_and(|n| qualifier.get(..n) == self.qualifier.get(..n))
    }

    /// Takes a row's (or a row piece's) cells, handing each column to
    /// `done` once the next one starts (the last stays for the caller's
    /// final `done`: a column may go on in the next piece).
    fn gather(
        &mut self,
        row: Row,
        done: &mut dyn FnMut(&mut Column) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        for c in row.cells {
            if !self.same(&row.key, &c.qualifier) {
                done(self)?;
                self.row.clone_from(&row.key);
                self.qualifier = c.qualifier;
            }
            self.runs.push(c.value);
        }
        Ok(())
    }

    /// The column's versions, newest first.
    fn versions(&mut self, table: &str) -> Result<Vec<Version>, HbaseError> {
        let runs = std::mem::take(&mut self.runs);
        block::merge(runs.iter().map(Vec::as_slice))
            .ok_or_else(|| corrupted(table, "a cell that is not a run of versions"))
    }
}

/// Every keyword cell of the partitions `from <= p < to`, in the store's
/// order, to `f`.
///
/// # Errors
/// `Client`; `Corrupted` for a column that is not a keyword column; what
/// `f` returns (as a store error).
pub fn for_each_cell_between(
    client: &mut HbaseClient,
    table: &str,
    schema: &TableSchema,
    range: (Option<&[u8]>, Option<&[u8]>),
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
) -> rowsearch_store::Result<()> {
    let fields = schema.search.as_ref().map(|s| s.fields.as_slice()).unwrap_or_default();
    let (start, stop) = (range.0.map(row_key), range.1.map(row_key));
    let start = start.unwrap_or_else(|| vec![ROW_PREFIX]);
    let stop = stop.unwrap_or_else(|| vec![ROW_PREFIX + 1]);
    let name = companion(table);
    let bad = |detail: &str| rowsearch_store::Error::callback(corrupted(table, detail));
    let mut column = Column::default();
    let mut flush = |column: &mut Column| -> rowsearch_store::Result<()> {
        if column.runs.is_empty() {
            return Ok(());
        }
        let versions = column.versions(table).map_err(rowsearch_store::Error::callback)?;
        let (n, term, _) =
            split_qualifier(&column.qualifier).ok_or_else(|| bad("a column that is not a keyword column"))?;
        let field = fields.get(n).ok_or_else(|| bad("a keyword column of no field"))?;
        let partition = &column.row[1..];
        for v in &versions {
            let (date_ms, key) = split_tail(&v.tail).ok_or_else(|| bad("a version without its date"))?;
            let cell = KeywordCellRef::from_parts(
                partition,
                n,
                &field.name,
                term,
                date_ms,
                key,
                v.positions.as_deref().unwrap_or_default(),
            )
            .ok_or_else(|| bad("positions that are not positions"))?;
            f(&cell)?;
        }
        Ok(())
    };
    let produce = |each: &mut dyn FnMut(Row)| {
        client.scan_batched(&name, (Some(&start), Some(&stop)), block::SCAN_BATCH, each)
    };
    read_ahead(produce, &mut |row| column.gather(row, &mut flush))?;
    flush(&mut column)
}

/// Computes and puts the runs and records of a write of `rows` (old, new)
/// through rowsearch ([`changes::write_runs`]).
///
/// # Errors
/// `Schema` for cells the store cannot compute; `Client`.
pub fn write_runs(
    tables: &HbaseTables,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(Option<&Row>, Option<&Row>)],
    ways: usize,
) -> Result<(), HbaseError> {
    let mut client = tables.client();
    changes::write_runs(tables, table, schema, analyzer, rows, ways, &mut |range, f| {
        for_each_cell_between(&mut client, table, schema, range, f)
    })
}

/// Brings the keyword rows of `rows` (each key with the row as HBase has
/// it now, `None`: gone) to what the rows hold, whoever wrote them
/// ([`follow`]).
///
/// # Errors
/// `Client`; `Corrupted` for a record or run that is not one; `Schema` for
/// cells the store cannot compute.
pub fn follow_writes(
    tables: &HbaseTables,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(&[u8], Option<&Row>)],
) -> Result<(), HbaseError> {
    let mut client = tables.client();
    follow::follow(tables, table, schema, analyzer, rows, &mut |range, f| {
        for_each_cell_between(&mut client, table, schema, range, f)
    })
}

/// A keyword lookup (as the store's `keyword_lookup`): the rows of one
/// partition holding every term, newest first, from one get.
///
/// # Errors
/// `InvalidKeywordQuery`; `Client` (as a store error).
pub fn lookup(
    client: &mut HbaseClient,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    query: &KeywordQuery,
) -> rowsearch_store::Result<KeywordPage> {
    let search = schema
        .search
        .as_ref()
        .ok_or_else(|| rowsearch_store::ErrorKind::NotSearchable { table: table.to_owned() })?;
    let required = rowsearch_store::required_terms(search, analyzer, &query.terms)?;
    let after = match &query.cursor {
        Some(c) => Some(decode_cursor(c)?),
        None => None,
    };
    let mut filter = b"MultipleColumnPrefixFilter(".to_vec();
    let mut first = true;
    for (fields, term) in &required {
        for &n in fields {
            if !first {
                filter.push(b',');
            }
            first = false;
            filter.push(b'\'');
            for &b in &term_prefix(n, term) {
                if b == b'\'' {
                    filter.push(b'\'');
                }
                filter.push(b);
            }
            filter.push(b'\'');
        }
    }
    filter.push(b')');
    let row = client
        .get_filtered(&companion(table), &row_key(&query.partition), &filter)
        .map_err(|e| rowsearch_store::Error::callback(HbaseError::from(e)))?;
    let row = row.unwrap_or(Row { key: Vec::new(), cells: Vec::new() });
    // Each required term's version tails (any of its fields).
    let mut sets: Vec<std::collections::BTreeSet<Vec<u8>>> = vec![Default::default(); required.len()];
    let mut cells_read = 0u64;
    let mut column = Column::default();
    let mut take = |column: &mut Column| -> rowsearch_store::Result<()> {
        if column.runs.is_empty() {
            return Ok(());
        }
        let versions = column.versions(table).map_err(rowsearch_store::Error::callback)?;
        cells_read += versions.len() as u64;
        let Some((n, term, _)) = split_qualifier(&column.qualifier) else { return Ok(()) };
        for (i, (fields, want)) in required.iter().enumerate() {
            if want == term && fields.contains(&n) {
                sets[i].extend(versions.iter().map(|v| v.tail.clone()));
            }
        }
        Ok(())
    };
    column.gather(row, &mut take)?;
    take(&mut column)?;
    let mut found: Vec<&Vec<u8>> = match sets.split_first() {
        Some((first, rest)) => first.iter().filter(|t| rest.iter().all(|s| s.contains(*t))).collect(),
        None => Vec::new(),
    };
    found.retain(|t| after.as_deref().is_none_or(|a| t.as_slice() > a));
    let limit = query.limit.unwrap_or(usize::MAX);
    let next_cursor = (found.len() > limit).then(|| encode_cursor(found[limit - 1]));
    found.truncate(limit);
    let hits = found
        .into_iter()
        .filter_map(|t| split_tail(t))
        .map(|(date_ms, key)| KeywordHit { key: key.to_vec(), date_ms })
        .collect();
    Ok(KeywordPage { hits, next_cursor, cells_read })
}

fn encode_cursor(tail: &[u8]) -> String {
    let mut s = String::from(CURSOR_PREFIX);
    for b in tail {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn decode_cursor(token: &str) -> rowsearch_store::Result<Vec<u8>> {
    let bad = || rowsearch_store::ErrorKind::InvalidKeywordQuery { reason: format!("bad cursor {token:?}") };
    let hex = token.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
    if hex.len() % 2 != 0 || hex.len() < 16 {
        return Err(bad().into());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16).map_err(|_| bad().into()))
        .collect()
}
