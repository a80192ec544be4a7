//! Threads assigned in a write transaction: before a batch's cells are
//! written, each put that writes a threaded table's id column is linked
//! into its thread ([`thread_batch`]); the put gains the thread column, and
//! rows of threads merged into another are written again with the new id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use heed::RwTxn;

use super::handle::ThreadsHandle;
use super::ids::row_ids;
use super::link::{LmdbEntries, Moved, ghost_ids, link, message_of, thread_of};
use super::read::thread_id_text;
use crate::cell::PutCell;
use crate::error::Result;
use crate::keyword::KeywordCells;
use crate::read::{ReadOptions, get_row};
use crate::schema::Column;
use crate::table::{Catalog, TableHandle};
use crate::write::batch::{Batch, Delete, Mutation};

/// A row's keyword cells computed ahead, as `write::apply` keeps them.
type Ahead = (Arc<TableHandle>, KeywordCells);

/// What threading adds to a batch in its write transaction; the batch
/// itself is not copied.
#[derive(Debug, Default)]
pub(crate) struct Threaded {
    /// Per mutation of the batch (empty when it writes no threaded
    /// table): the thread cell its put gains, with the thread field's
    /// keyword cells when the put's were computed ahead (which lack them).
    pub cells: Vec<Option<(PutCell, Option<KeywordCells>)>>,
    /// Puts that carried a thread cell of their own, by place: their cells
    /// without it (the one computed here replaces it; their keyword cells
    /// computed ahead, which hold the one carried, are not to be used).
    pub replaced: BTreeMap<usize, Vec<PutCell>>,
    /// Rows of merged threads written again: their new thread cell.
    pub moved: Vec<Mutation>,
}

/// Links each put of `batch` that writes a threaded table's id column
/// into its thread, and says what the batch gains: each such put's thread
/// cell (with its keyword cells where `keywords`, those computed ahead,
/// has the put's), and the rows of merged threads written again. `None`
/// when the batch writes no threaded table.
///
/// # Errors
/// LMDB failures; `NoAnalyzer` for a threaded table without one.
pub(crate) fn thread_batch(
    wtxn: &mut RwTxn,
    catalog: &Catalog,
    handles: &BTreeMap<String, Arc<TableHandle>>,
    batch: &Batch,
    keywords: &[Option<Ahead>],
    now_ms: u64,
) -> Result<Option<Threaded>> {
    if !handles.values().any(|h| h.threads.is_some()) {
        return Ok(None);
    }
    let mut messages = Vec::new();
    for (at, mutation) in batch.mutations.iter().enumerate() {
        let handle = &handles[mutation.table()];
        let (Some(threads), Some(search)) = (&handle.threads, &handle.search) else { continue };
        match mutation {
            Mutation::Put { row, cells, .. } => {
                let place = || {
                    let refs_cells: Vec<&PutCell> = cells.iter().collect();
                    let analyzer = catalog.analyzer_for(&handle.name)?;
                    let values = search.values_from_puts(&refs_cells, now_ms);
                    Ok((search.partition_of(row, &values)?, search.date_ms(analyzer, &values)))
                };
                if let Some(m) = message_of(&threads.columns, at, row, cells, place)? {
                    messages.push(m);
                }
            }
            Mutation::Delete { row, what: Delete::Row { .. }, .. } => {
                ghost_row(wtxn, threads, handle, row, now_ms)?;
            }
            Mutation::Delete { .. } => {}
        }
    }
    if messages.is_empty() {
        return Ok(None);
    }
    // Rows whose thread changed: (table, row) -> (partition, an id of it).
    let mut moved: Moved = BTreeMap::new();
    // Each message's thread as linked, and the threads merged into another
    // since (old id -> new id: a smaller one, so a chain ends).
    let mut linked: Vec<u64> = Vec::with_capacity(messages.len());
    let mut renamed: HashMap<u64, u64> = HashMap::new();
    for m in &messages {
        let mutation = &batch.mutations[m.at];
        let Some(threads) = handles[mutation.table()].threads.as_ref() else {
            linked.push(0);
            continue;
        };
        let mut entries = LmdbEntries { wtxn: &mut *wtxn, db: threads.db };
        let at = (mutation.table(), mutation.row());
        linked.push(link(&mut entries, &threads.schema, at, m, &mut moved, &mut renamed)?);
    }
    let mut out = Threaded { cells: vec![None; batch.mutations.len()], ..Threaded::default() };
    let mut in_batch: BTreeSet<(&str, &[u8])> = BTreeSet::new();
    for (m, &thread) in messages.iter().zip(&linked) {
        let Mutation::Put { table, row, cells } = &batch.mutations[m.at] else { continue };
        let handle = &handles[table];
        let Some(threads) = handle.threads.as_ref() else { continue };
        in_batch.insert((table, row));
        let mut thread = thread;
        while let Some(&next) = renamed.get(&thread) {
            thread = next;
        }
        let text = thread_id_text(thread);
        let (family, qualifier) = &threads.columns.thread;
        let is_thread = |c: &PutCell| c.family == *family && c.qualifier == *qualifier;
        let mut cell = PutCell::new(family.clone(), qualifier.clone(), text.into_bytes());
        cell.timestamp = m.ts;
        // A put carrying a thread cell of its own: written without it, its
        // keyword cells (computed ahead with it) computed again.
        let carried = cells.iter().any(is_thread);
        if carried {
            out.replaced.insert(m.at, cells.iter().filter(|c| !is_thread(c)).cloned().collect());
        }
        // The keyword cells computed ahead lack the thread field's.
        let mut more = None;
        if let (false, Some(Some((h, _))), Some(search)) = (carried, keywords.get(m.at), &handle.search)
            && Arc::ptr_eq(h, handle)
            && let Some(field) = search.field_of(family, qualifier)
        {
            let analyzer = catalog.analyzer_for(table)?;
            let date = m.date.unwrap_or(0);
            more = Some(search.field_entries(analyzer, row, (field, &cell.value), &m.partition, date));
        }
        out.cells[m.at] = Some((cell, more));
    }
    for ((table, row), (partition, id)) in moved {
        if in_batch.contains(&(table.as_str(), row.as_slice())) {
            continue;
        }
        let handle = &handles[&table];
        let Some(threads) = handle.threads.as_ref() else { continue };
        let (id_family, id_qualifier) = &threads.columns.id;
        let (family, qualifier) = &threads.columns.thread;
        let read = ReadOptions::default()
            .column(Column::Qualifier(id_family.clone(), id_qualifier.clone()))
            .column(Column::Qualifier(family.clone(), qualifier.clone()));
        let Some(stored) = get_row(wtxn, now_ms, handle, &row, &read)? else { continue };
        let mut entries = LmdbEntries { wtxn: &mut *wtxn, db: threads.db };
        let text = thread_id_text(thread_of(&mut entries, &partition, &id)?);
        if stored.value(family, qualifier) == Some(text.as_bytes()) {
            continue;
        }
        let ts = stored
            .cells
            .iter()
            .find(|c| &*c.family == id_family.as_str() && c.qualifier == *id_qualifier)
            .map(|c| c.timestamp);
        let mut cell = PutCell::new(family.clone(), qualifier.clone(), text.into_bytes());
        cell.timestamp = ts;
        out.moved.push(Mutation::Put { table, row, cells: vec![cell] });
    }
    Ok(Some(out))
}

/// A deleted row's ids become ghosts: its thread keeps their place.
fn ghost_row(
    wtxn: &mut RwTxn,
    threads: &ThreadsHandle,
    handle: &TableHandle,
    row: &[u8],
    now_ms: u64,
) -> Result<()> {
    let Some(search) = &handle.search else { return Ok(()) };
    let (family, qualifier) = &threads.columns.id;
    let read = ReadOptions::default().column(Column::Qualifier(family.clone(), qualifier.clone()));
    let Some(stored) = get_row(wtxn, now_ms, handle, row, &read)? else { return Ok(()) };
    let Some(value) = stored.value(family, qualifier) else { return Ok(()) };
    let Some(partition) = search.key_partition(row)? else { return Ok(()) };
    let ids = row_ids(value);
    ghost_ids(&mut LmdbEntries { wtxn, db: threads.db }, &partition, row, &ids)?;
    Ok(())
}
