//! Index lookups: a query's bounds in each region and run, merged into
//! entries in index order; and the key streams that combine lookups.

use std::collections::BinaryHeap;
use std::ops::Bound;

use super::entry::{StoredValue, entry_expiry, entry_parts, eq_prefix, query_bounds, region_bounds};
use super::handle::IndexHandle;
use super::query::{IndexHit, IndexPage, IndexQuery};
use crate::cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::stream::{KeyStream, Tail, prefixed_range};
use heed::RoTxn;

/// An entry of one region's range, for the merge across regions.
pub(crate) struct EntryHead {
    /// The entry without its region prefix.
    pub entry: Vec<u8>,
    pub source: usize,
}

impl PartialEq for EntryHead {
    fn eq(&self, other: &EntryHead) -> bool {
        self.entry == other.entry
    }
}
impl Eq for EntryHead {}
impl PartialOrd for EntryHead {
    fn partial_cmp(&self, other: &EntryHead) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for EntryHead {
    fn cmp(&self, other: &EntryHead) -> std::cmp::Ordering {
        other.entry.cmp(&self.entry)
    }
}

/// Runs a query over every region of an index: entries in order, expired
/// ones skipped; stops after `limit + 1` entries.
pub(crate) fn lookup(
    txn: &RoTxn<'_>,
    index: &IndexHandle,
    query: &IndexQuery,
    now_ms: u64,
) -> Result<IndexPage> {
    let columns = index.columns.len();
    validate(&index.schema.name, columns, query)?;
    let after = match &query.cursor {
        None => None,
        Some(token) => Some(decode_cursor(token)?),
    };
    let (lo, hi) = query_bounds(query, after.as_deref(), columns);
    let regions: Vec<usize> = match query.region {
        Some(r) if r <= index.splits.len() => vec![r],
        Some(r) => {
            return Err(ErrorKind::UnknownRegion {
                table: index.table.clone(),
                region: r,
                regions: index.splits.len() + 1,
            }
            .into());
        }
        None => (0..=index.splits.len()).collect(),
    };
    let sources = index.sources(txn)?;
    let mut iters = Vec::with_capacity(regions.len() * sources.len());
    let mut skips = Vec::with_capacity(iters.capacity());
    for &region in &regions {
        let (lower, upper) = region_bounds(region, &lo, hi.as_deref());
        for (db, prefix) in &sources {
            let (lower, upper) = prefixed_range(prefix, &lower, upper.as_deref());
            let range = (
                Bound::Included(lower.as_slice()),
                upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
            );
            iters.push(db.range(txn, &range).map_err(|e| Error::lmdb("index lookup", e))?);
            // The source's prefix and the region.
            skips.push(prefix.len() + 2);
        }
    }
    let sources = iters.len();
    let mut heap = BinaryHeap::new();
    let mut pull = |i: usize, heap: &mut BinaryHeap<EntryHead>| -> Result<()> {
        for item in iters[i].by_ref() {
            let (k, v) = item.map_err(|e| Error::lmdb("index lookup", e))?;
            let expiry = entry_expiry(v);
            if now_ms < expiry {
                heap.push(EntryHead { entry: k.get(skips[i]..).unwrap_or_default().to_vec(), source: i });
                break;
            }
        }
        Ok(())
    };
    for i in 0..sources {
        pull(i, &mut heap)?;
    }
    let limit = query.limit.unwrap_or(usize::MAX);
    let mut hits = Vec::new();
    let mut last = None;
    while let Some(head) = heap.pop() {
        if hits.len() == limit {
            return Ok(IndexPage { hits, next_cursor: last.map(|e: Vec<u8>| encode_cursor(&e)) });
        }
        let (parts, key) = entry_parts(&index.db_name, &[&[0, 0][..], &head.entry].concat(), columns)?;
        pull(head.source, &mut heap)?;
        let values = if parts.iter().any(|p| matches!(p, StoredValue::Cut(_))) {
            // Only the first bytes are in the entry: the row has the rest.
            match index.row_values(txn, &key)? {
                Some(values) => values,
                None => continue,
            }
        } else {
            parts
                .into_iter()
                .map(|p| match p {
                    StoredValue::Whole(v) | StoredValue::Cut(v) => v,
                })
                .collect()
        };
        if !query_matches(query, &values) {
            // A cut value's hash collided, or a widened bound took it in.
            continue;
        }
        hits.push(IndexHit { values, key });
        last = Some(head.entry);
    }
    Ok(IndexPage { hits, next_cursor: None })
}

/// Refuses a query the index's `columns` cannot answer.
pub(super) fn validate(index: &str, columns: usize, query: &IndexQuery) -> Result<()> {
    let ranged = query.prefix.is_some() || query.start.is_some() || query.stop.is_some();
    if query.eq.len() > columns || (ranged && query.eq.len() == columns) {
        return Err(ErrorKind::InvalidIndexQuery {
            index: index.to_owned(),
            reason: format!(
                "the index has {columns} column(s); {} equality value(s){} given",
                query.eq.len(),
                if ranged { " and a prefix or range on the next" } else { "" }
            ),
        }
        .into());
    }
    if query.prefix.is_some() && (query.start.is_some() || query.stop.is_some()) {
        return Err(ErrorKind::InvalidIndexQuery {
            index: index.to_owned(),
            reason: "give a prefix or a start/stop range, not both".into(),
        }
        .into());
    }
    Ok(())
}

/// Whether full `values` (one per column) answer `query`.
pub(super) fn query_matches(query: &IndexQuery, values: &[Vec<u8>]) -> bool {
    if query.eq.iter().zip(values).any(|(want, v)| want != v) {
        return false;
    }
    let Some(v) = values.get(query.eq.len()) else { return true };
    query.prefix.as_ref().is_none_or(|p| v.starts_with(p))
        && query.start.as_ref().is_none_or(|s| v >= s)
        && query.stop.as_ref().is_none_or(|s| v < s)
}

pub(super) fn encode_cursor(entry: &[u8]) -> String {
    cursor::encode(cursor::Kind::Index, entry)
}

pub(super) fn decode_cursor(token: &str) -> Result<Vec<u8>> {
    cursor::decode_as(cursor::Kind::Index, token).map_err(|reason| ErrorKind::InvalidCursor { reason }.into())
}

/// The row keys an index query selects, as a stream: read lazily when
/// the query fixes every column (the keys then sort by row key within each
/// region and run), else looked up whole and sorted.
pub(crate) fn key_stream<'t>(
    txn: &'t RoTxn<'t>,
    index: &'t IndexHandle,
    query: &IndexQuery,
    now_ms: u64,
) -> Result<KeyStream<'t>> {
    let columns = index.columns.len();
    // Values past the budget are cut in entries: their lookups check rows.
    let whole = query.eq.iter().all(|v| v.len() * 2 <= super::entry::value_budget(columns));
    let complete = whole && query.eq.len() == columns && query.prefix.is_none() && query.start.is_none();
    if !complete {
        let page = lookup(txn, index, &IndexQuery { limit: None, cursor: None, ..query.clone() }, now_ms)?;
        let read = page.hits.len() as u64;
        let mut keys: Vec<Vec<u8>> = page.hits.into_iter().map(|h| h.key).collect();
        keys.sort_unstable();
        keys.dedup();
        return Ok(KeyStream::Sorted { keys, at: 0, read });
    }
    let mut ranges = Vec::new();
    for (db, source) in index.sources(txn)? {
        for region in 0..=index.splits.len() {
            let region = u16::try_from(region).unwrap_or(u16::MAX);
            ranges.push((db, eq_prefix(&source, region, &query.eq, columns)));
        }
    }
    KeyStream::live(txn, &index.db_name, ranges, Tail::EscapedRow { expiry: entry_expiry }, now_ms)
}
