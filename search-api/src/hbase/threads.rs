//! rowsearch's thread entries in HBase: each threaded rowsearch table `T`
//! has a companion HBase table `T.threads`, family `t`, one HBase row per
//! entry (the entry's key as the row key, its value in `t:v`), in the
//! layout the store owns (`rowsearch_store::ThreadEntries`: id, member and
//! subject entries). Threads are assigned by the same rule as in the store
//! (`rowsearch_store::thread_rows`), over [`Entries`]: reads of a batch's
//! partitions in one scan each, writes kept until the batch's rows are
//! ready and then put in one call. HBase has no transaction across rows:
//! one process writes a table's threads at a time (a lock per table in
//! [`super::HbaseSource`]); the entries are written before the rows, so a
//! crash between leaves entries a second write of the same rows (an
//! ingest run again) finds and keeps.

use std::collections::{BTreeMap, BTreeSet};

use rowsearch_store::{PutCell, ThreadEntries, prefix_successor};

use super::tables::HbaseError;
use crate::thrift::HbaseClient;

/// The companion table's suffix.
pub const SUFFIX: &str = rowsearch_store::THREADS_SUFFIX;
const FAMILY: &str = "t";
const QUALIFIER: &[u8] = b"v";
/// Rows scanned a call.
const PAGE: usize = 2_000;

/// The companion table of `table`.
pub fn companion(table: &str) -> String {
    format!("{table}{SUFFIX}")
}

/// Creates `table`'s companion when missing.
///
/// # Errors
/// `Client`.
pub fn create(client: &mut HbaseClient, table: &str) -> Result<(), HbaseError> {
    let name = companion(table);
    if client.table_exists(&name)? {
        return Ok(());
    }
    match client.create_table(&name, &[rowsearch_store::FamilySchema::new(FAMILY).max_versions(1)], &[]) {
        // Made meanwhile by another process.
        Err(crate::thrift::ClientError::Refused { .. }) if client.table_exists(&name)? => Ok(()),
        other => Ok(other?),
    }
}

/// Drops `table`'s companion, if it has one.
///
/// # Errors
/// `Client`.
pub fn drop_companion(client: &mut HbaseClient, table: &str) -> Result<(), HbaseError> {
    let name = companion(table);
    if client.table_exists(&name)? {
        client.drop_table(&name)?;
    }
    Ok(())
}

fn err(e: impl Into<HbaseError>) -> rowsearch_store::Error {
    rowsearch_store::Error::callback(e.into())
}

/// A table's thread entries in HBase, as the linking rule reads and writes
/// them: what was read or written is known here (written entries wait for
/// [`Entries::flush`]); a partition announced is read whole, once.
pub struct Entries<'c> {
    client: &'c mut HbaseClient,
    name: String,
    /// Entries known: `None` when known absent (or deleted here).
    known: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Keys written here and not yet flushed.
    dirty: BTreeSet<Vec<u8>>,
    /// Key prefixes read whole: every entry under one is in `known`.
    whole: Vec<Vec<u8>>,
}

impl<'c> Entries<'c> {
    /// The entries of `table` (its companion must exist).
    pub fn new(client: &'c mut HbaseClient, table: &str) -> Entries<'c> {
        Entries {
            client,
            name: companion(table),
            known: BTreeMap::new(),
            dirty: BTreeSet::new(),
            whole: Vec::new(),
        }
    }

    fn in_whole(&self, key: &[u8]) -> bool {
        self.whole.iter().any(|p| key.starts_with(p))
    }

    /// Reads every entry under `prefix` into `known` (those known here
    /// stay as they are).
    fn load(&mut self, prefix: &[u8]) -> Result<(), HbaseError> {
        if self.in_whole(prefix) {
            return Ok(());
        }
        let stop = prefix_successor(prefix);
        let mut found = Vec::new();
        self.client.scan(&self.name, (Some(prefix), stop.as_deref()), None, PAGE, &mut |row| {
            if let Some(v) = row.value(FAMILY, QUALIFIER) {
                found.push((row.key.clone(), v.to_vec()));
            }
        })?;
        for (k, v) in found {
            self.known.entry(k).or_insert(Some(v));
        }
        self.whole.push(prefix.to_vec());
        Ok(())
    }

    fn known_range(&self, from: &[u8], to: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.known
            .range(from.to_vec()..)
            .take_while(|(k, _)| to.is_none_or(|to| k.as_slice() <= to))
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
            .collect()
    }

    /// Writes the entries set and removed here to HBase: the puts in one
    /// call, each removal a call.
    ///
    /// # Errors
    /// `Client`.
    pub fn flush(&mut self) -> Result<(), HbaseError> {
        let mut puts = Vec::new();
        for key in std::mem::take(&mut self.dirty) {
            match self.known.get(&key).cloned().flatten() {
                Some(value) => puts.push((key, vec![PutCell::new(FAMILY, QUALIFIER.to_vec(), value)])),
                None => self.client.delete_row(&self.name, &key)?,
            }
        }
        if !puts.is_empty() {
            self.client.put_rows(&self.name, &puts)?;
        }
        Ok(())
    }
}

impl ThreadEntries for Entries<'_> {
    fn get(&mut self, key: &[u8]) -> rowsearch_store::Result<Option<Vec<u8>>> {
        if let Some(v) = self.known.get(key) {
            return Ok(v.clone());
        }
        if self.in_whole(key) {
            return Ok(None);
        }
        let row = self.client.get_rows(&self.name, &[key]).map_err(err)?.pop().flatten();
        let value = row.and_then(|r| r.value(FAMILY, QUALIFIER).map(<[u8]>::to_vec));
        self.known.insert(key.to_vec(), value.clone());
        Ok(value)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> rowsearch_store::Result<()> {
        self.known.insert(key.to_vec(), Some(value.to_vec()));
        self.dirty.insert(key.to_vec());
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> rowsearch_store::Result<()> {
        self.known.insert(key.to_vec(), None);
        self.dirty.insert(key.to_vec());
        Ok(())
    }

    fn range(&mut self, from: &[u8], to: &[u8]) -> rowsearch_store::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if !self.in_whole(from) {
            // The smallest prefix of both bounds, read whole.
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            self.load(&from[..common]).map_err(err)?;
        }
        Ok(self.known_range(from, Some(to)))
    }

    fn prefix(&mut self, prefix: &[u8]) -> rowsearch_store::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.load(prefix).map_err(err)?;
        Ok(self.known_range(prefix, None).into_iter().take_while(|(k, _)| k.starts_with(prefix)).collect())
    }

    fn will_read_partitions(&mut self, partitions: &[&[u8]]) -> rowsearch_store::Result<()> {
        for p in partitions {
            for prefix in rowsearch_store::thread_partition_prefixes(p) {
                self.load(&prefix).map_err(err)?;
            }
        }
        Ok(())
    }
}
