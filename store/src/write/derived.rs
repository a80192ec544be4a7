//! Derived data a write keeps in step with the rows: which rows existed,
//! their index entries and keyword cells before and after a batch, and
//! the index changes that follow; building an index from the rows.

use std::borrow::Cow;
use std::ops::Bound;
use std::sync::Arc;

use heed::RwTxn;

use crate::cell::PutCell;
use crate::db::family::FamilyHandle;
use crate::error::{Error, Result};
use crate::key::{self, salt};
use crate::keyword::KeywordCells;
use crate::secondary::{Entry, IndexHandle};
use crate::table::{Catalog, TableHandle};

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
pub(crate) fn rows_exist(txn: &heed::RoTxn<'_>, rows: &[(&TableHandle, &[u8])]) -> Result<Vec<bool>> {
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
pub(crate) fn index_entries(
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
                table.indexes.iter().map(|index| index.entry_from_puts(row, &stored, cells, now_ms)).collect()
            }
            _ => table
                .indexes
                .iter()
                .map(|index| index.entry(txn, row, &stored, now_ms))
                .collect::<Result<_>>()?,
        };
        out.push(entries);
    }
    Ok(out)
}

/// Clears index `name` of `table` and writes every row's entry.
pub(crate) fn build_index(
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
                let row = if salted { salt::unsalted(&stored) } else { &stored[..] };
                if let Some((k, expiry)) = index.entry(wtxn, row, &stored, now_ms)? {
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
pub(crate) fn update_indexes(
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

/// Each row's keyword cells (empty for tables without a search
/// section), as `txn` sees the data; like [`index_entries`].
pub(crate) fn keyword_entries<'a>(
    catalog: &Catalog,
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
        let analyzer = catalog.analyzer_for(&table.name)?;
        let entries = match (existed[i], puts_only) {
            (false, None) => Cow::Owned(KeywordCells::default()),
            (false, Some(puts)) if puts[i].is_some() && ahead.get(i).is_some_and(Option::is_some) => {
                ahead[i].map_or_else(|| Cow::Owned(KeywordCells::default()), Cow::Borrowed)
            }
            (false, Some(puts)) if puts[i].is_some() => {
                let values = search.values_from_puts(puts[i].as_deref().unwrap_or_default(), now_ms);
                Cow::Owned(search.entries(analyzer, row, &values)?)
            }
            _ => {
                let values = search.values(txn, &table.stored_key(row))?;
                Cow::Owned(search.entries(analyzer, row, &values)?)
            }
        };
        out.push(entries);
    }
    Ok(out)
}
