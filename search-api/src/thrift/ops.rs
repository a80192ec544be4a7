//! What both services do over the store beyond one call: the
//! read-modify-write operations (check-and-put, check-and-mutate, append,
//! multi-column increment), each one store transaction over
//! [`Store::read_modify_write`], and the region holding a row.

use rowsearch_store::{Batch, Cell, Delete, PutCell, Region, Store};

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

/// The check of a check-and-mutate: the column read, and whether its
/// newest value (`None`: no such cell) lets the mutations through.
pub(crate) type Check<'c> = ((&'c str, &'c [u8]), &'c dyn Fn(Option<&[u8]>) -> bool);

/// Applies `batch` when `check` holds (always, without one), with the
/// newest version of each column of `newest` (in `row`) deleted too; whether
/// it did. The read, the newest versions' lookups and the write are one
/// transaction.
pub(crate) fn check_and_apply(
    store: &Store,
    table: &str,
    row: &[u8],
    check: Option<Check<'_>>,
    batch: Batch,
    newest: &[(String, Vec<u8>)],
) -> Result<bool, HbaseError> {
    let (applied, _) = store
        .read_modify_write(table, row, &mut |read| {
            if let Some(((family, qualifier), holds)) = check
                && !holds(read(family, qualifier)?.map(|c| c.value).as_deref())
            {
                return Ok((None, false));
            }
            let mut batch = batch.clone();
            for (family, qualifier) in newest {
                if let Some(cell) = read(family, qualifier)? {
                    let (family, qualifier, timestamp) = (family.clone(), qualifier.clone(), cell.timestamp);
                    batch.delete(table, row.to_vec(), Delete::Version { family, qualifier, timestamp });
                }
            }
            Ok(((!batch.is_empty()).then_some(batch), true))
        })
        .map_err(store_error)?;
    Ok(applied)
}

/// HBase's check (`HRegion.checkAndMutate`) of a column's newest value
/// `now` against `given` with the compare op `op` (0 `<` .. 5 `>`, as
/// `TCompareOp`; HBase's order: `given op now`). An absent or empty `given`
/// asks for no cell or an empty one (`!=`: a non-empty one); a given value
/// never matches a missing cell.
pub(crate) fn hbase_check(op: i64, given: Option<&[u8]>, now: Option<&[u8]>) -> bool {
    const NOT_EQUAL: i64 = 3;
    match (given.filter(|g| !g.is_empty()), now) {
        (None, None) => op != NOT_EQUAL,
        (None, Some(now)) => now.is_empty() == (op != NOT_EQUAL),
        (Some(_), None) => false,
        (Some(given), Some(now)) => {
            let order = given.cmp(now);
            match op {
                0 => order.is_lt(),
                1 => order.is_le(),
                2 => order.is_eq(),
                3 => order.is_ne(),
                4 => order.is_ge(),
                5 => order.is_gt(),
                _ => false,
            }
        }
    }
}

/// The timestamp of a read-modify-write's new version of a column whose
/// newest version is `old`: now, or just past `old` (as HBase, so each
/// increment and append is a version of its own).
fn next_version(store: &Store, old: Option<&Cell>) -> u64 {
    let now = store.now_ms();
    old.map_or(now, |c| now.max(c.timestamp.saturating_add(1)))
}

/// Appends each value to its column's newest value (a new version), in
/// one transaction; the new values and their timestamps, in order.
pub(crate) fn append_values(
    store: &Store,
    table: &str,
    row: &[u8],
    pairs: &[(String, Vec<u8>, Vec<u8>)],
) -> Result<Vec<(Vec<u8>, u64)>, HbaseError> {
    let (values, _) = store
        .read_modify_write(table, row, &mut |read| {
            let mut puts = Vec::with_capacity(pairs.len());
            let mut out = Vec::with_capacity(pairs.len());
            for (family, qualifier, suffix) in pairs {
                let old = read(family, qualifier)?;
                let ts = next_version(store, old.as_ref());
                let mut value = old.map(|c| c.value).unwrap_or_default();
                value.extend_from_slice(suffix);
                out.push((value.clone(), ts));
                puts.push(PutCell::new(family.clone(), qualifier.clone(), value).at(ts));
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
/// transaction; the new values and their timestamps, in order.
pub(crate) fn add_counters(
    store: &Store,
    table: &str,
    row: &[u8],
    amounts: &[(String, Vec<u8>, i64)],
) -> Result<Vec<(i64, u64)>, HbaseError> {
    let (values, _) = store
        .read_modify_write(table, row, &mut |read| {
            let mut puts = Vec::with_capacity(amounts.len());
            let mut out = Vec::with_capacity(amounts.len());
            for (family, qualifier, amount) in amounts {
                let old = read(family, qualifier)?;
                let ts = next_version(store, old.as_ref());
                let now = match old.map(|c| c.value) {
                    None => 0,
                    Some(v) => match <[u8; 8]>::try_from(v.as_slice()) {
                        Ok(b) => i64::from_be_bytes(b),
                        Err(_) => {
                            return Err(rowsearch_store::Error::callback(NotALong(format!(
                                "DoNotRetryIOException: Field is not a long, it's {} bytes wide",
                                v.len()
                            ))));
                        }
                    },
                };
                let next = now.checked_add(*amount).ok_or_else(|| {
                    rowsearch_store::Error::callback(NotALong(format!("{now} + {amount} overflows a long")))
                })?;
                out.push((next, ts));
                puts.push(
                    PutCell::new(family.clone(), qualifier.clone(), next.to_be_bytes().to_vec()).at(ts),
                );
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
