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
/// What the name of a threaded table's thread entries in HBase ends with.
pub const THREADS_SUFFIX: &str = ".threads";

/// Refuses a new table named `T.keywords` while `T` is a searchable table
/// of the store (`base_searchable`): where tables live in HBase that name
/// holds `T`'s keyword rows, so a store holding both could not be copied
/// there. (`rowsearch_catalog` and the keyword tables of tables that are
/// not searchable here stay allowed: they are what rowsearch's own Thrift2
/// gateway holds when it stands in for HBase.)
pub(crate) fn validate_new_table(name: &str, base_searchable: &dyn Fn(&str) -> bool) -> Result<()> {
    match name.strip_suffix(KEYWORDS_SUFFIX) {
        Some(base) if base_searchable(base) => Err(ErrorKind::InvalidName {
            what: "table",
            name: name.to_owned(),
            reason: "is reserved: it names the keyword rows of the searchable table before \".keywords\"",
        }
        .into()),
        _ => Ok(()),
    }
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
