//! Access keys as the store keeps them: one record per key in the `keys`
//! database (the key's uid -> its record as JSON), never the key itself,
//! only a keyed hash of its secret part that the server computes with the
//! store's own secret (kept in `meta` under `keys/secret`). Every change
//! bumps `keys/version`, so a process holding a cache of the records sees
//! in one read whether it is current. What a key may do is the server's
//! business; the store only keeps the records.

use heed::{RoTxn, RwTxn};
use serde::{Deserialize, Serialize};

use super::{BytesDb, META, META_KEYS_SECRET, META_KEYS_VERSION};
use crate::error::{Error, ErrorKind, Result};

/// One access key, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRecord {
    /// Its public id (part of the key, so the record is found without
    /// comparing secrets).
    pub uid: String,
    /// Keyed hash of the key's secret part (hex), computed with
    /// [`crate::Store::key_secret`].
    pub hash: String,
    /// What it may do (`search`, `read`, `write`, `changes`, `admin`, or
    /// `*` for all).
    pub actions: Vec<String>,
    /// The tables it may touch; empty for all.
    #[serde(default)]
    pub tables: Vec<String>,
    /// The partitions it is confined to; empty for all.
    #[serde(default)]
    pub partitions: Vec<String>,
    /// When it stops working (ms since the epoch); `None` for never.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// When it was made (ms since the epoch).
    pub created_at_ms: u64,
}

/// The keys database of an open store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keys {
    pub db: BytesDb,
    pub meta: BytesDb,
}

fn corrupted(key: &[u8], detail: String) -> Error {
    Error::corrupted(super::KEYS, key, detail)
}

impl Keys {
    /// Every record, by uid.
    pub fn all(&self, txn: &RoTxn<'_>) -> Result<Vec<KeyRecord>> {
        let mut out = Vec::new();
        for item in self.db.iter(txn).map_err(|e| Error::lmdb("read keys", e))? {
            let (k, v) = item.map_err(|e| Error::lmdb("read keys", e))?;
            out.push(
                serde_json::from_slice(v)
                    .map_err(|e| corrupted(k, format!("key record does not parse: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Stores a new record; `false` when its uid is taken.
    pub fn insert(&self, wtxn: &mut RwTxn, record: &KeyRecord) -> Result<bool> {
        if self.db.get(wtxn, record.uid.as_bytes()).map_err(|e| Error::lmdb("read keys", e))?.is_some() {
            return Ok(false);
        }
        let json = serde_json::to_vec(record).map_err(|e| corrupted(record.uid.as_bytes(), e.to_string()))?;
        self.db.put(wtxn, record.uid.as_bytes(), &json).map_err(|e| Error::lmdb("write key", e))?;
        self.bump(wtxn)?;
        Ok(true)
    }

    /// Removes a record; `false` when there was none.
    pub fn remove(&self, wtxn: &mut RwTxn, uid: &str) -> Result<bool> {
        let removed = self.db.delete(wtxn, uid.as_bytes()).map_err(|e| Error::lmdb("delete key", e))?;
        if removed {
            self.bump(wtxn)?;
        }
        Ok(removed)
    }

    /// The version of the key set `txn` sees (0 before any change).
    pub fn version(&self, txn: &RoTxn<'_>) -> Result<u64> {
        super::meta::read_u64(self.meta, txn, META_KEYS_VERSION, "keys/version")
    }

    fn bump(&self, wtxn: &mut RwTxn) -> Result<()> {
        let next = self.version(wtxn)? + 1;
        self.meta
            .put(wtxn, META_KEYS_VERSION, &next.to_be_bytes())
            .map_err(|e| Error::lmdb("write keys version", e))
    }

    /// The store's secret for hashing keys, if it has one yet.
    pub fn secret(&self, txn: &RoTxn<'_>) -> Result<Option<[u8; 32]>> {
        match self.meta.get(txn, META_KEYS_SECRET).map_err(|e| Error::lmdb("read key secret", e))? {
            None => Ok(None),
            Some(bytes) => bytes.try_into().map(Some).map_err(|_| {
                ErrorKind::Corrupted {
                    db: META.to_owned(),
                    key: "keys/secret".to_owned(),
                    detail: "not 32 bytes".to_owned(),
                }
                .into()
            }),
        }
    }

    /// Sets the secret unless one is set; returns the one that holds.
    pub fn init_secret(&self, wtxn: &mut RwTxn, fresh: [u8; 32]) -> Result<[u8; 32]> {
        if let Some(secret) = self.secret(wtxn)? {
            return Ok(secret);
        }
        self.meta.put(wtxn, META_KEYS_SECRET, &fresh).map_err(|e| Error::lmdb("write key secret", e))?;
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::KeyRecord;

    /// The record's JSON is pinned: keys made by one build work in the next.
    #[test]
    fn key_record_json_is_pinned() {
        let record = KeyRecord {
            uid: "a1b2".into(),
            hash: "00ff".into(),
            actions: vec!["search".into()],
            tables: vec!["mail".into()],
            partitions: vec!["cash-m".into()],
            expires_at_ms: Some(5),
            description: "d".into(),
            created_at_ms: 1,
        };
        let json = r#"{"uid":"a1b2","hash":"00ff","actions":["search"],"tables":["mail"],"partitions":["cash-m"],"expires_at_ms":5,"description":"d","created_at_ms":1}"#;
        assert_eq!(serde_json::to_string(&record).unwrap(), json);
        assert_eq!(serde_json::from_str::<KeyRecord>(json).unwrap(), record);
    }
}
