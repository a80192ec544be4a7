//! Version cursors over keyword blocks for the lookups' leapfrog: the
//! versions of one term in one or more fields as *order tails*, `!date (u64
//! BE) ‖ row number (u32 BE)`, ascending, with seeking. Blocks keep a
//! column's versions by date and then by row key; a cursor reads the
//! versions of one date (one, or a few copies of a message) and sorts them
//! by number, so every cursor of a lookup agrees on one order without
//! turning a number into a key: only the hits are (`lookup`). A cursor
//! decodes a block's versions as it reaches them (skipping the positions)
//! and moves within it; a seek past the block's last date goes back to
//! LMDB.

use std::ops::Bound;

use heed::RoTxn;
use heed::types::Bytes;

use super::block::{BlockReader, Version, date_of};
use super::handle::SearchHandle;
use crate::error::{Error, Result};
use crate::key;
use crate::stream::SortedKeys;

/// The order tail of a version: `!date ‖ row number`, big-endian.
pub(crate) fn order_tail(v: Version) -> [u8; 12] {
    let mut t = [0u8; 12];
    t[..8].copy_from_slice(&v.date.to_be_bytes());
    t[8..].copy_from_slice(&v.row.to_be_bytes());
    t
}

/// The version an order tail names (a short one: its bytes as far as they
/// go, zeros after).
pub(crate) fn version_of(tail: &[u8]) -> Version {
    let mut t = [0u8; 12];
    let n = tail.len().min(12);
    t[..n].copy_from_slice(&tail[..n]);
    Version { date: date_of(&t), row: u32::from_be_bytes([t[8], t[9], t[10], t[11]]) }
}

/// The versions of one column (partition, field, term).
pub(crate) struct ColumnCursor<'t> {
    txn: &'t RoTxn<'t>,
    search: &'t SearchHandle,
    /// The column's term prefix (`prefix_len` bytes), with room to build
    /// a seek's lower bound after it.
    prefix: Vec<u8>,
    prefix_len: usize,
    end: Option<Vec<u8>>,
    iter: Option<heed::RoRange<'t, Bytes, Bytes>>,
    /// The current block, on the first version not yet in `group`
    /// (`None`: no versions left after the group).
    block: Option<BlockReader<'t>>,
    /// The versions of the current date, by row number, and where the
    /// cursor is among them (past the end: at the end of the column).
    group: Vec<Version>,
    at: usize,
    tail: [u8; 12],
    read: u64,
}

impl<'t> ColumnCursor<'t> {
    pub fn new(txn: &'t RoTxn<'t>, search: &'t SearchHandle, prefix: Vec<u8>) -> Result<Self> {
        let end = key::prefix_successor(&prefix);
        let prefix_len = prefix.len();
        let mut cursor = ColumnCursor {
            txn,
            search,
            prefix,
            prefix_len,
            end,
            iter: None,
            block: None,
            group: Vec::new(),
            at: 0,
            tail: [0; 12],
            read: 0,
        };
        cursor.reposition(0)?;
        cursor.fill_group()?;
        Ok(cursor)
    }

    /// Reads blocks from LMDB again, from the one holding the first
    /// version of inverted date `date` or later.
    fn reposition(&mut self, date: u64) -> Result<()> {
        self.prefix.truncate(self.prefix_len);
        self.prefix.extend_from_slice(&date.to_be_bytes());
        let range = (
            Bound::Included(self.prefix.as_slice()),
            self.end.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        );
        self.iter = Some(self.search.db.range(self.txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
        self.prefix.truncate(self.prefix_len);
        self.next_block()?;
        while let Some(block) = &self.block {
            if block.current().date >= date {
                break;
            }
            self.step()?;
        }
        Ok(())
    }

    /// Moves to the next block's first version (none left: the end).
    fn next_block(&mut self) -> Result<()> {
        self.block = None;
        let Some(iter) = self.iter.as_mut() else { return Ok(()) };
        let Some(item) = iter.next() else {
            self.iter = None;
            return Ok(());
        };
        let (k, v) = item.map_err(|e| Error::lmdb("lookup", e))?;
        let mut block = BlockReader::new(&self.search.db_name, k, self.prefix_len, v)?;
        self.read += block.len() as u64;
        // A block holds at least one version (`BlockReader::new` checks).
        if block.step()? {
            self.block = Some(block);
        }
        Ok(())
    }

    /// Moves the block reader to the next version, in this block or the
    /// next.
    fn step(&mut self) -> Result<()> {
        if let Some(block) = self.block.as_mut()
            && !block.step()?
        {
            self.next_block()?;
        }
        Ok(())
    }

    /// Takes the versions of the next date from the blocks into `group`,
    /// sorted by row number.
    fn fill_group(&mut self) -> Result<()> {
        self.group.clear();
        self.at = 0;
        let Some(first) = self.block.as_ref().map(BlockReader::current) else { return Ok(()) };
        while let Some(block) = &self.block {
            let v = block.current();
            if v.date != first.date {
                break;
            }
            self.group.push(v);
            self.step()?;
        }
        if self.group.len() > 1 {
            self.group.sort_unstable_by_key(|v| v.row);
        }
        self.set_tail();
        Ok(())
    }

    fn set_tail(&mut self) {
        if let Some(&v) = self.group.get(self.at) {
            self.tail = order_tail(v);
        }
    }

    /// Moves to the first version at or after `target` (an order tail).
    fn seek_version(&mut self, target: Version) -> Result<()> {
        loop {
            let Some(&current) = self.group.get(self.at) else { return Ok(()) };
            if current.date == target.date {
                while self.group.get(self.at).is_some_and(|v| v.row < target.row) {
                    self.at += 1;
                }
                if self.at < self.group.len() {
                    self.set_tail();
                    return Ok(());
                }
                self.fill_group()?;
                return Ok(());
            }
            if current.date > target.date {
                return Ok(());
            }
            // An earlier date: past the group, within the block while its
            // last date is not below the target's, else from LMDB.
            match &self.block {
                Some(block) if date_of(block.last_tail()) >= target.date => {
                    while let Some(block) = &self.block {
                        if block.current().date >= target.date {
                            break;
                        }
                        self.step()?;
                    }
                }
                Some(_) => self.reposition(target.date)?,
                None => {}
            }
            self.fill_group()?;
        }
    }
}

impl SortedKeys for ColumnCursor<'_> {
    fn peek(&self) -> Option<&[u8]> {
        (self.at < self.group.len()).then_some(&self.tail[..])
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        if self.peek().is_none_or(|now| now >= target) {
            return Ok(());
        }
        self.seek_version(version_of(target))?;
        // A target longer than an order tail is past the one it starts with.
        if self.peek().is_some_and(|now| now < target) {
            self.advance()?;
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        self.at += 1;
        if self.at < self.group.len() {
            self.set_tail();
            Ok(())
        } else {
            self.fill_group()
        }
    }

    fn entries_read(&self) -> u64 {
        self.read
    }
}

/// One term in any of several fields: the union of their columns.
pub(crate) struct FieldUnion<'t> {
    columns: Vec<ColumnCursor<'t>>,
    /// The column holding the smallest current version (kept so `peek`,
    /// called on every step of the leapfrog, compares nothing).
    head: Option<usize>,
}

impl<'t> FieldUnion<'t> {
    pub fn new(columns: Vec<ColumnCursor<'t>>) -> Self {
        let mut union = FieldUnion { columns, head: None };
        union.find_head();
        union
    }

    fn find_head(&mut self) {
        self.head = None;
        let mut best: Option<&[u8]> = None;
        for (i, c) in self.columns.iter().enumerate() {
            if let Some(k) = c.peek()
                && best.is_none_or(|b| k < b)
            {
                best = Some(k);
                self.head = Some(i);
            }
        }
    }
}

impl SortedKeys for FieldUnion<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.columns[self.head?].peek()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.columns.iter_mut().try_for_each(|c| c.seek(target))?;
        self.find_head();
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        let Some(head) = self.head else { return Ok(()) };
        // Every field holding the current version moves past it (a term can
        // be in several fields of one row); the head column last, as the
        // others compare with its version.
        let (before, rest) = self.columns.split_at_mut(head);
        let Some((first, after)) = rest.split_first_mut() else { return Ok(()) };
        if let Some(current) = first.peek() {
            for c in before.iter_mut().chain(after.iter_mut()) {
                if c.peek() == Some(current) {
                    c.advance()?;
                }
            }
        }
        first.advance()?;
        self.find_head();
        Ok(())
    }

    fn entries_read(&self) -> u64 {
        self.columns.iter().map(SortedKeys::entries_read).sum()
    }
}
