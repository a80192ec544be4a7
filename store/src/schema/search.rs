//! The `search` section of a table schema, and the [`Analyzer`] that turns
//! its columns into terms.

use serde::{Deserialize, Serialize};

use super::column::parse_column;
use super::family::FamilySchema;
use super::name::{MAX_FAMILY_NAME_BYTES, validate_name};
use crate::key::rowkey::RowKeySchema;

/// The name of a row's date in its document.
pub const DATE_NAME: &str = "date";

/// Most search fields a table may declare (a field is one byte in the key).
pub const MAX_SEARCH_FIELDS: usize = 255;

/// The `search` section of a table schema: which columns are searchable,
/// how rows are partitioned, and which column dates them.
///
/// ```
/// use rowsearch_store::SearchSchema;
/// let search: SearchSchema = serde_json::from_str(
///     r#"{"partition": "user", "date_column": "m:date",
///         "fields": [{"column": "m:subject", "name": "subject", "type": "text"}]}"#,
/// ).unwrap();
/// assert_eq!(search.fields[0].name, "subject");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSchema {
    /// What splits rows into keyword rows: the name of a field of the typed
    /// row key, or a column `family:qualifier`. `None`: one partition for
    /// the whole table (the empty partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The searchable columns, each under a field name used in queries.
    pub fields: Vec<SearchField>,
    /// The column holding each row's date (as the analyzer reads dates:
    /// milliseconds since the epoch or RFC 3339 for the default one).
    /// Versions of keyword rows sort newest first by it; rows without one
    /// date 0. `None`: every row dates 0 and versions sort by row key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_column: Option<String>,
    /// The names a search's documents carry when the search names none
    /// (Meilisearch's displayed attributes): search fields, the partition,
    /// `date`, or `family:qualifier` columns; `*` every name (as `None`,
    /// but chosen: `rowsearch ingest` gives a mail table without a display
    /// the mail table's). `None`: every search field, the partition and the
    /// date. A presentation setting: it may change
    /// on a table that holds rows ([`crate::Store::set_display`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<Vec<String>>,
    /// How many shards a cluster of searchers splits the table's index
    /// into, by partition hash ([`SearchSchema::shard_of`]); `None`: one.
    /// A server alone keeps the one index whatever it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
}

/// The most shards a table's index may be split into.
pub const MAX_SHARDS: u32 = 1024;

/// One searchable column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchField {
    /// The column, `family:qualifier`.
    pub column: String,
    /// The field name used in queries (`subject:word`).
    pub name: String,
    /// How the value is analysed.
    #[serde(rename = "type", default)]
    pub kind: FieldKind,
    /// Whether searches may count its values (`facets=name`): a keyword
    /// field's values, or the whole email addresses in a text field. The
    /// index keeps them in a column of their own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub facet: bool,
}

/// How a search field's values are analysed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// Free text, split into terms by the analyzer.
    #[default]
    Text,
    /// One term: the whole value (trimmed, lowercased), for names such as
    /// a mail folder that are matched and counted whole.
    Keyword,
}

impl SearchField {
    /// A text field over `column`.
    pub fn text(name: impl Into<String>, column: impl Into<String>) -> SearchField {
        SearchField { column: column.into(), name: name.into(), kind: FieldKind::Text, facet: false }
    }

    /// A keyword field over `column` (the whole value is one term).
    pub fn keyword(name: impl Into<String>, column: impl Into<String>) -> SearchField {
        SearchField { kind: FieldKind::Keyword, ..SearchField::text(name, column) }
    }

    /// The same field with its values counted in facets.
    pub fn facet(mut self) -> SearchField {
        self.facet = true;
        self
    }
}

/// Turns values into terms with positions, and date values into
/// milliseconds. Must be deterministic: the store re-analyses a row's old
/// values to remove its keyword cells.
pub trait Analyzer: Send + Sync + std::fmt::Debug {
    /// Calls `sink(term, position)` for every term of `text` in `field`.
    fn terms(&self, field: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32));

    /// A date column's value in milliseconds since the epoch, `None` when it
    /// is not a date.
    fn date_ms(&self, value: &[u8]) -> Option<u64>;
}

impl SearchSchema {
    /// A search section over `fields`, without partition or date.
    pub fn new(fields: impl IntoIterator<Item = SearchField>) -> SearchSchema {
        SearchSchema {
            partition: None,
            fields: fields.into_iter().collect(),
            date_column: None,
            display: None,
            shards: None,
        }
    }

    /// The shards its index splits into (1 when not said).
    pub fn shard_count(&self) -> u32 {
        self.shards.unwrap_or(1)
    }

    /// The shard of `partition` among `shards`: its 64-bit xxh3 modulo the
    /// count (every process agrees; a mailbox's rows are in one shard).
    pub fn shard_of(partition: &[u8], shards: u32) -> u32 {
        (xxhash_rust::xxh3::xxh3_64(partition) % u64::from(shards.max(1))) as u32
    }

    /// Sets the names documents carry by default (see [`SearchSchema::display`]).
    pub fn display<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> SearchSchema {
        self.display = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The names a document may carry: the search fields, the partition,
    /// and `date` when there is a date column (besides `family:qualifier`
    /// columns).
    pub fn document_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        names.extend(self.partition.as_deref());
        if self.date_column.is_some() {
            names.push(DATE_NAME);
        }
        names
    }

    /// Checks `display`: every name one a document may carry.
    pub(crate) fn check_display(&self) -> std::result::Result<(), String> {
        let known = self.document_names();
        for name in self.display.iter().flatten().filter(|n| *n != "*") {
            let column = name.split_once(':').is_some_and(|(f, q)| !f.is_empty() && !q.is_empty());
            if !known.contains(&name.as_str()) && !column {
                return Err(format!(
                    "search: display {name:?} is not in this table's documents: {}, or a family:qualifier column",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Sets the partition (a key field name or a column).
    pub fn partition(mut self, partition: impl Into<String>) -> SearchSchema {
        self.partition = Some(partition.into());
        self
    }

    /// Sets the date column.
    pub fn date_column(mut self, column: impl Into<String>) -> SearchSchema {
        self.date_column = Some(column.into());
        self
    }

    /// Checks the section against the rest of the schema: the reason, when
    /// it does not fit.
    pub(crate) fn check(
        &self,
        families: &[FamilySchema],
        row_key: Option<&RowKeySchema>,
    ) -> std::result::Result<(), String> {
        if self.fields.is_empty() {
            return Err("search: at least one field is needed".into());
        }
        if let Some(n) = self.shards.filter(|n| !(1..=MAX_SHARDS).contains(n)) {
            return Err(format!("search: shards {n}: from 1 to {MAX_SHARDS}"));
        }
        if self.fields.len() > MAX_SEARCH_FIELDS {
            return Err(format!("search: at most {MAX_SEARCH_FIELDS} fields"));
        }
        let family_ok = |what: &str, column: &str| -> std::result::Result<(), String> {
            let (family, _) = parse_column(what, column)?;
            match families.iter().find(|f| f.name == family) {
                None => Err(format!("search: {what} {column:?}: unknown family {family:?}")),
                Some(f) if f.ttl_seconds.is_some() => Err(format!(
                    "search: {what} {column:?}: family {family:?} has a TTL; search columns in TTL families are not supported"
                )),
                Some(_) => Ok(()),
            }
        };
        for (i, field) in self.fields.iter().enumerate() {
            validate_name("search field", &field.name, MAX_FAMILY_NAME_BYTES)
                .map_err(|e| format!("search: {e}"))?;
            if self.fields[..i].iter().any(|f| f.name == field.name) {
                return Err(format!("search: field {:?} declared twice", field.name));
            }
            family_ok("field column", &field.column)?;
            let date_facet = ["month", "year"].contains(&field.name.as_str()) && self.date_column.is_some();
            if field.facet && (date_facet || self.partition.as_deref() == Some(&field.name)) {
                return Err(format!(
                    "search: facet field {:?} takes the name of the partition's or the date's facet",
                    field.name
                ));
            }
        }
        if let Some(date) = &self.date_column {
            family_ok("date_column", date)?;
        }
        if let Some(partition) = &self.partition {
            let key_field = row_key.is_some_and(|rk| rk.fields.iter().any(|f| f.name == *partition));
            if !key_field {
                if !partition.contains(':') {
                    return Err(format!(
                        "search: partition {partition:?} is neither a row key field nor a family:qualifier column"
                    ));
                }
                family_ok("partition", partition)?;
            }
        }
        self.check_display()
    }
}
