//! The cells of one row: puts with version and TTL purging, and deletes.

use std::borrow::Cow;

use heed::RwTxn;

use super::batch::Delete;
use crate::cell::PutCell;
use crate::db::family::FamilyHandle;
use crate::error::{Error, Result};
use crate::key::{self, CellKey};
use crate::table::TableHandle;

/// The cells one put writes into a row.
pub(crate) struct RowCells<'a> {
    pub(crate) cells: &'a [PutCell],
    /// Per cell, its value as stored when computed ahead for this table
    /// handle; `None` encodes each value here.
    pub(crate) encoded: Option<&'a [Option<Vec<u8>>]>,
}

/// Puts `put`'s cells into `row`. `new_row`: the row had no cell in the
/// families the table watches before this mutation, the batch's only one
/// for the row.
pub(crate) fn put_row(
    wtxn: &mut RwTxn,
    table: &TableHandle,
    row: &[u8],
    put: RowCells<'_>,
    new_row: bool,
    now_ms: u64,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let RowCells { cells, encoded } = put;
    // A column that held nothing and gets one live version here has nothing
    // to purge: its seek is skipped.
    let distinct = new_row && distinct_columns(cells);
    for (i, cell) in cells.iter().enumerate() {
        let family = table.family(&cell.family)?;
        let ts = cell.timestamp.unwrap_or(now_ms);
        CellKey::encode_into(buf, row, &cell.qualifier, ts);
        let stored = match encoded.and_then(|e| e.get(i)).and_then(Option::as_deref) {
            Some(stored) => Cow::Borrowed(stored),
            None => family.stored_value(&cell.value),
        };
        family.db.put(wtxn, buf, &stored).map_err(|e| Error::lmdb("put cell", e))?;
        let sole_version = distinct
            && table.watches(family)
            && family.schema.max_versions >= 1
            && family.schema.is_live(ts, now_ms);
        if sole_version {
            continue;
        }
        // The column prefix is the key without its 8 timestamp bytes.
        buf.truncate(buf.len() - 8);
        purge_column(wtxn, family, buf, now_ms)?;
    }
    Ok(())
}

/// Whether no two of `cells` name the same column.
fn distinct_columns(cells: &[PutCell]) -> bool {
    let same = |a: &PutCell, b: &PutCell| a.family == b.family && a.qualifier == b.qualifier;
    if cells.len() <= 8 {
        return cells.iter().enumerate().all(|(i, a)| cells[i + 1..].iter().all(|b| !same(a, b)));
    }
    let mut columns: Vec<(&str, &[u8])> =
        cells.iter().map(|c| (&*c.family, c.qualifier.as_slice())).collect();
    columns.sort_unstable();
    columns.windows(2).all(|w| w[0] != w[1])
}

/// Removes versions past `max_versions` and versions past the TTL.
/// `prefix` is the column's key prefix (escaped row and qualifier).
fn purge_column(wtxn: &mut RwTxn, family: &FamilyHandle, prefix: &[u8], now_ms: u64) -> Result<()> {
    let max = family.schema.max_versions;
    let mut kept = 0u32;
    let mut dead = Vec::new();
    for item in family.db.prefix_iter(wtxn, prefix).map_err(|e| Error::lmdb("purge versions", e))? {
        let (k, _) = item.map_err(|e| Error::lmdb("purge versions", e))?;
        let ts_bytes: [u8; 8] = k[prefix.len()..]
            .try_into()
            .map_err(|_| Error::corrupted(&family.db_name, k, "bad timestamp length"))?;
        let ts = !u64::from_be_bytes(ts_bytes);
        if kept < max && family.schema.is_live(ts, now_ms) {
            kept += 1;
        } else {
            dead.push(k.to_vec());
        }
    }
    for k in &dead {
        family.db.delete(wtxn, k).map_err(|e| Error::lmdb("purge versions", e))?;
    }
    Ok(())
}

pub(crate) fn delete_row(wtxn: &mut RwTxn, table: &TableHandle, row: &[u8], what: &Delete) -> Result<()> {
    let (families, prefix, up_to): (Vec<&FamilyHandle>, Vec<u8>, Option<u64>) = match what {
        Delete::Row { up_to } => (table.families.iter().map(|f| &**f).collect(), key::row_start(row), *up_to),
        Delete::Family { family, up_to } => (vec![&**table.family(family)?], key::row_start(row), *up_to),
        Delete::Column { family, qualifier, up_to } => {
            (vec![&**table.family(family)?], key::column_prefix(row, qualifier), *up_to)
        }
        Delete::Version { family, qualifier, timestamp } => {
            let family = table.family(family)?;
            family
                .db
                .delete(wtxn, &CellKey::encode(row, qualifier, *timestamp))
                .map_err(|e| Error::lmdb("delete version", e))?;
            return Ok(());
        }
    };
    for family in families {
        let mut dead = Vec::new();
        for item in family.db.prefix_iter(wtxn, &prefix).map_err(|e| Error::lmdb("delete", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("delete", e))?;
            let keep = match up_to {
                None => false,
                Some(up_to) => CellKey::decode(&family.db_name, k)?.timestamp > up_to,
            };
            if !keep {
                dead.push(k.to_vec());
            }
        }
        for k in &dead {
            family.db.delete(wtxn, k).map_err(|e| Error::lmdb("delete", e))?;
        }
    }
    Ok(())
}
