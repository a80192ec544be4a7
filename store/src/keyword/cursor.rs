//! Version cursors over keyword blocks for the lookups' leapfrog: the
//! versions of one term in one or more fields as order tails (`!date ‖ row
//! number`, `block`), ascending, with seeking. A cursor decodes a block's
//! versions as it reaches them (skipping the positions) and moves within
//! it; a seek past the block's last tail goes back to LMDB. Numbers become
//! keys only for the lookup's hits (`lookup`).

use std::ops::Bound;

use heed::RoTxn;
use heed::types::Bytes;

use super::block::{BlockReader, ORDER_TAIL_LEN, order_tail};
use super::runs::Place;
use crate::error::{Error, Result};
use crate::key;
use crate::stream::SortedKeys;

/// The versions of one column (partition, field, term).
pub(crate) struct ColumnCursor<'t> {
    txn: &'t RoTxn<'t>,
    place: Place<'t>,
    /// The column's term prefix in its place (`prefix_len` bytes), with room to build
    /// a seek's lower bound after it.
    prefix: Vec<u8>,
    prefix_len: usize,
    end: Option<Vec<u8>>,
    iter: Option<heed::RoRange<'t, Bytes, Bytes>>,
    /// The current block, on the current version (`None`: at the end).
    block: Option<BlockReader<'t>>,
    tail: [u8; ORDER_TAIL_LEN],
    read: u64,
}

impl<'t> ColumnCursor<'t> {
    /// The versions of the column whose block keys in `place` start with
    /// `prefix` (the place's own prefix included).
    pub fn new(txn: &'t RoTxn<'t>, place: Place<'t>, prefix: Vec<u8>) -> Result<Self> {
        let end = key::prefix_successor(&prefix);
        let prefix_len = prefix.len();
        let mut cursor = ColumnCursor {
            txn,
            place,
            prefix,
            prefix_len,
            end,
            iter: None,
            block: None,
            tail: [0; ORDER_TAIL_LEN],
            read: 0,
        };
        cursor.reposition(&[])?;
        Ok(cursor)
    }

    /// Reads blocks from LMDB again, from the one holding `target`.
    fn reposition(&mut self, target: &[u8]) -> Result<()> {
        self.prefix.truncate(self.prefix_len);
        self.prefix.extend_from_slice(target);
        let range = (
            Bound::Included(self.prefix.as_slice()),
            self.end.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        );
        self.iter = Some(self.place.db.range(self.txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
        self.prefix.truncate(self.prefix_len);
        self.next_block()?;
        self.skip_below(target)
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
        let mut block = BlockReader::new(self.place.name, k, self.prefix_len, v)?;
        self.read += block.len() as u64;
        // A block holds at least one version (`BlockReader::new` checks).
        if block.step()? {
            self.tail = order_tail(block.current());
            self.block = Some(block);
        }
        Ok(())
    }

    /// Moves to the first version at or after `target`.
    fn skip_below(&mut self, target: &[u8]) -> Result<()> {
        while self.block.is_some() && self.tail.as_slice() < target {
            self.step()?;
        }
        Ok(())
    }

    /// Moves to the next version, in this block or the next.
    fn step(&mut self) -> Result<()> {
        let Some(block) = self.block.as_mut() else { return Ok(()) };
        if block.step()? {
            self.tail = order_tail(block.current());
            Ok(())
        } else {
            self.next_block()
        }
    }
}

impl SortedKeys for ColumnCursor<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.block.as_ref().map(|_| &self.tail[..])
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        match &self.block {
            // Within the current block: move on in it.
            Some(block) if block.last_tail() >= target => self.skip_below(target),
            Some(_) => self.reposition(target),
            None => Ok(()),
        }
    }

    fn advance(&mut self) -> Result<()> {
        self.step()
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
