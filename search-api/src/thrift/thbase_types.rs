//! The `THBaseService` structs (HBase's published Thrift2 `hbase.thrift`:
//! field ids and types are the protocol) read from and written as codec
//! [`Value`]s: `TGet`, `TScan`, `TPut`, `TDelete` and `TColumn` into the
//! store's reads, scans and mutations; rows into `TResult`s; tables and
//! families into `TTableDescriptor`s and back.

use rowsearch_store::{Batch, Column, Compression, Delete, FamilySchema, PutCell, ReadOptions, Row, Scan};

use std::sync::Arc;

use super::codec::{Encode, Encoded, Encoder, TType, Value};
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

/// HBase's `LATEST_TIMESTAMP` (`Long.MAX_VALUE`): on a write, "now" (the
/// Java client sends it for every cell written without a timestamp); as a
/// time range's end, no end.
const LATEST: i64 = i64::MAX;

/// A written cell's timestamp: `None` (the store's now) for `LATEST`.
fn write_timestamp(ts: Option<i64>) -> Result<Option<u64>, HbaseError> {
    match ts {
        None | Some(LATEST) => Ok(None),
        Some(ts) => timestamp(ts).map(Some),
    }
}

/// A `TTimeRange` (1 minStamp, 2 maxStamp): `[min, max)`, `None` for
/// HBase's open end.
fn time_range_of(range: &Value) -> Result<(u64, Option<u64>), HbaseError> {
    let min = timestamp(field_i64(range, 1).ok_or_else(|| illegal("a TTimeRange needs minStamp"))?)?;
    let max = match field_i64(range, 2).ok_or_else(|| illegal("a TTimeRange needs maxStamp"))? {
        LATEST => None,
        max => Some(timestamp(max)?),
    };
    Ok((min, max))
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
        let (min, max) = time_range_of(range)?;
        read = read.time_range(min, max);
    }
    if let Some(id) = ids.family_ranges
        && let Some(Value::Map { entries, .. }) = v.field(id)
    {
        for (family, range) in entries {
            let Value::Binary(family) = family else {
                return Err(illegal("a colFamTimeRangeMap key is a family name"));
            };
            let (min, max) = time_range_of(range)?;
            read = read.family_time_range(family_name(family)?, min, max);
        }
    }
    Ok(read)
}

#[derive(Clone, Copy)]
struct ReadIds {
    columns: i16,
    timestamp: Option<i16>,
    time_range: i16,
    versions: i16,
    /// `colFamTimeRangeMap` (`TScan` only).
    family_ranges: Option<i16>,
}

/// A read's filter: the filter language (`filterString`, field `string`)
/// or HBase's serialized protobuf filter (`filterBytes`, field `bytes`:
/// what HBase's Java client sends); both is refused.
fn filter_of(v: &Value, string: i16, bytes: i16) -> Result<Option<rowsearch_store::Filter>, HbaseError> {
    let text = field_bytes(v, string).filter(|f| !f.is_empty());
    let serialized = field_bytes(v, bytes).filter(|f| !f.is_empty());
    let parsed = match (text, serialized) {
        (Some(_), Some(_)) => {
            return Err(HbaseError::Io("a read has filterString or filterBytes, not both".into()));
        }
        (Some(f), None) => rowsearch_store::Filter::parse(f),
        (None, Some(f)) => rowsearch_store::Filter::from_protobuf(f),
        (None, None) => return Ok(None),
    };
    parsed.map(Some).map_err(|e| HbaseError::Io(format!("DoNotRetryIOException: {e}")))
}

/// A `TGet`: its row and what it reads (filtered when it has a filter).
pub(crate) struct Get {
    pub row: Vec<u8>,
    pub read: ReadOptions,
    pub filter: Option<rowsearch_store::Filter>,
    /// Per family, the cells skipped (`storeOffset`) and then returned at
    /// most (`storeLimit`), as HBase's `setRowOffsetPerColumnFamily` and
    /// `setMaxResultsPerColumnFamily`.
    pub store_offset: usize,
    pub store_limit: Option<usize>,
}

/// A `TGet` (1 row, 2 columns, 3 timestamp, 4 timeRange, 5 maxVersions,
/// 6 filterString, 12 storeLimit, 13 storeOffset, 15 filterBytes;
/// 14 existence_only changes nothing here: HBase's Thrift2 client reads the
/// cells to answer it either way).
pub(crate) fn get_of(v: &Value) -> Result<Get, HbaseError> {
    let row = field_bytes(v, 1).ok_or_else(|| illegal("a TGet needs a row"))?.to_vec();
    let ids = ReadIds { columns: 2, timestamp: Some(3), time_range: 4, versions: 5, family_ranges: None };
    // HBase's defaults: -1 (no limit) and 0.
    let store_limit = field_i64(v, 12).and_then(|n| usize::try_from(n).ok());
    let store_offset = field_i64(v, 13).and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    Ok(Get { row, read: read_options(v, ids, 1)?, filter: filter_of(v, 6, 15)?, store_offset, store_limit })
}

impl Get {
    /// The row's cells past `store_offset` and within `store_limit`, per
    /// family (HBase counts every cell a family returns, versions included).
    pub(crate) fn per_family(&self, mut row: Row) -> Row {
        if self.store_offset == 0 && self.store_limit.is_none() {
            return row;
        }
        // Cells come family by family: count within the current one.
        let mut family: Option<std::sync::Arc<str>> = None;
        let mut at = 0;
        row.cells.retain(|c| {
            if family.as_ref() != Some(&c.family) {
                family = Some(c.family.clone());
                at = 0;
            }
            let keep = at >= self.store_offset
                && self.store_limit.is_none_or(|limit| at < self.store_offset + limit);
            at += 1;
            keep
        });
        row
    }
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
/// timeRange, 7 filterString, 11 reversed, 13 colFamTimeRangeMap, 15
/// limit (0 or less: none, as HBase), 18 filterBytes); caching, batch
/// size, block cache and read type are HBase's tuning: taken, no meaning
/// here. The scan and its row limit.
pub(crate) fn scan_of(v: &Value) -> Result<(Scan, Option<usize>), HbaseError> {
    let mut scan = Scan::new();
    scan.start = field_bytes(v, 1).filter(|b| !b.is_empty()).map(<[u8]>::to_vec);
    scan.stop = field_bytes(v, 2).filter(|b| !b.is_empty()).map(<[u8]>::to_vec);
    let ids = ReadIds { columns: 3, timestamp: None, time_range: 6, versions: 5, family_ranges: Some(13) };
    scan.read = read_options(v, ids, 1)?;
    scan.filter = filter_of(v, 7, 18)?;
    scan.reverse = field_bool(v, 11).unwrap_or(false);
    let limit = field_i64(v, 15).and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0);
    Ok((scan, limit))
}

/// HBase's `TDurability.FSYNC_WAL`: the mutation on disk before the answer.
const FSYNC_WAL: i64 = 4;

/// Whether a mutating call asks any of its mutations to be on disk before
/// the answer (`durability` `FSYNC_WAL`: TPut 6, TDelete 7, TIncrement 5,
/// TAppend 4; a TRowMutations' TMutation union holds 1 a put, 2 a delete).
/// The other levels are what the server's `--durability` gives already or
/// less: `SYNC_WAL` (HBase's default, a `hflush`) is `--durability
/// process`'s promise; `SKIP_WAL` and `ASYNC_WAL` get the server's.
pub(crate) fn asks_fsync(method: &str, args: &Value) -> bool {
    let fsync = |v: &Value, id: i16| field_i64(v, id) == Some(FSYNC_WAL);
    let arg = |id: i16| args.field(id);
    let mutations = |m: Option<&Value>| {
        m.is_some_and(|m| {
            items(m, 2)
                .iter()
                .any(|u| u.field(1).is_some_and(|p| fsync(p, 6)) || u.field(2).is_some_and(|d| fsync(d, 7)))
        })
    };
    match method {
        "put" => arg(2).is_some_and(|p| fsync(p, 6)),
        "putMultiple" => items(args, 2).iter().any(|p| fsync(p, 6)),
        "deleteSingle" => arg(2).is_some_and(|d| fsync(d, 7)),
        "deleteMultiple" => items(args, 2).iter().any(|d| fsync(d, 7)),
        "checkAndPut" => arg(6).is_some_and(|p| fsync(p, 6)),
        "checkAndDelete" => arg(6).is_some_and(|d| fsync(d, 7)),
        "checkAndMutate" => mutations(arg(7)),
        "mutateRow" => mutations(arg(2)),
        "increment" => arg(2).is_some_and(|i| fsync(i, 5)),
        "append" => arg(2).is_some_and(|a| fsync(a, 4)),
        _ => false,
    }
}

/// A `TPut` (1 row, 2 columnValues, 3 timestamp; durability and
/// visibility taken) added to `batch`.
pub(crate) fn add_put(batch: &mut Batch, table: &str, put: &Value) -> Result<(), HbaseError> {
    let row = field_bytes(put, 1).ok_or_else(|| illegal("a TPut needs a row"))?;
    let default_ts = write_timestamp(field_i64(put, 3))?;
    let mut cells = Vec::new();
    for cv in items(put, 2) {
        let family =
            family_name(field_bytes(cv, 1).ok_or_else(|| illegal("a TColumnValue needs a family"))?)?;
        let qualifier = field_bytes(cv, 2).ok_or_else(|| illegal("a TColumnValue needs a qualifier"))?;
        let value = field_bytes(cv, 3).ok_or_else(|| illegal("a TColumnValue needs a value"))?;
        let mut cell = PutCell::new(family, qualifier.to_vec(), value.to_vec());
        if let Some(ts) = write_timestamp(field_i64(cv, 4))?.or(default_ts) {
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

/// What a `TDelete` removes that must be looked up first: a column's
/// newest version (`DELETE_COLUMN` without a timestamp), or every column of
/// a family at one timestamp (`DELETE_FAMILY_VERSION`).
pub(crate) enum Pending {
    Newest { row: Vec<u8>, family: String, qualifier: Vec<u8> },
    FamilyVersion { row: Vec<u8>, family: String, timestamp: u64 },
}

/// A `TDelete` (1 row, 2 columns, 3 timestamp, 4 deleteType: 0 one
/// version, 1 all versions up to the timestamp (default), 2 the family,
/// 3 a family's one version) added to `batch`. A family named without a
/// qualifier is deleted whole only with type 2 (with the others, HBase
/// deletes its empty qualifier's column). What must be looked up first is
/// answered, for the caller to resolve.
pub(crate) fn add_delete(batch: &mut Batch, table: &str, d: &Value) -> Result<Vec<Pending>, HbaseError> {
    let row = field_bytes(d, 1).ok_or_else(|| illegal("a TDelete needs a row"))?;
    let up_to = write_timestamp(field_i64(d, 3))?;
    let kind = field_i64(d, 4).unwrap_or(1);
    let columns = items(d, 2);
    let mut pending = Vec::new();
    if columns.is_empty() {
        batch.delete(table, row.to_vec(), Delete::Row { up_to });
        return Ok(pending);
    }
    for c in columns {
        let ts = write_timestamp(field_i64(c, 3))?.or(up_to);
        let (family, qualifier) = match column_of(c)? {
            Column::Family(family) => (family, None),
            Column::Qualifier(family, qualifier) => (family, Some(qualifier)),
        };
        let what = match kind {
            2 => Delete::Family { family, up_to: ts },
            3 => {
                let timestamp = ts.ok_or_else(|| illegal("DELETE_FAMILY_VERSION needs a timestamp"))?;
                pending.push(Pending::FamilyVersion { row: row.to_vec(), family, timestamp });
                continue;
            }
            // As HBase: a column without a qualifier, deleted as a column
            // (the default type), is the empty qualifier's.
            0 => {
                let qualifier = qualifier.unwrap_or_default();
                match ts {
                    Some(timestamp) => Delete::Version { family, qualifier, timestamp },
                    None => {
                        pending.push(Pending::Newest { row: row.to_vec(), family, qualifier });
                        continue;
                    }
                }
            }
            _ => Delete::Column { family, qualifier: qualifier.unwrap_or_default(), up_to: ts },
        };
        batch.delete(table, row.to_vec(), what);
    }
    Ok(pending)
}

/// A cell as a `TColumnValue` (type 4: a put, as HBase's cells are).
/// Rows as `TResult`s (1 row, 2 columnValues, 3 stale, 4 partial; a
/// `TColumnValue`: 1 family, 2 qualifier, 3 value, 4 timestamp, 6 type,
/// 4 a put), written straight from the rows ([`Encode`]). An absent row, or
/// one without cells, is a `TResult` with no row key and no values, as HBase
/// answers an empty `Result`.
struct TResults {
    rows: Vec<Option<Row>>,
    /// One `TResult`, not a list of them.
    one: bool,
}

fn encode_result(row: Option<&Row>, out: &mut Encoder<'_>) {
    out.struct_begin();
    let cells = match row {
        Some(r) if !r.cells.is_empty() => {
            out.field(1, TType::Binary);
            out.binary(&r.key);
            &r.cells[..]
        }
        _ => &[],
    };
    out.field(2, TType::List);
    out.list_begin(TType::Struct, cells.len());
    for c in cells {
        out.struct_begin();
        out.field(1, TType::Binary);
        out.binary(c.family.as_bytes());
        out.field(2, TType::Binary);
        out.binary(&c.qualifier);
        out.field(3, TType::Binary);
        out.binary(&c.value);
        out.field(4, TType::I64);
        out.i64(c.timestamp as i64);
        out.field(6, TType::Byte);
        out.byte(4);
        out.struct_end();
    }
    // Never stale nor partial: one store, whole rows.
    out.bool_field(3, false);
    out.bool_field(4, false);
    out.struct_end();
}

impl Encode for TResults {
    fn ttype(&self) -> TType {
        if self.one { TType::Struct } else { TType::List }
    }

    fn encode(&self, out: &mut Encoder<'_>) {
        if self.one {
            return encode_result(self.rows.first().and_then(Option::as_ref), out);
        }
        out.list_begin(TType::Struct, self.rows.len());
        for row in &self.rows {
            encode_result(row.as_ref(), out);
        }
    }
}

/// A row as a `TResult` ([`TResults`]).
pub(crate) fn result(row: Option<Row>) -> Value {
    Value::Encoded(Encoded(Arc::new(TResults { rows: vec![row], one: true })))
}

/// `TResult`s of rows ([`TResults`]).
pub(crate) fn results(rows: impl Iterator<Item = Option<Row>>) -> Value {
    Value::Encoded(Encoded(Arc::new(TResults { rows: rows.collect(), one: false })))
}

/// The same `TResult` as a tree of values: what [`result`] must write.
#[cfg(test)]
pub(crate) fn result_tree(row: Option<&Row>) -> Value {
    let column_value = |c: &rowsearch_store::Cell| {
        Value::Struct(vec![
            (1, Value::Binary(c.family.as_bytes().to_vec())),
            (2, Value::Binary(c.qualifier.clone())),
            (3, Value::Binary(c.value.clone())),
            (4, Value::I64(c.timestamp as i64)),
            (6, Value::Byte(4)),
        ])
    };
    let mut fields = Vec::new();
    let cells = match row {
        Some(r) if !r.cells.is_empty() => {
            fields.push((1, Value::Binary(r.key.clone())));
            &r.cells[..]
        }
        _ => &[],
    };
    fields.push((2, Value::List { elem: TType::Struct, items: cells.iter().map(column_value).collect() }));
    fields.push((3, Value::Bool(false)));
    fields.push((4, Value::Bool(false)));
    Value::Struct(fields)
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
