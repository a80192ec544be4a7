//! The `Hbase` service of HBase's Thrift gateway over the store: each
//! method's arguments read by field id from the call's struct, the store
//! called (blocking: the server runs this off the async workers), the
//! result or the exception written as the reply's struct. Writes go
//! through the store's one write path (`Store::apply`), so keyword rows,
//! secondary indexes, the change feed and live search see them as they see
//! HTTP's.

use std::sync::Arc;

use rowsearch_store::{
    Batch, Column, Delete, ErrorKind, PutCell, ReadOptions, Row, Scan, Store, TableSchema,
};

use super::args::{arg, bytes, columns, int, list, scanner_id, store_error, text, timestamp};
use super::codec::{TType, Value};
use super::hbase_types::{HbaseError, cell, descriptor_of, family_from_descriptor, row_result};
use super::ops::{Check, append_values, check_and_apply, region_of};
#[cfg(test)]
use super::scanners::{MAX_SCANNERS, SCANNER_LEASE};
use super::scanners::{Session, rows_wanted};

/// What a call comes to: a result (`None` for `void`), or an exception.
pub(crate) type Outcome = Result<Option<Value>, HbaseError>;

/// The service's state shared by every connection.
#[derive(Debug)]
pub(crate) struct Gateway {
    store: Arc<Store>,
}

/// Whether `method` declares `IllegalArgument` (field 2 of its result);
/// for the others an illegal argument is raised as `IOError`.
fn declares_illegal_argument(method: &str) -> bool {
    matches!(
        method,
        "createTable"
            | "mutateRow"
            | "mutateRowTs"
            | "mutateRows"
            | "mutateRowsTs"
            | "atomicIncrement"
            | "scannerGet"
            | "scannerGetList"
            | "scannerClose"
            | "checkAndPut"
    )
}

/// The reply struct for `outcome` of `method`.
pub(crate) fn reply_body(method: &str, outcome: Outcome) -> Value {
    match outcome {
        Ok(Some(value)) => Value::Struct(vec![(0, value)]),
        Ok(None) => Value::Struct(vec![]),
        Err(HbaseError::IllegalArgument(m)) if !declares_illegal_argument(method) => {
            Value::Struct(vec![HbaseError::Io(m).to_field()])
        }
        Err(HbaseError::AlreadyExists(m)) if method != "createTable" => {
            Value::Struct(vec![HbaseError::Io(m).to_field()])
        }
        Err(e) => Value::Struct(vec![e.to_field()]),
    }
}

/// A region as HBase's `TRegionInfo`: start and end keys, id, name
/// (`table,start,id`), version, server and port.
fn region_info(table: &str, r: rowsearch_store::Region) -> Value {
    let start = r.start.unwrap_or_default();
    let mut name = format!("{table},").into_bytes();
    name.extend_from_slice(&start);
    name.extend_from_slice(format!(",{}", r.index).as_bytes());
    Value::Struct(vec![
        (1, Value::Binary(start)),
        (2, Value::Binary(r.end.unwrap_or_default())),
        (3, Value::I64(r.index as i64)),
        (4, Value::Binary(name)),
        (5, Value::Byte(1)),
        (6, Value::Binary(b"localhost".to_vec())),
        (7, Value::I32(0)),
    ])
}

impl Gateway {
    pub(crate) fn new(store: Arc<Store>) -> Gateway {
        Gateway { store }
    }

    /// Runs `method`; `None` for a method this gateway does not serve.
    pub(crate) fn call(&self, session: &mut Session, method: &str, args: &Value) -> Option<Outcome> {
        session.expire(std::time::Instant::now());
        Some(match method {
            "getTableNames" => self.table_names(),
            "getTableNamesWithIsTableEnabled" => self.tables_enabled(),
            "getThriftServerType" => Ok(Some(Value::I32(1))),
            "getClusterId" => Ok(Some(Value::Binary(b"rowsearch".to_vec()))),
            "createTable" => self.create_table(args),
            "deleteTable" => self.delete_table(args),
            "enableTable" => self.set_enabled(args, true),
            "disableTable" => self.set_enabled(args, false),
            "isTableEnabled" => self.is_enabled(args),
            "getColumnDescriptors" => self.column_descriptors(args),
            "getTableRegions" => self.regions(args),
            "getRegionInfo" => self.region_info(args),
            "compact" | "majorCompact" => self.store.compact().map(|_| None).map_err(store_error),
            "get" => self.cells(args, None, 1),
            "getVer" => self.versions(args, None),
            "getVerTs" => self.versions(args, Some(4)),
            "getRow" => self.rows(args, RowArgs { rows: Rows::One(2), columns: None, ts: None }),
            "getRowWithColumns" => {
                self.rows(args, RowArgs { rows: Rows::One(2), columns: Some(3), ts: None })
            }
            "getRowTs" => self.rows(args, RowArgs { rows: Rows::One(2), columns: None, ts: Some(3) }),
            "getRowWithColumnsTs" => {
                self.rows(args, RowArgs { rows: Rows::One(2), columns: Some(3), ts: Some(4) })
            }
            "getRows" => self.rows(args, RowArgs { rows: Rows::Many(2), columns: None, ts: None }),
            "getRowsWithColumns" => {
                self.rows(args, RowArgs { rows: Rows::Many(2), columns: Some(3), ts: None })
            }
            "getRowsTs" => self.rows(args, RowArgs { rows: Rows::Many(2), columns: None, ts: Some(3) }),
            "getRowsWithColumnsTs" => {
                self.rows(args, RowArgs { rows: Rows::Many(2), columns: Some(3), ts: Some(4) })
            }
            "mutateRow" => self.mutate_row(args, None),
            "mutateRowTs" => self.mutate_row(args, Some(4)),
            "mutateRows" => self.mutate_rows(args, None),
            "mutateRowsTs" => self.mutate_rows(args, Some(3)),
            "deleteAll" => self.delete(args, DeleteArgs { column: Some(3), ts: None }),
            "deleteAllTs" => self.delete(args, DeleteArgs { column: Some(3), ts: Some(4) }),
            "deleteAllRow" => self.delete(args, DeleteArgs { column: None, ts: None }),
            "deleteAllRowTs" => self.delete(args, DeleteArgs { column: None, ts: Some(3) }),
            "scannerOpen" => {
                self.open(session, args, ScanArgs { stop: None, prefix: false, columns: 3, ts: None })
            }
            "scannerOpenWithStop" => {
                self.open(session, args, ScanArgs { stop: Some(3), prefix: false, columns: 4, ts: None })
            }
            "scannerOpenWithPrefix" => {
                self.open(session, args, ScanArgs { stop: None, prefix: true, columns: 3, ts: None })
            }
            "scannerOpenTs" => {
                self.open(session, args, ScanArgs { stop: None, prefix: false, columns: 3, ts: Some(4) })
            }
            "scannerOpenWithStopTs" => {
                self.open(session, args, ScanArgs { stop: Some(3), prefix: false, columns: 4, ts: Some(5) })
            }
            "scannerOpenWithScan" => self.open_with_scan(session, args),
            "scannerGet" => self.next_rows(session, args, Some(1)),
            "scannerGetList" => self.next_rows(session, args, None),
            "scannerClose" => Self::close(session, args),
            "atomicIncrement" => self.atomic_increment(args),
            "checkAndPut" => self.check_and_put(args),
            "getRowOrBefore" => self.row_or_before(args),
            "append" => arg(args, 1, "append").and_then(|a| self.append(a)),
            "increment" => arg(args, 1, "increment").and_then(|i| self.increments(std::slice::from_ref(i))),
            "incrementRows" => self.increments(list(args, 1)),
            _ => return None,
        })
    }

    /// HBase's refusal of a disabled table, before a call that may not
    /// reach the store's own (an empty batch, a scanner not read yet).
    fn check_enabled(&self, table: &str) -> Result<(), HbaseError> {
        if !self.store.is_table_enabled(table).map_err(store_error)? {
            return Err(store_error(ErrorKind::TableDisabled { table: table.to_owned() }.into()));
        }
        Ok(())
    }

    fn table_names(&self) -> Outcome {
        let names = self.store.tables().map_err(store_error)?;
        let items = names.into_iter().map(|n| Value::Binary(n.into_bytes())).collect();
        Ok(Some(Value::List { elem: TType::Binary, items }))
    }

    /// Each table's name and whether it is enabled.
    fn tables_enabled(&self) -> Outcome {
        let names = self.store.tables().map_err(store_error)?;
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            let enabled = self.store.is_table_enabled(&name).map_err(store_error)?;
            entries.push((Value::Binary(name.into_bytes()), Value::Bool(enabled)));
        }
        Ok(Some(Value::Map { key: TType::Binary, value: TType::Bool, entries }))
    }

    fn create_table(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let families = list(args, 2).iter().map(family_from_descriptor).collect::<Result<Vec<_>, _>>()?;
        if families.is_empty() {
            return Err(HbaseError::IllegalArgument("a table needs at least one column family".into()));
        }
        if self.store.tables().map_err(store_error)?.contains(&table) {
            return Err(HbaseError::AlreadyExists(format!("table {table} exists")));
        }
        self.store.create_table(&table, &TableSchema::new(families)).map_err(store_error)?;
        Ok(None)
    }

    fn delete_table(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        // HBase deletes only a disabled table.
        if self.store.is_table_enabled(&table).map_err(store_error)? {
            return Err(HbaseError::Io(format!("TableNotDisabledException: table {table} is enabled")));
        }
        rowsearch_indexer::drop_table(&self.store, &table).map_err(|e| HbaseError::Io(e.to_string()))?;
        Ok(None)
    }

    fn set_enabled(&self, args: &Value, enabled: bool) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.store.set_table_enabled(&table, enabled).map_err(store_error)?;
        Ok(None)
    }

    fn is_enabled(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        Ok(Some(Value::Bool(self.store.is_table_enabled(&table).map_err(store_error)?)))
    }

    fn column_descriptors(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let schema = self.store.schema(&table).map_err(store_error)?;
        let entries = schema
            .families
            .iter()
            .map(|f| (Value::Binary(format!("{}:", f.name).into_bytes()), descriptor_of(f)))
            .collect();
        Ok(Some(Value::Map { key: TType::Binary, value: TType::Struct, entries }))
    }

    fn regions(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let regions = self.store.regions(&table).map_err(store_error)?;
        let items = regions.into_iter().map(|r| region_info(&table, r)).collect();
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    /// `getRegionInfo`: the region holding a row, the row given as HBase's
    /// `hbase:meta` key for it (`table,row,99999999999999`, as clients
    /// build it; a bare `table,row` is taken too).
    fn region_info(&self, args: &Value) -> Outcome {
        let meta_row = bytes(args, 1, "row")?;
        let comma = meta_row.iter().position(|b| *b == b',').ok_or_else(|| {
            HbaseError::Io(format!(
                "Cannot find row in hbase:meta, row={}: not table,row,... ",
                String::from_utf8_lossy(meta_row)
            ))
        })?;
        let table = std::str::from_utf8(&meta_row[..comma])
            .map_err(|_| HbaseError::Io("the table name is not UTF-8".into()))?
            .to_owned();
        let rest = &meta_row[comma + 1..];
        // The last ",digits" is the region id part HBase's key ends with.
        let row = match rest.iter().rposition(|b| *b == b',') {
            Some(i) if rest[i + 1..].iter().all(u8::is_ascii_digit) => &rest[..i],
            _ => rest,
        };
        let region = region_of(&self.store, &table, row)?;
        Ok(Some(region_info(&table, region)))
    }

    /// `getRowOrBefore`: the cells of `family` in the row at `row` or, if
    /// none, the nearest row before it (a reversed scan of one row, as
    /// HBase's gateway does it).
    fn row_or_before(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let family = Column::Family(Column::parse(bytes(args, 3, "family")?).family().to_owned());
        let scan = Scan::new()
            .start(row.to_vec())
            .reverse(true)
            .limit(1)
            .read(ReadOptions::default().column(family));
        let page = self.store.scan(&table, &scan).map_err(store_error)?;
        let items = page
            .rows
            .first()
            .map_or_else(Vec::new, |r| r.cells.iter().map(|c| cell(&c.value, c.timestamp)).collect());
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    /// `get`, `getVer`, `getVerTs`: one column's newest versions.
    fn cells(&self, args: &Value, ts: Option<i16>, versions: u32) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let column = Column::parse(bytes(args, 3, "column")?);
        let mut read = ReadOptions::default().column(column).versions(versions.max(1));
        if let Some(id) = ts {
            // HBase's getVerTs: versions before the timestamp (its
            // gateway's time range [0, ts), as a real HBase answers).
            read = read.time_range(0, Some(timestamp(args, id)?));
        }
        let found = self.store.get(&table, row, &read).map_err(store_error)?;
        let items =
            found.map_or_else(Vec::new, |r| r.cells.iter().map(|c| cell(&c.value, c.timestamp)).collect());
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    fn versions(&self, args: &Value, ts: Option<i16>) -> Outcome {
        let id = if ts.is_some() { 5 } else { 4 };
        let n = int(args, id, "numVersions")?;
        let n = u32::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| HbaseError::IllegalArgument(format!("numVersions {n}: at least 1")))?;
        self.cells(args, ts, n)
    }

    fn rows(&self, args: &Value, a: RowArgs) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let keys: Vec<&[u8]> = match a.rows {
            Rows::One(id) => vec![bytes(args, id, "row")?],
            Rows::Many(id) => list(args, id)
                .iter()
                .filter_map(|v| if let Value::Binary(b) = v { Some(b.as_slice()) } else { None })
                .collect(),
        };
        let mut read = ReadOptions::default();
        if let Some(id) = a.columns {
            read.columns = columns(list(args, id));
        }
        if let Some(id) = a.ts {
            // getRowTs: versions older than the timestamp (exclusive).
            read = read.time_range(0, Some(timestamp(args, id)?));
        }
        let rows = self.store.multi_get(&table, &keys, &read).map_err(store_error)?;
        let items = rows
            .into_iter()
            .flatten()
            .filter(|r| !r.cells.is_empty())
            .map(|r| row_result(&r, false))
            .collect();
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    /// The `Mutation`s of one row into `batch` (`ts`: the version of puts
    /// and the bound of deletes).
    fn add_mutations(
        batch: &mut Batch,
        table: &str,
        row: &[u8],
        mutations: &[Value],
        ts: Option<u64>,
    ) -> Result<(), HbaseError> {
        for m in mutations {
            let column = match m.field(2) {
                Some(Value::Binary(c)) => Column::parse(c),
                _ => return Err(HbaseError::IllegalArgument("a mutation needs a column".into())),
            };
            let is_delete = matches!(m.field(1), Some(Value::Bool(true)));
            match (is_delete, column) {
                (true, Column::Family(family)) => {
                    batch.delete(table, row.to_vec(), Delete::Family { family, up_to: ts });
                }
                (true, Column::Qualifier(family, qualifier)) => {
                    batch.delete(table, row.to_vec(), Delete::Column { family, qualifier, up_to: ts });
                }
                (false, Column::Family(family)) => {
                    return Err(HbaseError::IllegalArgument(format!(
                        "a put needs family:qualifier, got {family:?}"
                    )));
                }
                (false, Column::Qualifier(family, qualifier)) => {
                    let value = match m.field(3) {
                        Some(Value::Binary(v)) => v.clone(),
                        _ => Vec::new(),
                    };
                    let mut put = PutCell::new(family, qualifier, value);
                    if let Some(ts) = ts {
                        put = put.at(ts);
                    }
                    batch.put(table, row.to_vec(), vec![put]);
                }
            }
        }
        Ok(())
    }

    fn mutate_row(&self, args: &Value, ts: Option<i16>) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let ts = ts.map(|id| timestamp(args, id)).transpose()?;
        let mut batch = Batch::new();
        Self::add_mutations(&mut batch, &table, row, list(args, 3), ts)?;
        self.store.apply(&batch).map_err(store_error)?;
        Ok(None)
    }

    fn mutate_rows(&self, args: &Value, ts: Option<i16>) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let ts = ts.map(|id| timestamp(args, id)).transpose()?;
        let mut batch = Batch::new();
        for b in list(args, 2) {
            let row = match b.field(1) {
                Some(Value::Binary(r)) => r,
                _ => return Err(HbaseError::IllegalArgument("a BatchMutation needs a row".into())),
            };
            let mutations = match b.field(2) {
                Some(Value::List { items, .. }) => items.as_slice(),
                _ => &[],
            };
            Self::add_mutations(&mut batch, &table, row, mutations, ts)?;
        }
        self.store.apply(&batch).map_err(store_error)?;
        Ok(None)
    }

    fn delete(&self, args: &Value, a: DeleteArgs) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let up_to = a.ts.map(|id| timestamp(args, id)).transpose()?;
        let what = match a.column.map(|id| bytes(args, id, "column").map(Column::parse)).transpose()? {
            None => Delete::Row { up_to },
            Some(Column::Family(family)) => Delete::Family { family, up_to },
            Some(Column::Qualifier(family, qualifier)) => Delete::Column { family, qualifier, up_to },
        };
        let mut batch = Batch::new();
        batch.delete(table.as_str(), row.to_vec(), what);
        self.store.apply(&batch).map_err(store_error)?;
        Ok(None)
    }

    /// Adds `delta` to a counter column; its new value.
    fn add(&self, table: &str, row: &[u8], column: &[u8], delta: i64) -> Result<i64, HbaseError> {
        self.check_enabled(table)?;
        match Column::parse(column) {
            Column::Qualifier(family, qualifier) => self
                .store
                .increment(table, row, &family, &qualifier, delta)
                .map(|(n, _)| n)
                .map_err(store_error),
            Column::Family(f) => {
                Err(HbaseError::IllegalArgument(format!("a counter needs family:qualifier, got {f:?}")))
            }
        }
    }

    /// `checkAndPut`: the `mput` mutation of the row, only when `column`'s
    /// newest value is `value` (or, `value` not given, when the column has
    /// none), read and written in one transaction; whether it was applied.
    fn check_and_put(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let (family, qualifier) = match Column::parse(bytes(args, 3, "column")?) {
            Column::Qualifier(f, q) => (f, q),
            Column::Family(f) => {
                return Err(HbaseError::IllegalArgument(format!(
                    "checkAndPut needs family:qualifier, got {f:?}"
                )));
            }
        };
        let expected = match args.field(5) {
            Some(Value::Binary(v)) => Some(v.clone()),
            _ => None,
        };
        let mput = std::slice::from_ref(arg(args, 6, "mput")?);
        let mut batch = Batch::new();
        Self::add_mutations(&mut batch, &table, row, mput, None)
            .map_err(|e| HbaseError::Io(e.message().to_owned()))?;
        let holds = |now: Option<&[u8]>| now == expected.as_deref();
        let check: Check<'_> = ((&family, &qualifier), &holds);
        let applied = check_and_apply(&self.store, &table, row, Some(check), batch, &[])?;
        Ok(Some(Value::Bool(applied)))
    }

    /// `append`: each value appended to its column's newest value (a new
    /// version), in one transaction; the new values as cells.
    fn append(&self, a: &Value) -> Outcome {
        let table = text(a, 1, "table")?;
        self.check_enabled(&table)?;
        let row = bytes(a, 2, "row")?;
        let columns = list(a, 3);
        let values = list(a, 4);
        if columns.len() != values.len() || columns.is_empty() {
            return Err(HbaseError::Io(format!(
                "append: {} columns for {} values",
                columns.len(),
                values.len()
            )));
        }
        let mut pairs = Vec::with_capacity(columns.len());
        for (c, v) in columns.iter().zip(values) {
            let (Value::Binary(c), Value::Binary(v)) = (c, v) else {
                return Err(HbaseError::Io("append: columns and values are binaries".into()));
            };
            match Column::parse(c) {
                Column::Qualifier(f, q) => pairs.push((f, q, v.clone())),
                Column::Family(f) => {
                    return Err(HbaseError::Io(format!("append needs family:qualifier, got {f:?}")));
                }
            }
        }
        let cells = append_values(&self.store, &table, row, &pairs)?;
        let items = cells.iter().map(|(v, ts)| cell(v, *ts)).collect();
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    fn atomic_increment(&self, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let n =
            self.add(&table, bytes(args, 2, "row")?, bytes(args, 3, "column")?, int(args, 4, "value")?)?;
        Ok(Some(Value::I64(n)))
    }

    /// `increment` and `incrementRows`: `TIncrement`s, each atomic.
    fn increments(&self, increments: &[Value]) -> Outcome {
        for inc in increments {
            let table = text(inc, 1, "table")?;
            self.add(&table, bytes(inc, 2, "row")?, bytes(inc, 3, "column")?, int(inc, 4, "ammount")?)?;
        }
        Ok(None)
    }

    fn register(&self, session: &mut Session, table: String, scan: Scan, sorted: bool) -> Outcome {
        self.check_enabled(&table)?;
        let id = session.open(&self.store, table, scan, sorted)?;
        Ok(Some(Value::I32(id)))
    }

    fn open(&self, session: &mut Session, args: &Value, a: ScanArgs) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let start = bytes(args, 2, "startRow")?.to_vec();
        let mut scan = Scan::new();
        if a.prefix {
            scan = scan.prefix(start);
        } else if !start.is_empty() {
            scan = scan.start(start);
        }
        if let Some(id) = a.stop {
            let stop = bytes(args, id, "stopRow")?;
            if !stop.is_empty() {
                scan = scan.stop(stop.to_vec());
            }
        }
        let mut read = ReadOptions { columns: columns(list(args, a.columns)), ..ReadOptions::default() };
        if let Some(id) = a.ts {
            read = read.time_range(0, Some(timestamp(args, id)?));
        }
        self.register(session, table, scan.read(read), false)
    }

    fn open_with_scan(&self, session: &mut Session, args: &Value) -> Outcome {
        let table = text(args, 1, "tableName")?;
        let t = arg(args, 2, "scan")?;
        let field_bytes = |id| match t.field(id) {
            Some(Value::Binary(b)) if !b.is_empty() => Some(b.clone()),
            _ => None,
        };
        let mut scan = Scan::new();
        scan.start = field_bytes(1);
        scan.stop = field_bytes(2);
        if let Some(Value::I64(ts)) = t.field(3) {
            let ts = u64::try_from(*ts)
                .map_err(|_| HbaseError::IllegalArgument(format!("timestamp {ts} is negative")))?;
            scan.read = scan.read.time_range(0, Some(ts));
        }
        if let Some(Value::List { items, .. }) = t.field(4) {
            scan.read.columns = columns(items);
        }
        if let Some(filter) = field_bytes(6) {
            scan.filter =
                Some(rowsearch_store::Filter::parse(&filter).map_err(|e| HbaseError::Io(e.to_string()))?);
        }
        // Reversed, startRow is the inclusive upper bound and stopRow the
        // exclusive lower one, in HBase as in the store's scans.
        scan.reverse = matches!(t.field(9), Some(Value::Bool(true)));
        let sorted = matches!(t.field(8), Some(Value::Bool(true)));
        self.register(session, table, scan, sorted)
    }

    fn next_rows(&self, session: &mut Session, args: &Value, n: Option<usize>) -> Outcome {
        let id = scanner_id(args)?;
        let n = match n {
            Some(n) => n,
            None => rows_wanted(int(args, 2, "nbRows")?)?,
        };
        let (rows, sorted) = session.next(&self.store, id, n, |t| self.check_enabled(t))?;
        let items = rows.iter().map(|r: &Row| row_result(r, sorted)).collect();
        Ok(Some(Value::List { elem: TType::Struct, items }))
    }

    fn close(session: &mut Session, args: &Value) -> Outcome {
        session.close(scanner_id(args)?)?;
        Ok(None)
    }
}

/// Which rows a `getRow*` call names: the field of one row or of a list.
#[derive(Clone, Copy)]
enum Rows {
    One(i16),
    Many(i16),
}

/// A `getRow*` call's fields.
#[derive(Clone, Copy)]
struct RowArgs {
    rows: Rows,
    columns: Option<i16>,
    ts: Option<i16>,
}

/// A `deleteAll*` call's fields.
#[derive(Clone, Copy)]
struct DeleteArgs {
    column: Option<i16>,
    ts: Option<i16>,
}

/// A `scannerOpen*` call's fields.
#[derive(Clone, Copy)]
struct ScanArgs {
    stop: Option<i16>,
    prefix: bool,
    columns: i16,
    ts: Option<i16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway() -> (tempfile::TempDir, Gateway) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("d")).unwrap();
        store.create_table("t", &TableSchema::new([rowsearch_store::FamilySchema::new("f")])).unwrap();
        store.put("t", b"r", vec![PutCell::new("f", "q", "v")]).unwrap();
        (dir, Gateway::new(Arc::new(store)))
    }

    fn open(g: &Gateway, session: &mut Session) -> i32 {
        let args = Value::Struct(vec![(1, Value::Binary(b"t".to_vec())), (2, Value::Struct(vec![]))]);
        match g.call(session, "scannerOpenWithScan", &args) {
            Some(Ok(Some(Value::I32(id)))) => id,
            other => panic!("{other:?}"),
        }
    }

    /// A scanner past its lease is gone; one in use keeps its lease; a
    /// connection holds at most MAX_SCANNERS.
    #[test]
    fn scanners_expire_when_idle_and_are_bounded_per_connection() {
        let (_dir, g) = gateway();
        let mut session = Session::default();
        let (old, fresh) = (open(&g, &mut session), open(&g, &mut session));
        let past = std::time::Instant::now().checked_sub(SCANNER_LEASE * 2).unwrap();
        session.scanners.get_mut(&old).unwrap().last_used = past;
        let get = |id: i32| Value::Struct(vec![(1, Value::I32(id)), (2, Value::I32(10))]);
        match g.call(&mut session, "scannerGetList", &get(old)) {
            Some(Err(HbaseError::IllegalArgument(m))) => assert!(m.contains("unused for 60 s"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(g.call(&mut session, "scannerGetList", &get(fresh)), Some(Ok(Some(_)))));
        while session.scanners.len() < MAX_SCANNERS {
            open(&g, &mut session);
        }
        let args = Value::Struct(vec![(1, Value::Binary(b"t".to_vec())), (2, Value::Struct(vec![]))]);
        match g.call(&mut session, "scannerOpenWithScan", &args) {
            Some(Err(HbaseError::Io(m))) => assert!(m.contains("at most 64"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// The reply names the exception in the field its method declares: an
    /// illegal argument of a method that declares none is an IOError.
    #[test]
    fn exceptions_go_in_the_fields_methods_declare() {
        let ia = || Err(HbaseError::IllegalArgument("x".into()));
        assert!(reply_body("mutateRow", ia()).field(2).is_some());
        assert!(reply_body("getRow", ia()).field(1).is_some());
        assert_eq!(reply_body("getRow", ia()).field(2), None);
        let exists = || Err(HbaseError::AlreadyExists("x".into()));
        assert!(reply_body("createTable", exists()).field(3).is_some());
        assert!(reply_body("mutateRow", exists()).field(1).is_some());
    }
}
