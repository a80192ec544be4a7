//! Version cursors over keyword blocks: the sorted tails of one term in
//! one or more fields, with seeking, for the lookups' leapfrog. A cursor
//! decodes a block's tails once (skipping the positions) and moves within
//! it; a seek past the block's last tail goes back to LMDB.

use std::ops::Bound;

use heed::RoTxn;
use heed::types::Bytes;

use super::block::BlockReader;
use crate::db::BytesDb;
use crate::error::{Error, Result};
use crate::key;
use crate::stream::SortedKeys;

/// The versions of one column (partition, field, term).
pub(crate) struct ColumnCursor<'t> {
    txn: &'t RoTxn<'t>,
    db: &'t BytesDb,
    db_name: &'t str,
    prefix: Vec<u8>,
    end: Option<Vec<u8>>,
    iter: Option<heed::RoRange<'t, Bytes, Bytes>>,
    /// The current block's tails, one after the other.
    tails: Vec<u8>,
    ends: Vec<usize>,
    at: usize,
    read: u64,
}

impl<'t> ColumnCursor<'t> {
    pub fn new(txn: &'t RoTxn<'t>, db: &'t BytesDb, db_name: &'t str, prefix: Vec<u8>) -> Result<Self> {
        let end = key::prefix_successor(&prefix);
        let mut cursor = ColumnCursor {
            txn,
            db,
            db_name,
            prefix,
            end,
            iter: None,
            tails: Vec::new(),
            ends: Vec::new(),
            at: 0,
            read: 0,
        };
        cursor.reposition(&[])?;
        Ok(cursor)
    }

    fn tail(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.tails[start..self.ends[i]]
    }

    /// Reads blocks from LMDB again, from the one holding `target`.
    fn reposition(&mut self, target: &[u8]) -> Result<()> {
        let lower = [self.prefix.as_slice(), target].concat();
        let range = (
            Bound::Included(lower.as_slice()),
            self.end.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        );
        self.iter = Some(self.db.range(self.txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
        self.next_block()?;
        self.skip_below(target);
        Ok(())
    }

    /// Decodes the next block's tails (none left: empty).
    fn next_block(&mut self) -> Result<()> {
        self.tails.clear();
        self.ends.clear();
        self.at = 0;
        let Some(iter) = self.iter.as_mut() else { return Ok(()) };
        let Some(item) = iter.next() else {
            self.iter = None;
            return Ok(());
        };
        let (k, v) = item.map_err(|e| Error::lmdb("lookup", e))?;
        let mut block = BlockReader::new(self.db_name, k, self.prefix.len(), v)?;
        while let Some((tail, _)) = block.next()? {
            self.tails.extend_from_slice(tail);
            self.ends.push(self.tails.len());
        }
        self.read += block.len() as u64;
        Ok(())
    }

    fn skip_below(&mut self, target: &[u8]) {
        while self.at < self.ends.len() && self.tail(self.at) < target {
            self.at += 1;
        }
    }
}

impl SortedKeys for ColumnCursor<'_> {
    fn peek(&self) -> Option<&[u8]> {
        (self.at < self.ends.len()).then(|| self.tail(self.at))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        match self.ends.last() {
            // Within the current block: move on in it.
            Some(_) if self.tail(self.ends.len() - 1) >= target => {
                self.skip_below(target);
                Ok(())
            }
            Some(_) => self.reposition(target),
            None => Ok(()),
        }
    }

    fn advance(&mut self) -> Result<()> {
        self.at += 1;
        if self.at >= self.ends.len() && !self.ends.is_empty() {
            self.next_block()?;
        }
        Ok(())
    }

    fn entries_read(&self) -> u64 {
        self.read
    }
}

/// One term in any of several fields: the union of their columns.
pub(crate) struct FieldUnion<'t> {
    columns: Vec<ColumnCursor<'t>>,
}

impl<'t> FieldUnion<'t> {
    pub fn new(columns: Vec<ColumnCursor<'t>>) -> Self {
        FieldUnion { columns }
    }
}

impl SortedKeys for FieldUnion<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.columns.iter().filter_map(SortedKeys::peek).min()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.columns.iter_mut().try_for_each(|c| c.seek(target))
    }

    fn advance(&mut self) -> Result<()> {
        if let [only] = self.columns.as_mut_slice() {
            return only.advance();
        }
        let Some(current) = self.peek().map(<[u8]>::to_vec) else { return Ok(()) };
        // Every field holding the current version moves past it (a term can
        // be in several fields of one row).
        for c in &mut self.columns {
            if c.peek() == Some(current.as_slice()) {
                c.advance()?;
            }
        }
        Ok(())
    }

    fn entries_read(&self) -> u64 {
        self.columns.iter().map(SortedKeys::entries_read).sum()
    }
}
