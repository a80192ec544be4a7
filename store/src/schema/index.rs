//! The `indexes` section of a table schema: secondary indexes over columns.

use serde::{Deserialize, Serialize};

use super::column::parse_column;

/// An index declared in a table schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSchema {
    /// The index name (same rules as family names).
    pub name: String,
    /// The indexed columns, `family:qualifier`, most significant first.
    pub columns: Vec<String>,
}

impl IndexSchema {
    /// An index over these columns.
    pub fn new(name: impl Into<String>, columns: impl IntoIterator<Item = impl Into<String>>) -> IndexSchema {
        IndexSchema { name: name.into(), columns: columns.into_iter().map(Into::into).collect() }
    }

    /// The columns as (family, qualifier).
    pub(crate) fn parsed_columns(&self) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
        let what = format!("index {:?}: column", self.name);
        self.columns.iter().map(|c| parse_column(&what, c)).collect()
    }
}
