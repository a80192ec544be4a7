//! Derived data a write keeps in step with the rows: which rows existed,
//! their index entries and keyword cells before and after a batch, and
//! the index changes that follow; building an index from the rows.

use std::borrow::Cow;
use std::ops::Bound;
use std::sync::Arc;

use heed::{RoTxn, RwTxn};

use crate::cell::PutCell;
use crate::db::family::FamilyHandle;
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, salt};
use crate::keyword::{CellParts, KeywordCells};
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

/// Where the build of an index stands: the family being walked (its
/// position among the families the index reads, in family order) and the
/// last row done in it. The one owner of the layout (a meta value, see
/// `db::META_INDEX_BUILD_PREFIX`):
///
/// ```text
/// empty                                  nothing done yet
/// family (u32 BE) ‖ last stored row key  (the key empty: none done in it)
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BuildCursor {
    pub family: u32,
    /// Stored key of the last row done in that family.
    pub after: Option<Vec<u8>>,
}

impl BuildCursor {
    pub fn encode(&self) -> Vec<u8> {
        if *self == BuildCursor::default() {
            return Vec::new();
        }
        let mut out = self.family.to_be_bytes().to_vec();
        out.extend_from_slice(self.after.as_deref().unwrap_or_default());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<BuildCursor> {
        if bytes.is_empty() {
            return Ok(BuildCursor::default());
        }
        let family: [u8; 4] = bytes.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| -> Error {
            ErrorKind::Corrupted {
                db: crate::db::META.to_owned(),
                key: "index_build".to_owned(),
                detail: format!("a build cursor of {} bytes", bytes.len()),
            }
            .into()
        })?;
        let after = (bytes.len() > 4).then(|| bytes[4..].to_vec());
        Ok(BuildCursor { family: u32::from_be_bytes(family), after })
    }
}

/// The families index `index` reads, in family order.
fn build_families<'t>(table: &'t TableHandle, index: &IndexHandle) -> Vec<&'t Arc<FamilyHandle>> {
    table.families.iter().filter(|f| index.columns.iter().any(|(c, _)| Arc::ptr_eq(c, f))).collect()
}

/// Cells a build of `index` walks in all (for progress).
pub(crate) fn build_total(txn: &RoTxn<'_>, table: &TableHandle, index: &IndexHandle) -> u64 {
    build_families(table, index).iter().map(|f| f.db.stat(txn).map(|s| s.entries as u64).unwrap_or(0)).sum()
}

/// Builds the entries of the next `max_rows` rows (at least one) after
/// `cursor` into the main database of index `name`; returns the cells
/// walked and the cursor to go on from, `None` when every row is done.
/// Entries the writes meanwhile made must be in the main database already
/// (the caller merges the pending runs first): a row's entry is then
/// written over, with what the data says now.
pub(crate) fn build_chunk(
    wtxn: &mut RwTxn,
    table: &TableHandle,
    name: &str,
    cursor: &BuildCursor,
    max_rows: usize,
    now_ms: u64,
) -> Result<(u64, Option<BuildCursor>)> {
    let index = table.index(name)?;
    let families = build_families(table, index);
    let max_rows = max_rows.max(1);
    let salted = table.is_salted();
    let mut cursor = cursor.clone();
    let (mut cells, mut done) = (0u64, 0usize);
    while let Some(family) = families.get(cursor.family as usize) {
        // Up to the rows still wanted after the cursor (escaped stored keys).
        let want = max_rows - done;
        let mut rows: Vec<Vec<u8>> = Vec::with_capacity(want.min(4096));
        let lower = cursor.after.as_deref().map(key::row_end);
        let range = (lower.as_deref().map_or(Bound::Unbounded, Bound::Included), Bound::Unbounded);
        for item in family.db.range(wtxn, &range).map_err(|e| Error::lmdb("index build", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("index build", e))?;
            let row_esc = key::RawCellKey::split(&family.db_name, k)?.row_esc;
            if rows.last().map(Vec::as_slice) != Some(row_esc) {
                if rows.len() == want {
                    break;
                }
                rows.push(row_esc.to_vec());
            }
            cells += 1;
        }
        for row_esc in &rows {
            let stored = key::unescape(row_esc);
            let row = if salted { salt::unsalted(&stored) } else { &stored[..] };
            if let Some((k, expiry)) = index.entry(wtxn, row, &stored, now_ms)? {
                index.build_put(wtxn, &k, expiry)?;
            }
        }
        done += rows.len();
        if rows.len() == want {
            cursor.after = rows.last().map(|r| key::unescape(r));
            return Ok((cells, Some(cursor)));
        }
        // The family is done.
        cursor = BuildCursor { family: cursor.family + 1, after: None };
    }
    Ok((cells, None))
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

/// A row's keyword cells as [`keyword_changes`] finds them: computed from
/// its values, or the parts computed ahead.
pub(crate) enum RowCells<'a> {
    Computed(KeywordCells),
    Ahead(CellParts<'a>),
}

impl RowCells<'_> {
    /// The cells as parts in key order.
    pub fn parts(&self) -> CellParts<'_> {
        match self {
            RowCells::Computed(cells) => cells.into(),
            RowCells::Ahead(parts) => *parts,
        }
    }
}

/// The stored values of the searchable rows that existed (`None` for
/// the others), read before a batch writes them: [`keyword_changes`]
/// compares them with the values after.
pub(crate) fn values_before(
    txn: &heed::RoTxn<'_>,
    rows: &[(&TableHandle, &[u8])],
    existed: &[bool],
) -> Result<Vec<Option<Values>>> {
    rows.iter()
        .zip(existed)
        .map(|((table, row), &existed)| match &table.search {
            Some(search) if existed => {
                let values = search.values(txn, &table.stored_key(row))?;
                Ok(Some(values.into_iter().map(|v| v.map(Cow::into_owned)).collect()))
            }
            _ => Ok(None),
        })
        .collect()
}

/// `values` with the first `fields` left out where `changed` is false.
fn changed_only<'v>(values: &[Option<&'v [u8]>], changed: &[bool], fields: usize) -> Vec<Option<&'v [u8]>> {
    let mut values = values.to_vec();
    for (v, _) in values.iter_mut().zip(changed).take(fields).filter(|(_, c)| !**c) {
        *v = None;
    }
    values
}

/// A row's values of the columns its search section reads.
pub(crate) type Values = Vec<Option<Vec<u8>>>;

/// A row's keyword cells before and after a batch, as far as they differ,
/// and whether the row may have keyword cells that `before` leaves out.
pub(crate) struct KeywordChange<'a> {
    pub before: RowCells<'a>,
    pub after: RowCells<'a>,
    pub may_have_cells: bool,
}

/// Each row's keyword change (empty for tables without a search
/// section), as `txn` sees the data after the batch; `before` holds the
/// values of the rows that existed ([`values_before`]), `puts_only` and
/// `ahead` are as [`index_entries`] and the keyword cells computed ahead.
/// A row that existed has only the fields whose values changed computed,
/// before and after (every field when its partition or date changed, or
/// when the changed fields are left without cells); a new row's cells come
/// from its puts, or from those computed ahead.
pub(crate) fn keyword_changes<'a>(
    catalog: &Catalog,
    txn: &heed::RoTxn<'_>,
    rows: &[(&TableHandle, &[u8])],
    before: &[Option<Values>],
    puts_only: &[Option<Vec<&PutCell>>],
    ahead: &[Option<CellParts<'a>>],
    now_ms: u64,
) -> Result<Vec<KeywordChange<'a>>> {
    let empty = || RowCells::Computed(KeywordCells::default());
    let mut out = Vec::with_capacity(rows.len());
    for (i, (table, row)) in rows.iter().enumerate() {
        let Some(search) = &table.search else {
            out.push(KeywordChange { before: empty(), after: empty(), may_have_cells: false });
            continue;
        };
        let analyzer = catalog.analyzer_for(&table.name)?;
        let change = match (&before[i], &puts_only[i], ahead.get(i).copied().flatten()) {
            (None, Some(_), Some(parts)) => {
                KeywordChange { before: empty(), after: RowCells::Ahead(parts), may_have_cells: false }
            }
            (None, Some(puts), None) => {
                let values = search.values_from_puts(puts, now_ms);
                let after = RowCells::Computed(search.entries(analyzer, row, &values)?);
                KeywordChange { before: empty(), after, may_have_cells: false }
            }
            (None, None, _) => {
                let values = search.values(txn, &table.stored_key(row))?;
                let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
                let after = RowCells::Computed(search.entries(analyzer, row, &values)?);
                KeywordChange { before: empty(), after, may_have_cells: false }
            }
            (Some(old), _, _) => {
                let new = search.values(txn, &table.stored_key(row))?;
                let old: Vec<Option<&[u8]>> = old.iter().map(Option::as_deref).collect();
                let new: Vec<Option<&[u8]>> = new.iter().map(|v| v.as_deref()).collect();
                let fields = search.schema.fields.len();
                let changed: Vec<bool> = old.iter().zip(&new).map(|(a, b)| a != b).collect();
                let (before, after) = if !changed.iter().any(|c| *c) {
                    (KeywordCells::default(), KeywordCells::default())
                } else {
                    // The changed fields alone, unless the partition or the
                    // date changed (every cell's key moves) or the changed
                    // fields are left without cells (perhaps the row's last
                    // go: the whole row tells).
                    let alone = (!changed[fields..].iter().any(|c| *c))
                        .then(|| search.entries(analyzer, row, &changed_only(&new, &changed, fields)))
                        .transpose()?
                        .filter(|after| after.len() > 0);
                    match alone {
                        Some(after) => {
                            (search.entries(analyzer, row, &changed_only(&old, &changed, fields))?, after)
                        }
                        None => (search.entries(analyzer, row, &old)?, search.entries(analyzer, row, &new)?),
                    }
                };
                let both = (RowCells::Computed(before), RowCells::Computed(after));
                KeywordChange { before: both.0, after: both.1, may_have_cells: true }
            }
        };
        out.push(change);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::BuildCursor;

    /// The build cursor's bytes are pinned: a build stopped by one build of
    /// the program goes on in the next.
    #[test]
    fn build_cursor_bytes_are_pinned() {
        assert_eq!(BuildCursor::default().encode(), Vec::<u8>::new());
        let c = BuildCursor { family: 2, after: Some(b"row\x00".to_vec()) };
        assert_eq!(c.encode(), b"\x00\x00\x00\x02row\x00".to_vec());
        assert_eq!(BuildCursor::decode(&c.encode()).unwrap(), c);
        let next_family = BuildCursor { family: 1, after: None };
        assert_eq!(next_family.encode(), vec![0, 0, 0, 1]);
        assert_eq!(BuildCursor::decode(&[0, 0, 0, 1]).unwrap(), next_family);
        assert_eq!(BuildCursor::decode(&[]).unwrap(), BuildCursor::default());
        assert!(BuildCursor::decode(&[0, 1]).is_err());
    }
}
