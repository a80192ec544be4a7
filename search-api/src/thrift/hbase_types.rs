//! The `Hbase` service's structs (HBase's published `Hbase.thrift`: field
//! ids and types are the protocol) read from and written as codec
//! [`Value`]s: column descriptors to and from the store's family schemas,
//! cells and row results, and the three exceptions.

use rowsearch_store::{Compression, FamilySchema, Row};

use super::codec::{TType, Value};

/// An exception of the service, as HBase raises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HbaseError {
    /// `IOError`: anything the store refused or failed at.
    Io(String),
    /// `IllegalArgument`: a call's argument that makes no sense.
    IllegalArgument(String),
    /// `AlreadyExists`: a table created twice.
    AlreadyExists(String),
}

impl HbaseError {
    /// Its message.
    pub(crate) fn message(&self) -> &str {
        match self {
            HbaseError::Io(m) | HbaseError::IllegalArgument(m) | HbaseError::AlreadyExists(m) => m,
        }
    }

    /// Its name in metrics.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            HbaseError::Io(_) => "io_error",
            HbaseError::IllegalArgument(_) => "illegal_argument",
            HbaseError::AlreadyExists(_) => "already_exists",
        }
    }

    /// The exception as the struct the reply carries, and the result field
    /// id the method declares for it (`throws (1:IOError io, 2:IllegalArgument
    /// ia, 3:AlreadyExists exist)`).
    pub(crate) fn to_field(&self) -> (i16, Value) {
        let (id, message) = match self {
            HbaseError::Io(m) => (1, m),
            HbaseError::IllegalArgument(m) => (2, m),
            HbaseError::AlreadyExists(m) => (3, m),
        };
        (id, Value::Struct(vec![(1, Value::Binary(message.as_bytes().to_vec()))]))
    }
}

/// HBase's "forever" time to live (`HConstants.FOREVER`).
const FOREVER: i32 = i32::MAX;

fn bytes_field(v: &Value, id: i16) -> Option<&[u8]> {
    match v.field(id) {
        Some(Value::Binary(b)) => Some(b),
        _ => None,
    }
}

fn i32_field(v: &Value, id: i16) -> Option<i32> {
    match v.field(id) {
        Some(Value::I32(n)) => Some(*n),
        _ => None,
    }
}

/// A family from a `ColumnDescriptor` (name `cf` or `cf:`; maxVersions
/// default 3; compression NONE, LZ4 or ZSTD; timeToLive in seconds, -1 or
/// HBase's forever for none). Bloom filters, in-memory and block cache
/// settings are HBase's storage hints and have no meaning here: taken and
/// not kept.
pub(crate) fn family_from_descriptor(d: &Value) -> Result<FamilySchema, HbaseError> {
    let raw = bytes_field(d, 1)
        .ok_or_else(|| HbaseError::IllegalArgument("a column descriptor needs a name".into()))?;
    let name = raw.strip_suffix(b":").unwrap_or(raw);
    let name = std::str::from_utf8(name)
        .map_err(|_| HbaseError::IllegalArgument(format!("family name {raw:?} is not UTF-8")))?;
    let max_versions = i32_field(d, 2).unwrap_or(3);
    let max_versions = u32::try_from(max_versions)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| HbaseError::IllegalArgument(format!("maxVersions {max_versions}: at least 1")))?;
    let compression = match bytes_field(d, 3).map(|c| c.to_ascii_uppercase()).as_deref() {
        None | Some(b"NONE") => Compression::None,
        Some(b"LZ4") => Compression::Lz4,
        Some(b"ZSTD") => Compression::Zstd,
        Some(other) => {
            return Err(HbaseError::IllegalArgument(format!(
                "compression {:?}: NONE, LZ4 or ZSTD",
                String::from_utf8_lossy(other)
            )));
        }
    };
    let mut family = FamilySchema::new(name).max_versions(max_versions).compression(compression);
    match i32_field(d, 9) {
        None | Some(-1) | Some(FOREVER) => {}
        Some(ttl) if ttl > 0 => family = family.ttl_seconds(ttl as u64),
        Some(ttl) => return Err(HbaseError::IllegalArgument(format!("timeToLive {ttl}: seconds, or -1"))),
    }
    Ok(family)
}

/// A family as a `ColumnDescriptor` (its name with the trailing colon, as
/// HBase's gateway answers).
pub(crate) fn descriptor_of(family: &FamilySchema) -> Value {
    let compression = match family.compression {
        Compression::None => "NONE",
        Compression::Lz4 => "LZ4",
        Compression::Zstd => "ZSTD",
    };
    let ttl = family.ttl_seconds.map_or(FOREVER, |s| i32::try_from(s).unwrap_or(FOREVER));
    Value::Struct(vec![
        (1, Value::Binary(format!("{}:", family.name).into_bytes())),
        (2, Value::I32(i32::try_from(family.max_versions).unwrap_or(i32::MAX))),
        (3, Value::Binary(compression.as_bytes().to_vec())),
        (4, Value::Bool(false)),
        (5, Value::Binary(b"NONE".to_vec())),
        (6, Value::I32(0)),
        (7, Value::I32(0)),
        (8, Value::Bool(true)),
        (9, Value::I32(ttl)),
    ])
}

/// A `TCell`.
pub(crate) fn cell(value: &[u8], timestamp: u64) -> Value {
    Value::Struct(vec![(1, Value::Binary(value.to_vec())), (2, Value::I64(timestamp as i64))])
}

/// A `TRowResult`: the row's newest cell per column in `columns` (keyed
/// `family:qualifier`), and, when `sorted`, the same as `sortedColumns`
/// in column order (HBase fills one or the other).
pub(crate) fn row_result(row: &Row, sorted: bool) -> Value {
    let mut columns: Vec<(Vec<u8>, Value)> = Vec::new();
    for c in &row.cells {
        let mut name = c.family.as_bytes().to_vec();
        name.push(b':');
        name.extend_from_slice(&c.qualifier);
        // Cells come newest first within a column: keep the first.
        if columns.last().is_none_or(|(last, _)| *last != name) {
            columns.push((name, cell(&c.value, c.timestamp)));
        }
    }
    let mut fields = vec![(1, Value::Binary(row.key.clone()))];
    if sorted {
        let items = columns
            .into_iter()
            .map(|(name, cell)| Value::Struct(vec![(1, Value::Binary(name)), (2, cell)]))
            .collect();
        fields.push((3, Value::List { elem: TType::Struct, items }));
    } else {
        let entries = columns.into_iter().map(|(name, cell)| (Value::Binary(name), cell)).collect();
        fields.push((2, Value::Map { key: TType::Binary, value: TType::Struct, entries }));
    }
    Value::Struct(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowsearch_store::Cell;

    fn descriptor(fields: Vec<(i16, Value)>) -> Value {
        Value::Struct(fields)
    }

    #[test]
    fn column_descriptors_become_families_and_back() {
        let d = descriptor(vec![
            (1, Value::Binary(b"cf:".to_vec())),
            (2, Value::I32(1)),
            (3, Value::Binary(b"lz4".to_vec())),
            (9, Value::I32(3600)),
        ]);
        let family = family_from_descriptor(&d).unwrap();
        assert_eq!(
            family,
            FamilySchema::new("cf").max_versions(1).compression(Compression::Lz4).ttl_seconds(3600)
        );
        let back = descriptor_of(&family);
        assert_eq!(back.field(1), Some(&Value::Binary(b"cf:".to_vec())));
        assert_eq!(back.field(2), Some(&Value::I32(1)));
        assert_eq!(back.field(9), Some(&Value::I32(3600)));
        assert_eq!(family_from_descriptor(&back).unwrap(), family);
        // HBase's defaults: 3 versions, no compression, forever.
        let plain = family_from_descriptor(&descriptor(vec![(1, Value::Binary(b"cf".to_vec()))])).unwrap();
        assert_eq!(plain, FamilySchema::new("cf").max_versions(3));
        assert_eq!(descriptor_of(&plain).field(9), Some(&Value::I32(i32::MAX)));
    }

    #[test]
    fn bad_descriptors_are_illegal_arguments() {
        for (d, why) in [
            (descriptor(vec![]), "needs a name"),
            (descriptor(vec![(1, Value::Binary(b"cf".to_vec())), (2, Value::I32(0))]), "maxVersions 0"),
            (
                descriptor(vec![(1, Value::Binary(b"cf".to_vec())), (3, Value::Binary(b"GZ".to_vec()))]),
                "\"GZ\"",
            ),
            (descriptor(vec![(1, Value::Binary(b"cf".to_vec())), (9, Value::I32(0))]), "timeToLive 0"),
        ] {
            match family_from_descriptor(&d) {
                Err(HbaseError::IllegalArgument(m)) => assert!(m.contains(why), "{m}"),
                other => panic!("{d:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn row_results_hold_the_newest_cell_per_column() {
        let cell_of = |q: &str, ts: u64, v: &str| Cell {
            family: "cf".into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: ts,
            value: v.as_bytes().to_vec(),
        };
        let row = Row {
            key: b"r1".to_vec(),
            cells: vec![cell_of("a", 9, "new"), cell_of("a", 3, "old"), cell_of("b", 5, "x")],
        };
        let Value::Struct(fields) = row_result(&row, false) else { panic!() };
        let Value::Map { entries, .. } = &fields[1].1 else { panic!() };
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], (Value::Binary(b"cf:a".to_vec()), cell(b"new", 9)));
        let Value::Struct(sorted) = row_result(&row, true) else { panic!() };
        let Value::List { items, .. } = &sorted[1].1 else { panic!() };
        assert_eq!(items.len(), 2);
        assert_eq!(sorted[1].0, 3);
    }
}
