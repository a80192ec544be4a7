//! Lookups in an index kept in HBase: its entries in the query's bounds,
//! verified ones as they are, unverified ones checked against their rows
//! (repaired: verified, or deleted once past the write window),
//! combinations of lookups, and verify.

use std::collections::{BTreeMap, BTreeSet};

use rowsearch_store::{
    Delete, EntryCodec, ErrorKind, IndexHit, IndexPage, IndexQuery, IndexTerm, IndexVerifyReport, KeyPage,
    PutCell, Row, SetOp,
};

use super::super::tables::{HbaseError, HbaseTables};
use super::layout::{
    FAMILY, STATUS, UNVERIFIED, VERIFIED, WRITE_WINDOW_MS, companion, parse_status, status_value,
};
use crate::thrift::HbaseClient;

/// Entries read from HBase per call.
const PAGE: usize = 1_000;

/// One entry as read: its bytes, status, expiry and the status cell's
/// timestamp.
struct Read {
    entry: Vec<u8>,
    status: u8,
    expiry: u64,
    at: u64,
}

/// What the repairs of one lookup did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Repairs {
    /// Unverified entries their rows have: now verified.
    pub verified: u64,
    /// Unverified entries past the write window their rows do not have:
    /// deleted.
    pub deleted: u64,
    /// Unverified entries of writes that may still be under way: skipped.
    pub pending: u64,
}

/// The index `index` of `table` opened for lookups: refused while built.
fn open(tables: &HbaseTables, table: &str, index: &str) -> Result<EntryCodec, HbaseError> {
    let schema = tables.schema(table)?;
    let codec = EntryCodec::new(table, &schema, index)?;
    if super::admin::building(&mut tables.client(), table, index)? {
        let (table, index) = (table.to_owned(), index.to_owned());
        return Err(rowsearch_store::Error::from(ErrorKind::IndexBuilding { table, index }).into());
    }
    Ok(codec)
}

/// A page of `query`'s matches in index `index` of `table`, in index order
/// (as the store's lookups: the same cursors, limits and checks).
///
/// # Errors
/// `UnknownTable`; `Store` (`UnknownIndex`, `IndexBuilding`,
/// `InvalidIndexQuery`, `InvalidCursor`); HBase's.
pub(crate) fn lookup(
    tables: &HbaseTables,
    table: &str,
    index: &str,
    query: &IndexQuery,
) -> Result<(IndexPage, Repairs), HbaseError> {
    lookup_in(tables, table, &open(tables, table, index)?, query)
}

/// [`lookup`] in the index `codec` encodes, opened.
fn lookup_in(
    tables: &HbaseTables,
    table: &str,
    codec: &EntryCodec,
    query: &IndexQuery,
) -> Result<(IndexPage, Repairs), HbaseError> {
    let index = codec.name();
    if query.region.is_some() {
        let reason = "over HBase an index is one range: give no region".to_owned();
        return Err(rowsearch_store::Error::from(ErrorKind::InvalidIndexQuery {
            index: index.to_owned(),
            reason,
        })
        .into());
    }
    let (mut lo, hi) = codec.bounds(query)?;
    let limit = query.limit.unwrap_or(usize::MAX);
    let mut client = tables.client();
    let name = companion(table, index);
    let mut hits = Vec::new();
    let mut repairs = Repairs::default();
    let mut last: Option<Vec<u8>> = None;
    loop {
        let rows = client.scan_once(&name, (Some(&lo), hi.as_deref()), PAGE)?;
        let more = rows.len() == PAGE;
        let read: Vec<Read> = rows.iter().filter_map(read_entry).collect();
        if let Some(row) = rows.last() {
            lo = [row.key.as_slice(), &[0]].concat();
        }
        for (entry, hit) in checked(&mut client, table, codec, read, &mut repairs)? {
            if hits.len() == limit {
                return Ok((IndexPage { hits, next_cursor: last.map(|e| EntryCodec::cursor(&e)) }, repairs));
            }
            if EntryCodec::matches(query, &hit.values) {
                hits.push(hit);
                last = Some(entry);
            }
        }
        if !more {
            return Ok((IndexPage { hits, next_cursor: None }, repairs));
        }
    }
}

/// A page of `query`'s matches with their rows (every column), one per
/// hit: `None` for a row gone, or changed since the lookup so that it no
/// longer has the hit's values.
///
/// # Errors
/// As [`lookup`].
pub(crate) fn lookup_rows(
    tables: &HbaseTables,
    table: &str,
    index: &str,
    query: &IndexQuery,
) -> Result<(IndexPage, Vec<Option<Row>>), HbaseError> {
    let codec = open(tables, table, index)?;
    let (page, _) = lookup_in(tables, table, &codec, query)?;
    let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
    let rows = tables.client().get_rows(table, &keys)?;
    let rows = rows
        .into_iter()
        .zip(&page.hits)
        .map(|(row, hit)| {
            let row = row?;
            let holds =
                codec.columns().zip(&hit.values).all(|((f, q), v)| row.value(f, q) == Some(v.as_slice()));
            holds.then_some(row)
        })
        .collect();
    Ok((page, rows))
}

/// An index row as read (`None`: the index's own row, or not an entry).
fn read_entry(row: &Row) -> Option<Read> {
    let cell = row.cells.iter().find(|c| &*c.family == FAMILY && c.qualifier == STATUS)?;
    let (status, expiry) = parse_status(&cell.value)?;
    Some(Read { entry: row.key.clone(), status, expiry, at: cell.timestamp })
}

/// The entries of `read` a lookup answers with, in order, with their hits:
/// live verified ones whole; cut or unverified ones checked against their
/// rows (one batched get), unverified ones repaired.
fn checked(
    client: &mut HbaseClient,
    table: &str,
    codec: &EntryCodec,
    read: Vec<Read>,
    repairs: &mut Repairs,
) -> Result<Vec<(Vec<u8>, IndexHit)>, HbaseError> {
    let now = crate::hbase::clock::now_ms();
    let mut parsed = Vec::with_capacity(read.len());
    for r in read {
        if r.expiry <= now {
            continue;
        }
        let parts = codec.parts(&r.entry)?;
        parsed.push((r, parts));
    }
    let doubtful: Vec<&[u8]> =
        parsed.iter().filter(|(r, p)| r.status != VERIFIED || p.cut).map(|(_, p)| p.key.as_slice()).collect();
    let rows: BTreeMap<Vec<u8>, Option<Row>> = if doubtful.is_empty() {
        BTreeMap::new()
    } else {
        let got = client.get_rows(table, &doubtful)?;
        doubtful.iter().map(|k| k.to_vec()).zip(got).collect()
    };
    let name = companion_of(table, codec);
    let mut out = Vec::with_capacity(parsed.len());
    for (r, parts) in parsed {
        if r.status == VERIFIED && !parts.cut {
            out.push((r.entry, IndexHit { values: parts.values, key: parts.key }));
            continue;
        }
        let row = rows.get(&parts.key).and_then(Option::as_ref);
        let has = row.and_then(|row| codec.entry(row, now)).is_some_and(|(e, _)| e == r.entry);
        if has {
            if r.status == UNVERIFIED {
                let mut cell = PutCell::new(FAMILY, STATUS.to_vec(), status_value(VERIFIED, r.expiry));
                cell.timestamp = Some(r.at);
                client.put_rows(&name, &[(r.entry.clone(), vec![cell])])?;
                repairs.verified += 1;
            }
            let values = full_values(codec, row, parts.values);
            out.push((r.entry, IndexHit { values, key: parts.key }));
        } else if r.status == VERIFIED {
            // A cut value whose row's full value sorts elsewhere (a hash
            // collision): not this entry's row.
        } else if now.saturating_sub(r.at) > WRITE_WINDOW_MS {
            client.delete_cells(&name, &r.entry, &Delete::Row { up_to: Some(r.at) })?;
            repairs.deleted += 1;
        } else {
            repairs.pending += 1;
        }
    }
    Ok(out)
}

/// The index table of `codec`'s index.
fn companion_of(table: &str, codec: &EntryCodec) -> String {
    companion(table, codec.name())
}

/// The full values of the indexed columns of `row` (an entry holds a cut
/// value's first bytes only); `values` when the row is not there.
fn full_values(codec: &EntryCodec, row: Option<&Row>, values: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let Some(row) = row else { return values };
    let full: Option<Vec<Vec<u8>>> =
        codec.columns().map(|(f, q)| row.value(f, q).map(<[u8]>::to_vec)).collect();
    full.unwrap_or(values)
}

/// Row keys of `terms` (each a lookup in an index of `table`) combined by
/// `op`, in key order, after `after`, at most `limit`.
///
/// # Errors
/// As [`lookup`].
pub(crate) fn combine(
    tables: &HbaseTables,
    table: &str,
    terms: &[IndexTerm],
    op: SetOp,
    after: Option<&[u8]>,
    limit: Option<usize>,
) -> Result<KeyPage, HbaseError> {
    let mut sets: Vec<BTreeSet<Vec<u8>>> = Vec::with_capacity(terms.len());
    let mut read = 0u64;
    for term in terms {
        let query = IndexQuery { limit: None, cursor: None, ..term.query.clone() };
        let (page, _) = lookup(tables, table, &term.index, &query)?;
        read += page.hits.len() as u64;
        sets.push(page.hits.into_iter().map(|h| h.key).collect());
    }
    let mut keys: BTreeSet<Vec<u8>> = match op {
        SetOp::Union => sets.into_iter().flatten().collect(),
        SetOp::Intersect => {
            let mut sets = sets.into_iter();
            let first = sets.next().unwrap_or_default();
            sets.fold(first, |acc, s| acc.intersection(&s).cloned().collect())
        }
    };
    if let Some(after) = after {
        keys = keys.split_off(&[after, &[0]].concat());
    }
    let limit = limit.unwrap_or(usize::MAX);
    let next_after = match limit.checked_sub(1) {
        Some(last) if keys.len() > limit => keys.iter().nth(last).cloned(),
        _ => None,
    };
    Ok(KeyPage { keys: keys.into_iter().take(limit).collect(), next_after, entries_read: read })
}

/// Index `index` of `table` against its rows, after the repairs a lookup
/// of every entry makes: every row's entry present and verified, no other
/// entry (unverified ones of writes under way not counted).
///
/// # Errors
/// As [`lookup`].
pub(crate) fn verify(
    tables: &HbaseTables,
    table: &str,
    index: &str,
) -> Result<(IndexVerifyReport, Repairs), HbaseError> {
    let codec = open(tables, table, index)?;
    let (_, repairs) = lookup_in(tables, table, &codec, &IndexQuery::default())?;
    let now = crate::hbase::clock::now_ms();
    let mut client = tables.client();
    let mut entries: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut count = 0u64;
    client.scan(&companion(table, index), (None, Some(super::layout::META)), None, PAGE, &mut |row| {
        if let Some(r) = read_entry(&row)
            && r.status == VERIFIED
            && r.expiry > now
        {
            entries.insert(r.entry);
        }
        count += 1;
    })?;
    let mut report = IndexVerifyReport { entries: count, ..IndexVerifyReport::default() };
    client.scan(table, (None, None), None, PAGE, &mut |row| {
        if let Some((entry, _)) = codec.entry(&row, now)
            && !entries.remove(&entry)
        {
            report.missing_count += 1;
            if report.missing.len() < 100 {
                report.missing.push(row.key.clone());
            }
        }
    })?;
    report.extra_count = entries.len() as u64;
    report.extra = entries.into_iter().take(100).collect();
    Ok((report, repairs))
}
