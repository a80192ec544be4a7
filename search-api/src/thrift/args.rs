//! Reading a call's arguments by field id (both services: `Hbase` and
//! `THBaseService`), and the store's errors as HBase's exceptions.

use rowsearch_store::{Column, ErrorKind};

use super::codec::Value;
use super::hbase_types::HbaseError;

pub(crate) fn store_error(e: rowsearch_store::Error) -> HbaseError {
    match e.kind() {
        ErrorKind::UnknownTable { .. } => HbaseError::Io(format!("TableNotFoundException: {e}")),
        ErrorKind::TableDisabled { .. } => HbaseError::Io(format!("TableNotEnabledException: {e}")),
        ErrorKind::UnknownFamily { .. } => HbaseError::Io(format!("NoSuchColumnFamilyException: {e}")),
        // HBase's DoNotRetryIOException ("Field is not a long").
        ErrorKind::NotACounter { .. } => HbaseError::Io(e.to_string()),
        _ if e.is_user_error() => HbaseError::IllegalArgument(e.to_string()),
        _ => HbaseError::Io(e.to_string()),
    }
}

pub(crate) fn arg<'a>(args: &'a Value, id: i16, name: &str) -> Result<&'a Value, HbaseError> {
    args.field(id).ok_or_else(|| HbaseError::IllegalArgument(format!("argument {name} is missing")))
}

pub(crate) fn bytes<'a>(args: &'a Value, id: i16, name: &str) -> Result<&'a [u8], HbaseError> {
    match arg(args, id, name)? {
        Value::Binary(b) => Ok(b),
        other => {
            Err(HbaseError::IllegalArgument(format!("argument {name}: a binary, got {:?}", other.ttype())))
        }
    }
}

pub(crate) fn text(args: &Value, id: i16, name: &str) -> Result<String, HbaseError> {
    let raw = bytes(args, id, name)?;
    String::from_utf8(raw.to_vec()).map_err(|_| HbaseError::IllegalArgument(format!("{name} is not UTF-8")))
}

pub(crate) fn int(args: &Value, id: i16, name: &str) -> Result<i64, HbaseError> {
    match arg(args, id, name)? {
        Value::I32(n) => Ok(i64::from(*n)),
        Value::I64(n) => Ok(*n),
        other => {
            Err(HbaseError::IllegalArgument(format!("argument {name}: an integer, got {:?}", other.ttype())))
        }
    }
}

pub(crate) fn list(args: &Value, id: i16) -> &[Value] {
    match args.field(id) {
        Some(Value::List { items, .. }) => items,
        _ => &[],
    }
}

pub(crate) fn columns(items: &[Value]) -> Vec<Column> {
    items
        .iter()
        .filter_map(|v| if let Value::Binary(b) = v { Some(Column::parse(b)) } else { None })
        .collect()
}

/// A timestamp argument: HBase's are exclusive upper bounds for reads and
/// the version for writes; negative ones make no sense.
pub(crate) fn timestamp(args: &Value, id: i16) -> Result<u64, HbaseError> {
    let ts = int(args, id, "timestamp")?;
    u64::try_from(ts).map_err(|_| HbaseError::IllegalArgument(format!("timestamp {ts} is negative")))
}

/// A scanner id argument (field 1).
pub(crate) fn scanner_id(args: &Value) -> Result<i32, HbaseError> {
    i32::try_from(int(args, 1, "id")?).map_err(|_| HbaseError::IllegalArgument("scanner id".into()))
}
