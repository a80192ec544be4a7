//! The gets of [`HbaseClient`]: rows by key (as of a time, of some
//! columns, every version) and a row through a filter.

use rowsearch_store::Row;

use super::client::{ClientError, HbaseClient, binary, row_of, structs};
use super::codec::Value;

impl HbaseClient {
    /// The newest cell of each column of `keys`' rows, in order (`None`: no
    /// such row), in one call.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn get_rows(&mut self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Row>>, ClientError> {
        self.get_rows_before(table, keys, None)
    }

    /// [`HbaseClient::get_rows`] as of a time: cells with timestamps below
    /// `before` only (`None`: all).
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn get_rows_before(
        &mut self,
        table: &str,
        keys: &[&[u8]],
        before: Option<u64>,
    ) -> Result<Vec<Option<Row>>, ClientError> {
        self.get_many(table, keys, before, false, &[])
    }

    /// [`HbaseClient::get_rows_before`] of only `columns` (every column
    /// when empty): HBase reads and sends no other cell.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn get_columns_before(
        &mut self,
        table: &str,
        keys: &[&[u8]],
        before: Option<u64>,
        columns: &[rowsearch_store::Column],
    ) -> Result<Vec<Option<Row>>, ClientError> {
        self.get_many(table, keys, before, false, columns)
    }

    /// [`HbaseClient::get_rows`] with every version HBase keeps of each
    /// cell, newest first within a column.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn get_rows_versions(
        &mut self,
        table: &str,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<Row>>, ClientError> {
        self.get_many(table, keys, None, true, &[])
    }

    fn get_many(
        &mut self,
        table: &str,
        keys: &[&[u8]],
        before: Option<u64>,
        versions: bool,
        columns: &[rowsearch_store::Column],
    ) -> Result<Vec<Option<Row>>, ClientError> {
        let columns: Vec<Value> = columns
            .iter()
            .map(|c| match c {
                rowsearch_store::Column::Family(f) => Value::Struct(vec![(1, binary(f.as_bytes()))]),
                rowsearch_store::Column::Qualifier(f, q) => {
                    Value::Struct(vec![(1, binary(f.as_bytes())), (2, binary(q.clone()))])
                }
            })
            .collect();
        let gets = keys
            .iter()
            .map(|k| {
                let mut get = vec![(1, binary(*k))];
                if !columns.is_empty() {
                    get.push((2, structs(columns.clone())));
                }
                if let Some(before) = before {
                    let max = before.min(i64::MAX as u64) as i64;
                    get.push((4, Value::Struct(vec![(1, Value::I64(0)), (2, Value::I64(max))])));
                }
                if versions {
                    get.push((5, Value::I32(i32::MAX)));
                }
                Value::Struct(get)
            })
            .collect();
        let answer = self.call("getMultiple", vec![(1, self.full_name(table)), (2, structs(gets))])?;
        let Some(Value::List { items, .. }) = answer else {
            return Err(Self::protocol("getMultiple", "not a list"));
        };
        if items.len() != keys.len() {
            return Err(Self::protocol(
                "getMultiple",
                format!("{} results for {} gets", items.len(), keys.len()),
            ));
        }
        items.iter().map(|r| row_of("getMultiple", r)).collect()
    }

    /// The newest cell of each column of row `key` that `filter` (HBase's
    /// filter language) keeps; `None` when it keeps none.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn get_filtered(
        &mut self,
        table: &str,
        key: &[u8],
        filter: &[u8],
    ) -> Result<Option<Row>, ClientError> {
        let get = Value::Struct(vec![(1, binary(key)), (6, binary(filter))]);
        let answer = self.call("get", vec![(1, self.full_name(table)), (2, get)])?;
        match answer {
            Some(r) => row_of("get", &r),
            None => Err(Self::protocol("get", "no result")),
        }
    }
}
