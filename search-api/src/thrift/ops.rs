//! What both services do over the store beyond one call: the
//! read-modify-write operations (check-and-put, check-and-mutate, append,
//! multi-column increment), each one store transaction over
//! [`Store::read_modify_write`], and the region holding a row.

use rowsearch_store::{Batch, PutCell, Region, Store};

use super::args::store_error;
use super::hbase_types::HbaseError;

/// A counter that cannot be added to, raised from within the transaction.
#[derive(Debug)]
struct NotALong(String);

impl std::fmt::Display for NotALong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotALong {}

/// Applies `batch` when the newest value of `family:qualifier` in `row`
/// (`None`: no such cell) satisfies `holds`; whether it did. The read and
/// the write are one transaction.
pub(crate) fn check_and_apply(
    store: &Store,
    table: &str,
    row: &[u8],
    (family, qualifier): (&str, &[u8]),
    holds: &dyn Fn(Option<&[u8]>) -> bool,
    batch: Batch,
) -> Result<bool, HbaseError> {
    let (applied, _) = store
        .read_modify_write(table, row, &mut |read| {
            if !holds(read(family, qualifier)?.as_deref()) {
                return Ok((None, false));
            }
            Ok((Some(batch.clone()), true))
        })
        .map_err(store_error)?;
    Ok(applied)
}

/// Appends each value to its column's newest value (a new version), in
/// one transaction; the new values, in order.
pub(crate) fn append_values(
    store: &Store,
    table: &str,
    row: &[u8],
    pairs: &[(String, Vec<u8>, Vec<u8>)],
) -> Result<Vec<Vec<u8>>, HbaseError> {
    let (values, _) = store
        .read_modify_write(table, row, &mut |read| {
            let mut puts = Vec::with_capacity(pairs.len());
            let mut out = Vec::with_capacity(pairs.len());
            for (family, qualifier, suffix) in pairs {
                let mut value = read(family, qualifier)?.unwrap_or_default();
                value.extend_from_slice(suffix);
                out.push(value.clone());
                puts.push(PutCell::new(family.clone(), qualifier.clone(), value));
            }
            let mut batch = Batch::new();
            batch.put(table, row.to_vec(), puts);
            Ok((Some(batch), out))
        })
        .map_err(store_error)?;
    Ok(values)
}

/// Adds each amount to its column's counter (8 bytes, big-endian, as
/// HBase's `Increment`; a missing cell counts from 0), all in one
/// transaction; the new values, in order.
pub(crate) fn add_counters(
    store: &Store,
    table: &str,
    row: &[u8],
    amounts: &[(String, Vec<u8>, i64)],
) -> Result<Vec<i64>, HbaseError> {
    let (values, _) = store
        .read_modify_write(table, row, &mut |read| {
            let mut puts = Vec::with_capacity(amounts.len());
            let mut out = Vec::with_capacity(amounts.len());
            for (family, qualifier, amount) in amounts {
                let now = match read(family, qualifier)? {
                    None => 0,
                    Some(v) => match <[u8; 8]>::try_from(v.as_slice()) {
                        Ok(b) => i64::from_be_bytes(b),
                        Err(_) => {
                            return Err(rowsearch_store::Error::callback(NotALong(format!(
                                "Field is not a long, it's {} bytes wide",
                                v.len()
                            ))));
                        }
                    },
                };
                let next = now.checked_add(*amount).ok_or_else(|| {
                    rowsearch_store::Error::callback(NotALong(format!("{now} + {amount} overflows a long")))
                })?;
                out.push(next);
                puts.push(PutCell::new(family.clone(), qualifier.clone(), next.to_be_bytes().to_vec()));
            }
            let mut batch = Batch::new();
            batch.put(table, row.to_vec(), puts);
            Ok((Some(batch), out))
        })
        .map_err(|e| match e.into_callback::<NotALong>() {
            Ok(NotALong(m)) => HbaseError::Io(m),
            Err(e) => store_error(e),
        })?;
    Ok(values)
}

/// The region of `table` holding `row` (its stored key: salted where the
/// table is).
pub(crate) fn region_of(store: &Store, table: &str, row: &[u8]) -> Result<Region, HbaseError> {
    let schema = store.schema(table).map_err(store_error)?;
    let stored = match &schema.row_key {
        Some(rk) if rk.is_salted() => rk.salt(row),
        _ => row.to_vec(),
    };
    let regions = store.regions(table).map_err(store_error)?;
    regions
        .into_iter()
        .find(|r| {
            r.start.as_deref().is_none_or(|s| stored.as_slice() >= s)
                && r.end.as_deref().is_none_or(|e| stored.as_slice() < e)
        })
        .ok_or_else(|| HbaseError::Io(format!("no region of {table} holds that row")))
}
