//! Row numbers: the compact reference keyword blocks hold instead of row
//! keys (format 5). The one owner of `t/<table>/kr`'s bytes:
//!
//! ```text
//! 01 ‖ number (u32 BE)  ->  row key (unsalted)
//! 02 ‖ row key          ->  number (u32 BE)
//! ```
//!
//! 00                    ->  the next number to give (u32 BE)
//!
//! A row has a number while it has keyword cells: the write that gives a
//! row its first cells gives it the next number, the write that takes its
//! last ones removes it. A number is never given twice, so what a number
//! names never changes: a reader may keep it ([`NameCache`]). Numbers start
//! at 1; the upgrade from format 4 numbers the rows in key order.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use heed::{RoTxn, RwTxn};

use crate::db::BytesDb;
use crate::error::{Error, Result};

const NEXT: &[u8] = &[0];
const BY_NUMBER: u8 = 1;
const BY_KEY: u8 = 2;

fn number_key(n: u32) -> [u8; 5] {
    let b = n.to_be_bytes();
    [BY_NUMBER, b[0], b[1], b[2], b[3]]
}

fn key_key(row: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + 1);
    k.push(BY_KEY);
    k.extend_from_slice(row);
    k
}

fn lmdb(e: heed::Error) -> Error {
    Error::lmdb("keyword row numbers", e)
}

/// The row key of number `n`, borrowed from the transaction's pages.
pub(crate) fn key_of<'t>(txn: &'t RoTxn<'_>, db: &BytesDb, db_name: &str, n: u32) -> Result<&'t [u8]> {
    db.get(txn, &number_key(n)).map_err(lmdb)?.ok_or_else(|| {
        Error::corrupted(db_name, &number_key(n), "a keyword block names a row number no row has")
    })
}

/// The number of row `row`, if it has one.
pub(crate) fn number_of(txn: &RoTxn<'_>, db: &BytesDb, db_name: &str, row: &[u8]) -> Result<Option<u32>> {
    let Some(v) = db.get(txn, &key_key(row)).map_err(lmdb)? else { return Ok(None) };
    v.first_chunk::<4>()
        .map(|b| Some(u32::from_be_bytes(*b)))
        .ok_or_else(|| Error::corrupted(db_name, &key_key(row), "bad row number"))
}

/// The next number to give: the kept counter, else (a store numbered
/// before the counter) one past the greatest in use.
pub(crate) fn next_number(txn: &RoTxn<'_>, db: &BytesDb) -> Result<u32> {
    if let Some(v) = db.get(txn, NEXT).map_err(lmdb)?.and_then(|v| v.first_chunk::<4>()) {
        return Ok(u32::from_be_bytes(*v));
    }
    let last = db.get_lower_than(txn, &[BY_KEY]).map_err(lmdb)?;
    Ok(match last {
        Some((k, _)) if k.len() == 5 && k[0] == BY_NUMBER => u32::from_be_bytes([k[1], k[2], k[3], k[4]]),
        _ => 0,
    }
    .saturating_add(1))
}

/// Keeps the next number to give.
pub(crate) fn set_next_number(wtxn: &mut RwTxn, db: &BytesDb, n: u32) -> Result<()> {
    db.put(wtxn, NEXT, &n.to_be_bytes()).map_err(lmdb)
}

/// Gives row `row` number `n` (both directions).
pub(crate) fn put(wtxn: &mut RwTxn, db: &BytesDb, row: &[u8], n: u32) -> Result<()> {
    db.put(wtxn, &number_key(n), row).map_err(lmdb)?;
    db.put(wtxn, &key_key(row), &n.to_be_bytes()).map_err(lmdb)
}

/// Takes row `row`'s number `n` away.
pub(crate) fn remove(wtxn: &mut RwTxn, db: &BytesDb, row: &[u8], n: u32) -> Result<()> {
    db.delete(wtxn, &number_key(n)).map_err(lmdb)?;
    db.delete(wtxn, &key_key(row)).map_err(lmdb).map(drop)
}

/// How many rows have numbers.
pub(crate) fn count(txn: &RoTxn<'_>, db: &BytesDb) -> Result<u64> {
    let mut n = 0;
    for item in db.prefix_iter(txn, &[BY_NUMBER]).map_err(lmdb)? {
        item.map_err(lmdb)?;
        n += 1;
    }
    Ok(n)
}

/// Row keys by number in one read transaction: each number looked up in
/// LMDB once (a scan of a partition meets each row once per term).
pub(crate) struct Names<'t> {
    txn: &'t RoTxn<'t>,
    db: &'t BytesDb,
    db_name: &'t str,
    seen: HashMap<u32, &'t [u8]>,
}

impl<'t> Names<'t> {
    pub fn new(txn: &'t RoTxn<'t>, db: &'t BytesDb, db_name: &'t str) -> Names<'t> {
        Names { txn, db, db_name, seen: HashMap::new() }
    }

    /// The row key of number `n`.
    #[inline]
    pub fn key(&mut self, n: u32) -> Result<&'t [u8]> {
        if let Some(k) = self.seen.get(&n) {
            return Ok(k);
        }
        let k = key_of(self.txn, self.db, self.db_name, n)?;
        self.seen.insert(n, k);
        Ok(k)
    }
}

/// Row keys by number kept across transactions: a number names one key
/// for as long as it names any (numbers are never given twice), so a key
/// read in any snapshot holds in every snapshot whose blocks hold the
/// number. Bounded: emptied when it reaches [`NameCache::MAX`] keys.
#[derive(Debug, Default)]
pub(crate) struct NameCache {
    keys: RwLock<HashMap<u32, Arc<[u8]>>>,
}

impl NameCache {
    /// Keys kept at most.
    const MAX: usize = 1 << 20;

    /// The key of number `n`, from the cache or `txn`.
    pub fn key(&self, txn: &RoTxn<'_>, db: &BytesDb, db_name: &str, n: u32) -> Result<Arc<[u8]>> {
        if let Some(k) = self.keys.read().ok().and_then(|keys| keys.get(&n).cloned()) {
            return Ok(k);
        }
        let key: Arc<[u8]> = Arc::from(key_of(txn, db, db_name, n)?);
        if let Ok(mut keys) = self.keys.write() {
            if keys.len() >= Self::MAX {
                keys.clear();
            }
            keys.insert(n, key.clone());
        }
        Ok(key)
    }
}
