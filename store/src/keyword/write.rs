//! Writing keyword rows: the difference between rows' keyword cells
//! before and after a batch, merged into the blocks of each column it
//! touches (every touched block read and written once per batch).

use std::ops::Bound;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use heed::RwTxn;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::block::{BlockReader, COUNTER_KEY, MIN_BLOCK_BYTES, Versions, encode, encoded_len};
use super::handle::{KeywordCells, SearchHandle};
use crate::error::{Error, Result};
use crate::key;

/// One change to a column: (keyword rows, term prefix, version tail, new
/// positions or `None` to delete).
type Change<'h> = (&'h SearchHandle, &'h [u8], &'h [u8], Option<&'h [u8]>);

/// Applies the difference between rows' keyword cells before and after a
/// batch.
pub(crate) fn update<'h>(
    wtxn: &mut RwTxn,
    changes: impl IntoIterator<Item = (&'h SearchHandle, &'h KeywordCells, &'h KeywordCells)>,
) -> Result<()> {
    let changes: Vec<_> = changes.into_iter().collect();
    let mut writes: Vec<Change<'h>> =
        Vec::with_capacity(changes.iter().map(|(_, b, a)| b.len() + a.len()).sum());
    for (search, before, after) in changes {
        let (mut b, mut a) = (0, 0);
        loop {
            match (before.split(b), after.split(a)) {
                (Some(old), Some(new)) if (old.0, old.1) == (new.0, new.1) => {
                    if old.2 != new.2 {
                        writes.push((search, new.0, new.1, Some(new.2)));
                    }
                    b += 1;
                    a += 1;
                }
                (Some(old), Some(new)) if (old.0, old.1) < (new.0, new.1) => {
                    writes.push((search, old.0, old.1, None));
                    b += 1;
                }
                (Some(old), None) => {
                    writes.push((search, old.0, old.1, None));
                    b += 1;
                }
                (_, Some(new)) => {
                    writes.push((search, new.0, new.1, Some(new.2)));
                    a += 1;
                }
                (None, None) => break,
            }
        }
    }
    // Grouped by database (handles compared by address: one per table) and
    // column, the columns in key order (the B-tree is walked forward), each
    // column's changes by version; of two changes to one version, the
    // later wins (a guard: rows are deduplicated before they get here, so
    // a version has one change per batch). A batch holds ~170 changes per
    // mail over far fewer columns: hashing each change to its column and
    // sorting the columns costs a fraction of sorting the changes.
    let handle = |s: &SearchHandle| std::ptr::from_ref(s) as usize;
    let hash = |(h, prefix): (usize, &[u8])| xxh3_64_with_seed(prefix, h as u64);
    let mut columns: Vec<(usize, &[u8])> = Vec::new();
    let mut slots: HashTable<u32> = HashTable::new();
    let mut column_of: Vec<u32> = Vec::with_capacity(writes.len());
    for w in &writes {
        let column = (handle(w.0), w.1);
        let id = match slots.entry(
            hash(column),
            |&id| columns[id as usize] == column,
            |&id| hash(columns[id as usize]),
        ) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(v) => {
                // Fewer columns than changes, and a batch's changes fit in memory.
                let id = columns.len() as u32;
                columns.push(column);
                v.insert(id);
                id
            }
        };
        column_of.push(id);
    }
    let mut order: Vec<u32> = (0..columns.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| columns[a as usize].cmp(&columns[b as usize]));
    let mut rank = vec![0u32; columns.len()];
    for (r, &id) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    // Counting sort of the changes by their column's rank (stable: a
    // column's changes stay in batch order).
    let mut starts = vec![0usize; columns.len() + 1];
    for &id in &column_of {
        starts[rank[id as usize] as usize + 1] += 1;
    }
    for r in 0..columns.len() {
        starts[r + 1] += starts[r];
    }
    let mut next = starts.clone();
    let mut sorted = vec![0usize; writes.len()];
    for (i, &id) in column_of.iter().enumerate() {
        let slot = &mut next[rank[id as usize] as usize];
        sorted[*slot] = i;
        *slot += 1;
    }
    let mut merger = Merger::default();
    let mut ops: Vec<(&[u8], Option<&[u8]>)> = Vec::new();
    let mut cells: i64 = 0;
    for (r, &id) in order.iter().enumerate() {
        let group = &mut sorted[starts[r]..starts[r + 1]];
        group.sort_by(|&a, &b| writes[a].2.cmp(writes[b].2));
        ops.clear();
        for &i in group.iter() {
            let (_, _, tail, value) = writes[i];
            match ops.last_mut() {
                Some(last) if last.0 == tail => *last = (tail, value),
                _ => ops.push((tail, value)),
            }
        }
        let (search, prefix) = (writes[group[0]].0, columns[id as usize].1);
        cells += merger.column(wtxn, search, prefix, &ops)?;
        // The table's count, once its last column is written.
        let last_of_table = order.get(r + 1).is_none_or(|&n| columns[n as usize].0 != handle(search));
        if last_of_table {
            add_to_counter(wtxn, search, cells)?;
            cells = 0;
        }
    }
    Ok(())
}

/// Adds `delta` to the table's keyword cell count.
pub(crate) fn add_to_counter(wtxn: &mut RwTxn, search: &SearchHandle, delta: i64) -> Result<()> {
    if delta == 0 {
        return Ok(());
    }
    let now = read_counter(wtxn, search)?;
    let next = now.saturating_add_signed(delta);
    // Kept only while there are cells, so the entries besides the blocks
    // are exactly one when the count is above zero.
    if next == 0 {
        search.db.delete(wtxn, COUNTER_KEY).map(drop).map_err(|e| Error::lmdb("keyword count", e))
    } else {
        search.db.put(wtxn, COUNTER_KEY, &next.to_be_bytes()).map_err(|e| Error::lmdb("keyword count", e))
    }
}

/// The table's keyword cell count (0 when never written).
pub(crate) fn read_counter(txn: &heed::RoTxn<'_>, search: &SearchHandle) -> Result<u64> {
    let stored = search.db.get(txn, COUNTER_KEY).map_err(|e| Error::lmdb("keyword count", e))?;
    Ok(stored.and_then(|v| v.first_chunk::<8>()).map_or(0, |b| u64::from_be_bytes(*b)))
}

/// Buffers reused from column to column.
#[derive(Default)]
pub(crate) struct Merger {
    old: Versions,
    merged: Versions,
    /// Keys of the blocks read for the current group.
    read: Vec<Vec<u8>>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Merger {
    /// Merges `ops` (ascending tails) into the column's blocks; returns
    /// how many versions the column gained (negative: lost).
    pub fn column(
        &mut self,
        wtxn: &mut RwTxn,
        search: &SearchHandle,
        prefix: &[u8],
        ops: &[(&[u8], Option<&[u8]>)],
    ) -> Result<i64> {
        let end = key::prefix_successor(prefix);
        let mut delta = 0i64;
        let mut i = 0;
        while i < ops.len() {
            self.old.clear();
            self.read.clear();
            // The block owning ops[i]: the first at or after it, else the
            // column's last (which then owns everything after it too).
            self.key.clear();
            self.key.extend_from_slice(prefix);
            self.key.extend_from_slice(ops[i].0);
            let from = self.key.clone();
            let mut upper =
                match self.first_block(wtxn, search, prefix, Bound::Included(&from), &end, true)? {
                    Some(last) => Some(last),
                    None => {
                        let before = search
                            .db
                            .get_lower_than(wtxn, &from)
                            .map_err(|e| Error::lmdb("keyword read", e))?;
                        if let Some((k, v)) = before
                            && k.starts_with(prefix)
                        {
                            self.old.extend_from_block(BlockReader::new(
                                &search.db_name,
                                k,
                                prefix.len(),
                                v,
                            )?)?;
                            self.read.push(k.to_vec());
                        }
                        None
                    }
                };
            let mut j = i;
            loop {
                while j < ops.len() && upper.as_deref().is_none_or(|u| ops[j].0 <= u) {
                    j += 1;
                }
                merge(&self.old, &ops[i..j], &mut self.merged);
                let Some(u) = upper.as_deref() else { break };
                // A small block takes in the next one; changes past the last
                // block read belong to it when no block follows.
                let small = encoded_len(self.merged.slice(0..self.merged.len())) < MIN_BLOCK_BYTES;
                if !small && j == ops.len() {
                    break;
                }
                let after = [prefix, u].concat();
                match self.first_block(wtxn, search, prefix, Bound::Excluded(&after), &end, small)? {
                    None => upper = None,
                    Some(next) if small => upper = Some(next),
                    Some(_) => break,
                }
            }
            delta += self.merged.len() as i64 - self.old.len() as i64;
            self.write(wtxn, search, prefix)?;
            i = j;
        }
        Ok(delta)
    }

    /// The last tail of the first block of the column in `from..end`,
    /// decoded into `old` (and its key remembered) when `load`.
    fn first_block(
        &mut self,
        wtxn: &RwTxn,
        search: &SearchHandle,
        prefix: &[u8],
        from: Bound<&Vec<u8>>,
        end: &Option<Vec<u8>>,
        load: bool,
    ) -> Result<Option<Vec<u8>>> {
        let range = (from.map(Vec::as_slice), end.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
        let mut iter = search.db.range(wtxn, &range).map_err(|e| Error::lmdb("keyword read", e))?;
        let Some(item) = iter.next() else { return Ok(None) };
        let (k, v) = item.map_err(|e| Error::lmdb("keyword read", e))?;
        let reader = BlockReader::new(&search.db_name, k, prefix.len(), v)?;
        let last = reader.last_tail().to_vec();
        if load {
            self.old.extend_from_block(reader)?;
            self.read.push(k.to_vec());
        }
        Ok(Some(last))
    }

    /// Writes `merged` as blocks in place of the blocks read.
    fn write(&mut self, wtxn: &mut RwTxn, search: &SearchHandle, prefix: &[u8]) -> Result<()> {
        let mut written: Vec<Vec<u8>> = Vec::new();
        for range in self.merged.cut() {
            self.key.clear();
            self.key.extend_from_slice(prefix);
            self.key.extend_from_slice(self.merged.get(range.end - 1).0);
            self.value.clear();
            encode(self.merged.slice(range), &mut self.value);
            search.db.put(wtxn, &self.key, &self.value).map_err(|e| Error::lmdb("keyword put", e))?;
            written.push(self.key.clone());
        }
        for old in &self.read {
            if !written.contains(old) {
                search.db.delete(wtxn, old).map_err(|e| Error::lmdb("keyword delete", e))?;
            }
        }
        Ok(())
    }
}

/// `old` with `ops` applied (both ascending by tail) into `out`.
fn merge(old: &Versions, ops: &[(&[u8], Option<&[u8]>)], out: &mut Versions) {
    out.clear();
    let (mut o, mut c) = (0, 0);
    while o < old.len() || c < ops.len() {
        let theirs = (o < old.len()).then(|| old.get(o));
        match (theirs, ops.get(c)) {
            (Some((tail, positions)), Some(&(op_tail, op))) => match tail.cmp(op_tail) {
                std::cmp::Ordering::Less => {
                    out.push(tail, positions);
                    o += 1;
                }
                std::cmp::Ordering::Equal => {
                    if let Some(p) = op {
                        out.push(op_tail, p);
                    }
                    o += 1;
                    c += 1;
                }
                std::cmp::Ordering::Greater => {
                    if let Some(p) = op {
                        out.push(op_tail, p);
                    }
                    c += 1;
                }
            },
            (Some((tail, positions)), None) => {
                out.push(tail, positions);
                o += 1;
            }
            (None, Some(&(op_tail, op))) => {
                if let Some(p) = op {
                    out.push(op_tail, p);
                }
                c += 1;
            }
            (None, None) => break,
        }
    }
}

/// How often (in cells) a conversion reports progress.
pub(crate) const REPORT_EVERY: u64 = 1024;

/// Rewrites keyword cells stored one per entry (format 3, `old`) as
/// blocks of `search`'s database, in the caller's transaction (the upgrade
/// commits with the new format marker, or not at all); `old` is emptied.
/// Returns the cells moved; `report(done, total)` hears how far it is
/// every [`REPORT_EVERY`] cells and at the start and end.
pub(crate) fn convert_cells(
    wtxn: &mut RwTxn,
    search: &SearchHandle,
    old: &crate::db::BytesDb,
    report: impl Fn(u64, u64),
) -> Result<u64> {
    let total = old.len(wtxn).map_err(|e| Error::lmdb("upgrade keyword read", e))?;
    report(0, total);
    use super::codec::decode_column;
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
    let mut value = Vec::new();
    for (prefix, versions) in &columns {
        for range in versions.cut() {
            let key = [prefix.as_slice(), versions.get(range.end - 1).0].concat();
            value.clear();
            encode(versions.slice(range), &mut value);
            search.db.put(wtxn, &key, &value).map_err(|e| Error::lmdb("upgrade keyword put", e))?;
        }
    }
    old.clear(wtxn).map_err(|e| Error::lmdb("upgrade keyword clear", e))?;
    add_to_counter(wtxn, search, i64::try_from(cells).unwrap_or(i64::MAX))?;
    report(cells, total);
    Ok(cells)
}
