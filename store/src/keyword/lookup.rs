//! Keyword lookups (the newest rows of a partition holding every term, a
//! leapfrog over version lists) and reads of keyword cells in key order.

use std::ops::Bound;

use heed::RoTxn;

use super::block::{BlockReader, FIRST_BLOCK_KEY, ORDER_TAIL_LEN, date_of, version_of};
use super::codec::{
    Column, KeywordCell, KeywordCellRef, cell_ref, decode_cell_ref, decode_column, partition_start,
    term_prefix,
};
use super::cursor::{ColumnCursor, FieldUnion};
use super::handle::SearchHandle;
use super::rows::Names;
use super::runs::{self, MergedBlocks};
use crate::cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::schema::{Analyzer, SearchSchema};
use crate::stream::{KeyStream, SetOp, combine_in};

/// A keyword lookup: the rows of one partition holding every term.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeywordQuery {
    /// The partition (mailbox); empty for a table without partitions.
    pub partition: Vec<u8>,
    /// Terms, each `word` (any search field) or `field:word` (one field).
    /// Each is analysed like the stored text, so `Enron` finds `enron` and
    /// `phillip.allen` needs both parts.
    pub terms: Vec<String>,
    /// At most this many keys (`None`: all).
    pub limit: Option<usize>,
    /// Resume after the last key of a previous page (its `next_cursor`).
    pub cursor: Option<String>,
}

/// One row found by a keyword lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordHit {
    /// The row key (unsalted).
    pub key: Vec<u8>,
    /// The row's date (ms), 0 when it has none.
    pub date_ms: u64,
}

/// A page of keyword hits, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordPage {
    /// The hits, newest first (then by row key).
    pub hits: Vec<KeywordHit>,
    /// Present when the limit cut the page short.
    pub next_cursor: Option<String>,
    /// Keyword cells read to compute the page.
    pub cells_read: u64,
}

fn encode_cursor(tail: &[u8]) -> String {
    cursor::encode(cursor::Kind::Keyword, tail)
}

fn decode_cursor(token: &str) -> Result<Vec<u8>> {
    match cursor::decode_as(cursor::Kind::Keyword, token) {
        // A tail holds at least the 8-byte date.
        Ok(tail) if tail.len() >= 8 => Ok(tail),
        _ => Err(ErrorKind::InvalidKeywordQuery { reason: format!("bad cursor {token:?}") }.into()),
    }
}

/// Runs a keyword lookup: a leapfrog over the terms' cursors in order
/// tails (date, then row number), then the hits' keys, ties of one date
/// sorted by key (the cells' order). A page ends after a whole date, so
/// the sort sees every tie before the limit cuts.
pub(crate) fn lookup<'t>(
    txn: &'t RoTxn<'t>,
    search: &'t SearchHandle,
    analyzer: &dyn Analyzer,
    query: &KeywordQuery,
) -> Result<KeywordPage> {
    let partition_prefix = partition_start(&query.partition);
    let required = required_terms(&search.schema, analyzer, &query.terms)?;
    // A term's versions are in the blocks and in the pending runs.
    let places = runs::places(txn, search)?;
    let mut streams = Vec::with_capacity(required.len());
    for (fields, term) in &required {
        let mut columns = Vec::with_capacity(fields.len() * places.len());
        for &n in fields {
            let prefix = term_prefix(&partition_prefix, n, term);
            for place in places.iter().filter(|p| p.may_hold(&prefix)) {
                columns.push(ColumnCursor::new(txn, *place, place.key(&prefix))?);
            }
        }
        streams.push(KeyStream::Other(Box::new(FieldUnion::new(columns))));
    }
    // A cursor names the last hit's tail (date and key); its date's
    // versions are read again and those up to its key skipped.
    let resume = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let mut after = resume.as_deref().map(|t| {
        let mut a = t[..8].to_vec();
        a.extend_from_slice(&[0; 4]);
        a
    });
    let limit = query.limit.unwrap_or(usize::MAX);
    let same_date = |a: &[u8], b: &[u8]| a.get(..8) == b.get(..8);
    let mut hits: Vec<(u64, std::sync::Arc<[u8]>)> = Vec::new();
    let mut more;
    let mut cells_read;
    loop {
        let want = limit.saturating_sub(hits.len());
        let page = combine_in(&mut streams, SetOp::Intersect, after.as_deref(), Some(want), &same_date)?;
        cells_read = page.entries_read;
        for t in &page.keys {
            let v = version_of(t);
            let key = search.names.key(txn, &search.rows, &search.rows_name, v.row)?;
            if let Some(r) = &resume
                && date_of(r) == v.date
                && *key <= r[8..]
            {
                continue;
            }
            hits.push((v.date, key));
        }
        more = page.next_after.is_some();
        if !more || hits.len() >= limit {
            break;
        }
        after = page.next_after;
    }
    hits.sort_unstable();
    if hits.len() > limit {
        hits.truncate(limit);
        more = true;
    }
    let tail = |(date, key): &(u64, std::sync::Arc<[u8]>)| [&date.to_be_bytes()[..], key].concat();
    Ok(KeywordPage {
        next_cursor: if more { hits.last().map(|h| encode_cursor(&tail(h))) } else { None },
        hits: hits.iter().map(|(date, key)| KeywordHit { key: key.to_vec(), date_ms: !date }).collect(),
        cells_read,
    })
}

/// The terms a keyword lookup of `terms` requires (each `word` or
/// `field:word`, analysed like the stored text), each with the indexes of
/// the search fields it may be in: the rows found hold every one.
///
/// # Errors
/// `InvalidKeywordQuery` for an unknown field or no terms left.
pub fn required_terms(
    search: &SearchSchema,
    analyzer: &dyn Analyzer,
    terms: &[String],
) -> Result<Vec<(Vec<usize>, String)>> {
    let invalid = |reason: String| -> Error { ErrorKind::InvalidKeywordQuery { reason }.into() };
    let mut required: Vec<(Vec<usize>, String)> = Vec::new();
    for raw in terms {
        let (fields, text) = match raw.split_once(':') {
            Some((name, text)) => match search.fields.iter().position(|f| f.name == name) {
                Some(n) => (vec![n], text),
                None => {
                    let known: Vec<&str> = search.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(invalid(format!(
                        "unknown search field {name:?} (fields: {})",
                        known.join(", ")
                    )));
                }
            },
            None => ((0..search.fields.len()).collect(), raw.as_str()),
        };
        for &n in &fields {
            let mut found = Vec::new();
            analyzer.terms(&search.fields[n], text, &mut |t, _| found.push(t.to_owned()));
            for term in found {
                if !required.iter().any(|(f, t)| *f == fields && *t == term) {
                    required.push((fields.clone(), term));
                }
            }
        }
    }
    if required.is_empty() {
        return Err(invalid("no terms to look up (every word was empty or dropped by the analyzer)".into()));
    }
    Ok(required)
}

/// Decodes one stored keyword cell.
pub(crate) fn decode_cell(search: &SearchHandle, k: &[u8], v: &[u8]) -> Result<KeywordCell> {
    Ok(decode_cell_ref(&search.db_name, &search.schema.fields, k, v, &mut Vec::new(), &mut Vec::new())?
        .to_cell())
}

/// Calls `f` with every keyword cell of `partition` (every partition when
/// `None`), in key order: partition, field, term, newest first. The cell
/// is lent: it borrows from the store's pages.
pub(crate) fn for_each_cell<'t>(
    txn: &'t RoTxn<'t>,
    search: &'t SearchHandle,
    partition: Option<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let Some(p) = partition else { return for_each_cell_between(txn, search, None, None, f) };
    let lower = partition_start(p);
    let upper = key::prefix_successor(&lower);
    read_cells(
        txn,
        search,
        Bound::Included(&lower),
        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        f,
    )
}

/// Every cell of the partitions `from <= p < to` (`None`: unbounded).
pub(crate) fn for_each_cell_between<'t>(
    txn: &'t RoTxn<'t>,
    search: &'t SearchHandle,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let (lower, upper) = (from.map(partition_start), to.map(partition_start));
    read_cells(
        txn,
        search,
        // Not below the first block: the counter sorts before it.
        Bound::Included(lower.as_deref().unwrap_or(FIRST_BLOCK_KEY)),
        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        f,
    )
}

fn read_cells<'t>(
    txn: &'t RoTxn<'t>,
    search: &'t SearchHandle,
    lower: Bound<&[u8]>,
    upper: Bound<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    // A partition's rows come back in every one of its columns: each
    // number is looked up once.
    let mut names = Names::new(txn, &search.rows, &search.rows_name);
    // One column at a time: its versions by date, then by row key (the
    // blocks keep a date's versions by number).
    let mut column = OwnedColumn::default();
    let mut versions: Vec<(u64, &'t [u8], &'t [u8])> = Vec::new();
    // The blocks and the pending runs side by side: a column's versions
    // may be in several places.
    for item in MergedBlocks::new(txn, search, lower, upper)? {
        let (place, k, v) = item?;
        let same = column.key.len() >= column.prefix_len
            && k.len() == column.prefix_len + ORDER_TAIL_LEN
            && k.starts_with(&column.key[..column.prefix_len]);
        if !same {
            column.emit(search, &mut versions, f)?;
            column.take(search, k)?;
        }
        let mut block = BlockReader::new(place.name, k, column.prefix_len, v)?;
        while let Some((version, positions)) = block.next()? {
            versions.push((version.date, names.key(version.row)?, positions));
        }
    }
    column.emit(search, &mut versions, f)
}

/// The column being read by [`read_cells`], owned (its first block's key,
/// its partition and term unescaped).
#[derive(Default)]
struct OwnedColumn {
    key: Vec<u8>,
    partition: Vec<u8>,
    field_index: usize,
    term: String,
    prefix_len: usize,
}

impl OwnedColumn {
    fn take(&mut self, search: &SearchHandle, k: &[u8]) -> Result<()> {
        let (mut partition, mut term) = (Vec::new(), Vec::new());
        let column = decode_column(&search.db_name, &search.schema.fields, k, &mut partition, &mut term)?;
        (self.field_index, self.prefix_len) = (column.field_index, column.prefix_len);
        self.term = column.term.to_owned();
        self.partition = column.partition.to_vec();
        self.key = k.to_vec();
        Ok(())
    }

    /// Lends `versions` (this column's) to `f` in cell order, and empties
    /// them.
    fn emit(
        &self,
        search: &SearchHandle,
        versions: &mut Vec<(u64, &[u8], &[u8])>,
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
    ) -> Result<()> {
        if versions.is_empty() {
            return Ok(());
        }
        versions.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let column = Column {
            partition: &self.partition,
            field_index: self.field_index,
            field: &search.schema.fields[self.field_index].name,
            term: &self.term,
            prefix_len: self.prefix_len,
        };
        let mut tail = Vec::new();
        for &(date, key, positions) in versions.iter() {
            tail.clear();
            tail.extend_from_slice(&date.to_be_bytes());
            tail.extend_from_slice(key);
            f(&cell_ref(&search.db_name, &self.key, &column, &tail, positions)?)?;
        }
        versions.clear();
        Ok(())
    }
}

/// Partition boundaries that cut the keyword rows where the table's
/// region splits cut its row keys: for each split, the first partition
/// whose keyword cells sort at or after it (distinct, ascending). When the
/// partition is the row key's leading string field (the mail table), the
/// keyword cells between two boundaries are exactly one region's.
pub(crate) fn partition_splits(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    splits: &[Vec<u8>],
) -> Result<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for split in splits.iter().filter(|s| !s.is_empty()) {
        // Not below the first block: the counter sorts before it.
        let range = (Bound::Included(split.as_slice().max(FIRST_BLOCK_KEY)), Bound::Unbounded);
        let Some(item) = MergedBlocks::new(txn, search, range.0, range.1)?.next() else {
            break;
        };
        let (_, k, _) = item?;
        let mut partition = Vec::new();
        key::take_component_into(k, &mut partition)
            .ok_or_else(|| Error::corrupted(&search.db_name, k, "bad partition"))?;
        if out.last() != Some(&partition) {
            out.push(partition);
        }
    }
    Ok(out)
}
