//! The three phases of a write to an indexed table (see the module above):
//! what the write changes in each index, entries put unverified, then
//! verified and the old ones deleted.

use std::collections::BTreeMap;
use std::sync::Arc;

use rowsearch_store::{Cell, Delete, EntryCodec, ErrorKind, PutCell, Row, TableSchema};

use super::super::tables::HbaseError;
use super::layout::{FAMILY, STATUS, UNVERIFIED, VERIFIED, WRITE_WINDOW_MS, companion, status_value};
use crate::thrift::HbaseClient;

/// Stops the process at `point` when `ROWSEARCH_FAULT` names it: how the
/// tests kill a write between its phases (`index-unverified`: after
/// phase 1, `index-row`: after phase 2).
fn fault(point: &str) {
    static FAULT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    if FAULT.get_or_init(|| std::env::var("ROWSEARCH_FAULT").ok()).as_deref() == Some(point) {
        eprintln!("rowsearch: stopped at {point} (ROWSEARCH_FAULT)");
        std::process::abort();
    }
}

/// A column: family and qualifier.
type ColumnName = (Arc<str>, Vec<u8>);

/// One index's part of a write: entries (bytes, expiry) added and taken
/// away.
struct Changes {
    table: String,
    add: Vec<(Vec<u8>, u64)>,
    remove: Vec<(Vec<u8>, u64)>,
}

/// What a write does to a table's indexes.
pub(crate) struct IndexWrite {
    /// The write's timestamp (every index cell's).
    at: u64,
    indexes: Vec<Changes>,
}

impl IndexWrite {
    /// The index changes of rows going from `old` to `new` (either absent)
    /// in `table` (of `schema`), at `at` (none, for a write that changes
    /// no entry: its phases then write nothing).
    ///
    /// # Errors
    /// `Store` (an index the schema cannot resolve).
    pub fn plan(
        table: &str,
        schema: &TableSchema,
        at: u64,
        changes: &[(Option<&Row>, Option<&Row>)],
    ) -> Result<IndexWrite, HbaseError> {
        let mut indexes = Vec::new();
        for index in &schema.indexes {
            let codec = EntryCodec::new(table, schema, &index.name)?;
            let mut c = Changes { table: companion(table, &index.name), add: Vec::new(), remove: Vec::new() };
            for (old, new) in changes {
                let before = old.and_then(|r| codec.entry(r, at));
                let after = new.and_then(|r| codec.entry(r, at));
                match (before, after) {
                    (Some(b), Some(a)) if b.0 == a.0 => {
                        if b.1 != a.1 {
                            c.add.push(a);
                        }
                    }
                    (b, a) => {
                        c.remove.extend(b);
                        c.add.extend(a);
                    }
                }
            }
            if !c.add.is_empty() || !c.remove.is_empty() {
                indexes.push(c);
            }
        }
        Ok(IndexWrite { at, indexes })
    }

    /// Phase 1: every entry added or taken away put unverified.
    ///
    /// # Errors
    /// HBase's.
    pub fn unverified(&self, client: &mut HbaseClient) -> Result<(), HbaseError> {
        for c in &self.indexes {
            let rows: Vec<(Vec<u8>, Vec<PutCell>)> = c
                .add
                .iter()
                .chain(&c.remove)
                .map(|(e, expiry)| (e.clone(), self.status(UNVERIFIED, *expiry)))
                .collect();
            client.put_rows(&c.table, &rows)?;
        }
        fault("index-unverified");
        Ok(())
    }

    /// Refuses to write the rows once half the write window has gone since
    /// `at` (a later lookup may take the unverified entries for a failed
    /// write's past the window).
    ///
    /// # Errors
    /// `Store` (`TimeLimit`).
    pub fn in_window(&self) -> Result<(), HbaseError> {
        let spent = crate::hbase::clock::now_ms().saturating_sub(self.at);
        if spent > WRITE_WINDOW_MS / 2 {
            return Err(rowsearch_store::Error::from(ErrorKind::Cancelled {
                reason: rowsearch_store::CancelReason::TimeLimit,
            })
            .into());
        }
        Ok(())
    }

    /// Phase 3: the entries added put verified, those taken away deleted.
    ///
    /// # Errors
    /// HBase's.
    pub fn verified(&self, client: &mut HbaseClient) -> Result<(), HbaseError> {
        fault("index-row");
        for c in &self.indexes {
            let rows: Vec<(Vec<u8>, Vec<PutCell>)> =
                c.add.iter().map(|(e, expiry)| (e.clone(), self.status(VERIFIED, *expiry))).collect();
            if !rows.is_empty() {
                client.put_rows(&c.table, &rows)?;
            }
            for (entry, _) in &c.remove {
                client.delete_cells(&c.table, entry, &Delete::Row { up_to: Some(self.at) })?;
            }
        }
        Ok(())
    }

    fn status(&self, status: u8, expiry: u64) -> Vec<PutCell> {
        let mut cell = PutCell::new(FAMILY, STATUS.to_vec(), status_value(status, expiry));
        cell.timestamp = Some(self.at);
        vec![cell]
    }
}

/// Row `key` as it stands after `puts` (each at its timestamp) onto `old`
/// (the newest version of each column): per column the newest, a put
/// winning a tie.
pub(crate) fn merged_at(key: &[u8], old: Option<&Row>, puts: &[PutCell], at: u64) -> Row {
    let mut columns: BTreeMap<ColumnName, (u64, Vec<u8>)> = BTreeMap::new();
    for c in old.map(|r| r.cells.as_slice()).unwrap_or_default() {
        let newest =
            columns.entry((Arc::clone(&c.family), c.qualifier.clone())).or_insert((c.timestamp, Vec::new()));
        if c.timestamp >= newest.0 {
            *newest = (c.timestamp, c.value.clone());
        }
    }
    for p in puts {
        let ts = p.timestamp.unwrap_or(at);
        let newest =
            columns.entry((Arc::from(p.family.as_str()), p.qualifier.clone())).or_insert((ts, Vec::new()));
        if ts >= newest.0 {
            *newest = (ts, p.value.clone());
        }
    }
    let cells = columns
        .into_iter()
        .map(|((family, qualifier), (timestamp, value))| Cell { family, qualifier, timestamp, value })
        .collect();
    Row { key: key.to_vec(), cells }
}

/// What is left of `row` (every version) after `whats`, as HBase deletes
/// them; `None` when nothing.
pub(crate) fn after_deletes(row: &Row, whats: &[Delete]) -> Option<Row> {
    let upto = |up_to: &Option<u64>, ts: u64| up_to.is_none_or(|t| ts <= t);
    let covers = |w: &Delete, c: &Cell| match w {
        Delete::Row { up_to } => upto(up_to, c.timestamp),
        Delete::Family { family, up_to } => *c.family == **family && upto(up_to, c.timestamp),
        Delete::Column { family, qualifier, up_to } => {
            *c.family == **family && c.qualifier == *qualifier && upto(up_to, c.timestamp)
        }
        Delete::Version { family, qualifier, timestamp } => {
            *c.family == **family && c.qualifier == *qualifier && c.timestamp == *timestamp
        }
    };
    let cells: Vec<Cell> =
        row.cells.iter().filter(|c| !whats.iter().any(|w| covers(w, c))).cloned().collect();
    (!cells.is_empty()).then(|| Row { key: row.key.clone(), cells })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(q: &str, ts: u64, v: &str) -> Cell {
        Cell {
            family: Arc::from("m"),
            qualifier: q.as_bytes().to_vec(),
            timestamp: ts,
            value: v.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_put_older_than_the_row_leaves_its_value() {
        let old = Row { key: b"r".to_vec(), cells: vec![cell("a", 10, "new")] };
        let mut older = PutCell::new("m", "a", "old");
        older.timestamp = Some(5);
        let merged = merged_at(b"r", Some(&old), &[older, PutCell::new("m", "b", "x")], 20);
        assert_eq!(merged.cells, vec![cell("a", 10, "new"), cell("b", 20, "x")]);
    }

    #[test]
    fn deletes_uncover_older_versions() {
        let row = Row {
            key: b"r".to_vec(),
            cells: vec![cell("a", 10, "v2"), cell("a", 5, "v1"), cell("b", 7, "x")],
        };
        let version = Delete::Version { family: "m".into(), qualifier: b"a".to_vec(), timestamp: 10 };
        let left = after_deletes(&row, &[version]).unwrap();
        assert_eq!(left.cells, vec![cell("a", 5, "v1"), cell("b", 7, "x")]);
        let family = Delete::Family { family: "m".into(), up_to: Some(7) };
        assert_eq!(after_deletes(&row, &[family]).unwrap().cells, vec![cell("a", 10, "v2")]);
        assert_eq!(after_deletes(&row, &[Delete::Row { up_to: None }]), None);
    }
}
