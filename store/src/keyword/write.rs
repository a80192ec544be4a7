//! Writing keyword rows: the difference between rows' keyword cells
//! before and after a batch, merged into the blocks of each column it
//! touches (every touched block read and written once per batch).

use std::cmp::Ordering;
use std::ops::Bound;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use heed::{PutFlags, RwTxn};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::block::{
    self, BlockReader, COUNTER_KEY, MIN_BLOCK_BYTES, Version, Versions, date_of, encode, encoded_len,
    order_tail, version_of,
};
use super::handle::{CellParts, SearchHandle};
use super::rows;
use super::runs::{self, Place, RunChunks, RunWriter};
use crate::error::{Error, ErrorKind, Result};
use crate::key;

/// One change to a column: (keyword rows, term prefix, version tail, the
/// row's number, new positions or `None` to delete, whether the version
/// was stored before).
type Change<'h> = (&'h SearchHandle, &'h [u8], &'h [u8], u32, Option<&'h [u8]>, bool);

/// One change to a version of a column: the version, new positions or
/// `None` to delete.
type Op<'h> = (Version, Option<&'h [u8]>);

/// Applies the difference between rows' keyword cells before and after a
/// batch: stored versions deleted or replaced where they are, new versions
/// written as one new run per table, the runs merged into the blocks once
/// a table holds more than `max_runs` (0: every change straight into the
/// blocks). Each change: the keyword rows, the row's cells before and
/// after, and whether the row may hold cells that `before` leaves out
/// (then an empty `before` still finds the row's number).
pub(crate) fn update<'h>(
    wtxn: &mut RwTxn,
    changes: impl IntoIterator<Item = (&'h SearchHandle, CellParts<'h>, CellParts<'h>, bool)>,
    max_runs: usize,
) -> Result<()> {
    let changes: Vec<_> = changes.into_iter().collect();
    let mut writes: Vec<Change<'h>> =
        Vec::with_capacity(changes.iter().map(|(_, b, a, _)| b.len() + a.len()).sum());
    // Rows whose last cells go: their numbers go once the blocks are written.
    let mut unnumbered: Vec<(&SearchHandle, &[u8], u32)> = Vec::new();
    // Per table, the next number to give (kept once all are given).
    let mut next_numbers: Vec<(&SearchHandle, u32)> = Vec::new();
    for (search, before, after, may_have_cells) in changes {
        let (mut old, mut new) = (before.splits().peekable(), after.splits().peekable());
        let Some(row) = old.peek().or(new.peek()).map(|(_, tail, _)| &tail[8..]) else {
            continue;
        };
        let number = if before.len() > 0 {
            let n = rows::number_of(wtxn, &search.rows, &search.rows_name, row)?;
            n.ok_or_else(|| {
                Error::corrupted(&search.rows_name, row, "a row with keyword cells has no number")
            })?
        } else if may_have_cells && let Some(n) = rows::number_of(wtxn, &search.rows, &search.rows_name, row)?
        {
            n
        } else {
            number_new_row(wtxn, search, row, &mut next_numbers)?
        };
        if after.len() == 0 {
            unnumbered.push((search, row, number));
        }
        loop {
            match (old.peek(), new.peek()) {
                (Some(o), Some(n)) if (o.0, o.1) == (n.0, n.1) => {
                    if o.2 != n.2 {
                        writes.push((search, n.0, n.1, number, Some(n.2), true));
                    }
                    old.next();
                    new.next();
                }
                (Some(o), Some(n)) if (o.0, o.1) < (n.0, n.1) => {
                    writes.push((search, o.0, o.1, number, None, true));
                    old.next();
                }
                (Some(o), None) => {
                    writes.push((search, o.0, o.1, number, None, true));
                    old.next();
                }
                (_, Some(n)) => {
                    writes.push((search, n.0, n.1, number, Some(n.2), false));
                    new.next();
                }
                (None, None) => break,
            }
        }
    }
    keep_next_numbers(wtxn, &next_numbers)?;
    // Grouped by database (handles compared by address: one per table) and
    // column, the columns in key order (the B-tree is walked forward), each
    // column's changes by version; of two changes to one version, the
    // later wins (a guard: rows are deduplicated before they get here, so
    // a version has one change per batch). A batch holds ~170 changes per
    // mail over far fewer columns: hashing each change to its column and
    // sorting the columns costs a fraction of sorting the changes.
    let handle = |s: &SearchHandle| std::ptr::from_ref(s) as usize;
    let hash = |(h, prefix): (usize, &[u8])| xxh3_64_with_seed(prefix, h as u64);
    // Sized for a few changes per column: growing it was a tenth of the
    // grouping's time.
    let mut columns: Vec<(usize, &[u8])> = Vec::with_capacity(writes.len() / 4);
    let mut slots: HashTable<u32> = HashTable::with_capacity(writes.len() / 4);
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
    let mut ops: Vec<(Version, Option<&'h [u8]>, bool)> = Vec::new();
    let (mut plain, mut deletes): (Vec<Op<'h>>, Vec<Op<'h>>) = (Vec::new(), Vec::new());
    let mut inserts = Versions::default();
    let mut cells: i64 = 0;
    // The table being written: its runs before this write, its new run.
    let mut table: Option<(Vec<[u8; 4]>, Option<RunWriter>)> = None;
    for (r, &id) in order.iter().enumerate() {
        let group = &mut sorted[starts[r]..starts[r + 1]];
        let version = |i: usize| Version { date: date_of(writes[i].2), row: writes[i].3 };
        group.sort_by_key(|&i| version(i));
        ops.clear();
        for &i in group.iter() {
            let (v, value, existed) = (version(i), writes[i].4, writes[i].5);
            match ops.last_mut() {
                Some(last) if last.0 == v => *last = (v, value, existed || last.2),
                _ => ops.push((v, value, existed)),
            }
        }
        let (search, prefix) = (writes[group[0]].0, columns[id as usize].1);
        let (runs_before, run) = match &mut table {
            Some(t) => t,
            None => {
                let mut runs_before = runs::runs(wtxn, search)?;
                if max_runs == 0 && !runs_before.is_empty() {
                    // Straight into the blocks: only once no run is left.
                    merge_runs(wtxn, search)?;
                    runs_before.clear();
                }
                let run = (max_runs > 0).then(|| RunWriter::new(search, &runs_before)).transpose()?;
                table.insert((runs_before, run))
            }
        };
        match run {
            None => {
                plain.clear();
                plain.extend(ops.iter().map(|&(v, value, _)| (v, value)));
                cells += merger.column(wtxn, Place::blocks(search), prefix, &plain)?;
            }
            Some(run) => {
                // Versions that were stored go from where they are; the new
                // ones (replacements too) into this write's run.
                deletes.clear();
                deletes.extend(ops.iter().filter(|o| o.2).map(|&(v, _, _)| (v, None)));
                if !deletes.is_empty() {
                    cells += merger.column(wtxn, Place::blocks(search), prefix, &deletes)?;
                    for (&run, place) in runs_before.iter().zip(runs::run_places(search, runs_before)) {
                        if runs::run_may_hold(wtxn, search, run, prefix)? {
                            cells += merger.column(wtxn, place, &place.key(prefix), &deletes)?;
                        }
                    }
                }
                inserts.clear();
                for &(v, value, _) in &ops {
                    if let Some(positions) = value {
                        inserts.push(v, positions);
                    }
                }
                if !inserts.is_empty() {
                    run.column(wtxn, search, prefix, &inserts)?;
                    cells += inserts.len() as i64;
                }
            }
        }
        // The table's count and run, once its last column is written.
        let last_of_table = order.get(r + 1).is_none_or(|&n| columns[n as usize].0 != handle(search));
        if last_of_table {
            add_to_counter(wtxn, search, cells)?;
            cells = 0;
            if let Some((runs_before, run)) = table.take()
                && let Some(run) = run
            {
                let written = run.finish(wtxn, search)?;
                if runs_before.len() + usize::from(written) > max_runs {
                    merge_runs(wtxn, search)?;
                }
            }
        }
    }
    for (search, row, number) in unnumbered {
        rows::remove(wtxn, &search.rows, row, number)?;
    }
    Ok(())
}

/// Moves every pending run's versions into the blocks (the runs read
/// side by side, column by column in key order, so the blocks are written
/// in key order too), then empties the runs. Returns the versions moved.
pub(crate) fn merge_runs(wtxn: &mut RwTxn, search: &SearchHandle) -> Result<u64> {
    let runs = runs::runs(wtxn, search)?;
    if runs.is_empty() {
        return Ok(0);
    }
    let mut chunks: Vec<RunChunks> = runs.iter().map(|&r| RunChunks::new(r)).collect();
    let mut merger = Merger::default();
    let mut blocks: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut moved = 0u64;
    // Once the columns pass the blocks' last column, every column left is
    // new and sorts after all the blocks: appended, no search.
    let last = search.db.last(wtxn).map_err(|e| Error::lmdb("keyword merge", e))?.map(|(k, _)| k.to_vec());
    let mut appending = false;
    let mut versions = Versions::default();
    let mut value = Vec::new();
    loop {
        let mut prefix: Option<Vec<u8>> = None;
        for c in &mut chunks {
            if let Some(head) = c.head(wtxn, search)?
                && prefix.as_deref().is_none_or(|p| head < p)
            {
                prefix = Some(head.to_vec());
            }
        }
        let Some(prefix) = prefix else { break };
        blocks.clear();
        let mut holding = 0;
        for c in &mut chunks {
            let before = blocks.len();
            c.take_column(wtxn, search, &prefix, &mut blocks)?;
            holding += usize::from(blocks.len() > before);
        }
        appending = appending || last.as_deref().is_none_or(|l| runs::column_of(l) < prefix.as_slice());
        if appending && holding == 1 {
            // One run's blocks, cut already: moved as they are.
            for (k, v) in &blocks {
                moved += block::count(&search.pending_name, k, prefix.len(), v)?;
                search
                    .db
                    .put_with_flags(wtxn, PutFlags::APPEND, k, v)
                    .map_err(|e| Error::lmdb("keyword merge", e))?;
            }
            continue;
        }
        let mut ops: Vec<Op<'_>> = Vec::new();
        for (k, v) in &blocks {
            let mut reader = BlockReader::new(&search.pending_name, k, prefix.len(), v)?;
            while let Some((version, positions)) = reader.next()? {
                ops.push((version, Some(positions)));
            }
        }
        // A version is in one run; were it in two, the later run's wins
        // (the sort keeps the runs' order among equals).
        ops.sort_by_key(|o| o.0);
        let mut kept: Vec<Op<'_>> = Vec::with_capacity(ops.len());
        for op in ops {
            match kept.last_mut() {
                Some(last) if last.0 == op.0 => *last = op,
                _ => kept.push(op),
            }
        }
        moved += kept.len() as u64;
        if appending {
            versions.clear();
            for &(v, positions) in &kept {
                versions.push(v, positions.unwrap_or_default());
            }
            for range in versions.cut() {
                let key = [prefix.as_slice(), &order_tail(versions.get(range.end - 1).0)].concat();
                value.clear();
                encode(&versions, range, &mut value);
                search
                    .db
                    .put_with_flags(wtxn, PutFlags::APPEND, &key, &value)
                    .map_err(|e| Error::lmdb("keyword merge", e))?;
            }
        } else {
            merger.column(wtxn, Place::blocks(search), &prefix, &kept)?;
        }
    }
    runs::clear(wtxn, search)?;
    Ok(moved)
}

/// Gives a row its first keyword cells' number: the table's next (`next`
/// remembers it per table within a batch, for [`keep_next_numbers`]).
fn number_new_row<'h>(
    wtxn: &mut RwTxn,
    search: &'h SearchHandle,
    row: &[u8],
    next: &mut Vec<(&'h SearchHandle, u32)>,
) -> Result<u32> {
    let slot = match next.iter().position(|(h, _)| std::ptr::eq(*h, search)) {
        Some(i) => i,
        None => {
            next.push((search, rows::next_number(wtxn, &search.rows)?));
            next.len() - 1
        }
    };
    let n = next[slot].1;
    let after = n.checked_add(1).ok_or_else(|| ErrorKind::InvalidSchema {
        table: search.db_name.clone(),
        reason: format!(
            "keyword rows number at most {} rows in a table's life (32-bit row numbers)",
            u32::MAX
        ),
    })?;
    next[slot].1 = after;
    rows::put(wtxn, &search.rows, row, n)?;
    Ok(n)
}

/// Keeps each table's next number to give after a write numbered rows.
fn keep_next_numbers(wtxn: &mut RwTxn, next: &[(&SearchHandle, u32)]) -> Result<()> {
    for (search, n) in next {
        rows::set_next_number(wtxn, &search.rows, *n)?;
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
    /// Merges `ops` (ascending versions) into the column's blocks; returns
    /// how many versions the column gained (negative: lost).
    pub fn column(
        &mut self,
        wtxn: &mut RwTxn,
        place: Place<'_>,
        prefix: &[u8],
        ops: &[Op<'_>],
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
            self.key.extend_from_slice(&order_tail(ops[i].0));
            let from = self.key.clone();
            let mut upper = match self.first_block(wtxn, place, prefix, Bound::Included(&from), &end, true)? {
                Some(last) => Some(last),
                None => {
                    let before =
                        place.db.get_lower_than(wtxn, &from).map_err(|e| Error::lmdb("keyword read", e))?;
                    if let Some((k, v)) = before
                        && k.starts_with(prefix)
                    {
                        self.old.extend_from_block(BlockReader::new(place.name, k, prefix.len(), v)?)?;
                        self.read.push(k.to_vec());
                    }
                    None
                }
            };
            let mut j = i;
            loop {
                while j < ops.len() && upper.is_none_or(|u| ops[j].0 <= u) {
                    j += 1;
                }
                merge(&self.old, &ops[i..j], &mut self.merged);
                let Some(u) = upper else { break };
                // A small block takes in the next one; changes past the last
                // block read belong to it when no block follows.
                let small = encoded_len(&self.merged, 0..self.merged.len()) < MIN_BLOCK_BYTES;
                if !small && j == ops.len() {
                    break;
                }
                let after = [prefix, &order_tail(u)].concat();
                match self.first_block(wtxn, place, prefix, Bound::Excluded(&after), &end, small)? {
                    None => upper = None,
                    Some(next) if small => upper = Some(next),
                    Some(_) => break,
                }
            }
            let change = self.merged.len() as i64 - self.old.len() as i64;
            delta += change;
            // Deletes of versions this place does not hold change nothing.
            let unchanged = change == 0 && ops[i..j].iter().all(|op| op.1.is_none());
            if !unchanged {
                self.write(wtxn, place, prefix)?;
            }
            i = j;
        }
        Ok(delta)
    }

    /// The last version of the first block of the column in `from..end`,
    /// decoded into `old` (and its key remembered) when `load`.
    fn first_block(
        &mut self,
        wtxn: &RwTxn,
        place: Place<'_>,
        prefix: &[u8],
        from: Bound<&Vec<u8>>,
        end: &Option<Vec<u8>>,
        load: bool,
    ) -> Result<Option<Version>> {
        let range = (from.map(Vec::as_slice), end.as_deref().map_or(Bound::Unbounded, Bound::Excluded));
        let mut iter = place.db.range(wtxn, &range).map_err(|e| Error::lmdb("keyword read", e))?;
        let Some(item) = iter.next() else { return Ok(None) };
        let (k, v) = item.map_err(|e| Error::lmdb("keyword read", e))?;
        let reader = BlockReader::new(place.name, k, prefix.len(), v)?;
        let last = version_of(reader.last_tail());
        if load {
            self.old.extend_from_block(reader)?;
            self.read.push(k.to_vec());
        }
        Ok(Some(last))
    }

    /// Writes `merged` as blocks in place of the blocks read.
    fn write(&mut self, wtxn: &mut RwTxn, place: Place<'_>, prefix: &[u8]) -> Result<()> {
        let mut written: Vec<Vec<u8>> = Vec::new();
        for range in self.merged.cut() {
            self.key.clear();
            self.key.extend_from_slice(prefix);
            self.key.extend_from_slice(&order_tail(self.merged.get(range.end - 1).0));
            self.value.clear();
            encode(&self.merged, range, &mut self.value);
            place.db.put(wtxn, &self.key, &self.value).map_err(|e| Error::lmdb("keyword put", e))?;
            written.push(self.key.clone());
        }
        for old in &self.read {
            if !written.contains(old) {
                place.db.delete(wtxn, old).map_err(|e| Error::lmdb("keyword delete", e))?;
            }
        }
        Ok(())
    }
}

/// `old` with `ops` applied (both ascending) into `out`.
fn merge(old: &Versions, ops: &[Op<'_>], out: &mut Versions) {
    out.clear();
    let (mut o, mut c) = (0, 0);
    while o < old.len() || c < ops.len() {
        let theirs = (o < old.len()).then(|| old.get(o));
        match (theirs, ops.get(c)) {
            (Some((v, positions)), Some(&(op_v, op))) => match v.cmp(&op_v) {
                Ordering::Less => {
                    out.push(v, positions);
                    o += 1;
                }
                Ordering::Equal => {
                    if let Some(p) = op {
                        out.push(op_v, p);
                    }
                    o += 1;
                    c += 1;
                }
                Ordering::Greater => {
                    if let Some(p) = op {
                        out.push(op_v, p);
                    }
                    c += 1;
                }
            },
            (Some((v, positions)), None) => {
                out.push(v, positions);
                o += 1;
            }
            (None, Some(&(op_v, op))) => {
                if let Some(p) = op {
                    out.push(op_v, p);
                }
                c += 1;
            }
            (None, None) => break,
        }
    }
}
