//! [`HbaseClient`]'s puts: `putMultiple`, and the check-and-put (HBase's
//! `checkAndPut`: a row's puts applied only when one of its cells holds an
//! expected value, or is missing, decided atomically by the region
//! server), with the `TPut` every put is sent as.

use rowsearch_store::PutCell;

use super::client::{ClientError, HbaseClient, binary, structs};
use super::codec::Value;

/// The `TPut` of row `key` with `cells` (1 row, 2 columnValues; each value
/// 1 family, 2 qualifier, 3 value, 4 timestamp when given).
fn tput(key: &[u8], cells: &[PutCell]) -> Value {
    let values = cells
        .iter()
        .map(|c| {
            let mut cv = vec![
                (1, binary(c.family.as_bytes())),
                (2, binary(c.qualifier.clone())),
                (3, binary(c.value.clone())),
            ];
            if let Some(ts) = c.timestamp {
                cv.push((4, Value::I64(ts as i64)));
            }
            Value::Struct(cv)
        })
        .collect();
    Value::Struct(vec![(1, binary(key)), (2, structs(values))])
}

impl HbaseClient {
    /// One `putMultiple` of `rows` (pieces of rows: a key and some of its
    /// cells), as [`super::put_calls`] cuts them.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn put_call(&mut self, table: &str, rows: &[(&[u8], &[PutCell])]) -> Result<(), ClientError> {
        let puts = rows.iter().map(|(key, cells)| tput(key, cells)).collect();
        self.call("putMultiple", vec![(1, self.full_name(table)), (2, structs(puts))]).map(|_| ())
    }

    /// Puts `cells` into row `key` of `table` only if the cell
    /// `family:qualifier` holds `expected` now (`None`: only if it has no
    /// such cell); whether it did. HBase decides it under the row's lock:
    /// of two callers expecting the same value, one wins.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn check_and_put(
        &mut self,
        table: &str,
        key: &[u8],
        (family, qualifier): (&str, &[u8]),
        expected: Option<&[u8]>,
        cells: &[PutCell],
    ) -> Result<bool, ClientError> {
        let mut args = vec![
            (1, self.full_name(table)),
            (2, binary(key)),
            (3, binary(family.as_bytes())),
            (4, binary(qualifier)),
        ];
        if let Some(value) = expected {
            args.push((5, binary(value)));
        }
        args.push((6, tput(key, cells)));
        match self.call("checkAndPut", args)? {
            Some(Value::Bool(done)) => Ok(done),
            other => Err(Self::protocol("checkAndPut", format!("{other:?}"))),
        }
    }
}
