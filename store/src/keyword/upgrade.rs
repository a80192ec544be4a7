//! The keyword rows' upgrades, in the opening transaction: format 3's
//! cells (one entry each) into format 4 blocks, format 4 blocks (row keys
//! in every version) into format 5 blocks (row numbers), and format 5 to 9
//! blocks (Δdates in milliseconds) into format 10 blocks.

use std::collections::HashMap;
use std::ops::Bound;

use heed::RwTxn;

use heed::PutFlags;

use super::block::{self, COUNTER_KEY, FIRST_BLOCK_KEY, Version};
use super::block_v4::{self, Versions};
use super::codec::{decode_column, partition_start, push_version_tail, term_prefix};
use super::handle::SearchHandle;
use super::rows;
use super::write::add_to_counter;
use crate::db::BytesDb;
use crate::error::{Error, Result};

/// How often (in cells) a conversion reports progress.
pub(crate) const REPORT_EVERY: u64 = 1024;

/// Rewrites keyword cells stored one per entry (format 3, `old`) as format
/// 4 blocks in `v4` (with the cell count), in the caller's transaction
/// (the upgrade commits with the new format marker, or not at all); `old`
/// is emptied.
/// Returns the cells moved; `report(done, total)` hears how far it is
/// every [`REPORT_EVERY`] cells and at the start and end.
pub(crate) fn convert_cells(
    wtxn: &mut RwTxn,
    search: &SearchHandle,
    old: &BytesDb,
    v4: &BytesDb,
    report: impl Fn(u64, u64),
) -> Result<u64> {
    let total = old.len(wtxn).map_err(|e| Error::lmdb("upgrade keyword read", e))?;
    report(0, total);

    let mut columns: Vec<(Vec<u8>, Versions)> = Vec::new();
    let mut cells = 0u64;
    {
        let (mut partition, mut term) = (Vec::new(), Vec::new());
        for item in old.iter(wtxn).map_err(|e| Error::lmdb("upgrade keyword read", e))? {
            let (k, v) = item.map_err(|e| Error::lmdb("upgrade keyword read", e))?;
            let column = decode_column(&search.db_name, &search.schema.fields, k, &mut partition, &mut term)?;
            let (prefix, tail) = k.split_at(column.prefix_len);
            if columns.last().is_none_or(|(p, _)| p.as_slice() != prefix) {
                columns.push((prefix.to_vec(), Versions::default()));
            }
            if let Some((_, versions)) = columns.last_mut() {
                versions.push(tail, v);
            }
            cells += 1;
            if cells.is_multiple_of(REPORT_EVERY) {
                report(cells, total);
            }
        }
    }
    put_v4_blocks(wtxn, v4, &columns, cells)?;
    old.clear(wtxn).map_err(|e| Error::lmdb("upgrade keyword clear", e))?;
    report(cells, total);
    Ok(cells)
}

/// Blocks rewritten per step of [`number_rows`] (read, then written).
const BLOCKS_PER_STEP: usize = 256;

/// Rewrites format 4 blocks (`v4`: each version's row key) as format 5
/// blocks of `search`'s database (row numbers), numbering the rows in key
/// order, in the caller's transaction; `v4` is emptied. Numbered in key
/// order, a column's versions keep their order and its blocks their
/// boundaries, and the new keys ascend as the old ones do: every block is
/// appended (`MDB_APPEND`, full pages). Returns the cells rewritten;
/// `report(done, total)` as [`convert_cells`].
pub(crate) fn number_rows(
    wtxn: &mut RwTxn,
    search: &SearchHandle,
    v4: &BytesDb,
    report: impl Fn(u64, u64),
) -> Result<u64> {
    let stored = v4.get(wtxn, COUNTER_KEY).map_err(|e| Error::lmdb("upgrade keyword read", e))?;
    let total = stored.and_then(|v| v.first_chunk::<8>()).map_or(0, |b| u64::from_be_bytes(*b));
    report(0, total);
    let read_err = |e| Error::lmdb("upgrade keyword read", e);
    let (mut partition, mut term) = (Vec::new(), Vec::new());
    // Every row with cells, numbered in key order.
    let mut numbers: HashMap<Vec<u8>, u32> = HashMap::new();
    for item in v4.range(wtxn, &(Bound::Included(FIRST_BLOCK_KEY), Bound::Unbounded)).map_err(read_err)? {
        let (k, v) = item.map_err(read_err)?;
        let column = decode_column(&search.db_name, &search.schema.fields, k, &mut partition, &mut term)?;
        let mut reader = block_v4::BlockReader::new(&search.db_name, k, column.prefix_len, v)?;
        while let Some((tail, _)) = reader.next()? {
            let row = &tail[8..];
            if !numbers.contains_key(row) {
                numbers.insert(row.to_vec(), 0);
            }
        }
    }
    let mut keys: Vec<&Vec<u8>> = numbers.keys().collect();
    keys.sort_unstable();
    let keys: Vec<Vec<u8>> = keys.into_iter().cloned().collect();
    for (i, row) in keys.iter().enumerate() {
        let n = u32::try_from(i + 1)
            .map_err(|_| Error::corrupted(&search.rows_name, row, "more than 2^32 rows"))?;
        rows::put(wtxn, &search.rows, row, n)?;
        numbers.insert(row.clone(), n);
    }
    let next = u32::try_from(keys.len() + 1).unwrap_or(u32::MAX);
    rows::set_next_number(wtxn, &search.rows, next)?;
    drop(keys);
    let mut cells = 0u64;
    let mut after: Vec<u8> = FIRST_BLOCK_KEY.to_vec();
    let mut first = true;
    let mut step: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = Vec::with_capacity(BLOCKS_PER_STEP);
    let mut versions = block::Versions::default();
    loop {
        step.clear();
        let lower = if first { Bound::Included(after.as_slice()) } else { Bound::Excluded(after.as_slice()) };
        for item in v4.range(wtxn, &(lower, Bound::Unbounded)).map_err(read_err)?.take(BLOCKS_PER_STEP) {
            let (k, v) = item.map_err(read_err)?;
            let column = decode_column(&search.db_name, &search.schema.fields, k, &mut partition, &mut term)?;
            let mut reader = block_v4::BlockReader::new(&search.db_name, k, column.prefix_len, v)?;
            versions.clear();
            while let Some((tail, positions)) = reader.next()? {
                let row = numbers.get(&tail[8..]).copied().unwrap_or(0);
                versions.push(Version { date: block::date_of(tail), row }, positions);
            }
            cells += versions.len() as u64;
            let mut value = Vec::with_capacity(v.len());
            block::encode(&versions, 0..versions.len(), &mut value);
            let mut key = k[..column.prefix_len].to_vec();
            let last =
                versions.len().checked_sub(1).map_or(Version { date: 0, row: 0 }, |l| versions.get(l).0);
            key.extend_from_slice(&block::order_tail(last));
            step.push((k.to_vec(), key, value));
        }
        let Some((last, _, _)) = step.last() else { break };
        after.clone_from(last);
        first = false;
        for (_, k, v) in &step {
            search
                .db
                .put_with_flags(wtxn, PutFlags::APPEND, k, v)
                .map_err(|e| Error::lmdb("upgrade keyword put", e))?;
        }
        report(cells, total);
    }
    v4.clear(wtxn).map_err(|e| Error::lmdb("upgrade keyword clear", e))?;
    add_to_counter(wtxn, search, i64::try_from(cells).unwrap_or(i64::MAX))?;
    report(cells, total);
    Ok(cells)
}

/// Rewrites every block of `search`'s blocks and pending runs written by
/// formats 5 to 9 (`varint n`, Δdates in milliseconds) as a format 10
/// block (Δdates in seconds where they are whole seconds), under the same
/// key, in the caller's transaction. Returns the blocks rewritten;
/// `report(done, total)` counts blocks.
pub(crate) fn blocks_to_format_10(
    wtxn: &mut RwTxn,
    search: &SearchHandle,
    report: impl Fn(u64, u64),
) -> Result<u64> {
    rewrite_blocks(wtxn, search, false, report)
}

/// The inverse of [`blocks_to_format_10`], for the upgrade's tests.
pub(crate) fn blocks_to_format_9(wtxn: &mut RwTxn, search: &SearchHandle) -> Result<u64> {
    rewrite_blocks(wtxn, search, true, |_, _| {})
}

/// Every block of `search` (blocks and pending runs) read in one format
/// and written in the other: to format 9's (`to_format9`) or from it.
fn rewrite_blocks(
    wtxn: &mut RwTxn,
    search: &SearchHandle,
    to_format9: bool,
    report: impl Fn(u64, u64),
) -> Result<u64> {
    let read_err = |e| Error::lmdb("upgrade keyword read", e);
    let put_err = |e| Error::lmdb("upgrade keyword put", e);
    let places = [(&search.db, search.db_name.as_str()), (&search.pending, search.pending_name.as_str())];
    let mut total = 0;
    for (db, _) in places {
        total += db.len(wtxn).map_err(read_err)?;
    }
    report(0, total);
    let mut done = 0u64;
    let mut step: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(BLOCKS_PER_STEP);
    let mut versions = block::Versions::default();
    for (db, name) in places {
        let mut after: Option<Vec<u8>> = None;
        loop {
            step.clear();
            let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            for item in db.range(wtxn, &(lower, Bound::Unbounded)).map_err(read_err)?.take(BLOCKS_PER_STEP) {
                let (k, v) = item.map_err(read_err)?;
                step.push((k.to_vec(), Vec::new()));
                // The cell count (`00`) and the runs' directory
                // (`00 00 00 00 ‖ run id`) are no blocks.
                if k == COUNTER_KEY || k.starts_with(&[0; 4]) {
                    continue;
                }
                let tail_start = k.len().saturating_sub(block::ORDER_TAIL_LEN);
                versions.clear();
                let reader = if to_format9 {
                    block::BlockReader::new(name, k, tail_start, v)?
                } else {
                    block::BlockReader::format9(name, k, tail_start, v)?
                };
                versions.extend_from_block(reader)?;
                if let Some((_, value)) = step.last_mut() {
                    block::encode_as(&versions, 0..versions.len(), value, to_format9);
                }
            }
            let Some((last, _)) = step.last() else { break };
            after = Some(last.clone());
            for (k, v) in &step {
                if !v.is_empty() {
                    db.put(wtxn, k, v).map_err(put_err)?;
                }
            }
            done += step.len() as u64;
            report(done, total);
        }
    }
    Ok(done)
}

/// The inverse of [`number_rows`], for the upgrade's tests: `search`'s
/// cells as format 4 blocks in `v4` (with the count), its blocks and row
/// numbers emptied.
pub(crate) fn write_format_4(wtxn: &mut RwTxn, search: &SearchHandle, v4: &BytesDb) -> Result<()> {
    let mut columns: Vec<(Vec<u8>, Versions)> = Vec::new();
    let mut cells = 0u64;
    let mut tail = Vec::new();
    super::lookup::for_each_cell_between(wtxn, search, None, None, &mut |cell| {
        let prefix = term_prefix(&partition_start(cell.partition), cell.field_index, cell.term);
        if columns.last().is_none_or(|(p, _)| *p != prefix) {
            columns.push((prefix, Versions::default()));
        }
        tail.clear();
        push_version_tail(&mut tail, cell.date_ms, cell.key);
        if let Some((_, versions)) = columns.last_mut() {
            versions.push(&tail, cell.encoded_positions());
        }
        cells += 1;
        Ok(())
    })?;
    let clear_err = |e| Error::lmdb("write format 4", e);
    search.db.clear(wtxn).map_err(clear_err)?;
    search.rows.clear(wtxn).map_err(clear_err)?;
    super::runs::clear(wtxn, search)?;
    put_v4_blocks(wtxn, v4, &columns, cells)
}

/// Writes columns (term prefix, versions) as format 4 blocks in `v4`, and
/// the cell count.
fn put_v4_blocks(wtxn: &mut RwTxn, v4: &BytesDb, columns: &[(Vec<u8>, Versions)], cells: u64) -> Result<()> {
    let put_err = |e| Error::lmdb("keyword put (format 4)", e);
    let mut value = Vec::new();
    for (prefix, versions) in columns {
        for range in versions.cut() {
            let key = [prefix.as_slice(), versions.get(range.end - 1).0].concat();
            value.clear();
            block_v4::encode(versions.slice(range), &mut value);
            v4.put(wtxn, &key, &value).map_err(put_err)?;
        }
    }
    if cells > 0 {
        v4.put(wtxn, COUNTER_KEY, &cells.to_be_bytes()).map_err(put_err)?;
    }
    Ok(())
}
