//! The `THBaseService` structs (HBase's published Thrift2 `hbase.thrift`:
//! field ids and types are the protocol) read from and written as codec
//! [`Value`]s: `TGet`, `TScan`, `TPut`, `TDelete` and `TColumn` into the
//! store's reads, scans and mutations; rows into `TResult`s; tables and
//! families into `TTableDescriptor`s and back.

use rowsearch_store::{
    Batch, Cell, Column, Compression, Delete, FamilySchema, PutCell, ReadOptions, Row, Scan,
};

use super::codec::{TType, Value};
use super::hbase_types::HbaseError;

fn illegal(m: impl Into<String>) -> HbaseError {
    HbaseError::IllegalArgument(m.into())
}

pub(crate) fn field_bytes(v: &Value, id: i16) -> Option<&[u8]> {
    match v.field(id) {
        Some(Value::Binary(b)) => Some(b),
        _ => None,
    }
}

fn field_i64(v: &Value, id: i16) -> Option<i64> {
    match v.field(id) {
        Some(Value::I64(n)) => Some(*n),
        Some(Value::I32(n)) => Some(i64::from(*n)),
        _ => None,
    }
}

fn field_bool(v: &Value, id: i16) -> Option<bool> {
    match v.field(id) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

fn items(v: &Value, id: i16) -> &[Value] {
    match v.field(id) {
        Some(Value::List { items, .. }) => items,
        _ => &[],
    }
}

fn family_name(raw: &[u8]) -> Result<String, HbaseError> {
    String::from_utf8(raw.to_vec()).map_err(|_| illegal(format!("family {raw:?} is not UTF-8")))
}

fn timestamp(ts: i64) -> Result<u64, HbaseError> {
    u64::try_from(ts).map_err(|_| illegal(format!("timestamp {ts} is negative")))
}

/// A `TColumn`'s family and qualifier (none: the whole family).
fn column_of(c: &Value) -> Result<Column, HbaseError> {
    let family = family_name(field_bytes(c, 1).ok_or_else(|| illegal("a TColumn needs a family"))?)?;
    Ok(match field_bytes(c, 2) {
        Some(q) => Column::Qualifier(family, q.to_vec()),
        None => Column::Family(family),
    })
}

/// A read's columns, versions and time (`TGet` and `TScan` share their
/// meaning; `ids`: columns, timestamp (TGet only), time range, max
/// versions).
fn read_options(v: &Value, ids: ReadIds, default_versions: u32) -> Result<ReadOptions, HbaseError> {
    let mut read = ReadOptions { columns: Vec::new(), ..ReadOptions::default() };
    for c in items(v, ids.columns) {
        read.columns.push(column_of(c)?);
    }
    let versions = match field_i64(v, ids.versions) {
        None => default_versions,
        Some(n) => {
            u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| illegal(format!("maxVersions {n}")))?
        }
    };
    read = read.versions(versions);
    if let Some(ts) = ids.timestamp.and_then(|id| field_i64(v, id)) {
        let ts = timestamp(ts)?;
        read = read.time_range(ts, Some(ts.saturating_add(1)));
    }
    if let Some(range) = v.field(ids.time_range) {
        let min = timestamp(field_i64(range, 1).ok_or_else(|| illegal("a TTimeRange needs minStamp"))?)?;
        let max = timestamp(field_i64(range, 2).ok_or_else(|| illegal("a TTimeRange needs maxStamp"))?)?;
        read = read.time_range(min, Some(max));
    }
    Ok(read)
}

#[derive(Clone, Copy)]
struct ReadIds {
    columns: i16,
    timestamp: Option<i16>,
    time_range: i16,
    versions: i16,
}

fn filter_of(v: &Value, id: i16) -> Result<Option<rowsearch_store::Filter>, HbaseError> {
    match field_bytes(v, id) {
        Some(f) if !f.is_empty() => {
            rowsearch_store::Filter::parse(f).map(Some).map_err(|e| HbaseError::Io(e.to_string()))
        }
        _ => Ok(None),
    }
}

/// A `TGet`: its row and what it reads (filtered when it has a filter).
pub(crate) struct Get {
    pub row: Vec<u8>,
    pub read: ReadOptions,
    pub filter: Option<rowsearch_store::Filter>,
}

/// A `TGet` (1 row, 2 columns, 3 timestamp, 4 timeRange, 5 maxVersions,
/// 6 filterString).
pub(crate) fn get_of(v: &Value) -> Result<Get, HbaseError> {
    let row = field_bytes(v, 1).ok_or_else(|| illegal("a TGet needs a row"))?.to_vec();
    let ids = ReadIds { columns: 2, timestamp: Some(3), time_range: 4, versions: 5 };
    Ok(Get { row, read: read_options(v, ids, 1)?, filter: filter_of(v, 6)? })
}

/// A `TGet` with a filter as the one-row scan HBase runs it as.
pub(crate) fn get_as_scan(get: &Get) -> Scan {
    let mut stop = get.row.clone();
    stop.push(0);
    let mut scan = Scan::new().start(get.row.clone()).stop(stop);
    scan.read = get.read.clone();
    scan.filter = get.filter.clone();
    scan.limit = Some(1);
    scan
}

/// A `TScan` (1 startRow, 2 stopRow, 3 columns, 5 maxVersions, 6
/// timeRange, 7 filterString, 11 reversed, 15 limit); caching, batch
/// size, block cache and read type are HBase's tuning: taken, no meaning
/// here. The scan and its row limit.
pub(crate) fn scan_of(v: &Value) -> Result<(Scan, Option<usize>), HbaseError> {
    let mut scan = Scan::new();
    scan.start = field_bytes(v, 1).filter(|b| !b.is_empty()).map(<[u8]>::to_vec);
    scan.stop = field_bytes(v, 2).filter(|b| !b.is_empty()).map(<[u8]>::to_vec);
    let ids = ReadIds { columns: 3, timestamp: None, time_range: 6, versions: 5 };
    scan.read = read_options(v, ids, 1)?;
    scan.filter = filter_of(v, 7)?;
    scan.reverse = field_bool(v, 11).unwrap_or(false);
    let limit = match field_i64(v, 15) {
        None | Some(0) => None,
        Some(n) => Some(usize::try_from(n).map_err(|_| illegal(format!("limit {n}")))?),
    };
    Ok((scan, limit))
}

/// A `TPut` (1 row, 2 columnValues, 3 timestamp; durability and
/// visibility taken) added to `batch`.
pub(crate) fn add_put(batch: &mut Batch, table: &str, put: &Value) -> Result<(), HbaseError> {
    let row = field_bytes(put, 1).ok_or_else(|| illegal("a TPut needs a row"))?;
    let default_ts = field_i64(put, 3).map(timestamp).transpose()?;
    let mut cells = Vec::new();
    for cv in items(put, 2) {
        let family =
            family_name(field_bytes(cv, 1).ok_or_else(|| illegal("a TColumnValue needs a family"))?)?;
        let qualifier = field_bytes(cv, 2).ok_or_else(|| illegal("a TColumnValue needs a qualifier"))?;
        let value = field_bytes(cv, 3).ok_or_else(|| illegal("a TColumnValue needs a value"))?;
        let mut cell = PutCell::new(family, qualifier.to_vec(), value.to_vec());
        if let Some(ts) = field_i64(cv, 4).map(timestamp).transpose()?.or(default_ts) {
            cell = cell.at(ts);
        }
        cells.push(cell);
    }
    if cells.is_empty() {
        return Err(illegal("a TPut needs at least one column value"));
    }
    batch.put(table, row.to_vec(), cells);
    Ok(())
}

/// What a `TDelete` of one column removes, when its newest version must
/// be looked up first (`DELETE_COLUMN` without a timestamp).
pub(crate) struct NewestVersion {
    pub row: Vec<u8>,
    pub family: String,
    pub qualifier: Vec<u8>,
}

/// A `TDelete` (1 row, 2 columns, 3 timestamp, 4 deleteType: 0 one
/// version, 1 all versions up to the timestamp (default), 2 the family;
/// 3, a family's one version, is not served) added to `batch`. A family
/// named without a qualifier is deleted whole only with type 2 (with the
/// others, HBase deletes its empty qualifier's column). The
/// columns whose newest version it deletes, for the caller to resolve.
pub(crate) fn add_delete(
    batch: &mut Batch,
    table: &str,
    d: &Value,
) -> Result<Vec<NewestVersion>, HbaseError> {
    let row = field_bytes(d, 1).ok_or_else(|| illegal("a TDelete needs a row"))?;
    let up_to = field_i64(d, 3).map(timestamp).transpose()?;
    let kind = field_i64(d, 4).unwrap_or(1);
    let columns = items(d, 2);
    let mut newest = Vec::new();
    if columns.is_empty() {
        batch.delete(table, row.to_vec(), Delete::Row { up_to });
        return Ok(newest);
    }
    for c in columns {
        let ts = field_i64(c, 3).map(timestamp).transpose()?.or(up_to);
        let what = match (column_of(c)?, kind) {
            (_, 3) => return Err(HbaseError::Io("DELETE_FAMILY_VERSION is not served".into())),
            (Column::Family(family), 2) | (Column::Qualifier(family, _), 2) => {
                Delete::Family { family, up_to: ts }
            }
            // As HBase: a column without a qualifier, deleted as a column
            // (the default type), is the empty qualifier's.
            (Column::Family(family), kind) => match (kind, ts) {
                (0, Some(timestamp)) => Delete::Version { family, qualifier: Vec::new(), timestamp },
                (0, None) => {
                    newest.push(NewestVersion { row: row.to_vec(), family, qualifier: Vec::new() });
                    continue;
                }
                _ => Delete::Column { family, qualifier: Vec::new(), up_to: ts },
            },
            (Column::Qualifier(family, qualifier), 0) => match ts {
                Some(timestamp) => Delete::Version { family, qualifier, timestamp },
                None => {
                    newest.push(NewestVersion { row: row.to_vec(), family, qualifier });
                    continue;
                }
            },
            (Column::Qualifier(family, qualifier), _) => Delete::Column { family, qualifier, up_to: ts },
        };
        batch.delete(table, row.to_vec(), what);
    }
    Ok(newest)
}

/// A cell as a `TColumnValue` (type 4: a put, as HBase's cells are).
fn column_value(c: &Cell) -> Value {
    Value::Struct(vec![
        (1, Value::Binary(c.family.as_bytes().to_vec())),
        (2, Value::Binary(c.qualifier.clone())),
        (3, Value::Binary(c.value.clone())),
        (4, Value::I64(c.timestamp as i64)),
        (6, Value::Byte(4)),
    ])
}

/// A row as a `TResult` (an absent row: no row key and no values, as
/// HBase answers an empty `Result`).
pub(crate) fn result(row: Option<&Row>) -> Value {
    let (key, cells) = match row {
        Some(r) if !r.cells.is_empty() => (Some(r.key.clone()), r.cells.as_slice()),
        _ => (None, &[][..]),
    };
    let mut fields = Vec::with_capacity(2);
    if let Some(key) = key {
        fields.push((1, Value::Binary(key)));
    }
    fields.push((2, Value::List { elem: TType::Struct, items: cells.iter().map(column_value).collect() }));
    // Never stale nor partial: one store, whole rows.
    fields.push((3, Value::Bool(false)));
    fields.push((4, Value::Bool(false)));
    Value::Struct(fields)
}

/// `TResult`s of rows.
pub(crate) fn results<'r>(rows: impl Iterator<Item = Option<&'r Row>>) -> Value {
    Value::List { elem: TType::Struct, items: rows.map(result).collect() }
}

/// A `TTableName` (1 ns, 2 qualifier): the table's name (in the default
/// namespace, the only one).
pub(crate) fn table_name_of(v: &Value) -> Result<String, HbaseError> {
    let qualifier = field_bytes(v, 2).ok_or_else(|| illegal("a TTableName needs a qualifier"))?;
    match field_bytes(v, 1) {
        None | Some(b"") | Some(b"default") => {}
        Some(ns) => {
            return Err(HbaseError::Io(format!(
                "NamespaceNotFoundException: {} (rowsearch has the default namespace only)",
                String::from_utf8_lossy(ns)
            )));
        }
    }
    String::from_utf8(qualifier.to_vec()).map_err(|_| illegal("the table name is not UTF-8"))
}

/// A table's name as a `TTableName`.
pub(crate) fn table_name(name: &str) -> Value {
    Value::Struct(vec![(1, Value::Binary(b"default".to_vec())), (2, Value::Binary(name.as_bytes().to_vec()))])
}

/// `TCompressionAlgorithm`'s values rowsearch keeps.
const NONE: i32 = 2;
const LZ4: i32 = 4;
const ZSTD: i32 = 6;

/// A `TColumnFamilyDescriptor` (1 name, 6 compressionType, 10
/// maxVersions, 13 timeToLive) as a family; HBase's defaults: 1 version,
/// no compression, forever. The storage hints have no meaning here.
pub(crate) fn family_of(d: &Value) -> Result<FamilySchema, HbaseError> {
    let name = family_name(field_bytes(d, 1).ok_or_else(|| illegal("a column family needs a name"))?)?;
    let mut family = FamilySchema::new(name);
    if let Some(n) = field_i64(d, 10) {
        let n =
            u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| illegal(format!("maxVersions {n}")))?;
        family = family.max_versions(n);
    } else {
        family = family.max_versions(1);
    }
    family = family.compression(match field_i64(d, 6).map(|n| n as i32) {
        None | Some(NONE) => Compression::None,
        Some(LZ4) => Compression::Lz4,
        Some(ZSTD) => Compression::Zstd,
        Some(other) => return Err(illegal(format!("compression {other}: NONE, LZ4 or ZSTD"))),
    });
    match field_i64(d, 13) {
        None | Some(-1) | Some(0x7fff_ffff) => {}
        Some(ttl) if ttl > 0 => family = family.ttl_seconds(ttl as u64),
        Some(ttl) => return Err(illegal(format!("timeToLive {ttl}"))),
    }
    Ok(family)
}

/// A family as a `TColumnFamilyDescriptor`.
fn descriptor_of(f: &FamilySchema) -> Value {
    let compression = match f.compression {
        Compression::None => NONE,
        Compression::Lz4 => LZ4,
        Compression::Zstd => ZSTD,
    };
    let ttl = f.ttl_seconds.map_or(i32::MAX, |s| i32::try_from(s).unwrap_or(i32::MAX));
    Value::Struct(vec![
        (1, Value::Binary(f.name.as_bytes().to_vec())),
        (6, Value::I32(compression)),
        (10, Value::I32(i32::try_from(f.max_versions).unwrap_or(i32::MAX))),
        (13, Value::I32(ttl)),
    ])
}

/// A table as a `TTableDescriptor` (1 tableName, 2 columns).
pub(crate) fn table_descriptor(name: &str, families: &[FamilySchema]) -> Value {
    let columns = families.iter().map(descriptor_of).collect();
    Value::Struct(vec![(1, table_name(name)), (2, Value::List { elem: TType::Struct, items: columns })])
}

/// A `TTableDescriptor`'s name and families.
pub(crate) fn table_of(d: &Value) -> Result<(String, Vec<FamilySchema>), HbaseError> {
    let name = table_name_of(d.field(1).ok_or_else(|| illegal("a table descriptor needs a name"))?)?;
    let families = items(d, 2).iter().map(family_of).collect::<Result<Vec<_>, _>>()?;
    if families.is_empty() {
        return Err(illegal("a table needs at least one column family"));
    }
    Ok((name, families))
}
