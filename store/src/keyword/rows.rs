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
use std::hash::{BuildHasherDefault, Hasher};
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

/// Hashes a row number with one multiplication (Fibonacci hashing): the
/// maps below are keyed by numbers alone, which no one chooses.
#[derive(Default)]
pub(crate) struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by row number.
type ByNumber<V> = HashMap<u32, V, BuildHasherDefault<NumberHasher>>;

/// Row keys by number in one read transaction: each number looked up in
/// LMDB once (a scan of a partition meets each row once per term).
pub(crate) struct Names<'t> {
    txn: &'t RoTxn<'t>,
    db: &'t BytesDb,
    db_name: &'t str,
    seen: ByNumber<&'t [u8]>,
}

impl<'t> Names<'t> {
    pub fn new(txn: &'t RoTxn<'t>, db: &'t BytesDb, db_name: &'t str) -> Names<'t> {
        Names { txn, db, db_name, seen: ByNumber::default() }
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
    keys: RwLock<ByNumber<Arc<[u8]>>>,
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

/// What does not hold in a table's row numbers: a number and a key that
/// do not name each other both ways, a number the blocks refer to that
/// names no row, a numbered row no block refers to, a next number not past
/// every number in use. `referenced` are the numbers the blocks hold.
pub(crate) fn check(
    txn: &RoTxn<'_>,
    db: &BytesDb,
    referenced: &std::collections::HashSet<u32>,
) -> Result<Vec<(Vec<u8>, String)>> {
    let mut problems = Vec::new();
    let mut keys: HashMap<u32, Vec<u8>> = HashMap::new();
    for item in db.prefix_iter(txn, &[BY_NUMBER]).map_err(lmdb)? {
        let (k, key) = item.map_err(lmdb)?;
        let Some(n) = k.get(1..).and_then(|b| <[u8; 4]>::try_from(b).ok()).map(u32::from_be_bytes) else {
            problems.push((k.to_vec(), "a bad row number entry".to_owned()));
            continue;
        };
        let back = db.get(txn, &key_key(key)).map_err(lmdb)?.and_then(|v| v.first_chunk::<4>().copied());
        if back != Some(n.to_be_bytes()) {
            problems.push((key.to_vec(), format!("row number {n} names this row, which has {back:?}")));
        }
        keys.insert(n, key.to_vec());
    }
    let mut by_key = 0usize;
    for item in db.prefix_iter(txn, &[BY_KEY]).map_err(lmdb)? {
        let (k, v) = item.map_err(lmdb)?;
        by_key += 1;
        let n = v.first_chunk::<4>().map(|b| u32::from_be_bytes(*b));
        if n.and_then(|n| keys.get(&n)).map(Vec::as_slice) != Some(&k[1..]) {
            problems.push((k[1..].to_vec(), format!("has row number {n:?}, which does not name it")));
        }
    }
    if by_key != keys.len() {
        problems.push((Vec::new(), format!("{} numbers but {by_key} numbered keys", keys.len())));
    }
    let greatest = keys.keys().max().copied().unwrap_or(0);
    if let Some(next) = db.get(txn, NEXT).map_err(lmdb)?.and_then(|v| v.first_chunk::<4>().copied())
        && u32::from_be_bytes(next) <= greatest
    {
        problems.push((Vec::new(), format!("the next number {} is in use", u32::from_be_bytes(next))));
    }
    let mut unreferenced: Vec<(&u32, &Vec<u8>)> =
        keys.iter().filter(|(n, _)| !referenced.contains(n)).collect();
    unreferenced.sort();
    for (n, key) in unreferenced {
        problems.push((key.clone(), format!("has row number {n} but no keyword cells")));
    }
    let mut dangling: Vec<u32> = referenced.iter().filter(|n| !keys.contains_key(n)).copied().collect();
    dangling.sort_unstable();
    for n in dangling {
        problems.push((Vec::new(), format!("keyword cells refer to row number {n}, which names no row")));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn with_db(f: impl Fn(&mut RwTxn, &BytesDb)) {
        let dir = tempfile::tempdir().unwrap();
        let limits = crate::db::env::EnvLimits {
            map_size_bytes: 1 << 20,
            max_dbs: 1,
            max_readers: 8,
            durability: Default::default(),
        };
        let env = crate::db::env::Environment::open_shared(dir.path(), limits).unwrap();
        env.write_txn(|wtxn| {
            let db = env.create_db(wtxn, "kr", 1, "test")?;
            f(wtxn, &db);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn numbers_are_given_once_and_checked_both_ways() {
        with_db(|wtxn, db| {
            assert_eq!(next_number(wtxn, db).unwrap(), 1);
            put(wtxn, db, b"a", 1).unwrap();
            put(wtxn, db, b"b", 2).unwrap();
            set_next_number(wtxn, db, 3).unwrap();
            remove(wtxn, db, b"b", 2).unwrap();
            // The greatest number went, but the counter keeps it given.
            assert_eq!(next_number(wtxn, db).unwrap(), 3);
            assert_eq!(number_of(wtxn, db, "kr", b"a").unwrap(), Some(1));
            assert_eq!(key_of(wtxn, db, "kr", 1).unwrap(), b"a");
            assert!(key_of(wtxn, db, "kr", 2).is_err());
            let sound = check(wtxn, db, &HashSet::from([1])).unwrap();
            assert!(sound.is_empty(), "{sound:?}");
            // A number no cell refers to, a cell's number that names no row.
            let problems = check(wtxn, db, &HashSet::from([7])).unwrap();
            assert_eq!(problems.len(), 2, "{problems:?}");
            // One direction lost.
            db.delete(wtxn, &key_key(b"a")).unwrap();
            let problems = check(wtxn, db, &HashSet::from([1])).unwrap();
            assert!(problems.iter().any(|(k, p)| k == b"a" && p.contains("row number 1")), "{problems:?}");
            // A counter behind a number in use.
            put(wtxn, db, b"a", 1).unwrap();
            put(wtxn, db, b"c", 5).unwrap();
            let problems = check(wtxn, db, &HashSet::from([1, 5])).unwrap();
            assert!(problems.iter().any(|(_, p)| p.contains("next number 3 is in use")), "{problems:?}");
        });
    }
}
