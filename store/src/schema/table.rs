//! A table's schema: its families, typed row key, region splits, and the
//! sections that derive data (indexes, search).

use serde::{Deserialize, Serialize};

use super::family::FamilySchema;
use super::index::IndexSchema;
use super::name::{MAX_FAMILY_NAME_BYTES, MAX_TABLE_NAME_BYTES, validate_name};
use super::search::SearchSchema;
use super::threads::ThreadSchema;
use crate::error::{ErrorKind, Result};
use crate::key::rowkey::RowKeySchema;

/// Most column families a table may have: each is an LMDB database taken
/// from the store's shared budget ([`crate::DEFAULT_MAX_DBS`]).
pub const MAX_FAMILIES: usize = 32;
/// Most secondary indexes a table may have (each takes two databases).
pub const MAX_INDEXES: usize = 16;

/// A table's schema. Serialised as the JSON of API.md.
///
/// ```
/// use rowsearch_store::{FamilySchema, TableSchema};
/// let schema: TableSchema = serde_json::from_str(
///     r#"{"families": [{"name": "m", "max_versions": 3}, {"name": "b", "ttl_seconds": 60}]}"#,
/// ).unwrap();
/// assert_eq!(schema.families[0], FamilySchema::new("m").max_versions(3));
/// assert_eq!(schema.families[1].max_versions, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSchema {
    /// The column families, at least one.
    pub families: Vec<FamilySchema>,
    /// A typed row key and salting; `None`: keys are raw bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_key: Option<RowKeySchema>,
    /// Stored-key boundaries cutting the table into regions: region `i`
    /// holds keys from `splits[i-1]` (inclusive) to `splits[i]` (exclusive).
    /// Strictly ascending. Stored keys include the salt byte of salted
    /// tables; a salted table without splits has one region per bucket.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "crate::binstr::list")]
    pub splits: Vec<Vec<u8>>,
    /// Secondary indexes over columns of this table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexSchema>,
    /// Searchable columns: the table's keyword rows (see [`SearchSchema`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSchema>,
    /// Conversations: which columns link rows into threads (see
    /// [`ThreadSchema`]); needs `search`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<ThreadSchema>,
}

impl TableSchema {
    /// A schema with the given families.
    pub fn new(families: impl IntoIterator<Item = FamilySchema>) -> TableSchema {
        TableSchema {
            families: families.into_iter().collect(),
            row_key: None,
            splits: Vec::new(),
            indexes: Vec::new(),
            search: None,
            threads: None,
        }
    }

    /// Keeps threads (see [`ThreadSchema`]).
    pub fn threads(mut self, threads: ThreadSchema) -> TableSchema {
        self.threads = Some(threads);
        self
    }

    /// Sets the typed row key.
    pub fn row_key(mut self, row_key: RowKeySchema) -> TableSchema {
        self.row_key = Some(row_key);
        self
    }

    /// Makes the table searchable.
    pub fn search(mut self, search: SearchSchema) -> TableSchema {
        self.search = Some(search);
        self
    }

    /// Adds a secondary index.
    pub fn index(mut self, index: IndexSchema) -> TableSchema {
        self.indexes.push(index);
        self
    }

    /// Sets the region splits.
    pub fn splits(mut self, splits: impl IntoIterator<Item = impl Into<Vec<u8>>>) -> TableSchema {
        self.splits = splits.into_iter().map(Into::into).collect();
        self
    }

    /// The splits that cut the table into regions: the declared ones, else
    /// one region per salt bucket of a salted table.
    pub fn effective_splits(&self) -> Vec<Vec<u8>> {
        match &self.row_key {
            Some(rk) if self.splits.is_empty() && rk.is_salted() => (1..rk.salt_buckets)
                .filter_map(|b| u8::try_from(b).ok())
                .map(crate::key::salt::bucket_start)
                .collect(),
            _ => self.splits.clone(),
        }
    }

    /// The family of that name.
    pub fn family(&self, name: &str) -> Option<&FamilySchema> {
        self.families.iter().find(|f| f.name == name)
    }

    /// This schema with its search's display set to `display` (see
    /// [`crate::SearchSchema::display`]); `None` when it is so already.
    /// The one rule for a display change, wherever the table lives.
    ///
    /// # Errors
    /// `NotSearchable` without a search section; `InvalidSchema` for a
    /// name no document carries.
    pub fn with_display(&self, table: &str, display: Option<Vec<String>>) -> Result<Option<TableSchema>> {
        let mut schema = self.clone();
        let search = schema
            .search
            .as_mut()
            .ok_or_else(|| crate::ErrorKind::NotSearchable { table: table.to_owned() })?;
        if search.display == display {
            return Ok(None);
        }
        search.display = display;
        search
            .check_display()
            .map_err(|reason| crate::ErrorKind::InvalidSchema { table: table.to_owned(), reason })?;
        Ok(Some(schema))
    }

    /// This schema with its index split into `shards` shards by a cluster
    /// of searchers ([`SearchSchema::shards`]); `None` when it already is.
    ///
    /// # Errors
    /// `NotSearchable`; `InvalidSchema` for a count past 1..=[`MAX_SHARDS`](super::search::MAX_SHARDS).
    pub fn with_shards(&self, table: &str, shards: u32) -> Result<Option<TableSchema>> {
        let mut schema = self.clone();
        let search = schema
            .search
            .as_mut()
            .ok_or_else(|| crate::ErrorKind::NotSearchable { table: table.to_owned() })?;
        if !(1..=super::search::MAX_SHARDS).contains(&shards) {
            let reason = format!("shards must be 1..={}, got {shards}", super::search::MAX_SHARDS);
            return Err(crate::ErrorKind::InvalidSchema { table: table.to_owned(), reason }.into());
        }
        if search.shard_count() == shards {
            return Ok(None);
        }
        search.shards = Some(shards);
        Ok(Some(schema))
    }

    /// Checks names and settings (at most [`MAX_FAMILIES`] families and
    /// [`MAX_INDEXES`] indexes).
    ///
    /// # Errors
    /// `InvalidName` for a bad table or family name, `InvalidSchema` for no
    /// families, a duplicate family, `max_versions` 0 or `ttl_seconds` 0, a
    /// bad row key declaration, splits that are empty or not ascending.
    pub fn validate(&self, table: &str) -> Result<()> {
        validate_name("table", table, MAX_TABLE_NAME_BYTES)?;
        let invalid = |reason: String| ErrorKind::InvalidSchema { table: table.to_owned(), reason };
        if self.families.is_empty() {
            return Err(invalid("a table needs at least one family".into()).into());
        }
        // Each family and index takes LMDB databases from the store's
        // shared budget: one table may not take most of it.
        if self.families.len() > MAX_FAMILIES {
            return Err(invalid(format!(
                "{} families; a table has at most {MAX_FAMILIES} (HBase advises a few)",
                self.families.len()
            ))
            .into());
        }
        if self.indexes.len() > MAX_INDEXES {
            return Err(invalid(format!(
                "{} indexes; a table has at most {MAX_INDEXES}",
                self.indexes.len()
            ))
            .into());
        }
        for (i, family) in self.families.iter().enumerate() {
            validate_name("family", &family.name, MAX_FAMILY_NAME_BYTES)?;
            if self.families[..i].iter().any(|f| f.name == family.name) {
                return Err(invalid(format!("family {:?} declared twice", family.name)).into());
            }
            if family.max_versions == 0 {
                return Err(
                    invalid(format!("family {:?}: max_versions must be at least 1", family.name)).into()
                );
            }
            if family.ttl_seconds == Some(0) {
                return Err(
                    invalid(format!("family {:?}: ttl_seconds must be at least 1", family.name)).into()
                );
            }
        }
        if let Some(row_key) = &self.row_key {
            row_key.validate().map_err(invalid)?;
        }
        for (i, index) in self.indexes.iter().enumerate() {
            validate_name("index", &index.name, MAX_FAMILY_NAME_BYTES)?;
            if self.indexes[..i].iter().any(|x| x.name == index.name) {
                return Err(invalid(format!("index {:?} declared twice", index.name)).into());
            }
            let columns = index.parsed_columns().map_err(invalid)?;
            if columns.is_empty() {
                return Err(invalid(format!("index {:?} has no columns", index.name)).into());
            }
            for (family, _) in &columns {
                if self.family(family).is_none() {
                    return Err(invalid(format!("index {:?}: unknown family {family:?}", index.name)).into());
                }
            }
        }
        if let Some(search) = &self.search {
            search.check(&self.families, self.row_key.as_ref()).map_err(invalid)?;
        }
        if let Some(threads) = &self.threads {
            let Some(search) = &self.search else {
                return Err(invalid("threads need a search section (their partition and date)".into()).into());
            };
            threads.check(&self.families, search.date_column.is_some()).map_err(invalid)?;
        }
        if self.splits.iter().any(Vec::is_empty) {
            return Err(invalid("a split must not be empty".into()).into());
        }
        if self.splits.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid("splits must be strictly ascending".into()).into());
        }
        Ok(())
    }
}
