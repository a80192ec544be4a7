//! Change-feed consumers over HBase: their records in a table of the
//! tables' namespace, so every rowsearch process over that HBase sees and
//! moves the same ones.
//!
//! ```text
//! table  rowsearch_consumers (made with the first consumer; not replicated)
//! row    the consumer's stored name (UTF-8; `rowsearch_store::scoped_name`)
//! cell   f:c = the store's 24-byte consumer record (`Consumer::record`)
//! ```
//!
//! A record is one cell of one row: HBase writes it atomically, and two
//! processes acknowledging the same consumer at once leave the later one.

use rowsearch_store::{Consumer, FamilySchema, PutCell, Row};

use super::tables::{HbaseError, HbaseTables, ensure};

/// The consumers table, in the namespace of the tables.
pub const CONSUMERS: &str = "rowsearch_consumers";
const FAMILY: &str = "f";
const QUALIFIER: &[u8] = b"c";

fn consumer_of(row: &Row) -> Result<Consumer, HbaseError> {
    let corrupted = |why: &str| HbaseError::Schema {
        table: CONSUMERS.to_owned(),
        reason: format!("consumer {:?}: {why}", String::from_utf8_lossy(&row.key)),
    };
    let name = std::str::from_utf8(&row.key).map_err(|_| corrupted("its name is not UTF-8"))?;
    let cell = row
        .cells
        .iter()
        .find(|c| &*c.family == FAMILY && c.qualifier == QUALIFIER)
        .ok_or_else(|| corrupted("no record"))?;
    Consumer::from_record(name, &cell.value).ok_or_else(|| corrupted("its record is not 24 bytes"))
}

impl HbaseTables {
    /// The consumer called `name`, if any.
    ///
    /// # Errors
    /// `Client`; `Schema` for a record that is not one.
    pub(crate) fn consumer_record(&self, name: &str) -> Result<Option<Consumer>, HbaseError> {
        let mut client = self.client();
        if !client.table_exists(CONSUMERS)? {
            return Ok(None);
        }
        match client.get_rows(CONSUMERS, &[name.as_bytes()])?.pop().flatten() {
            Some(row) => Ok(Some(consumer_of(&row)?)),
            None => Ok(None),
        }
    }

    /// Every consumer, by name.
    ///
    /// # Errors
    /// As [`Self::consumer_record`].
    pub(crate) fn consumer_records(&self) -> Result<Vec<Consumer>, HbaseError> {
        let mut client = self.client();
        if !client.table_exists(CONSUMERS)? {
            return Ok(Vec::new());
        }
        let mut rows = Vec::new();
        client.scan(CONSUMERS, (None, None), None, 1000, &mut |row| rows.push(row))?;
        rows.iter().map(consumer_of).collect()
    }

    /// Writes `c`'s record (the table made when missing).
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn put_consumer_record(&self, c: &Consumer) -> Result<(), HbaseError> {
        let mut client = self.client();
        ensure(&mut client, CONSUMERS, FamilySchema::new(FAMILY).max_versions(1))?;
        let cell = PutCell::new(FAMILY, QUALIFIER.to_vec(), c.record().to_vec());
        client.put_rows(CONSUMERS, &[(c.name.as_bytes().to_vec(), vec![cell])])?;
        Ok(())
    }

    /// Removes the consumer `name`'s record; whether there was one.
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn delete_consumer_record(&self, name: &str) -> Result<bool, HbaseError> {
        if self.consumer_record(name)?.is_none() {
            return Ok(false);
        }
        self.client().delete_row(CONSUMERS, name.as_bytes())?;
        Ok(true)
    }
}
