//! Writes in ascending key order through one LMDB cursor.
//!
//! `Database::put` descends the B-tree from the root for every key, and in
//! a write transaction each page on the way is looked up in the dirty list.
//! A put through a positioned cursor first checks whether the key falls in
//! the cursor's leaf page and, if it does, searches that page only. Keys
//! written in order mostly do, so index entries, merges and keyword cells
//! (which a batch writes sorted anyway) go through a [`SortedPuts`].

use heed::types::Bytes;
use heed::{PutFlags, RwIter, RwTxn};

use super::BytesDb;
use crate::error::{Error, Result};

/// A cursor over one database for puts in (mostly) ascending key order.
/// Any order is correct; ascending order is what makes it fast.
pub(crate) struct SortedPuts<'t> {
    cursor: RwIter<'t, Bytes, Bytes>,
    what: &'static str,
}

impl<'t> SortedPuts<'t> {
    /// Opens a cursor on `db`; `what` names the write in errors.
    pub(crate) fn new(wtxn: &'t mut RwTxn, db: &BytesDb, what: &'static str) -> Result<SortedPuts<'t>> {
        Ok(SortedPuts { cursor: db.iter_mut(wtxn).map_err(|e| Error::lmdb(what, e))?, what })
    }

    /// Writes `value` under `key`, replacing any value there.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: heed asks that no value read from this database be held
        // across the write. The cursor holds the transaction mutably
        // borrowed for its whole life, so `key` and `value` cannot borrow
        // from it, and no read of the database can happen meanwhile. The
        // empty flags make this a plain insert-or-replace at `key` (LMDB's
        // `mdb_cursor_put` with no flags), not a write to the current entry.
        #[allow(unsafe_code)]
        let result = unsafe { self.cursor.put_current_with_options::<Bytes>(PutFlags::empty(), key, value) };
        result.map_err(|e| Error::lmdb(self.what, e))
    }

    /// Writes `value` under `key`, which must sort after every key of the
    /// database (LMDB's `MDB_APPEND`: no search, pages filled completely);
    /// an error if it does not.
    pub(crate) fn append(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: as in `put`; `APPEND` only changes where LMDB looks for
        // the key's place (the last page) and fails if it does not sort last.
        #[allow(unsafe_code)]
        let result = unsafe { self.cursor.put_current_with_options::<Bytes>(PutFlags::APPEND, key, value) };
        result.map_err(|e| Error::lmdb(self.what, e))
    }
}
