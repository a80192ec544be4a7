//! The namespace-wide admin calls of [`HbaseClient`]: the tables of its
//! namespace, a table's families, dropping the namespace.

use rowsearch_store::FamilySchema;

use super::client::{ClientError, HbaseClient, binary};
use super::codec::Value;

impl HbaseClient {
    /// The tables of the client's namespace (`HOST:PORT/NAMESPACE`; HBase's
    /// `default` without one), by name.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn table_names(&mut self) -> Result<Vec<String>, ClientError> {
        let ns = self.namespace().unwrap_or("default").to_owned();
        let names = match self.call("getTableNamesByNamespace", vec![(1, binary(ns.as_bytes()))])? {
            Some(Value::List { items, .. }) => items,
            other => return Err(Self::protocol("getTableNamesByNamespace", format!("{other:?}"))),
        };
        Ok(names
            .iter()
            .filter_map(|name| match name.field(2) {
                Some(Value::Binary(qualifier)) => Some(String::from_utf8_lossy(qualifier).into_owned()),
                _ => None,
            })
            .collect())
    }

    /// `table`'s column families as HBase describes them (name, versions
    /// kept, time to live).
    ///
    /// # Errors
    /// [`ClientError`]; `Protocol` for a descriptor this client cannot read.
    pub fn families(&mut self, table: &str) -> Result<Vec<FamilySchema>, ClientError> {
        let name = self.table_name(table);
        let answer = self.call("getTableDescriptor", vec![(1, name)])?;
        let descriptor = answer.ok_or_else(|| Self::protocol("getTableDescriptor", "no result"))?;
        let families = match descriptor.field(2) {
            Some(Value::List { items, .. }) => items,
            _ => return Err(Self::protocol("getTableDescriptor", "no families")),
        };
        families
            .iter()
            .map(|f| {
                super::thbase_types::family_of(f)
                    .map_err(|e| Self::protocol("getTableDescriptor", format!("{e:?}")))
            })
            .collect()
    }

    /// Drops every table of the namespace (`HOST:PORT/NAMESPACE`) and the
    /// namespace itself: a test's, or one an operator retires. Nothing
    /// without a namespace.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn drop_namespace(&mut self) -> Result<(), ClientError> {
        let Some(ns) = self.namespace().map(str::to_owned) else { return Ok(()) };
        for table in self.table_names()? {
            // A table disabled already is as good.
            let _ = self.call("disableTable", vec![(1, self.table_name(&table))]);
            self.call("deleteTable", vec![(1, self.table_name(&table))])?;
        }
        self.call("deleteNamespace", vec![(1, binary(ns.as_bytes()))]).map(|_| ())
    }
}
