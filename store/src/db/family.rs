//! An open column family: its schema and its LMDB database of cells (keyed
//! by cell key, see `crate::key`), and the reads of one column that derived
//! data (indexes, keyword rows) needs.

use std::borrow::Cow;
use std::sync::Arc;

use heed::RoTxn;

use super::BytesDb;
use crate::cell::PutCell;
use crate::error::{Error, Result};
use crate::key;
use crate::schema::FamilySchema;

/// A family of an open table.
#[derive(Debug)]
pub(crate) struct FamilyHandle {
    /// The family name, shared by every cell a read returns.
    pub name: Arc<str>,
    pub schema: FamilySchema,
    pub db_name: String,
    pub db: BytesDb,
    /// The family's zstd dictionary, once trained (`db::value`).
    pub dict: Option<Arc<super::value::Dictionary>>,
}

impl FamilyHandle {
    /// A value as stored in this family, decoded (see `db::value`).
    pub fn value<'v>(&self, stored: &'v [u8]) -> Result<Cow<'v, [u8]>> {
        super::value::decode(self.schema.compression, self.dict.as_deref(), &self.db_name, stored)
    }

    /// A value as this family stores it.
    pub fn stored_value<'v>(&self, value: &'v [u8]) -> Cow<'v, [u8]> {
        super::value::encode(self.schema.compression, self.dict.as_deref(), value)
    }
}

/// The newest stored version of a column of row `stored`: (timestamp, value).
pub(crate) fn newest_stored<'t>(
    txn: &'t RoTxn<'_>,
    family: &FamilyHandle,
    stored: &[u8],
    qualifier: &[u8],
) -> Result<Option<(u64, Cow<'t, [u8]>)>> {
    let prefix = key::column_prefix(stored, qualifier);
    let mut iter = family.db.prefix_iter(txn, &prefix).map_err(|e| Error::lmdb("column read", e))?;
    match iter.next() {
        None => Ok(None),
        Some(item) => {
            let (k, v) = item.map_err(|e| Error::lmdb("column read", e))?;
            Ok(Some((key::RawCellKey::split(&family.db_name, k)?.timestamp, family.value(v)?)))
        }
    }
}

/// The newest version of a column among `cells` put into a new row: the
/// last of equal timestamps, as the last write of a key wins.
pub(crate) fn newest_put<'c>(
    cells: &[&'c PutCell],
    family: &FamilyHandle,
    qualifier: &[u8],
    now_ms: u64,
) -> Option<(u64, &'c [u8])> {
    cells
        .iter()
        .filter(|c| *c.family == *family.name && c.qualifier == *qualifier)
        .map(|c| (c.timestamp.unwrap_or(now_ms), c.value.as_slice()))
        .reduce(|a, b| if b.0 >= a.0 { b } else { a })
}
