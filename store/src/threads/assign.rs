//! Threads assigned in a write transaction: before a batch's cells are
//! written, each put that writes a threaded table's id column is linked
//! into its thread ([`thread_batch`]); the put gains the thread column, and
//! rows of threads merged into another are written again with the new id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use heed::RwTxn;

use super::entries::{
    self, by_id_key, by_id_value, decode_by_id, decode_member, decode_subject, member_id, member_key,
    member_value, members_prefix, subject_key, subject_prefix,
};
use super::handle::ThreadsHandle;
use super::ids::{id_hash, named_ids, normalize_subject, row_ids};
use super::read::thread_id_text;
use crate::cell::PutCell;
use crate::error::{Error, Result};
use crate::keyword::KeywordCells;
use crate::read::{ReadOptions, get_row};
use crate::schema::Column;
use crate::table::{Catalog, TableHandle};
use crate::write::batch::{Batch, Delete, Mutation};

/// A row's keyword cells computed ahead, as `write::apply` keeps them.
type Ahead = (Arc<TableHandle>, KeywordCells);

/// Rows whose thread changed: (table, row) -> (partition, an id of it).
type Moved = BTreeMap<(String, Vec<u8>), (Vec<u8>, Vec<u8>)>;

/// One put being threaded.
struct Message {
    /// Its place in the batch.
    at: usize,
    partition: Vec<u8>,
    /// The ids it carries (kept form), never empty.
    ids: Vec<Vec<u8>>,
    /// The ids it names.
    refs: Vec<Vec<u8>>,
    /// Subject hash, date, and whether it is a reply without references.
    subject: Option<(u64, u64, bool)>,
    /// Its date (ms), as its keyword cells carry it.
    date: Option<u64>,
    /// The timestamp its thread cell is written at: its id cell's.
    ts: Option<u64>,
}

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
                let (id_family, id_qualifier) = &threads.columns.id;
                let Some(id_cell) =
                    cells.iter().rfind(|c| c.family == *id_family && c.qualifier == *id_qualifier)
                else {
                    continue;
                };
                let refs_cells: Vec<&PutCell> = cells.iter().collect();
                let analyzer = catalog.analyzer_for(&handle.name)?;
                let values = search.values_from_puts(&refs_cells, now_ms);
                let partition = search.partition_of(row, &values)?;
                let mut ids = row_ids(&id_cell.value);
                if ids.is_empty() {
                    // A row without an id threads alone, by its key.
                    ids.push(entries::key_part(&[b"\x01", &row[..]].concat(), 250).into_owned());
                }
                let mut refs = Vec::new();
                for (family, qualifier) in &threads.columns.refs {
                    for c in cells.iter().filter(|c| c.family == *family && c.qualifier == *qualifier) {
                        named_ids(&c.value, &mut refs);
                    }
                }
                refs.retain(|r| !ids.contains(r));
                let date = search.date_ms(analyzer, &values);
                let subject = subject_of(threads, cells, date, &refs);
                messages.push(Message { at, partition, ids, refs, subject, date, ts: id_cell.timestamp });
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
        linked.push(link(wtxn, threads, mutation.table(), mutation.row(), m, &mut moved, &mut renamed)?);
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
        let text = thread_id_text(thread_of(wtxn, threads, &partition, &id)?);
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

/// A put's subject entry: its subject's hash, its date, and whether it is
/// a reply without references; `None` without subject gathering, a
/// subject, or a date.
fn subject_of(
    threads: &ThreadsHandle,
    cells: &[PutCell],
    date: Option<u64>,
    refs: &[Vec<u8>],
) -> Option<(u64, u64, bool)> {
    let (family, qualifier) = threads.columns.subject.as_ref()?;
    let cell = cells.iter().rfind(|c| c.family == *family && c.qualifier == *qualifier)?;
    let (normal, reply) = normalize_subject(&String::from_utf8_lossy(&cell.value));
    if normal.is_empty() {
        return None;
    }
    Some((xxhash_rust::xxh3::xxh3_64(normal.as_bytes()), date?, reply && refs.is_empty()))
}

fn db_err(what: &'static str) -> impl Fn(heed::Error) -> Error {
    move |e| Error::lmdb(what, e)
}

/// The thread of an id (kept form) in a partition, or its own hash when it
/// has none.
fn thread_of(wtxn: &RwTxn, threads: &ThreadsHandle, partition: &[u8], id: &[u8]) -> Result<u64> {
    let found = threads.db.get(wtxn, &by_id_key(partition, id)).map_err(db_err("read threads"))?;
    Ok(found.and_then(decode_by_id).map_or_else(|| id_hash(partition, id), |(t, _)| t))
}

/// Links message `m` (the put at `m.at`, row `row` of `table`) into its
/// thread, and returns the thread's id: every thread its ids, references
/// and subject reach becomes one, whose id is the smallest hash of the ids
/// it holds. Rows of threads whose id went are recorded in `moved`, and
/// the ids that went in `renamed` (old -> new).
fn link(
    wtxn: &mut RwTxn,
    threads: &ThreadsHandle,
    table: &str,
    row: &[u8],
    m: &Message,
    moved: &mut Moved,
    renamed: &mut HashMap<u64, u64>,
) -> Result<u64> {
    let p = &m.partition;
    let mut reached: BTreeSet<u64> = BTreeSet::new();
    let mut lowest = u64::MAX;
    let mut known: BTreeSet<&[u8]> = BTreeSet::new();
    for id in m.ids.iter().chain(&m.refs) {
        match threads.db.get(wtxn, &by_id_key(p, id)).map_err(db_err("read threads"))?.and_then(decode_by_id)
        {
            Some((thread, _)) => {
                reached.insert(thread);
                known.insert(id);
            }
            None => lowest = lowest.min(id_hash(p, id)),
        }
    }
    if let Some((hash, date, reply)) = m.subject {
        let prefix = subject_prefix(p, hash);
        let from =
            [&prefix[..], &date.saturating_sub(threads.schema.subject_window_ms).to_be_bytes()].concat();
        let to = [&prefix[..], &date.saturating_add(threads.schema.subject_window_ms).to_be_bytes(), &[0xff]]
            .concat();
        let mut others = Vec::new();
        for item in threads
            .db
            .range(wtxn, &(std::ops::Bound::Included(&from[..]), std::ops::Bound::Included(&to[..])))
            .map_err(db_err("read threads"))?
        {
            let (key, value) = item.map_err(db_err("read threads"))?;
            let Some((_, id)) = decode_subject(key, prefix.len()) else { continue };
            if reply || value.first() == Some(&1) {
                others.push(id.to_vec());
            }
        }
        for id in others {
            if let Some((thread, _)) = threads
                .db
                .get(wtxn, &by_id_key(p, &id))
                .map_err(db_err("read threads"))?
                .and_then(decode_by_id)
            {
                reached.insert(thread);
            }
        }
    }
    let thread = reached.iter().copied().fold(lowest, u64::min);
    // Threads whose id goes: their members move to `thread`.
    for old in reached.iter().copied().filter(|&t| t != thread) {
        renamed.insert(old, thread);
        let prefix = members_prefix(old);
        let mut members: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for item in threads.db.prefix_iter(wtxn, &prefix).map_err(db_err("read threads"))? {
            let (key, value) = item.map_err(db_err("read threads"))?;
            members.push((member_id(key).to_vec(), value.to_vec()));
        }
        for (id, value) in members {
            let (partition, row) = decode_member(&value).ok_or_else(|| {
                Error::corrupted(
                    "threads",
                    &member_key(old, &id),
                    "a thread member entry shorter than its partition",
                )
            })?;
            let (partition, row) = (partition.to_vec(), row.to_vec());
            threads.db.delete(wtxn, &member_key(old, &id)).map_err(db_err("write threads"))?;
            threads.db.put(wtxn, &member_key(thread, &id), &value).map_err(db_err("write threads"))?;
            let key = by_id_key(&partition, &id);
            threads.db.put(wtxn, &key, &by_id_value(thread, &row)).map_err(db_err("write threads"))?;
            if !row.is_empty() {
                moved.entry((table.to_owned(), row)).or_insert_with(|| (partition.clone(), id.clone()));
            }
        }
    }
    for id in &m.ids {
        threads
            .db
            .put(wtxn, &by_id_key(p, id), &by_id_value(thread, row))
            .map_err(db_err("write threads"))?;
        threads
            .db
            .put(wtxn, &member_key(thread, id), &member_value(p, row))
            .map_err(db_err("write threads"))?;
    }
    for id in m.refs.iter().filter(|r| !known.contains(r.as_slice())) {
        threads
            .db
            .put(wtxn, &by_id_key(p, id), &by_id_value(thread, &[]))
            .map_err(db_err("write threads"))?;
        threads
            .db
            .put(wtxn, &member_key(thread, id), &member_value(p, &[]))
            .map_err(db_err("write threads"))?;
    }
    if let Some((hash, date, reply)) = m.subject {
        threads
            .db
            .put(wtxn, &subject_key(p, hash, date, &m.ids[0]), &[u8::from(reply)])
            .map_err(db_err("write threads"))?;
    }
    Ok(thread)
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
    for id in row_ids(value) {
        let key = by_id_key(&partition, &id);
        if let Some((thread, at)) =
            threads.db.get(wtxn, &key).map_err(db_err("read threads"))?.and_then(decode_by_id)
            && at == row
        {
            threads.db.put(wtxn, &key, &by_id_value(thread, &[])).map_err(db_err("write threads"))?;
            threads
                .db
                .put(wtxn, &member_key(thread, &id), &member_value(&partition, &[]))
                .map_err(db_err("write threads"))?;
        }
    }
    Ok(())
}
