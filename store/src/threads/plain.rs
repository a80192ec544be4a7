//! Threads for rows that live elsewhere (an HBase cluster): the same rule
//! as the store's write transaction ([`super::link`]), over the place's own
//! thread entries ([`ThreadEntries`]), for a batch of plain puts.

use std::collections::{BTreeSet, HashMap};

use super::entries::{decode_member, member_id, members_prefix};
use super::ids::row_ids;
use super::link::{Message, Moved, ThreadEntries, ghost_ids, link, message_of, thread_of};
use super::read::{ThreadMember, thread_id_text};
use crate::cell::PutCell;
use crate::error::{Error, ErrorKind, Result};
use crate::schema::{Analyzer, TableSchema};

/// A row outside a threaded batch whose thread changed (two threads made
/// one): its new thread id, for its thread column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedRow {
    /// The row key.
    pub row: Vec<u8>,
    /// Its thread id as the thread column holds it.
    pub thread: String,
}

fn parsed(table: &str, schema: &TableSchema) -> Result<Option<crate::schema::ParsedThreads>> {
    let Some(threads) = &schema.threads else { return Ok(None) };
    let parsed =
        threads.parsed().map_err(|reason| ErrorKind::InvalidSchema { table: table.to_owned(), reason })?;
    Ok(Some(parsed))
}

/// Links each of `rows` (puts into `table` of `schema`, in order) that
/// writes the id column into its thread, over `entries`: the put gains its
/// thread column (a thread cell it carried is replaced), stamped as its id
/// cell. Returns the rows not among `rows` whose thread changed; the
/// caller writes their thread column (after the entries, before or with
/// the rows). Nothing is done for a table without threads.
///
/// # Errors
/// `InvalidSchema`, `NotSearchable`, `InvalidRowKey`; `entries`' failures.
pub fn thread_rows(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    entries: &mut dyn ThreadEntries,
    rows: &mut [(Vec<u8>, Vec<PutCell>)],
) -> Result<Vec<MovedRow>> {
    let (Some(columns), Some(threads)) = (parsed(table, schema)?, schema.threads.as_ref()) else {
        return Ok(Vec::new());
    };
    let mut messages: Vec<Message> = Vec::new();
    for (at, (row, cells)) in rows.iter().enumerate() {
        let place = || crate::keyword::place_of(table, schema, analyzer, row, cells);
        if let Some(m) = message_of(&columns, at, row, cells, place)? {
            messages.push(m);
        }
    }
    let partitions: BTreeSet<&[u8]> = messages.iter().map(|m| m.partition.as_slice()).collect();
    entries.will_read_partitions(&partitions.into_iter().collect::<Vec<_>>())?;
    let mut moved: Moved = Moved::new();
    let mut renamed: HashMap<u64, u64> = HashMap::new();
    let mut linked = Vec::with_capacity(messages.len());
    for m in &messages {
        linked.push(link(entries, threads, (table, &rows[m.at].0), m, &mut moved, &mut renamed)?);
    }
    let (family, qualifier) = &columns.thread;
    for (m, mut thread) in messages.iter().zip(linked) {
        while let Some(&next) = renamed.get(&thread) {
            thread = next;
        }
        let cells = &mut rows[m.at].1;
        cells.retain(|c| !(c.family == *family && c.qualifier == *qualifier));
        let mut cell = PutCell::new(family.clone(), qualifier.clone(), thread_id_text(thread).into_bytes());
        cell.timestamp = m.ts;
        cells.push(cell);
    }
    let in_batch: BTreeSet<&[u8]> = messages.iter().map(|m| rows[m.at].0.as_slice()).collect();
    let mut out = Vec::new();
    for ((_, row), (partition, id)) in moved {
        if in_batch.contains(row.as_slice()) {
            continue;
        }
        let thread = thread_id_text(thread_of(entries, &partition, &id)?);
        out.push(MovedRow { row, thread });
    }
    Ok(out)
}

/// Makes the ids row `row` carried (its id column's value `id_value`, in
/// `partition`) ghosts, as a deleted row's are: its thread keeps their
/// place. Nothing for a table without threads.
///
/// # Errors
/// `InvalidSchema`; `entries`' failures.
pub fn ghost_row(
    table: &str,
    schema: &TableSchema,
    entries: &mut dyn ThreadEntries,
    (partition, row): (&[u8], &[u8]),
    id_value: &[u8],
) -> Result<()> {
    if parsed(table, schema)?.is_none() {
        return Ok(());
    }
    ghost_ids(entries, partition, row, &row_ids(id_value))
}

/// The members of thread `thread` in `entries`, in id order (as
/// [`crate::ReadTxn::thread_members`] reads the store's).
///
/// # Errors
/// `Corrupted` for a member entry shorter than its partition; `entries`'
/// failures.
pub fn thread_members_in(entries: &mut dyn ThreadEntries, thread: u64) -> Result<Vec<ThreadMember>> {
    entries
        .prefix(&members_prefix(thread))?
        .into_iter()
        .map(|(key, value)| {
            let (partition, row) = decode_member(&value).ok_or_else(|| {
                Error::corrupted("threads", &key, "a thread member entry shorter than its partition")
            })?;
            Ok(ThreadMember {
                id: member_id(&key).to_vec(),
                partition: partition.to_vec(),
                row: (!row.is_empty()).then(|| row.to_vec()),
            })
        })
        .collect()
}
