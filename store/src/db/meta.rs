//! The metadata database: the format marker (checked and upgraded on open)
//! and the table schemas, stored as JSON under `schema/<table>`.

use std::path::Path;

use heed::{MdbError, RoTxn, RwTxn};

use super::env::{Environment, not_a_store};
use super::{
    BytesDb, FORMAT, META, META_CATALOG_VERSION, META_FORMAT, META_SCHEMA_PREFIX, UPGRADES_FROM, dict_key,
    disabled_key, index_build_key, schema_key, table_id_key,
};
use crate::error::{Error, ErrorKind, Result};
use crate::schema::TableSchema;

/// The metadata database of an open store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub db: BytesDb,
}

impl Meta {
    /// Opens the metadata database in `wtxn`, creating it in a new store;
    /// returns it and the older format the store is being upgraded from,
    /// if it is (the marker is rewritten in `wtxn`, so the upgrade commits
    /// with whatever else the opening writes, or not at all).
    pub fn open(env: &Environment, wtxn: &mut RwTxn, dir: &Path) -> Result<(Meta, Option<String>)> {
        let existing: Option<BytesDb> = env.raw().open_database(wtxn, Some(META)).map_err(|e| match e {
            heed::Error::Mdb(MdbError::Incompatible) => not_a_store(dir, "no rowsearch metadata"),
            other => Error::lmdb("open meta", other),
        })?;
        let Some(db) = existing else {
            let main: Option<BytesDb> =
                env.raw().open_database(wtxn, None).map_err(|e| Error::lmdb("open main", e))?;
            if let Some(main) = main
                && !main.is_empty(wtxn).map_err(|e| Error::lmdb("read main", e))?
            {
                return Err(not_a_store(dir, "LMDB environment of another program"));
            }
            let db = env.create_db(wtxn, META, 0, "create meta")?;
            db.put(wtxn, META_FORMAT, FORMAT.as_bytes()).map_err(|e| Error::lmdb("write format", e))?;
            return Ok((Meta { db }, None));
        };
        let format = db
            .get(wtxn, META_FORMAT)
            .map_err(|e| Error::lmdb("read format", e))?
            .map(|f| String::from_utf8_lossy(f).into_owned());
        match format {
            Some(f) if f == FORMAT => Ok((Meta { db }, None)),
            Some(f) if UPGRADES_FROM.contains(&f.as_str()) => {
                db.put(wtxn, META_FORMAT, FORMAT.as_bytes()).map_err(|e| Error::lmdb("write format", e))?;
                Ok((Meta { db }, Some(f)))
            }
            Some(found) => {
                Err(ErrorKind::UnsupportedFormat { path: dir.to_owned(), found, expected: FORMAT.to_owned() }
                    .into())
            }
            None => Err(not_a_store(dir, "no format marker")),
        }
    }

    /// Writes the format marker (the upgrade tests' older stores).
    pub fn set_format(&self, wtxn: &mut RwTxn, format: &str) -> Result<()> {
        self.db.put(wtxn, META_FORMAT, format.as_bytes()).map_err(|e| Error::lmdb("write format", e))
    }

    /// Every stored table schema, by table name.
    pub fn schemas(&self, txn: &RoTxn<'_>) -> Result<Vec<(String, TableSchema)>> {
        let mut schemas = Vec::new();
        for item in
            self.db.prefix_iter(txn, META_SCHEMA_PREFIX).map_err(|e| Error::lmdb("read schemas", e))?
        {
            let (k, v) = item.map_err(|e| Error::lmdb("read schemas", e))?;
            let name = String::from_utf8_lossy(&k[META_SCHEMA_PREFIX.len()..]).into_owned();
            let schema: TableSchema = serde_json::from_slice(v).map_err(|e| ErrorKind::Corrupted {
                db: META.to_owned(),
                key: crate::error::preview(k),
                detail: format!("schema does not parse: {e}"),
            })?;
            schemas.push((name, schema));
        }
        Ok(schemas)
    }

    /// Writes a table's schema.
    pub fn put_schema(&self, wtxn: &mut RwTxn, table: &str, schema: &TableSchema) -> Result<()> {
        let json = serde_json::to_vec(schema)
            .map_err(|e| ErrorKind::InvalidSchema { table: table.to_owned(), reason: e.to_string() })?;
        self.db.put(wtxn, &schema_key(table), &json).map_err(|e| Error::lmdb("write schema", e))
    }

    /// Removes a table's schema, id and disabled mark.
    pub fn delete_schema(&self, wtxn: &mut RwTxn, table: &str) -> Result<()> {
        self.db.delete(wtxn, &schema_key(table)).map_err(|e| Error::lmdb("delete schema", e))?;
        self.db.delete(wtxn, &table_id_key(table)).map_err(|e| Error::lmdb("delete table id", e))?;
        self.set_disabled(wtxn, table, false)
    }

    /// Whether `table` is disabled.
    pub fn is_disabled(&self, txn: &RoTxn<'_>, table: &str) -> Result<bool> {
        Ok(self.db.get(txn, &disabled_key(table)).map_err(|e| Error::lmdb("read disabled", e))?.is_some())
    }

    /// Marks `table` disabled, or enabled again.
    pub fn set_disabled(&self, wtxn: &mut RwTxn, table: &str, disabled: bool) -> Result<()> {
        let key = disabled_key(table);
        if disabled {
            self.db.put(wtxn, &key, &[]).map_err(|e| Error::lmdb("write disabled", e))
        } else {
            self.db.delete(wtxn, &key).map_err(|e| Error::lmdb("delete disabled", e))?;
            Ok(())
        }
    }

    /// The catalog version `txn` sees (0 in a store no schema change has
    /// bumped it in).
    pub fn catalog_version(&self, txn: &RoTxn<'_>) -> Result<u64> {
        self.u64_at(txn, META_CATALOG_VERSION, "catalog/version")
    }

    /// Bumps the catalog version in `wtxn`; returns the new version. Every
    /// schema change calls this in its transaction.
    pub fn bump_catalog_version(&self, wtxn: &mut RwTxn) -> Result<u64> {
        let next = self.catalog_version(wtxn)? + 1;
        self.db
            .put(wtxn, META_CATALOG_VERSION, &next.to_be_bytes())
            .map_err(|e| Error::lmdb("write catalog version", e))?;
        Ok(next)
    }

    /// A table's id (0 for a table created before ids were kept).
    pub fn table_id(&self, txn: &RoTxn<'_>, table: &str) -> Result<u64> {
        self.u64_at(txn, &table_id_key(table), "table_id")
    }

    /// The zstd dictionary of `table`'s `family`, if one was trained.
    pub fn dictionary(
        &self,
        txn: &RoTxn<'_>,
        table: &str,
        family: &str,
    ) -> Result<Option<std::sync::Arc<super::value::Dictionary>>> {
        let key = dict_key(table, family);
        let Some(bytes) = self.db.get(txn, &key).map_err(|e| Error::lmdb("read dictionary", e))? else {
            return Ok(None);
        };
        let dict = super::value::Dictionary::new(bytes).ok_or_else(|| ErrorKind::Corrupted {
            db: META.to_owned(),
            key: String::from_utf8_lossy(&key).into_owned(),
            detail: "a dictionary zstd does not take".to_owned(),
        })?;
        Ok(Some(std::sync::Arc::new(dict)))
    }

    /// Records the zstd dictionary of `table`'s `family`.
    pub fn put_dictionary(&self, wtxn: &mut RwTxn, table: &str, family: &str, bytes: &[u8]) -> Result<()> {
        self.db.put(wtxn, &dict_key(table, family), bytes).map_err(|e| Error::lmdb("write dictionary", e))
    }

    /// Forgets the dictionaries of `table`'s families (a dropped table).
    pub fn delete_dictionaries(&self, wtxn: &mut RwTxn, table: &str, families: &[String]) -> Result<()> {
        for family in families {
            self.db
                .delete(wtxn, &dict_key(table, family))
                .map_err(|e| Error::lmdb("delete dictionary", e))?;
        }
        Ok(())
    }

    /// Records a new table's id.
    pub fn put_table_id(&self, wtxn: &mut RwTxn, table: &str, id: u64) -> Result<()> {
        self.db
            .put(wtxn, &table_id_key(table), &id.to_be_bytes())
            .map_err(|e| Error::lmdb("write table id", e))
    }

    /// Where the build of an index stands (its cursor's bytes), or `None`
    /// for an index that is ready.
    pub fn index_build(&self, txn: &RoTxn<'_>, table: &str, index: &str) -> Result<Option<Vec<u8>>> {
        let key = index_build_key(table, index);
        Ok(self.db.get(txn, &key).map_err(|e| Error::lmdb("read index build", e))?.map(<[u8]>::to_vec))
    }

    /// Records where the build of an index stands.
    pub fn put_index_build(&self, wtxn: &mut RwTxn, table: &str, index: &str, cursor: &[u8]) -> Result<()> {
        self.db
            .put(wtxn, &index_build_key(table, index), cursor)
            .map_err(|e| Error::lmdb("write index build", e))
    }

    /// Marks an index ready (or forgets a dropped one's build).
    pub fn delete_index_build(&self, wtxn: &mut RwTxn, table: &str, index: &str) -> Result<()> {
        self.db
            .delete(wtxn, &index_build_key(table, index))
            .map_err(|e| Error::lmdb("delete index build", e))?;
        Ok(())
    }

    fn u64_at(&self, txn: &RoTxn<'_>, key: &[u8], what: &str) -> Result<u64> {
        read_u64(self.db, txn, key, what)
    }
}

/// A u64 (BE) counter of the metadata database `db` at `key`; 0 when
/// absent. `what` names it in errors. The one reader of `meta`'s counters.
pub(crate) fn read_u64(db: BytesDb, txn: &RoTxn<'_>, key: &[u8], what: &str) -> Result<u64> {
    match db.get(txn, key).map_err(|e| Error::lmdb("read meta", e))? {
        None => Ok(0),
        Some(bytes) => {
            let arr: [u8; 8] = bytes.try_into().map_err(|_| ErrorKind::Corrupted {
                db: META.to_owned(),
                key: what.to_owned(),
                detail: "not 8 bytes".to_owned(),
            })?;
            Ok(u64::from_be_bytes(arr))
        }
    }
}
