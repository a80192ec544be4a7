//! Read-modify-write on one row: what HBase's atomic increments, appends
//! and check-and-puts are made of. The read and the write share one write
//! transaction under the writer lock, so no other write comes between.

use crate::Store;
use crate::cell::PutCell;
use crate::db::feed::CommitInfo;
use crate::error::Result;
use crate::write::{Batch, Decide};

impl Store {
    /// Adds `delta` to the counter in `family:qualifier` of `row` and
    /// returns its new value, read and written in one transaction, so
    /// concurrent increments lose none (HBase's `Increment`). A counter is
    /// 8 bytes, a big-endian signed integer; a missing cell counts as 0.
    /// The write goes the way every write goes (versions, index entries,
    /// keyword rows, the change feed).
    ///
    /// # Errors
    /// `NotACounter` (the cell holds anything but 8 bytes, or the sum
    /// overflows); as [`Store::apply`].
    pub fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        delta: i64,
    ) -> Result<(i64, CommitInfo)> {
        let not_a_counter = |detail: String| {
            crate::Error::from(crate::ErrorKind::NotACounter {
                table: table.to_owned(),
                row: crate::binstr::encode(row),
                family: family.to_owned(),
                qualifier: crate::binstr::encode(qualifier),
                detail,
            })
        };
        let (new, info) = self.read_modify_write(table, row, &mut |read| {
            let old = match read(family, qualifier)?.map(|c| c.value) {
                None => 0,
                Some(value) => match <[u8; 8]>::try_from(value.as_slice()) {
                    Ok(bytes) => i64::from_be_bytes(bytes),
                    Err(_) => {
                        return Err(not_a_counter(format!(
                            "it holds {} bytes; a counter holds 8 (a big-endian signed integer)",
                            value.len()
                        )));
                    }
                },
            };
            let new = old
                .checked_add(delta)
                .ok_or_else(|| not_a_counter(format!("{old} + {delta} overflows a 64-bit counter")))?;
            let mut batch = Batch::new();
            batch.put(
                table,
                row.to_vec(),
                vec![PutCell::new(family, qualifier.to_vec(), new.to_be_bytes().to_vec())],
            );
            Ok((Some(batch), new))
        })?;
        Ok((new, info.unwrap_or(CommitInfo { first_seq: None, last_seq: None, rows: 0 })))
    }

    /// Reads cells of `row` and writes what `decide` makes of them, in one
    /// transaction: `decide` is handed a reader of the newest value of any
    /// `family`, `qualifier` of the row, and answers the batch to write
    /// (or none) and what the call returns. No other write comes between
    /// the reads and the write: HBase's atomic increments, appends and
    /// check-and-puts are built on it. The batch goes the way every write
    /// goes. `decide` may run more than once (when the schema changes
    /// meanwhile); what it returns last is answered.
    ///
    /// # Errors
    /// As [`Store::apply`], and whatever `decide` returns.
    pub fn read_modify_write<T>(
        &self,
        table: &str,
        row: &[u8],
        decide: &mut Decide<'_, T>,
    ) -> Result<(T, Option<CommitInfo>)> {
        self.writer().read_modify_write(table, row, decide)
    }
}
