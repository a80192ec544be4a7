//! rowsearch's keyword rows in HBase, and their byte layout (this file is
//! its one owner).
//!
//! Each rowsearch table `T` that rowsearch writes has a companion HBase
//! table `T.keywords`, family `k`: one row per partition (mailbox), one
//! column per keyword and message, the HBase shape of Facebook's inbox
//! search. A column's qualifier is `[field index] term 0x00 [!date, 8 bytes
//! big-endian] row-key`, so a row's columns sort as the store's keyword
//! cells do (field, term, newest first) and the columns of one term share a
//! prefix; the value is the term's positions as the store encodes them. The
//! companion's row key is `k` + the partition (HBase refuses an empty row
//! key; a table without partitions has the one partition ``""``), and it
//! is split where the rows' table is when the partition leads the row key.
//!
//! A keyword lookup is one get of the partition's row with a
//! `MultipleColumnPrefixFilter` of every required term's prefixes; a full
//! reindex scans the companion region by region.

use std::collections::BTreeMap;

use rowsearch_store::{
    Analyzer, Cell, KeywordCellRef, KeywordHit, KeywordPage, KeywordQuery, PutCell, Row, TableSchema,
};

use super::tables::{HbaseError, read_ahead};
use crate::thrift::HbaseClient;

/// The companion table's suffix.
pub const SUFFIX: &str = rowsearch_store::KEYWORDS_SUFFIX;
/// The companion's one family.
pub const FAMILY: &str = "k";
const ROW_PREFIX: u8 = b'k';
/// Columns a scan result carries at most (a wider row comes in pieces).
const SCAN_BATCH: usize = 5_000;
const CURSOR_PREFIX: &str = "hk1.";

/// The companion table of `table`.
pub fn companion(table: &str) -> String {
    format!("{table}{SUFFIX}")
}

fn row_key(partition: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(partition.len() + 1);
    key.push(ROW_PREFIX);
    key.extend_from_slice(partition);
    key
}

/// The qualifier prefix every column of `term` in field `field` shares.
fn term_prefix(field: usize, term: &str) -> Vec<u8> {
    let mut q = Vec::with_capacity(term.len() + 2);
    q.push(u8::try_from(field).unwrap_or(u8::MAX));
    q.extend_from_slice(term.as_bytes());
    q.push(0);
    q
}

fn qualifier(cell: &KeywordCellRef<'_>) -> Vec<u8> {
    let mut q = term_prefix(cell.field_index, cell.term);
    q.extend_from_slice(&(!cell.date_ms).to_be_bytes());
    q.extend_from_slice(cell.key);
    q
}

/// Splits a qualifier: field index, term, and the version tail (`!date`
/// then the row key).
fn split_qualifier(q: &[u8]) -> Option<(usize, &str, &[u8])> {
    let (&field, rest) = q.split_first()?;
    let end = rest.iter().position(|&b| b == 0)?;
    let term = std::str::from_utf8(&rest[..end]).ok()?;
    let tail = &rest[end + 1..];
    (tail.len() >= 8).then_some((usize::from(field), term, tail))
}

fn split_tail(tail: &[u8]) -> Option<(u64, &[u8])> {
    let (date, key) = tail.split_first_chunk::<8>()?;
    Some((!u64::from_be_bytes(*date), key))
}

fn corrupted(table: &str, detail: impl Into<String>) -> HbaseError {
    HbaseError::Corrupted { table: companion(table), detail: detail.into() }
}

/// Creates `table`'s companion (when missing), split where the rows'
/// table is when the schema's partition is the row key's first field.
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
        Err(crate::thrift::ClientError::Refused { .. }) if client.table_exists(&name)? => Ok(()),
        other => Ok(other?),
    }
}

/// Whether rowsearch keeps keyword rows for `table` (its companion exists).
///
/// # Errors
/// `Client`.
pub fn kept(client: &mut HbaseClient, table: &str) -> Result<bool, HbaseError> {
    Ok(client.table_exists(&companion(table))?)
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

/// A row as a read would answer it after `puts` onto `old` (the newest
/// value of each column).
pub fn merged(key: &[u8], old: Option<&Row>, puts: &[PutCell]) -> Row {
    let mut columns: BTreeMap<(String, Vec<u8>), Vec<u8>> = BTreeMap::new();
    for c in old.map(|r| r.cells.as_slice()).unwrap_or_default() {
        columns.entry((c.family.to_string(), c.qualifier.clone())).or_insert_with(|| c.value.clone());
    }
    for p in puts {
        columns.insert((p.family.clone(), p.qualifier.clone()), p.value.clone());
    }
    let cells = columns
        .into_iter()
        .map(|((family, qualifier), value)| Cell { family: family.into(), qualifier, timestamp: 0, value })
        .collect();
    Row { key: key.to_vec(), cells }
}

/// The keyword cells of each row `(old, new)` (either may be absent) made
/// into the companion's puts and deletes: the cells the new row has, and
/// the columns only the old one had.
///
/// # Errors
/// The store's errors computing cells (a key its typed row key cannot
/// decode).
#[allow(clippy::type_complexity)]
pub fn changes(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(Option<&Row>, Option<&Row>)],
) -> rowsearch_store::Result<(Vec<(Vec<u8>, Vec<PutCell>)>, Vec<(Vec<u8>, Vec<Vec<u8>>)>)> {
    let mut puts: BTreeMap<Vec<u8>, Vec<PutCell>> = BTreeMap::new();
    let mut deletes: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for (old, new) in rows {
        let mut wanted: BTreeMap<(Vec<u8>, Vec<u8>), ()> = BTreeMap::new();
        if let Some(new) = new {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, new, &mut |cell| {
                let (row, q) = (row_key(cell.partition), qualifier(cell));
                wanted.insert((row.clone(), q.clone()), ());
                puts.entry(row).or_default().push(PutCell::new(FAMILY, q, cell.encoded_positions().to_vec()));
                Ok(())
            })?;
        }
        if let Some(old) = old {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, old, &mut |cell| {
                let (row, q) = (row_key(cell.partition), qualifier(cell));
                if !wanted.contains_key(&(row.clone(), q.clone())) {
                    deletes.entry(row).or_default().push(q);
                }
                Ok(())
            })?;
        }
    }
    Ok((puts.into_iter().collect(), deletes.into_iter().collect()))
}

/// Writes the companion's side of [`changes`].
///
/// # Errors
/// `Client`.
pub fn apply(
    client: &mut HbaseClient,
    table: &str,
    puts: &[(Vec<u8>, Vec<PutCell>)],
    deletes: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<(), HbaseError> {
    let name = companion(table);
    for (row, qualifiers) in deletes {
        client.delete_columns(&name, row, FAMILY, qualifiers)?;
    }
    if !puts.is_empty() {
        client.put_rows(&name, puts)?;
    }
    Ok(())
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

/// Every keyword cell of the partitions `from <= p < to`, in the store's
/// order, to `f`.
///
/// # Errors
/// `Client`; `Corrupted` for a column that is not a keyword cell; what
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
    let produce =
        |each: &mut dyn FnMut(Row)| client.scan_batched(&name, (Some(&start), Some(&stop)), SCAN_BATCH, each);
    read_ahead(produce, &mut |row| {
        let partition = &row.key[1..];
        for c in &row.cells {
            let cell = split_qualifier(&c.qualifier).and_then(|(n, term, tail)| {
                let (date_ms, key) = split_tail(tail)?;
                let field = fields.get(n)?;
                KeywordCellRef::from_parts(partition, n, &field.name, term, date_ms, key, &c.value)
            });
            match cell {
                Some(cell) => f(&cell)?,
                None => {
                    return Err(rowsearch_store::Error::callback(corrupted(
                        table,
                        "a column that is not a keyword cell",
                    )));
                }
            }
        }
        Ok(())
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
    let cells = row.map(|r| r.cells).unwrap_or_default();
    let cells_read = cells.len() as u64;
    // Each required term's version tails (any of its fields).
    let mut sets: Vec<std::collections::BTreeSet<&[u8]>> = vec![Default::default(); required.len()];
    for c in &cells {
        let Some((n, term, tail)) = split_qualifier(&c.qualifier) else { continue };
        for (i, (fields, want)) in required.iter().enumerate() {
            if want == term && fields.contains(&n) {
                sets[i].insert(tail);
            }
        }
    }
    let mut found: Vec<&[u8]> = match sets.split_first() {
        Some((first, rest)) => first.iter().copied().filter(|t| rest.iter().all(|s| s.contains(t))).collect(),
        None => Vec::new(),
    };
    found.retain(|t| after.as_deref().is_none_or(|a| *t > a));
    let limit = query.limit.unwrap_or(usize::MAX);
    let next_cursor = (found.len() > limit).then(|| encode_cursor(found[limit - 1]));
    found.truncate(limit);
    let hits = found
        .into_iter()
        .filter_map(split_tail)
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
