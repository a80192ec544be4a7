//! Confinement of a request to its access key's partitions (API.md,
//! "Access keys"): what a handler checks before it answers, so a key
//! confined to some partitions never sees or changes another's rows.

use rowsearch_store::{ErrorKind, ReadTxn, TableSchema, TableStore};

use crate::http::error::{ApiError, Refusal};
use crate::http::state::State;
use crate::keys::Access;

/// A cursor to hand back: sealed for a key (encrypted and bound to it,
/// [`crate::keys::Checker::seal_cursor`]), as made for the master key or
/// a server without keys. An index cursor holds the entry a lookup
/// stopped at, which for a confined key may be another partition's row.
pub(super) fn seal_cursor(
    st: &State,
    access: &Access,
    token: Option<String>,
) -> Result<Option<String>, ApiError> {
    match (access, &st.access.checker, token) {
        (Access::Key(record), Some(checker), Some(token)) => {
            Ok(Some(checker.seal_cursor(&record.uid, &token)?))
        }
        (_, _, token) => Ok(token),
    }
}

/// The cursor a request gave, opened: a key's cursors must be the ones
/// sealed for it (400 `invalid_cursor` otherwise, as for any cursor this
/// server did not make).
pub(super) fn open_cursor(
    st: &State,
    access: &Access,
    token: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let (Access::Key(record), Some(checker), Some(token)) = (access, &st.access.checker, token) else {
        return Ok(token.map(str::to_owned));
    };
    match checker.open_cursor(&record.uid, token) {
        Some(opened) => Ok(Some(opened)),
        None => Err(rowsearch_store::Error::from(ErrorKind::InvalidCursor {
            reason: "not a cursor this server made for this key",
        })
        .into()),
    }
}

/// Refuses a confined key an answer that spans every partition (a table's
/// figures, an index's verify report).
pub(super) fn whole_table(access: &Access, what: &str) -> Result<(), ApiError> {
    match access.partitions() {
        Some(_) => {
            Err(Refusal::Forbidden(format!("a key confined to partitions may not read {what}")).into())
        }
        None => Ok(()),
    }
}

/// Whether `access` may see row `key` of `table` in `rtxn`. A confined
/// key sees a row of one of its partitions; a table whose partition is not
/// in its row keys is refused to it.
pub(super) fn sees_row(
    access: &Access,
    rtxn: &ReadTxn<'_>,
    table: &str,
    key: &[u8],
) -> Result<bool, ApiError> {
    if access.partitions().is_none() {
        return Ok(true);
    }
    match rtxn.key_partition(table, key) {
        Ok(Some(partition)) => Ok(access.may_see(&partition)),
        Ok(None) => Err(not_by_key(table)),
        // A key its table's typed key does not decode is no row of a
        // partition the key may see.
        Err(_) => Ok(false),
    }
}

/// Whether `access` may see row `key` of `table` wherever the table lives
/// (its schema read only for a confined key), as [`sees_row`].
pub(super) fn sees_key(
    access: &Access,
    tables: &dyn TableStore,
    table: &str,
    key: &[u8],
) -> Result<bool, ApiError> {
    if access.partitions().is_none() {
        return Ok(true);
    }
    let schema = tables.schema(table)?;
    match rowsearch_store::key_partition_of(table, &schema, key) {
        Ok(Some(partition)) => Ok(access.may_see(&partition)),
        Ok(None) => Err(not_by_key(table)),
        Err(_) => Ok(false),
    }
}

fn not_by_key(table: &str) -> ApiError {
    Refusal::Forbidden(format!(
        "table {table:?} is not partitioned by its row keys: a key confined to partitions may not read its rows"
    ))
    .into()
}

/// Refuses a write to row `key` outside the key's partitions, wherever the
/// table lives.
pub(super) fn may_write_row(
    access: &Access,
    tables: &dyn TableStore,
    table: &str,
    key: &[u8],
) -> Result<(), ApiError> {
    if sees_key(access, tables, table, key)? { Ok(()) } else { Err(outside()) }
}

fn outside() -> ApiError {
    Refusal::Forbidden("this key may not write rows outside its partitions".into()).into()
}

/// Refuses a write to row `key` outside the key's partitions.
pub(super) fn may_write(
    access: &Access,
    rtxn: &ReadTxn<'_>,
    table: &str,
    key: &[u8],
) -> Result<(), ApiError> {
    if sees_row(access, rtxn, table, key)? { Ok(()) } else { Err(outside()) }
}

/// For a scan by a confined key: the key prefix that keeps it inside one
/// of its partitions. `asked` is the scan's own prefix: kept when it lies
/// inside one; without one, the key's only partition is taken; anything
/// else is refused (name the partition with `prefix_fields`).
pub(super) fn scan_prefix(
    access: &Access,
    schema: &TableSchema,
    table: &str,
    asked: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(partitions) = access.partitions() else { return Ok(asked) };
    let refuse = |why: String| -> ApiError { Refusal::Forbidden(why).into() };
    let field = schema.search.as_ref().and_then(|s| s.partition.clone());
    let rk = schema.row_key.as_ref();
    let leading = rk.and_then(|rk| rk.fields.first()).map(|f| f.name.clone());
    let (Some(field), Some(rk)) = (field, rk) else {
        return Err(refuse(format!("table {table:?} is not partitioned by its row keys")));
    };
    if leading.as_deref() != Some(field.as_str()) {
        return Err(refuse(format!(
            "table {table:?} is partitioned by {field:?}, not by its leading key field: a confined key may not scan it"
        )));
    }
    let mut allowed = Vec::with_capacity(partitions.len());
    for p in partitions {
        allowed.push(rk.encode_json(&serde_json::json!({ field.as_str(): p }))?);
    }
    match asked {
        Some(prefix) if allowed.iter().any(|a| prefix.starts_with(a)) => Ok(Some(prefix)),
        None if allowed.len() == 1 => Ok(allowed.pop()),
        _ => Err(refuse(format!(
            "a key confined to partitions scans inside one of them: give prefix_fields={{\"{field}\": ...}}"
        ))),
    }
}
