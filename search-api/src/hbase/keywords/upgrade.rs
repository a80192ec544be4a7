//! The upgrade of a companion written by the build before (one HBase cell
//! per version: qualifier `term prefix ‖ !date ‖ row key`, value the
//! positions) to runs of versions ([`super::block`]).
//!
//! Column by column, in key order: the column's cells become one run of
//! stamp 0 and tag 0 (older than any write's), put before the old cells
//! are deleted, so a process killed anywhere leaves every version in some
//! cell; the next run merges what it finds (an upgrade's run and old
//! cells of one column) into that run again. The marker is written last
//! ([`super::Companions::kept`]), so the next process to meet the table
//! runs the upgrade again until one finishes. Processes of the build
//! before must be stopped first (they would go on writing old cells).

use std::collections::BTreeMap;

use rowsearch_store::{PutCell, Row};

use super::block::{self, FAMILY, ROW_PREFIX, RUN_TAIL, SCAN_BATCH, companion};
use crate::hbase::tables::{HbaseError, HbaseTables, read_ahead};

/// Cells put (and then deleted) a call.
const CHUNK: usize = 2_000;

/// `ROWSEARCH_FAULT=keywords-upgrade-N`: the process aborts after putting
/// its Nth chunk (before deleting the old cells it replaces), for tests of
/// an upgrade killed midway.
fn fault_after() -> Option<u64> {
    std::env::var("ROWSEARCH_FAULT").ok()?.strip_prefix("keywords-upgrade-")?.parse().ok()
}

/// Whether a cell is one of an upgrade's runs (stamp 0, tag 0).
fn upgraded(qualifier: &[u8], value: &[u8]) -> bool {
    let Some(n) = block::prefix_len(qualifier) else { return false };
    qualifier.len() == n + RUN_TAIL
        && qualifier[n..].iter().all(|&b| b == 0)
        && block::decode(value).is_some()
}

/// The cells of one column as found, and what is written for them.
struct Pending {
    row: Vec<u8>,
    prefix: Vec<u8>,
    /// Version tail -> positions.
    versions: BTreeMap<Vec<u8>, Vec<u8>>,
    old: Vec<Vec<u8>>,
    upgraded: usize,
}

/// What is to be written: runs to put, then old cells to delete.
#[derive(Default)]
struct Writes {
    puts: BTreeMap<Vec<u8>, Vec<PutCell>>,
    deletes: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    cells: usize,
}

/// Upgrades `table`'s companion to runs; `progress(rows, cells)` after each
/// chunk (partition rows seen, old cells moved); the old cells moved.
///
/// # Errors
/// `Client`; `Corrupted` for a cell that is neither layout's.
pub(crate) fn run(
    tables: &HbaseTables,
    table: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, HbaseError> {
    let name = companion(table);
    let (start, stop) = ([ROW_PREFIX], [ROW_PREFIX + 1]);
    let mut scanner = tables.client();
    let mut writer = tables.client();
    let mut pending: Option<Pending> = None;
    let mut writes = Writes::default();
    let (mut rows, mut moved, mut chunks) = (0u64, 0u64, 0u64);
    let fault = fault_after();
    let mut flush = |writes: &mut Writes, moved: &mut u64| -> Result<(), HbaseError> {
        if writes.cells == 0 {
            return Ok(());
        }
        let puts: Vec<(Vec<u8>, Vec<PutCell>)> = std::mem::take(&mut writes.puts).into_iter().collect();
        writer.put_rows(&name, &puts)?;
        chunks += 1;
        if fault == Some(chunks) {
            eprintln!("ROWSEARCH_FAULT: aborting after chunk {chunks} of the keyword upgrade");
            std::process::abort();
        }
        for (row, qualifiers) in std::mem::take(&mut writes.deletes) {
            *moved += qualifiers.len() as u64;
            writer.delete_columns(&name, &row, FAMILY, &qualifiers)?;
        }
        writes.cells = 0;
        Ok(())
    };
    let close = |p: Pending, writes: &mut Writes| {
        if p.old.is_empty() && p.upgraded <= 1 {
            return; // already upgraded
        }
        let versions: Vec<(&[u8], Option<&[u8]>)> =
            p.versions.iter().map(|(t, v)| (t.as_slice(), Some(v.as_slice()))).collect();
        let value = block::encode_tails(&versions);
        writes.cells += 1 + p.old.len();
        writes.puts.entry(p.row.clone()).or_default().push(PutCell::new(
            FAMILY,
            block::run_qualifier(&p.prefix, 0, 0),
            value,
        ));
        writes.deletes.entry(p.row).or_default().extend(p.old);
    };
    let produce = |each: &mut dyn FnMut(Row)| {
        scanner.scan_batched(&name, (Some(&start[..]), Some(&stop[..])), SCAN_BATCH, each)
    };
    let mut last_row: Option<Vec<u8>> = None;
    let scanned = read_ahead(produce, &mut |row| {
        if last_row.as_deref() != Some(row.key.as_slice()) {
            rows += 1;
            last_row = Some(row.key.clone());
        }
        for c in row.cells {
            let Some(n) = block::prefix_len(&c.qualifier) else {
                return Err(rowsearch_store::Error::callback(block::corrupted(
                    table,
                    "a column that is not a keyword column",
                )));
            };
            let prefix = &c.qualifier[..n];
            if pending.as_ref().is_none_or(|p| p.row != row.key || p.prefix != prefix) {
                if let Some(p) = pending.take() {
                    close(p, &mut writes);
                }
                pending = Some(Pending {
                    row: row.key.clone(),
                    prefix: prefix.to_vec(),
                    versions: BTreeMap::new(),
                    old: Vec::new(),
                    upgraded: 0,
                });
            }
            let p = pending.as_mut().unwrap_or_else(|| unreachable!("set above"));
            if upgraded(&c.qualifier, &c.value) {
                p.upgraded += 1;
                for v in block::decode(&c.value).unwrap_or_default() {
                    if let Some(positions) = v.positions {
                        p.versions.entry(v.tail).or_insert(positions);
                    }
                }
            } else {
                let tail = &c.qualifier[n..];
                if tail.len() < 8 {
                    return Err(rowsearch_store::Error::callback(block::corrupted(
                        table,
                        "a keyword cell without its version",
                    )));
                }
                // An old cell is the newest word on its version.
                p.versions.insert(tail.to_vec(), c.value);
                p.old.push(c.qualifier);
            }
            if writes.cells >= CHUNK {
                flush(&mut writes, &mut moved).map_err(rowsearch_store::Error::callback)?;
                progress(rows, moved);
            }
        }
        Ok(())
    });
    scanned.map_err(HbaseError::Store)?;
    if let Some(p) = pending.take() {
        close(p, &mut writes);
    }
    flush(&mut writes, &mut moved)?;
    progress(rows, moved);
    Ok(moved)
}
