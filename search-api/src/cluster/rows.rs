//! The cluster's rows in HBase: table `rowsearch_cluster` in the tables'
//! namespace (family `f`, one version, not replicated; made by the first
//! searcher). The one owner of their bytes (store/FORMAT.md, "A cluster of
//! searchers in HBase").
//!
//! ```text
//! m 00 cluster 00 searcher-id          f:m = JSON {"addr","seen_ms","started_ms","lag_ms"}
//! l 00 cluster 00 table 00 shard(u32 BE) f:l = JSON Lease {"holder","addr","expires_ms","since_ms"}
//! s 00 cluster                 f:s = the cluster's secret (64 hex digits)
//! ```
//!
//! The secret is written once, by the first searcher (a check-and-put
//! against no row), and read by every other: searchers send it with the
//! calls they make to each other's shards (`wire.rs`), so only those that
//! can read the cluster's rows in HBase may make them.
//!
//! A member row is rewritten every round (its heartbeat). A lease row is
//! only ever changed by a check-and-put against the bytes the searcher
//! read, so of two searchers acting on one view, one wins.

use std::collections::BTreeMap;

use rowsearch_store::{FamilySchema, PutCell};

use super::plan::{Lease, ShardId};
use crate::hbase::{HbaseError, HbaseTables};

/// The cluster table, in the namespace of the tables.
pub const CLUSTER: &str = "rowsearch_cluster";
const FAMILY: &str = "f";
const MEMBER: &[u8] = b"m";
const LEASE: &[u8] = b"l";
const SECRET: &[u8] = b"s";

/// A searcher as its heartbeat row says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// Its HTTP address.
    pub addr: String,
    /// Its last heartbeat (ms).
    pub seen_ms: u64,
    /// When it started (ms).
    pub started_ms: u64,
    /// How far its index of each searchable table is behind the writes it
    /// knows of (ms), as of its heartbeat.
    #[serde(default)]
    pub lag_ms: BTreeMap<String, u64>,
}

/// A lease row's value as read: the lease and its exact bytes (what a
/// check-and-put expects).
#[derive(Debug, Clone)]
pub struct Read {
    pub lease: Lease,
    pub bytes: Vec<u8>,
}

fn prefix(kind: &[u8], cluster: &str) -> Vec<u8> {
    [kind, b"\0", cluster.as_bytes(), b"\0"].concat()
}

fn member_key(cluster: &str, id: &str) -> Vec<u8> {
    [prefix(MEMBER, cluster), id.as_bytes().to_vec()].concat()
}

fn lease_key(cluster: &str, shard: &ShardId) -> Vec<u8> {
    [prefix(LEASE, cluster), shard.table.as_bytes().to_vec(), vec![0], shard.shard.to_be_bytes().to_vec()]
        .concat()
}

fn shard_of_key(cluster: &str, key: &[u8]) -> Option<ShardId> {
    let rest = key.strip_prefix(prefix(LEASE, cluster).as_slice())?;
    let (table, shard) = rest.split_at_checked(rest.len().checked_sub(5)?)?;
    let (zero, shard) = shard.split_first()?;
    (*zero == 0).then_some(())?;
    Some(ShardId {
        table: String::from_utf8(table.to_vec()).ok()?,
        shard: u32::from_be_bytes(shard.try_into().ok()?),
    })
}

/// Rows' keys with one cell's value each.
type KeyedValues = Vec<(Vec<u8>, Vec<u8>)>;

/// Every row under `prefix`: (key, value of the one cell `qualifier`).
fn scan_prefix(tables: &HbaseTables, prefix: &[u8], qualifier: &[u8]) -> Result<KeyedValues, HbaseError> {
    let stop = rowsearch_store::prefix_successor(prefix);
    let mut out = Vec::new();
    tables.client().scan(CLUSTER, (Some(prefix), stop.as_deref()), None, 1000, &mut |row| {
        if let Some(cell) = row.cells.iter().find(|c| &*c.family == FAMILY && c.qualifier == qualifier) {
            out.push((row.key.clone(), cell.value.clone()));
        }
    })?;
    Ok(out)
}

/// Makes the cluster table when missing.
///
/// # Errors
/// `Client`.
pub fn ensure_table(tables: &HbaseTables) -> Result<(), HbaseError> {
    crate::hbase::ensure(&mut tables.client(), CLUSTER, FamilySchema::new(FAMILY).max_versions(1))?;
    Ok(())
}

/// The cluster's secret: the one in HBase, or `fresh` written there when
/// none is yet (see the module docs).
///
/// # Errors
/// `Client`.
pub fn secret(tables: &HbaseTables, cluster: &str, fresh: &str) -> Result<String, HbaseError> {
    let key = [SECRET, b"\0", cluster.as_bytes()].concat();
    let cell = PutCell::new(FAMILY, SECRET.to_vec(), fresh.as_bytes().to_vec());
    if tables.client().check_and_put(CLUSTER, &key, (FAMILY, SECRET), None, &[cell])? {
        return Ok(fresh.to_owned());
    }
    let found = scan_prefix(tables, &key, SECRET)?;
    let value = found.into_iter().find(|(k, _)| *k == key).map(|(_, v)| v).unwrap_or_default();
    Ok(String::from_utf8_lossy(&value).into_owned())
}

/// Writes `id`'s heartbeat.
///
/// # Errors
/// `Client`.
pub fn put_member(tables: &HbaseTables, cluster: &str, id: &str, member: &Member) -> Result<(), HbaseError> {
    let value = serde_json::to_vec(member).unwrap_or_default();
    let cell = PutCell::new(FAMILY, MEMBER.to_vec(), value);
    tables.client().put_rows(CLUSTER, &[(member_key(cluster, id), vec![cell])])?;
    Ok(())
}

/// Every searcher of `cluster` that ever wrote a heartbeat, by id (rows
/// that do not parse are left out).
///
/// # Errors
/// `Client`.
pub fn members(tables: &HbaseTables, cluster: &str) -> Result<BTreeMap<String, Member>, HbaseError> {
    let at = prefix(MEMBER, cluster).len();
    Ok(scan_prefix(tables, &prefix(MEMBER, cluster), MEMBER)?
        .into_iter()
        .filter_map(|(key, value)| {
            let id = String::from_utf8(key.get(at..)?.to_vec()).ok()?;
            Some((id, serde_json::from_slice(&value).ok()?))
        })
        .collect())
}

/// Every lease row of `cluster`, by shard.
///
/// # Errors
/// `Client`.
pub fn leases(tables: &HbaseTables, cluster: &str) -> Result<BTreeMap<ShardId, Read>, HbaseError> {
    Ok(scan_prefix(tables, &prefix(LEASE, cluster), LEASE)?
        .into_iter()
        .filter_map(|(key, bytes)| {
            let lease = serde_json::from_slice(&bytes).ok()?;
            Some((shard_of_key(cluster, &key)?, Read { lease, bytes }))
        })
        .collect())
}

/// Sets `shard`'s lease to `lease` if its row still holds `expected`
/// (`None`: no lease row yet); whether it did.
///
/// # Errors
/// `Client`.
pub fn swap_lease(
    tables: &HbaseTables,
    cluster: &str,
    shard: &ShardId,
    expected: Option<&[u8]>,
    lease: &Lease,
) -> Result<bool, HbaseError> {
    let value = serde_json::to_vec(lease).unwrap_or_default();
    let cell = PutCell::new(FAMILY, LEASE.to_vec(), value);
    let key = lease_key(cluster, shard);
    Ok(tables.client().check_and_put(CLUSTER, &key, (FAMILY, LEASE), expected, &[cell])?)
}

#[cfg(test)]
mod tests {
    use super::{ShardId, lease_key, shard_of_key};

    #[test]
    fn lease_keys_name_their_shard_and_cluster() {
        let shard = ShardId { table: "mail".into(), shard: 7 };
        let key = lease_key("c1", &shard);
        assert_eq!(key, b"l\0c1\0mail\0\0\0\0\x07");
        assert_eq!(shard_of_key("c1", &key), Some(shard));
        assert_eq!(shard_of_key("c2", &key), None, "another cluster's");
        assert_eq!(shard_of_key("c1", b"l\0c1\0x"), None);
    }
}
