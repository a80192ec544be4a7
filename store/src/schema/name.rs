//! Names of tables, families, indexes and search fields.

use crate::error::{ErrorKind, Result};

/// Longest table name, in bytes.
pub const MAX_TABLE_NAME_BYTES: usize = 64;
/// Longest family name, in bytes.
pub const MAX_FAMILY_NAME_BYTES: usize = 32;

/// The name of rowsearch's catalog table where tables live in HBase.
pub const CATALOG_TABLE: &str = "rowsearch_catalog";
/// What the name of a table's keyword table in HBase ends with.
pub const KEYWORDS_SUFFIX: &str = ".keywords";

/// Refuses a new table a name rowsearch keeps for itself where tables
/// live in HBase (its catalog, the `.keywords` tables beside searchable
/// tables): a store holding one could not be copied there.
pub(crate) fn validate_new_table(name: &str) -> Result<()> {
    let reason = if name == CATALOG_TABLE {
        "is reserved: rowsearch's catalog of tables in HBase"
    } else if name.ends_with(KEYWORDS_SUFFIX) {
        "is reserved: names ending in .keywords are the keyword tables beside searchable tables in HBase"
    } else {
        return Ok(());
    };
    Err(ErrorKind::InvalidName { what: "table", name: name.to_owned(), reason }.into())
}

/// Table and family names: 1 to `max` bytes of ASCII letters, digits, `_`,
/// `-` and `.`, not starting with `.` (so no name can be a path like `..`).
pub(crate) fn validate_name(what: &'static str, name: &str, max: usize) -> Result<()> {
    let reason = if name.is_empty() {
        Some("must not be empty")
    } else if name.len() > max {
        Some("too long")
    } else if name.starts_with('.') {
        Some("must not start with '.'")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        Some("only ASCII letters, digits, '_', '-' and '.' are allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ErrorKind::InvalidName { what, name: name.to_owned(), reason }.into()),
        None => Ok(()),
    }
}
