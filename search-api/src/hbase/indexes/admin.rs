//! Adding, building, listing and dropping the indexes of a table in HBase.
//!
//! An index added to a table with rows is marked building (its row `FF`)
//! before the catalog names it, so every write maintains it from then on;
//! the build then waits past the catalog cache (other processes' writes
//! see the index by then) and walks the rows, each entry put verified at
//! its row's newest indexed cell's timestamp: a write that changed the row
//! meanwhile has its own marks and deletes at a later one, which win.

use rowsearch_store::{
    EntryCodec, ErrorKind, FamilySchema, IndexSchema, IndexState, PutCell, Row, TableSchema,
};

use super::super::tables::{CATALOG_CACHE, HbaseError, HbaseTables, ensure};
use super::layout::{BUILDING, FAMILY, META, STATUS, VERIFIED, companion, status_value};
use crate::thrift::HbaseClient;

/// Rows of the table read per call while building.
const PAGE: usize = 1_000;

/// Whether index `index` of `table` is being built.
///
/// # Errors
/// HBase's.
pub(crate) fn building(client: &mut HbaseClient, table: &str, index: &str) -> Result<bool, HbaseError> {
    let name = companion(table, index);
    if !client.table_exists(&name)? {
        return Ok(true);
    }
    let meta = client.get_rows(&name, &[META])?.pop().flatten();
    Ok(meta.is_some_and(|m| m.value(FAMILY, BUILDING).is_some()))
}

/// Makes the index tables of a new table (empty: ready).
///
/// # Errors
/// HBase's.
pub(crate) fn create_all(
    client: &mut HbaseClient,
    table: &str,
    schema: &TableSchema,
) -> Result<(), HbaseError> {
    for index in &schema.indexes {
        ensure(client, &companion(table, &index.name), FamilySchema::new(FAMILY).max_versions(1))?;
    }
    Ok(())
}

/// Drops the index tables of `table` (those its schema names).
///
/// # Errors
/// HBase's.
pub(crate) fn drop_all(
    client: &mut HbaseClient,
    table: &str,
    schema: &TableSchema,
) -> Result<(), HbaseError> {
    for index in &schema.indexes {
        let name = companion(table, &index.name);
        if client.table_exists(&name)? {
            client.drop_table(&name)?;
        }
    }
    Ok(())
}

/// Adds `index` to `table`, marked building; false when an index of that
/// name and columns exists already.
///
/// # Errors
/// `Store` (`IndexConflict`, `InvalidSchema`); as [`HbaseTables::schema`].
pub(crate) fn start(tables: &HbaseTables, table: &str, index: IndexSchema) -> Result<bool, HbaseError> {
    let mut schema = tables.schema(table)?;
    if let Some(existing) = schema.indexes.iter().find(|i| i.name == index.name) {
        if existing.columns == index.columns {
            return Ok(false);
        }
        let (table, index) = (table.to_owned(), index.name);
        return Err(rowsearch_store::Error::from(ErrorKind::IndexConflict { table, index }).into());
    }
    schema.indexes.push(index.clone());
    schema.validate(table)?;
    let mut client = tables.client();
    let name = companion(table, &index.name);
    ensure(&mut client, &name, FamilySchema::new(FAMILY).max_versions(1))?;
    client
        .put_rows(&name, &[(META.to_vec(), vec![PutCell::new(FAMILY, BUILDING.to_vec(), b"1".to_vec())])])?;
    drop(client);
    tables.put_schema(table, &schema)?;
    Ok(true)
}

/// Empties index `index` of `table` and marks it building again.
///
/// # Errors
/// `Store` (`UnknownIndex`); HBase's.
pub(crate) fn restart(tables: &HbaseTables, table: &str, index: &str) -> Result<(), HbaseError> {
    let schema = tables.schema(table)?;
    EntryCodec::new(table, &schema, index)?;
    // A new table, not deletes: HBase's tombstones would hide the
    // entries the build puts at their rows' (older) timestamps.
    let name = companion(table, index);
    let mut client = tables.client();
    if client.table_exists(&name)? {
        client.drop_table(&name)?;
    }
    ensure(&mut client, &name, FamilySchema::new(FAMILY).max_versions(1))?;
    client
        .put_rows(&name, &[(META.to_vec(), vec![PutCell::new(FAMILY, BUILDING.to_vec(), b"1".to_vec())])])?;
    Ok(())
}

/// Builds index `index` of `table` (marked building) from the rows, then
/// marks it ready; `progress(rows, rows)` as rows are walked.
///
/// # Errors
/// `Store` (`UnknownIndex`); HBase's.
pub(crate) fn build(
    tables: &HbaseTables,
    table: &str,
    index: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), HbaseError> {
    // Writers of other processes see the index within the catalog cache.
    std::thread::sleep(CATALOG_CACHE * 2);
    let schema = tables.schema(table)?;
    let codec = EntryCodec::new(table, &schema, index)?;
    let name = companion(table, index);
    let now = crate::hbase::clock::now_ms();
    let mut client = tables.client();
    let mut done = 0u64;
    let mut puts: Vec<(Vec<u8>, Vec<PutCell>)> = Vec::new();
    let mut failed = None;
    let mut writer = tables.client();
    client.scan(table, (None, None), None, PAGE, &mut |row: Row| {
        done += 1;
        if let Some((entry, expiry)) = codec.entry(&row, now) {
            let ts = newest_indexed(&codec, &row);
            let mut cell = PutCell::new(FAMILY, STATUS.to_vec(), status_value(VERIFIED, expiry));
            cell.timestamp = Some(ts);
            puts.push((entry, vec![cell]));
        }
        if puts.len() >= PAGE && failed.is_none() {
            failed = writer.put_rows(&name, &std::mem::take(&mut puts)).err();
            progress(done, done);
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    writer.put_rows(&name, &puts)?;
    client.delete_columns(&name, META, FAMILY, &[BUILDING.to_vec()])?;
    progress(done, done);
    Ok(())
}

/// The timestamp of `row`'s newest indexed cell.
fn newest_indexed(codec: &EntryCodec, row: &Row) -> u64 {
    let columns: Vec<(&str, &[u8])> = codec.columns().collect();
    row.cells
        .iter()
        .filter(|c| columns.iter().any(|(f, q)| *c.family == **f && c.qualifier == *q))
        .map(|c| c.timestamp)
        .max()
        .unwrap_or(0)
}

/// Drops index `index` of `table`: from the catalog, then its table.
///
/// # Errors
/// `Store` (`UnknownIndex`); HBase's.
pub(crate) fn drop_index(tables: &HbaseTables, table: &str, index: &str) -> Result<(), HbaseError> {
    let mut schema = tables.schema(table)?;
    EntryCodec::new(table, &schema, index)?;
    schema.indexes.retain(|i| i.name != index);
    tables.put_schema(table, &schema)?;
    let name = companion(table, index);
    let mut client = tables.client();
    if client.table_exists(&name)? {
        client.drop_table(&name)?;
    }
    Ok(())
}

/// The indexes of `table`: schema, whether being built, entries (rows of
/// its index table, unverified ones included).
///
/// # Errors
/// As [`HbaseTables::schema`].
pub(crate) fn list(tables: &HbaseTables, table: &str) -> Result<Vec<IndexState>, HbaseError> {
    let schema = tables.schema(table)?;
    let mut client = tables.client();
    let mut out = Vec::with_capacity(schema.indexes.len());
    for index in &schema.indexes {
        let building = building(&mut client, table, &index.name)?;
        let name = companion(table, &index.name);
        let mut entries = 0u64;
        if client.table_exists(&name)? {
            client.scan_keys(&name, (None, Some(META)), PAGE, &mut |_| entries += 1)?;
        }
        out.push(IndexState { schema: index.clone(), building, entries });
    }
    Ok(out)
}
