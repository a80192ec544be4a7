//! The `THBaseService` of HBase's Thrift2 gateway over the store (`serve
//! --thrift2`): gets, puts, deletes, checks, increments and appends,
//! scanners, row mutations, region locations and table admin, with
//! HBase's semantics. As the `Hbase` service's, every write goes through
//! the store's one write path, so keyword rows, secondary indexes, the
//! change feed and live search see it.

use std::sync::Arc;

use rowsearch_store::{Batch, Column, Delete, ReadOptions, Row, Store, TableSchema};

use super::args::{arg, bytes, int, list, scanner_id, store_error};
use super::codec::{TType, Value};
use super::hbase_types::HbaseError;
use super::ops::{Check, add_counters, append_values, check_and_apply, hbase_check, region_of};
use super::scanners::{Session, rows_wanted};
use super::thbase_types::{
    Pending, add_delete, add_put, asks_fsync, field_bytes, get_as_scan, get_of, result, results, scan_of,
    table_descriptor, table_name, table_name_of, table_of,
};

/// What a call comes to: a result (`None` for `void`), or an exception.
pub(crate) type Outcome = Result<Option<Value>, HbaseError>;

/// The reply struct for `outcome` of `method`: `TIOError` in field 1 for
/// every method; `TIllegalArgument` in field 2 where the method declares
/// it (the scanner calls), else as a `TIOError`.
pub(crate) fn reply_body(method: &str, outcome: Outcome) -> Value {
    match outcome {
        Ok(Some(value)) => Value::Struct(vec![(0, value)]),
        Ok(None) => Value::Struct(vec![]),
        Err(HbaseError::IllegalArgument(m)) if matches!(method, "getScannerRows" | "closeScanner") => {
            Value::Struct(vec![(2, Value::Struct(vec![(1, Value::Binary(m.into_bytes()))]))])
        }
        Err(e) => {
            Value::Struct(vec![(1, Value::Struct(vec![(1, Value::Binary(e.message().as_bytes().to_vec()))]))])
        }
    }
}

/// The service's state shared by every connection.
#[derive(Debug)]
pub(crate) struct Thrift2 {
    store: Arc<Store>,
}

fn table_arg(args: &Value, id: i16) -> Result<String, HbaseError> {
    // A table given as `binary` may name its namespace: `default:t`.
    let raw = bytes(args, id, "table")?;
    let raw = raw.strip_prefix(b"default:").unwrap_or(raw);
    String::from_utf8(raw.to_vec())
        .map_err(|_| HbaseError::IllegalArgument("the table name is not UTF-8".into()))
}

fn tname(args: &Value, id: i16) -> Result<String, HbaseError> {
    table_name_of(arg(args, id, "tableName")?)
}

fn boolean(b: bool) -> Outcome {
    Ok(Some(Value::Bool(b)))
}

fn list_of(elem: TType, items: Vec<Value>) -> Outcome {
    Ok(Some(Value::List { elem, items }))
}

impl Thrift2 {
    pub(crate) fn new(store: Arc<Store>) -> Thrift2 {
        Thrift2 { store }
    }

    /// Runs `method`; `None` for a method this gateway does not serve.
    pub(crate) fn call(&self, session: &mut Session, method: &str, args: &Value) -> Option<Outcome> {
        let outcome = self.run(session, method, args)?;
        // A mutation asking `FSYNC_WAL` is on disk before its answer,
        // whatever the server's `--durability`.
        if outcome.is_ok()
            && asks_fsync(method, args)
            && let Err(e) = self.store.sync()
        {
            return Some(Err(HbaseError::Io(format!("the write was applied but not synced: {e}"))));
        }
        Some(outcome)
    }

    fn run(&self, session: &mut Session, method: &str, args: &Value) -> Option<Outcome> {
        session.expire(std::time::Instant::now());
        Some(match method {
            "exists" => self.get(args).map(|r| Some(Value::Bool(r.is_some()))),
            "existsAll" => self.gets(args).map(|rows| {
                let items = rows.iter().map(|r| Value::Bool(r.is_some())).collect();
                Some(Value::List { elem: TType::Bool, items })
            }),
            "get" => self.get(args).map(|r| Some(result(r))),
            "getMultiple" => self.gets(args).map(|rows| Some(results(rows.into_iter()))),
            "put" => self.write(args, |batch, table| {
                add_put(batch, table, arg(args, 2, "tput")?).map(|()| Vec::new())
            }),
            "putMultiple" => self.write(args, |batch, table| {
                list(args, 2).iter().try_for_each(|p| add_put(batch, table, p))?;
                Ok(Vec::new())
            }),
            "deleteSingle" => {
                self.write(args, |batch, table| add_delete(batch, table, arg(args, 2, "tdelete")?))
            }
            // The deletes that failed: none, when the call succeeds.
            "deleteMultiple" => self
                .write(args, |batch, table| {
                    let mut pending = Vec::new();
                    for d in list(args, 2) {
                        pending.extend(add_delete(batch, table, d)?);
                    }
                    Ok(pending)
                })
                .map(|_| Some(Value::List { elem: TType::Struct, items: Vec::new() })),
            "checkAndPut" => {
                self.check_and(args, |b, t| add_put(b, t, arg(args, 6, "tput")?).map(|()| Vec::new()))
            }
            "checkAndDelete" => self.check_and(args, |b, t| add_delete(b, t, arg(args, 6, "tdelete")?)),
            "checkAndMutate" => self.check_and_mutate(args),
            "mutateRow" => self.mutate_row(args),
            "increment" => self.increment(args),
            "append" => self.append(args),
            "openScanner" => self.open_scanner(session, args),
            "getScannerRows" => self.scanner_rows(session, args),
            "closeScanner" => scanner_id(args).and_then(|id| session.close(id)).map(|()| None),
            "getScannerResults" => self.scanner_results(args),
            "getRegionLocation" => self.region_location(args),
            "getAllRegionLocations" => self.region_locations(args),
            "getTableDescriptor" => tname(args, 1).and_then(|t| self.descriptor(&t)).map(Some),
            "getTableDescriptors" => list(args, 1)
                .iter()
                .map(|n| table_name_of(n).and_then(|t| self.descriptor(&t)))
                .collect::<Result<Vec<_>, _>>()
                .and_then(|items| list_of(TType::Struct, items)),
            "tableExists" => tname(args, 1).and_then(|t| boolean(self.exists(&t)?)),
            "getTableDescriptorsByPattern" => self.by_pattern(args, true),
            "getTableNamesByPattern" => self.by_pattern(args, false),
            "getTableDescriptorsByNamespace" => self.by_namespace(args, true),
            "getTableNamesByNamespace" => self.by_namespace(args, false),
            "createTable" => self.create_table(args),
            "deleteTable" => self.delete_table(args),
            "truncateTable" => self.truncate_table(args),
            "enableTable" => self.set_enabled(args, true),
            "disableTable" => self.set_enabled(args, false),
            "isTableEnabled" => tname(args, 1).and_then(|t| boolean(self.enabled(&t)?)),
            "isTableDisabled" => tname(args, 1).and_then(|t| boolean(!self.enabled(&t)?)),
            "isTableAvailable" | "isTableAvailableWithSplit" => {
                tname(args, 1).and_then(|t| boolean(self.exists(&t)?))
            }
            "addColumnFamily" | "deleteColumnFamily" | "modifyColumnFamily" | "modifyTable" => Err(
                not_served(&format!("{method}: a rowsearch table keeps the families it was created with")),
            ),
            "createNamespace" | "modifyNamespace" | "deleteNamespace" => {
                Err(not_served(&format!("{method}: rowsearch has the default namespace only")))
            }
            "listNamespaces" => list_of(TType::Binary, vec![Value::Binary(b"default".to_vec())]),
            "listNamespaceDescriptors" => list_of(TType::Struct, vec![namespace()]),
            "getNamespaceDescriptor" => match bytes(args, 1, "name") {
                Ok(b"default") => Ok(Some(namespace())),
                Ok(other) => Err(HbaseError::Io(format!(
                    "NamespaceNotFoundException: {}",
                    String::from_utf8_lossy(other)
                ))),
                Err(e) => Err(e),
            },
            "getThriftServerType" => Ok(Some(Value::I32(2))),
            "getClusterId" => Ok(Some(Value::Binary(b"rowsearch".to_vec()))),
            "getSlowLogResponses" => list_of(TType::Struct, Vec::new()),
            "clearSlowLogResponses" => list_of(TType::Bool, Vec::new()),
            _ => return None,
        })
    }

    fn check_enabled(&self, table: &str) -> Result<(), HbaseError> {
        if !self.store.is_table_enabled(table).map_err(store_error)? {
            return Err(store_error(
                rowsearch_store::ErrorKind::TableDisabled { table: table.to_owned() }.into(),
            ));
        }
        Ok(())
    }

    fn exists(&self, table: &str) -> Result<bool, HbaseError> {
        Ok(self.store.tables().map_err(store_error)?.iter().any(|t| t == table))
    }

    fn enabled(&self, table: &str) -> Result<bool, HbaseError> {
        self.store.is_table_enabled(table).map_err(store_error)
    }

    /// One `TGet` (field 2) of the table in field 1.
    fn get(&self, args: &Value) -> Result<Option<Row>, HbaseError> {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        self.read(&table, arg(args, 2, "tget")?)
    }

    /// The `TGet`s of field 2, in order.
    fn gets(&self, args: &Value) -> Result<Vec<Option<Row>>, HbaseError> {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        list(args, 2).iter().map(|g| self.read(&table, g)).collect()
    }

    fn read(&self, table: &str, g: &Value) -> Result<Option<Row>, HbaseError> {
        let get = get_of(g)?;
        let row = match &get.filter {
            None => self.store.get(table, &get.row, &get.read).map_err(store_error)?,
            Some(_) => {
                self.store.scan(table, &get_as_scan(&get)).map_err(store_error)?.rows.into_iter().next()
            }
        };
        Ok(row.map(|r| get.per_family(r)).filter(|r| !r.cells.is_empty()))
    }

    /// Resolves what deletes had to look up (outside any transaction: a
    /// plain delete, as HBase's, reads then writes): each column's newest
    /// version, each family's cells at one timestamp.
    fn resolve(&self, table: &str, batch: &mut Batch, pending: Vec<Pending>) -> Result<(), HbaseError> {
        for p in pending {
            let (row, read) = match &p {
                Pending::Newest { row, family, qualifier } => {
                    (row, ReadOptions::default().column(Column::Qualifier(family.clone(), qualifier.clone())))
                }
                Pending::FamilyVersion { row, family, timestamp } => (
                    row,
                    ReadOptions::default()
                        .column(Column::Family(family.clone()))
                        .time_range(*timestamp, Some(timestamp.saturating_add(1))),
                ),
            };
            if let Some(found) = self.store.get(table, row, &read).map_err(store_error)? {
                for cell in found.cells {
                    let delete = Delete::Version {
                        family: cell.family.to_string(),
                        qualifier: cell.qualifier,
                        timestamp: cell.timestamp,
                    };
                    batch.delete(table, row.clone(), delete);
                }
            }
        }
        Ok(())
    }

    /// Splits what a row's deletes must look up: the family versions
    /// resolved now, the newest versions (of `row` only) answered, to be
    /// looked up in the mutation's own transaction.
    fn split_pending(
        &self,
        table: &str,
        row: &[u8],
        batch: &mut Batch,
        pending: Vec<Pending>,
    ) -> Result<Vec<(String, Vec<u8>)>, HbaseError> {
        let mut newest = Vec::new();
        let mut now = Vec::new();
        for p in pending {
            match p {
                Pending::Newest { row: r, family, qualifier } if r == row => newest.push((family, qualifier)),
                Pending::Newest { .. } => {
                    return Err(HbaseError::IllegalArgument(
                        "a row mutation's deletes are of its own row".into(),
                    ));
                }
                other => now.push(other),
            }
        }
        self.resolve(table, batch, now)?;
        Ok(newest)
    }

    /// Builds a batch for the table in field 1 with `fill` and applies it,
    /// what its deletes must look up resolved first.
    fn write(
        &self,
        args: &Value,
        fill: impl FnOnce(&mut Batch, &str) -> Result<Vec<Pending>, HbaseError>,
    ) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let mut batch = Batch::new();
        let pending = fill(&mut batch, &table)?;
        self.resolve(&table, &mut batch, pending)?;
        if !batch.is_empty() {
            self.store.apply(&batch).map_err(store_error)?;
        }
        Ok(None)
    }

    /// `checkAndPut` / `checkAndDelete` (1 table, 2 row, 3 family, 4
    /// qualifier, 5 value: absent for "no such cell"), as HBase's gateway
    /// runs them: `ifNotExists` without a value, else `ifEquals`.
    fn check_and(
        &self,
        args: &Value,
        fill: impl FnOnce(&mut Batch, &str) -> Result<Vec<Pending>, HbaseError>,
    ) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let family = String::from_utf8_lossy(bytes(args, 3, "family")?).into_owned();
        let qualifier = bytes(args, 4, "qualifier")?;
        let expected = field_bytes(args, 5);
        let mut batch = Batch::new();
        let pending = fill(&mut batch, &table)?;
        let newest = self.split_pending(&table, row, &mut batch, pending)?;
        const EQUAL: i64 = 2;
        let holds = |now: Option<&[u8]>| hbase_check(EQUAL, expected, now);
        let check: Check<'_> = ((&family, qualifier), &holds);
        boolean(check_and_apply(&self.store, &table, row, Some(check), batch, &newest)?)
    }

    /// `checkAndMutate` (5 compareOp, 6 value, 7 rowMutations): the
    /// mutations applied when the cell's value compares as asked with the
    /// given one, as HBase's region server decides ([`hbase_check`]).
    fn check_and_mutate(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let row = bytes(args, 2, "row")?;
        let family = String::from_utf8_lossy(bytes(args, 3, "family")?).into_owned();
        let qualifier = bytes(args, 4, "qualifier")?;
        let op = int(args, 5, "compareOp")?;
        if !(0..=5).contains(&op) {
            return Err(HbaseError::Io(format!("DoNotRetryIOException: compare op {op} is not served")));
        }
        let expected = field_bytes(args, 6);
        let mut batch = Batch::new();
        let newest = self.row_mutations(&mut batch, &table, row, arg(args, 7, "rowMutations")?)?;
        let holds = move |now: Option<&[u8]>| hbase_check(op, expected, now);
        let check: Check<'_> = ((&family, qualifier), &holds);
        boolean(check_and_apply(&self.store, &table, row, Some(check), batch, &newest)?)
    }

    /// A `TRowMutations` (1 row, 2 mutations: unions of 1 put, 2
    /// deleteSingle) of `row` into `batch`; the columns whose newest version
    /// it deletes, to look up in the mutation's transaction.
    fn row_mutations(
        &self,
        batch: &mut Batch,
        table: &str,
        row: &[u8],
        m: &Value,
    ) -> Result<Vec<(String, Vec<u8>)>, HbaseError> {
        let mut pending = Vec::new();
        for mutation in match m.field(2) {
            Some(Value::List { items, .. }) => items.as_slice(),
            _ => &[],
        } {
            if let Some(put) = mutation.field(1) {
                add_put(batch, table, put)?;
            } else if let Some(delete) = mutation.field(2) {
                pending.extend(add_delete(batch, table, delete)?);
            }
        }
        self.split_pending(table, row, batch, pending)
    }

    /// `mutateRow`: the row's puts and deletes in one transaction.
    fn mutate_row(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let m = arg(args, 2, "trowMutations")?;
        let row = field_bytes(m, 1)
            .ok_or_else(|| HbaseError::IllegalArgument("a TRowMutations needs a row".into()))?;
        let mut batch = Batch::new();
        let newest = self.row_mutations(&mut batch, &table, row, m)?;
        check_and_apply(&self.store, &table, row, None, batch, &newest)?;
        Ok(None)
    }

    /// `increment` (a `TIncrement`: 1 row, 2 columns of 1 family, 2
    /// qualifier, 3 amount (default 1)): every column in one transaction;
    /// the new values as a `TResult`.
    fn increment(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let inc = arg(args, 2, "tincrement")?;
        let row = bytes(inc, 1, "row")?;
        let mut amounts = Vec::new();
        for c in list(inc, 2) {
            let family = String::from_utf8_lossy(bytes(c, 1, "family")?).into_owned();
            let qualifier = bytes(c, 2, "qualifier")?.to_vec();
            let amount = if c.field(3).is_some() { int(c, 3, "amount")? } else { 1 };
            amounts.push((family, qualifier, amount));
        }
        let values = add_counters(&self.store, &table, row, &amounts)?;
        let cells = amounts
            .iter()
            .zip(values)
            .map(|((f, q, _), (v, ts))| (f.clone(), q.clone(), v.to_be_bytes().to_vec(), ts));
        Ok(Some(result(Some(new_values(row, cells)))))
    }

    /// `append` (a `TAppend`: 1 row, 2 columns as `TColumnValue`s): each
    /// value appended to its column's newest, in one transaction; the new
    /// values as a `TResult`.
    fn append(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let a = arg(args, 2, "tappend")?;
        let row = bytes(a, 1, "row")?;
        let mut pairs = Vec::new();
        for c in list(a, 2) {
            let family = String::from_utf8_lossy(bytes(c, 1, "family")?).into_owned();
            pairs.push((family, bytes(c, 2, "qualifier")?.to_vec(), bytes(c, 3, "value")?.to_vec()));
        }
        let values = append_values(&self.store, &table, row, &pairs)?;
        let cells = pairs.iter().zip(values).map(|((f, q, _), (v, ts))| (f.clone(), q.clone(), v, ts));
        Ok(Some(result(Some(new_values(row, cells)))))
    }

    fn open_scanner(&self, session: &mut Session, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let (scan, limit) = scan_of(arg(args, 2, "tscan")?)?;
        let id = session.open(&self.store, table, scan, false)?;
        session.limit(id, limit);
        Ok(Some(Value::I32(id)))
    }

    fn scanner_rows(&self, session: &mut Session, args: &Value) -> Outcome {
        let id = scanner_id(args)?;
        let n = if args.field(2).is_some() { rows_wanted(int(args, 2, "numRows")?)? } else { 1 };
        let (rows, _) = session.next(&self.store, id, n, |t| self.check_enabled(t))?;
        Ok(Some(results(rows.into_iter().map(Some))))
    }

    /// `getScannerResults`: a scanner opened, read once and closed.
    fn scanner_results(&self, args: &Value) -> Outcome {
        let mut session = Session::default();
        let table = table_arg(args, 1)?;
        self.check_enabled(&table)?;
        let (scan, limit) = scan_of(arg(args, 2, "tscan")?)?;
        let id = session.open(&self.store, table, scan, false)?;
        session.limit(id, limit);
        let n = if args.field(3).is_some() { rows_wanted(int(args, 3, "numRows")?)? } else { 1 };
        let (rows, _) = session.next(&self.store, id, n, |_| Ok(()))?;
        Ok(Some(results(rows.into_iter().map(Some))))
    }

    fn locations(&self, table: &str) -> Result<Vec<Value>, HbaseError> {
        let regions = self.store.regions(table).map_err(store_error)?;
        Ok(regions.into_iter().map(|r| location(table, r)).collect())
    }

    /// `getRegionLocation` (1 table, 2 row): the region holding the row
    /// (its stored key: salted where the table is).
    fn region_location(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        let row = bytes(args, 2, "row")?;
        let region = region_of(&self.store, &table, row)?;
        Ok(Some(location(&table, region)))
    }

    fn region_locations(&self, args: &Value) -> Outcome {
        let table = table_arg(args, 1)?;
        list_of(TType::Struct, self.locations(&table)?)
    }

    fn descriptor(&self, table: &str) -> Result<Value, HbaseError> {
        let schema = self.store.schema(table).map_err(|e| match e.kind() {
            rowsearch_store::ErrorKind::UnknownTable { .. } => {
                HbaseError::Io(format!("TableNotFoundException: {table}"))
            }
            _ => store_error(e),
        })?;
        Ok(table_descriptor(table, &schema.families))
    }

    /// Tables whose name matches a regular expression (Java's `matches`:
    /// the whole name), as descriptors or names.
    fn by_pattern(&self, args: &Value, descriptors: bool) -> Outcome {
        let pattern = match args.field(1) {
            Some(Value::Binary(p)) => Some(String::from_utf8_lossy(p).into_owned()),
            _ => None,
        };
        let re = pattern
            .map(|p| regex::Regex::new(&format!("^(?:{p})$")))
            .transpose()
            .map_err(|e| HbaseError::Io(format!("PatternSyntaxException: {e}")))?;
        let tables = self.store.tables().map_err(store_error)?;
        let chosen: Vec<String> =
            tables.into_iter().filter(|t| re.as_ref().is_none_or(|re| re.is_match(t))).collect();
        self.answer_tables(chosen, descriptors)
    }

    fn by_namespace(&self, args: &Value, descriptors: bool) -> Outcome {
        match bytes(args, 1, "name")? {
            b"default" => self.answer_tables(self.store.tables().map_err(store_error)?, descriptors),
            other => {
                Err(HbaseError::Io(format!("NamespaceNotFoundException: {}", String::from_utf8_lossy(other))))
            }
        }
    }

    fn answer_tables(&self, tables: Vec<String>, descriptors: bool) -> Outcome {
        let items = if descriptors {
            tables.iter().map(|t| self.descriptor(t)).collect::<Result<Vec<_>, _>>()?
        } else {
            tables.iter().map(|t| table_name(t)).collect()
        };
        list_of(TType::Struct, items)
    }

    /// `createTable` (1 desc, 2 splitKeys: the region boundaries).
    fn create_table(&self, args: &Value) -> Outcome {
        let (table, families) = table_of(arg(args, 1, "desc")?)?;
        if self.exists(&table)? {
            return Err(HbaseError::Io(format!("TableExistsException: {table}")));
        }
        let mut schema = TableSchema::new(families);
        schema.splits = list(args, 2)
            .iter()
            .filter_map(|v| if let Value::Binary(b) = v { Some(b.clone()) } else { None })
            .collect();
        self.store.create_table(&table, &schema).map_err(store_error)?;
        Ok(None)
    }

    /// `deleteTable`: a disabled table only, as HBase.
    fn delete_table(&self, args: &Value) -> Outcome {
        let table = tname(args, 1)?;
        if self.enabled(&table)? {
            return Err(HbaseError::Io(format!("TableNotDisabledException: {table}")));
        }
        rowsearch_indexer::drop_table(&self.store, &table).map_err(|e| HbaseError::Io(e.to_string()))?;
        Ok(None)
    }

    /// `truncateTable` (2 preserveSplits): a disabled table emptied (made
    /// again with its schema; its regions kept or not), enabled after.
    fn truncate_table(&self, args: &Value) -> Outcome {
        let table = tname(args, 1)?;
        if self.enabled(&table)? {
            return Err(HbaseError::Io(format!("TableNotDisabledException: {table}")));
        }
        let mut schema = self.store.schema(&table).map_err(store_error)?;
        if !matches!(args.field(2), Some(Value::Bool(true))) {
            schema.splits.clear();
        }
        rowsearch_indexer::drop_table(&self.store, &table).map_err(|e| HbaseError::Io(e.to_string()))?;
        self.store.create_table(&table, &schema).map_err(store_error)?;
        Ok(None)
    }

    /// `enableTable` / `disableTable`: as HBase, a table already in the
    /// state asked for is `TableNotDisabledException` /
    /// `TableNotEnabledException`.
    fn set_enabled(&self, args: &Value, enabled: bool) -> Outcome {
        let table = tname(args, 1)?;
        if self.enabled(&table)? == enabled {
            let exception = if enabled { "TableNotDisabledException" } else { "TableNotEnabledException" };
            return Err(HbaseError::Io(format!("{exception}: {table}")));
        }
        self.store.set_table_enabled(&table, enabled).map_err(store_error)?;
        Ok(None)
    }
}

fn not_served(what: &str) -> HbaseError {
    HbaseError::Io(format!("not served by rowsearch's Thrift2 gateway: {what}"))
}

/// The default namespace as a `TNamespaceDescriptor`.
fn namespace() -> Value {
    Value::Struct(vec![(1, Value::Binary(b"default".to_vec()))])
}

/// A row of the new values an increment or append wrote, at their
/// versions' timestamps.
fn new_values(row: &[u8], cells: impl Iterator<Item = (String, Vec<u8>, Vec<u8>, u64)>) -> Row {
    let mut cells: Vec<rowsearch_store::Cell> = cells
        .map(|(family, qualifier, value, timestamp)| rowsearch_store::Cell {
            family: family.into(),
            qualifier,
            timestamp,
            value,
        })
        .collect();
    // In column order, as HBase's `Result`.
    cells.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
    Row { key: row.to_vec(), cells }
}

/// A region as a `THRegionLocation` (1 serverName: host, port, start
/// code; 2 regionInfo: id, table, start and end keys, offline, split,
/// replica).
fn location(table: &str, r: rowsearch_store::Region) -> Value {
    let server = Value::Struct(vec![
        (1, Value::Binary(b"localhost".to_vec())),
        (2, Value::I32(0)),
        (3, Value::I64(0)),
    ]);
    let info = Value::Struct(vec![
        (1, Value::I64(r.index as i64)),
        (2, Value::Binary(table.as_bytes().to_vec())),
        (3, Value::Binary(r.start.unwrap_or_default())),
        (4, Value::Binary(r.end.unwrap_or_default())),
        (5, Value::Bool(false)),
        (6, Value::Bool(false)),
        (7, Value::I32(0)),
    ]);
    Value::Struct(vec![(1, server), (2, info)])
}
