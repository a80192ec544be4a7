//! Linking a message into its thread, over any place thread entries live:
//! the store's `t/<table>/th` in a write transaction ([`LmdbEntries`]), or
//! a table elsewhere (an HBase cluster) behind [`ThreadEntries`]. The
//! rule (see the module docs of `threads`) is written once, here.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use heed::RwTxn;

use super::entries::key_part;
use super::entries::{
    by_id_key, by_id_value, decode_by_id, decode_member, decode_subject, member_id, member_key, member_value,
    members_prefix, subject_key, subject_prefix,
};
use super::ids::{id_hash, named_ids, normalize_subject, row_ids};
use crate::cell::PutCell;
use crate::db::BytesDb;
use crate::error::{Error, Result};
use crate::schema::{ParsedThreads, ThreadSchema};

/// Where a table's thread entries live: keys and values in the layout
/// `threads::entries` owns, read and written by the linking rule. The
/// store implements it over its write transaction; a place rows live
/// elsewhere implements it over its own table (one writer at a time: the
/// rule reads, then writes, with no transaction around both).
pub trait ThreadEntries {
    /// The value of `key`.
    ///
    /// # Errors
    /// The place's own failures.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// The place's own failures.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Removes `key`.
    ///
    /// # Errors
    /// The place's own failures.
    fn delete(&mut self, key: &[u8]) -> Result<()>;

    /// The entries with `from <= key <= to`, in key order.
    ///
    /// # Errors
    /// The place's own failures.
    fn range(&mut self, from: &[u8], to: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;

    /// The entries whose key starts with `prefix`, in key order.
    ///
    /// # Errors
    /// The place's own failures.
    fn prefix(&mut self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;

    /// A hint before a batch is linked: every id and subject entry of
    /// these partitions is about to be read (a remote place reads them in
    /// one go; the store reads as it goes).
    ///
    /// # Errors
    /// The place's own failures.
    fn will_read_partitions(&mut self, _partitions: &[&[u8]]) -> Result<()> {
        Ok(())
    }
}

/// The store's thread entries, in a write transaction.
pub(crate) struct LmdbEntries<'t, 'e> {
    pub wtxn: &'t mut RwTxn<'e>,
    pub db: BytesDb,
}

fn db_err(what: &'static str) -> impl Fn(heed::Error) -> Error {
    move |e| Error::lmdb(what, e)
}

impl ThreadEntries for LmdbEntries<'_, '_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(self.wtxn, key).map_err(db_err("read threads"))?.map(<[u8]>::to_vec))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put(self.wtxn, key, value).map_err(db_err("write threads"))
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.db.delete(self.wtxn, key).map_err(db_err("write threads")).map(|_| ())
    }

    fn range(&mut self, from: &[u8], to: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let bounds = (std::ops::Bound::Included(from), std::ops::Bound::Included(to));
        let mut out = Vec::new();
        for item in self.db.range(self.wtxn, &bounds).map_err(db_err("read threads"))? {
            let (key, value) = item.map_err(db_err("read threads"))?;
            out.push((key.to_vec(), value.to_vec()));
        }
        Ok(out)
    }

    fn prefix(&mut self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        for item in self.db.prefix_iter(self.wtxn, prefix).map_err(db_err("read threads"))? {
            let (key, value) = item.map_err(db_err("read threads"))?;
            out.push((key.to_vec(), value.to_vec()));
        }
        Ok(out)
    }
}

/// Rows whose thread changed: (table, row) -> (partition, an id of it).
pub(crate) type Moved = BTreeMap<(String, Vec<u8>), (Vec<u8>, Vec<u8>)>;

/// One message being linked.
pub(crate) struct Message {
    /// Its place in the batch.
    pub at: usize,
    pub partition: Vec<u8>,
    /// The ids it carries (kept form), never empty.
    pub ids: Vec<Vec<u8>>,
    /// The ids it names.
    pub refs: Vec<Vec<u8>>,
    /// Subject hash, date, and whether it is a reply without references.
    pub subject: Option<(u64, u64, bool)>,
    /// Its date (ms), as its keyword cells carry it.
    pub date: Option<u64>,
    /// The timestamp its thread cell is written at: its id cell's.
    pub ts: Option<u64>,
}

/// The message a put of `row` with `cells` is, when it writes the id
/// column; `place` gives its partition and date (read only then).
///
/// # Errors
/// What `place` returns.
pub(crate) fn message_of(
    columns: &ParsedThreads,
    at: usize,
    row: &[u8],
    cells: &[PutCell],
    place: impl FnOnce() -> Result<(Vec<u8>, Option<u64>)>,
) -> Result<Option<Message>> {
    let (id_family, id_qualifier) = &columns.id;
    let Some(id_cell) = cells.iter().rfind(|c| c.family == *id_family && c.qualifier == *id_qualifier) else {
        return Ok(None);
    };
    let (partition, date) = place()?;
    let mut ids = row_ids(&id_cell.value);
    if ids.is_empty() {
        // A row without an id threads alone, by its key.
        ids.push(key_part(&[b"\x01", row].concat(), 250).into_owned());
    }
    let mut refs = Vec::new();
    for (family, qualifier) in &columns.refs {
        for c in cells.iter().filter(|c| c.family == *family && c.qualifier == *qualifier) {
            named_ids(&c.value, &mut refs);
        }
    }
    refs.retain(|r| !ids.contains(r));
    let subject = subject_of(columns, cells, date, &refs);
    Ok(Some(Message { at, partition, ids, refs, subject, date, ts: id_cell.timestamp }))
}

/// A put's subject entry: its subject's hash, its date, and whether it is
/// a reply without references; `None` without subject gathering, a
/// subject, or a date.
fn subject_of(
    columns: &ParsedThreads,
    cells: &[PutCell],
    date: Option<u64>,
    refs: &[Vec<u8>],
) -> Option<(u64, u64, bool)> {
    let (family, qualifier) = columns.subject.as_ref()?;
    let cell = cells.iter().rfind(|c| c.family == *family && c.qualifier == *qualifier)?;
    let (normal, reply) = normalize_subject(&String::from_utf8_lossy(&cell.value));
    if normal.is_empty() {
        return None;
    }
    Some((xxhash_rust::xxh3::xxh3_64(normal.as_bytes()), date?, reply && refs.is_empty()))
}

fn thread_entry(entries: &mut dyn ThreadEntries, key: &[u8]) -> Result<Option<u64>> {
    Ok(entries.get(key)?.as_deref().and_then(decode_by_id).map(|(t, _)| t))
}

/// The thread of an id (kept form) in a partition, or its own hash when it
/// has none.
pub(crate) fn thread_of(entries: &mut dyn ThreadEntries, partition: &[u8], id: &[u8]) -> Result<u64> {
    Ok(thread_entry(entries, &by_id_key(partition, id))?.unwrap_or_else(|| id_hash(partition, id)))
}

/// Links message `m` (row `row` of `table`) into its thread, and returns
/// the thread's id: every thread its ids, references and subject reach
/// becomes one, whose id is the smallest hash of the ids it holds. Rows of
/// threads whose id went are recorded in `moved`, and the ids that went in
/// `renamed` (old -> new).
pub(crate) fn link(
    entries: &mut dyn ThreadEntries,
    schema: &ThreadSchema,
    (table, row): (&str, &[u8]),
    m: &Message,
    moved: &mut Moved,
    renamed: &mut HashMap<u64, u64>,
) -> Result<u64> {
    let p = &m.partition;
    let mut reached: BTreeSet<u64> = BTreeSet::new();
    let mut lowest = u64::MAX;
    let mut known: BTreeSet<&[u8]> = BTreeSet::new();
    for id in m.ids.iter().chain(&m.refs) {
        match thread_entry(entries, &by_id_key(p, id))? {
            Some(thread) => {
                reached.insert(thread);
                known.insert(id);
            }
            None => lowest = lowest.min(id_hash(p, id)),
        }
    }
    if let Some((hash, date, reply)) = m.subject {
        let prefix = subject_prefix(p, hash);
        let from = [&prefix[..], &date.saturating_sub(schema.subject_window_ms).to_be_bytes()].concat();
        let to =
            [&prefix[..], &date.saturating_add(schema.subject_window_ms).to_be_bytes(), &[0xff]].concat();
        let mut others = Vec::new();
        for (key, value) in entries.range(&from, &to)? {
            let Some((_, id)) = decode_subject(&key, prefix.len()) else { continue };
            if reply || value.first() == Some(&1) {
                others.push(id.to_vec());
            }
        }
        for id in others {
            if let Some(thread) = thread_entry(entries, &by_id_key(p, &id))? {
                reached.insert(thread);
            }
        }
    }
    let thread = reached.iter().copied().fold(lowest, u64::min);
    // Threads whose id goes: their members move to `thread`.
    for old in reached.iter().copied().filter(|&t| t != thread) {
        renamed.insert(old, thread);
        for (key, value) in entries.prefix(&members_prefix(old))? {
            let id = member_id(&key).to_vec();
            let (partition, member_row) = decode_member(&value).ok_or_else(|| {
                Error::corrupted("threads", &key, "a thread member entry shorter than its partition")
            })?;
            let (partition, member_row) = (partition.to_vec(), member_row.to_vec());
            entries.delete(&key)?;
            entries.put(&member_key(thread, &id), &value)?;
            entries.put(&by_id_key(&partition, &id), &by_id_value(thread, &member_row))?;
            if !member_row.is_empty() {
                moved
                    .entry((table.to_owned(), member_row))
                    .or_insert_with(|| (partition.clone(), id.clone()));
            }
        }
    }
    for id in &m.ids {
        entries.put(&by_id_key(p, id), &by_id_value(thread, row))?;
        entries.put(&member_key(thread, id), &member_value(p, row))?;
    }
    for id in m.refs.iter().filter(|r| !known.contains(r.as_slice())) {
        entries.put(&by_id_key(p, id), &by_id_value(thread, &[]))?;
        entries.put(&member_key(thread, id), &member_value(p, &[]))?;
    }
    if let Some((hash, date, reply)) = m.subject {
        entries.put(&subject_key(p, hash, date, &m.ids[0]), &[u8::from(reply)])?;
    }
    Ok(thread)
}

/// Ids a deleted row carried, in its partition, made ghosts: its thread
/// keeps their place.
pub(crate) fn ghost_ids(
    entries: &mut dyn ThreadEntries,
    partition: &[u8],
    row: &[u8],
    ids: &[Vec<u8>],
) -> Result<()> {
    for id in ids {
        let key = by_id_key(partition, id);
        if let Some(value) = entries.get(&key)?
            && let Some((thread, at)) = decode_by_id(&value)
            && at == row
        {
            entries.put(&key, &by_id_value(thread, &[]))?;
            entries.put(&member_key(thread, id), &member_value(partition, &[]))?;
        }
    }
    Ok(())
}
