//! Version cursors over keyword blocks: the sorted tails of one term in
//! one or more fields, with seeking, for the lookups' leapfrog. A cursor
//! decodes a block's versions as it reaches them (skipping the positions)
//! and moves within it; a seek past the block's last tail goes back to
//! LMDB.

use std::ops::Bound;

use heed::RoTxn;
use heed::types::Bytes;

use super::block::{BlockReader, date_of};
use super::handle::SearchHandle;
use super::rows;
use crate::error::{Error, Result};
use crate::key;
use crate::stream::SortedKeys;

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
    /// The current block, on the current version (`None`: at the end).
    /// Versions are decoded as the cursor reaches them: a lookup that
    /// wants the newest ten of a term decodes ten, not the whole block.
    block: Option<BlockReader<'t>>,
    /// The current version's tail (its row number turned into its key
    /// only where the cursor stops: a seek past versions of other dates
    /// compares dates alone).
    tail: Vec<u8>,
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
            tail: Vec::new(),
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
        self.iter = Some(self.search.db.range(self.txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
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
        let mut block = BlockReader::new(&self.search.db_name, k, self.prefix_len, v)?;
        self.read += block.len() as u64;
        // A block holds at least one version (`BlockReader::new` checks).
        if block.step()? {
            self.block = Some(block);
        }
        Ok(())
    }

    /// Moves to the next version, in this block or the next.
    fn step(&mut self) -> Result<()> {
        if let Some(block) = self.block.as_mut()
            && !block.step()?
        {
            self.next_block()?;
        }
        Ok(())
    }

    /// Builds the current version's tail.
    fn land(&mut self) -> Result<()> {
        self.tail.clear();
        let Some(block) = &self.block else { return Ok(()) };
        if block.at_last() {
            self.tail.extend_from_slice(block.last_tail());
        } else {
            let v = block.current();
            self.tail.extend_from_slice(&v.date.to_be_bytes());
            let search = self.search;
            self.tail.extend_from_slice(rows::key_of(self.txn, &search.rows, &search.rows_name, v.row)?);
        }
        Ok(())
    }

    /// Moves to the first version at or after `target`.
    fn skip_below(&mut self, target: &[u8]) -> Result<()> {
        let target_date = (target.len() >= 8).then(|| date_of(target));
        while let Some(block) = &self.block {
            let date = block.current().date;
            match target_date {
                Some(t) if date < t => self.step()?,
                Some(t) if date > t => break,
                _ if target.is_empty() => break,
                _ => {
                    // The same date (or a short target): the keys decide.
                    self.land()?;
                    if self.tail.as_slice() >= target {
                        return Ok(());
                    }
                    self.step()?;
                }
            }
        }
        self.land()
    }
}

impl SortedKeys for ColumnCursor<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.block.as_ref().map(|_| self.tail.as_slice())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        match &self.block {
            Some(_) if self.tail.as_slice() >= target => Ok(()),
            // Within the current block: move on in it.
            Some(block) if block.last_tail() >= target => self.skip_below(target),
            Some(_) => self.reposition(target),
            None => Ok(()),
        }
    }

    fn advance(&mut self) -> Result<()> {
        self.step()?;
        self.land()
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
