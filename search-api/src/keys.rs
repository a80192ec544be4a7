//! Access keys (API.md, "Access keys"): making them, checking them, and what
//! each may do. Shared by the HTTP server and the CLI's `keys` commands.
//!
//! A key reads `rsk_<uid>_<secret>`: the uid (16 hex digits) is public and
//! finds the key's record; the secret (64 hex digits, 32 random bytes) is
//! never stored, only its keyed BLAKE3 hash with the store's own secret, and
//! checked by a constant-time comparison of hashes. The master key is held
//! the same way in memory: as the hash of what the operator gave.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rowsearch_store::{KeyRecord, Store};
use serde::Deserialize;

use crate::{Error, Result};

/// What a route needs of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing: `/health`.
    Public,
    /// Any valid key.
    Any,
    /// Searches, keyword lookups and suggestions.
    Search,
    /// Reading rows, scans, index lookups, table figures.
    Read,
    /// Writing rows.
    Write,
    /// Reading the change feed and managing its consumers.
    Changes,
    /// Tables, indexes, reindexes, jobs and metrics.
    Admin,
    /// Managing keys: the master key only.
    Master,
}

impl Action {
    /// Its name in a key's `actions`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Public => "public",
            Action::Any => "any",
            Action::Search => "search",
            Action::Read => "read",
            Action::Write => "write",
            Action::Changes => "changes",
            Action::Admin => "admin",
            Action::Master => "master",
        }
    }
}

/// The actions a key may be given.
pub const ACTIONS: &[&str] = &["search", "read", "write", "changes", "admin", "*"];

/// Who a request is.
#[derive(Debug, Clone)]
pub enum Access {
    /// The server runs without keys.
    Open,
    /// The master key.
    Master,
    /// A key and its record.
    Key(Arc<KeyRecord>),
}

impl Access {
    /// Whether it may do `action` (route-level).
    pub fn may(&self, action: Action) -> bool {
        match self {
            Access::Open | Access::Master => true,
            Access::Key(record) => match action {
                Action::Public | Action::Any => true,
                Action::Master => false,
                other => record.actions.iter().any(|a| a == "*" || a == other.name()),
            },
        }
    }

    /// Whether it reaches every table (no `tables` limit): what `/metrics`,
    /// whose figures name every table, needs besides `admin`.
    pub fn every_table(&self) -> bool {
        match self {
            Access::Key(record) => record.tables.is_empty() || record.tables.iter().any(|t| t == "*"),
            _ => true,
        }
    }

    /// Whether it may touch table `table`.
    pub fn may_touch(&self, table: &str) -> bool {
        match self {
            Access::Key(record) => {
                record.tables.is_empty() || record.tables.iter().any(|t| t == "*" || t == table)
            }
            _ => true,
        }
    }

    /// The partitions it is confined to; `None` for all.
    pub fn partitions(&self) -> Option<&[String]> {
        match self {
            Access::Key(record) if !record.partitions.is_empty() => Some(&record.partitions),
            _ => None,
        }
    }

    /// Whether it may see partition `p`.
    pub fn may_see(&self, p: &[u8]) -> bool {
        self.partitions().is_none_or(|ps| ps.iter().any(|x| x.as_bytes() == p))
    }
}

/// A new key, as `POST /keys` and `rowsearch keys create` take it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// What it may do: `search`, `read`, `write`, `changes`, `admin` (or `*`).
    pub actions: Vec<String>,
    /// The tables it may touch; empty (or `*`) for all.
    #[serde(default)]
    pub tables: Vec<String>,
    /// The partitions it is confined to; empty for all.
    #[serde(default)]
    pub partitions: Vec<String>,
    /// RFC 3339 time it stops working at.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: String,
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| Error::BadRequest(format!("no random bytes: {e}")))?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The store's secret for hashing keys (made on first use).
///
/// # Errors
/// `Store`.
pub fn store_secret(store: &Store) -> Result<[u8; 32]> {
    Ok(store.key_secret(random()?)?)
}

fn hash_secret(secret: &[u8; 32], key_secret: &str) -> blake3::Hash {
    blake3::keyed_hash(secret, key_secret.as_bytes())
}

/// Makes a key: its record is stored, the key itself returned (the only
/// time anyone sees it).
///
/// # Errors
/// `BadRequest` for an unknown action, no action, or an expiry that is not
/// RFC 3339 or is past; `Store`.
pub fn create(store: &Store, new: &NewKey) -> Result<(KeyRecord, String)> {
    if new.actions.is_empty() {
        return Err(Error::BadRequest("actions: give at least one of search, read, write, admin".into()));
    }
    if let Some(bad) = new.actions.iter().find(|a| !ACTIONS.contains(&a.as_str())) {
        return Err(Error::BadRequest(format!(
            "actions: {bad:?} is not one of search, read, write, admin, *"
        )));
    }
    let now_ms = store.now_ms();
    let expires_at_ms = match &new.expires_at {
        None => None,
        Some(text) => {
            let at: jiff::Timestamp = text
                .parse()
                .map_err(|e| Error::BadRequest(format!("expires_at {text:?}: not an RFC 3339 time ({e})")))?;
            let ms = u64::try_from(at.as_millisecond()).unwrap_or(0);
            if ms <= now_ms {
                return Err(Error::BadRequest(format!("expires_at {text:?} is past")));
            }
            Some(ms)
        }
    };
    let secret = store_secret(store)?;
    loop {
        let uid = hex(&random::<8>()?);
        let key_secret = hex(&random::<32>()?);
        let record = KeyRecord {
            uid: uid.clone(),
            hash: hash_secret(&secret, &key_secret).to_hex().to_string(),
            actions: new.actions.clone(),
            tables: new.tables.clone(),
            partitions: new.partitions.clone(),
            expires_at_ms,
            description: new.description.clone(),
            created_at_ms: now_ms,
        };
        if store.insert_key(&record)? {
            return Ok((record, format!("rsk_{uid}_{key_secret}")));
        }
    }
}

/// A key's record as `/keys` and `rowsearch keys list` show it (never the
/// key, nor its hash).
pub fn record_json(record: &KeyRecord) -> serde_json::Value {
    let expires_at = record
        .expires_at_ms
        .and_then(|ms| jiff::Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok())
        .map(|t| t.to_string());
    serde_json::json!({
        "uid": record.uid,
        "actions": record.actions,
        "tables": record.tables,
        "partitions": record.partitions,
        "expires_at": expires_at,
        "description": record.description,
    })
}

/// Why a key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No key was given.
    Missing,
    /// The key is not one of ours (or has been deleted).
    Invalid,
    /// The key has expired.
    Expired,
}

/// Checks keys against the store's records, with a cache that is reloaded
/// whenever the key set changed (in any process).
#[derive(Debug)]
pub struct Checker {
    master: blake3::Hash,
    secret: [u8; 32],
    cache: std::sync::RwLock<(u64, std::collections::HashMap<String, Arc<KeyRecord>>)>,
}

/// What a sealed cursor ([`Checker::seal_cursor`]) begins with.
pub const SEALED_PREFIX: &str = "s1.";

/// Shortest master key taken.
pub const MIN_MASTER_KEY_BYTES: usize = 16;

impl Checker {
    /// A checker for `store` with `master` as the master key.
    ///
    /// # Errors
    /// `BadRequest` for a master key shorter than 16 bytes; `Store`.
    pub fn new(store: &Store, master: &str) -> Result<Checker> {
        if master.len() < MIN_MASTER_KEY_BYTES {
            return Err(Error::BadRequest(format!(
                "the master key is {} bytes; it needs at least {MIN_MASTER_KEY_BYTES}",
                master.len()
            )));
        }
        let secret = store_secret(store)?;
        Ok(Checker {
            master: hash_secret(&secret, master),
            secret,
            cache: std::sync::RwLock::new((u64::MAX, std::collections::HashMap::new())),
        })
    }

    /// Who `key` is, as of now.
    ///
    /// # Errors
    /// `Refused`, or `Store` (as `Err(None)`-like: a store failure refuses).
    pub fn check(&self, store: &Store, key: Option<&str>) -> std::result::Result<Access, Refused> {
        let key = key.ok_or(Refused::Missing)?;
        if hash_secret(&self.secret, key) == self.master {
            return Ok(Access::Master);
        }
        let (uid, key_secret) =
            key.strip_prefix("rsk_").and_then(|rest| rest.split_once('_')).ok_or(Refused::Invalid)?;
        let record = self.record(store, uid).ok_or(Refused::Invalid)?;
        let stored = blake3::Hash::from_hex(&record.hash).map_err(|_| Refused::Invalid)?;
        // blake3::Hash compares in constant time.
        if hash_secret(&self.secret, key_secret) != stored {
            return Err(Refused::Invalid);
        }
        if record.expires_at_ms.is_some_and(|at| at <= store.now_ms()) {
            return Err(Refused::Expired);
        }
        Ok(Access::Key(record))
    }

    /// `token` (a cursor this server made) sealed for the key `uid`: its
    /// bytes encrypted and authenticated with keys derived from the
    /// store's secret, bound to `uid`, so the caller learns nothing from it
    /// (an index cursor holds the entry it stopped at, which may be
    /// another partition's) and no other key can use it.
    ///
    /// `s1.` then URL-safe base64 of `nonce (16) ‖ ciphertext ‖ tag (16)`:
    /// the ciphertext XORs the token with BLAKE3's keyed extendable output
    /// for the nonce (BLAKE3 as a stream cipher), the tag is a keyed BLAKE3
    /// hash of the uid, nonce and ciphertext (encrypt, then MAC).
    ///
    /// # Errors
    /// `Internal` when the system has no randomness.
    pub fn seal_cursor(&self, uid: &str, token: &str) -> Result<String> {
        let nonce = random::<16>()?;
        let mut bytes = token.as_bytes().to_vec();
        self.keystream(&nonce, &mut bytes);
        let tag = self.cursor_tag(uid, &nonce, &bytes);
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&bytes);
        sealed.extend_from_slice(&tag);
        Ok(format!("{SEALED_PREFIX}{}", URL_SAFE_NO_PAD.encode(sealed)))
    }

    /// The cursor [`Checker::seal_cursor`] sealed for `uid`; `None` for a
    /// token that is not sealed, was sealed for another key, or was
    /// changed.
    pub fn open_cursor(&self, uid: &str, sealed: &str) -> Option<String> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed.strip_prefix(SEALED_PREFIX)?).ok()?;
        if bytes.len() < 32 {
            return None;
        }
        let (nonce, rest) = bytes.split_at(16);
        let (body, tag) = rest.split_at(rest.len() - 16);
        let nonce: [u8; 16] = nonce.try_into().ok()?;
        // Constant-time comparison of the tags (as blake3::Hash does).
        let want = self.cursor_tag(uid, &nonce, body);
        let differ = want.iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differ != 0 {
            return None;
        }
        let mut plain = body.to_vec();
        self.keystream(&nonce, &mut plain);
        String::from_utf8(plain).ok()
    }

    fn keystream(&self, nonce: &[u8; 16], bytes: &mut [u8]) {
        let key = blake3::derive_key("rowsearch 2026 cursor encryption", &self.secret);
        let mut stream = blake3::Hasher::new_keyed(&key).update(nonce).finalize_xof();
        let mut pad = vec![0u8; bytes.len()];
        stream.fill(&mut pad);
        bytes.iter_mut().zip(pad).for_each(|(b, p)| *b ^= p);
    }

    fn cursor_tag(&self, uid: &str, nonce: &[u8; 16], body: &[u8]) -> [u8; 16] {
        let key = blake3::derive_key("rowsearch 2026 cursor authentication", &self.secret);
        let mut mac = blake3::Hasher::new_keyed(&key);
        mac.update(&(uid.len() as u64).to_be_bytes()).update(uid.as_bytes()).update(nonce).update(body);
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&mac.finalize().as_bytes()[..16]);
        tag
    }

    fn record(&self, store: &Store, uid: &str) -> Option<Arc<KeyRecord>> {
        let version = store.keys_version().ok()?;
        {
            let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
            if cache.0 == version {
                return cache.1.get(uid).cloned();
            }
        }
        let records = store.keys().ok()?;
        let map = records.into_iter().map(|r| (r.uid.clone(), Arc::new(r))).collect();
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        *cache = (version, map);
        cache.1.get(uid).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_made_checked_expired_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(Checker::new(&store, "short").is_err());
        let checker = Checker::new(&store, "master-key-of-16-bytes").unwrap();
        assert!(matches!(checker.check(&store, Some("master-key-of-16-bytes")), Ok(Access::Master)));
        assert_eq!(checker.check(&store, None).unwrap_err(), Refused::Missing);
        let new =
            NewKey { actions: vec!["search".into()], partitions: vec!["ann".into()], ..NewKey::default() };
        let (record, key) = create(&store, &new).unwrap();
        let Ok(Access::Key(found)) = checker.check(&store, Some(&key)) else { panic!("the key works") };
        assert_eq!(*found, record);
        // Its bytes are nowhere in the record; one changed character fails.
        assert!(!serde_json::to_string(&record).unwrap().contains(&key[21..]));
        let mut wrong = key.clone();
        wrong.pop();
        wrong.push(if key.ends_with('0') { '1' } else { '0' });
        assert_eq!(checker.check(&store, Some(&wrong)).unwrap_err(), Refused::Invalid);
        assert!(store.delete_key(&record.uid).unwrap());
        assert_eq!(checker.check(&store, Some(&key)).unwrap_err(), Refused::Invalid, "deleted");
        let past = NewKey { expires_at: Some("2000-01-01T00:00:00Z".into()), ..new };
        assert!(create(&store, &past).is_err(), "an expiry in the past");
    }
}
