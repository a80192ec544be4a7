//! `/tables/{t}/rows/{key}` and `/tables/{t}/mutate`: single-row writes and
//! reads, and atomic batches.

use rowsearch_store::{Batch, Column, Delete, PutCell};
use serde_json::{Value, json};

use super::{Answer, confine, ok};
use crate::http::error::{ApiError, Refusal};
use crate::http::params::{Params, binary, columns_of, parse_json, path_key, read_options};
use crate::http::state::State;
use crate::json::{Encoding, key_from_fields, row_json_in};
use crate::keys::Access;

/// Where a row request names its row: the path's key, or `key_fields`
/// (`/tables/{t}/rows?key_fields={...}`).
pub(crate) enum RowAt {
    /// A percent-encoded path segment.
    Path(String),
    /// The query's `key_fields`.
    Fields,
}

impl RowAt {
    fn key(&self, st: &State, t: &str, p: &Params) -> Result<Vec<u8>, ApiError> {
        match self {
            RowAt::Path(segment) => path_key(segment),
            RowAt::Fields => {
                let fields = p.get("key_fields").ok_or_else(|| ApiError::bad_request("give key_fields"))?;
                Ok(key_from_fields(&st.searcher.rows().schema(t)?, t, fields)?)
            }
        }
    }
}

/// `PUT /tables/{t}/rows/{key}` (or `?key_fields=`): the row's cells
/// written wherever the table lives; 200 with the write's `seq`.
pub(crate) fn put(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params, body: &[u8]) -> Answer {
    let key = at.key(st, t, p)?;
    confine::may_write_row(access, st.tables(), t, &key)?;
    let body: RowRequest = parse_json(body)?;
    let seq = st.tables().put_rows(t, &[(key, body.cells(p.encoding()?)?)])?;
    ok(json!({"seq": seq}))
}

/// `GET /tables/{t}/rows/{key}` (or `?key_fields=`).
pub(crate) fn get(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params) -> Answer {
    let key = at.key(st, t, p)?;
    // A row of a partition the key may not see is no row at all to it.
    if !confine::sees_key(access, st.tables(), t, &key)? {
        return Err(Refusal::RowNotFound.into());
    }
    let read = read_options(p)?;
    let row = st.tables().get(t, &key, &read)?;
    let schema = st.tables().schema(t)?;
    match row {
        Some(row) => ok(row_json_in(&row, schema.row_key.as_ref(), p.encoding()?)),
        None => Err(Refusal::RowNotFound.into()),
    }
}

/// `DELETE /tables/{t}/rows/{key}` (or `?key_fields=`): the row, or the
/// `columns` given; 200 with the write's `seq`.
pub(crate) fn delete(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params) -> Answer {
    let key = at.key(st, t, p)?;
    confine::may_write_row(access, st.tables(), t, &key)?;
    let whats =
        deletes(&columns_of(p.encoding()?, &p.all("columns"))?, p.number("timestamp")?, p.flag("exact")?)?;
    ok(json!({"seq": st.tables().delete(t, &key, &whats)?}))
}

/// `POST /tables/{t}/mutate`: puts and deletes in one atomic batch.
/// The raw body is let go once parsed, and each mutation's strings once
/// decoded into the batch: a large batch holds about two copies of its
/// data at a time, not four.
/// Mutations of a `mutate` body written per batch (see [`mutate`]).
const MUTATE_CHUNK: usize = 4096;

pub(crate) fn mutate(
    st: &State,
    access: &Access,
    route_table: Option<&str>,
    p: &Params,
    raw: bytes::Bytes,
) -> Answer {
    let enc = p.encoding()?;
    // The embedded store is all or nothing whatever `atomic` says.
    let atomic = p.get("atomic").is_none() || p.flag("atomic")?;
    let Some(store) = st.tables().store() else {
        return mutate_per_row(st.tables(), access, route_table, p, &raw, atomic);
    };
    let table_of = |named: &Option<String>| table_of(access, route_table, named);
    // Read when a mutation first names its row by fields: a body that
    // does not parse is a 400 before the table is looked at.
    let mut schemas = std::collections::HashMap::new();
    let mut key_of = |t: &str, key: &Option<String>, fields: &Option<Value>| -> Result<Vec<u8>, ApiError> {
        match (key, fields) {
            (Some(key), None) => binary(enc, "key", key),
            (None, Some(fields)) => {
                if !schemas.contains_key(t) {
                    schemas.insert(t.to_owned(), store.schema(t)?);
                }
                Ok(key_from_fields(&schemas[t], t, &fields.to_string())?)
            }
            _ => Err(ApiError::bad_request(
                "each mutation names its row by key or by key_fields (one of them)",
            )),
        }
    };
    // The body is read into batches of MUTATE_CHUNK mutations, each
    // written as it is read, all in one transaction (all or nothing): the
    // request's mutations are never all held at once, as parsed or as a
    // batch. A failure of ours (a bad mutation, a row outside the key's
    // partitions) is kept here and ends the transaction.
    let mut failed: Option<ApiError> = None;
    let mut tables = std::collections::BTreeSet::new();
    let written = store.apply_each(&mut |sink| {
        let mut batch = Batch::new();
        let mut flush = |batch: &mut Batch| -> Result<(), ApiError> {
            if access.partitions().is_some() {
                let rtxn = store.begin_read()?;
                for m in &batch.mutations {
                    confine::may_write(access, &rtxn, m.table(), m.row())?;
                }
            }
            Ok(sink(std::mem::take(batch))?)
        };
        let mut add = |m: MutationRequest| -> Result<(), ApiError> {
            match (m.put, m.delete) {
                (Some(put), None) => {
                    let t = table_of(&put.table)?;
                    batch.put(&t, key_of(&t, &put.key, &put.key_fields)?, put.row.cells(enc)?);
                    tables.insert(t);
                }
                (None, Some(del)) => {
                    let t = table_of(&del.table)?;
                    let key = key_of(&t, &del.key, &del.key_fields)?;
                    let columns: Vec<&str> = del.columns.iter().map(String::as_str).collect();
                    for what in deletes(&columns_of(enc, &columns)?, del.timestamp, del.exact)? {
                        batch.delete(&t, key.clone(), what);
                    }
                    tables.insert(t);
                }
                _ => {
                    return Err(ApiError::bad_request(
                        "each mutation is {\"put\": ...} or {\"delete\": ...}",
                    ));
                }
            }
            if batch.len() >= MUTATE_CHUNK {
                flush(&mut batch)?;
            }
            Ok(())
        };
        let read = stream::mutations(&raw, &mut add).and_then(|()| flush(&mut batch));
        read.map_err(|e| {
            failed = Some(e);
            rowsearch_store::Error::callback("the request's mutations were refused")
        })
    });
    let info = match (failed, written) {
        (Some(e), _) => return Err(e),
        (None, written) => written?,
    };
    if let (0, Some(t)) = (info.rows, route_table) {
        // No mutation named the table: it must exist all the same.
        store.table_id(t)?;
    }
    ok(json!({"rows": info.rows, "seq": info.last_seq, "tables": tables, "atomicity": "batch"}))
}

/// The table of a mutation: the route's (`/tables/{t}/mutate`, where a
/// mutation may name it again), or its own (`/mutate`); one the key may
/// touch.
fn table_of(access: &Access, route_table: Option<&str>, named: &Option<String>) -> Result<String, ApiError> {
    let table = match (route_table, named) {
        (Some(t), None) => t.to_owned(),
        (Some(t), Some(n)) if n == t => n.clone(),
        (Some(t), Some(n)) => {
            return Err(ApiError::bad_request(format!(
                "this route writes table {t:?} and a mutation names {n:?}: POST /mutate takes a table per \
                 mutation"
            )));
        }
        (None, Some(n)) => n.clone(),
        (None, None) => {
            return Err(ApiError::bad_request("each mutation of POST /mutate names its table"));
        }
    };
    if !access.may_touch(&table) {
        return Err(Refusal::Forbidden(format!("this key may not touch table {table:?}")).into());
    }
    Ok(table)
}

/// One row's writes in a `mutate` over HBase: its puts (one HBase put,
/// atomic), or its deletes (of the row, families, columns, versions).
enum RowWrite {
    Put(Vec<PutCell>),
    Delete(Vec<Delete>),
}

/// Puts of consecutive rows of one table written in one call.
const HBASE_PUT_GROUP: usize = 500;

/// `mutate` where the tables' place is atomic per row (HBase): the whole
/// body is read
/// and checked first (a bad mutation writes nothing); each row's puts are
/// one put, a row's deletes applied in turn (a row both put and deleted
/// is a 400: HBase would apply them as two operations). A batch of more than one row is refused unless `atomic`
/// is false; then the rows are applied in the order they first appear,
/// and a failure says how many were.
fn mutate_per_row(
    tables: &dyn rowsearch_store::TableStore,
    access: &Access,
    route_table: Option<&str>,
    p: &Params,
    raw: &[u8],
    atomic: bool,
) -> Answer {
    let enc = p.encoding()?;
    let mut rows: Vec<((String, Vec<u8>), RowWrite)> = Vec::new();
    let mut at: std::collections::HashMap<(String, Vec<u8>), usize> = std::collections::HashMap::new();
    let mut schemas = std::collections::HashMap::new();
    let mut key_of = |t: &str, key: &Option<String>, fields: &Option<Value>| -> Result<Vec<u8>, ApiError> {
        match (key, fields) {
            (Some(key), None) => binary(enc, "key", key),
            (None, Some(fields)) => {
                if !schemas.contains_key(t) {
                    schemas.insert(t.to_owned(), tables.schema(t)?);
                }
                Ok(key_from_fields(&schemas[t], t, &fields.to_string())?)
            }
            _ => Err(ApiError::bad_request(
                "each mutation names its row by key or by key_fields (one of them)",
            )),
        }
    };
    let both = |key: &[u8]| {
        ApiError::bad_request(format!(
            "row {:?} is both put and deleted in this batch: HBase would apply them as two operations; send \
             them in two requests",
            String::from_utf8_lossy(key)
        ))
    };
    stream::mutations(raw, &mut |m: MutationRequest| -> Result<(), ApiError> {
        let (row, write) = match (m.put, m.delete) {
            (Some(put), None) => {
                let t = table_of(access, route_table, &put.table)?;
                let key = key_of(&t, &put.key, &put.key_fields)?;
                ((t, key), RowWrite::Put(put.row.cells(enc)?))
            }
            (None, Some(del)) => {
                let t = table_of(access, route_table, &del.table)?;
                let key = key_of(&t, &del.key, &del.key_fields)?;
                let columns: Vec<&str> = del.columns.iter().map(String::as_str).collect();
                ((t, key), RowWrite::Delete(deletes(&columns_of(enc, &columns)?, del.timestamp, del.exact)?))
            }
            _ => return Err(ApiError::bad_request("each mutation is {\"put\": ...} or {\"delete\": ...}")),
        };
        match (at.get(&row).map(|&i| &mut rows[i].1), write) {
            (None, write) => {
                at.insert(row.clone(), rows.len());
                rows.push((row, write));
            }
            (Some(RowWrite::Put(cells)), RowWrite::Put(more)) => cells.extend(more),
            (Some(RowWrite::Delete(whats)), RowWrite::Delete(more)) => whats.extend(more),
            (Some(_), _) => return Err(both(&row.1)),
        }
        Ok(())
    })?;
    if atomic && rows.len() > 1 {
        return Err(Refusal::NotAtomicOverHbase(rows.len()).into());
    }
    let named: std::collections::BTreeSet<String> = rows.iter().map(|((t, _), _)| t.clone()).collect();
    for t in named.iter().chain(route_table.map(str::to_owned).as_ref()) {
        // Every table named exists, before anything is written.
        tables.schema(t)?;
    }
    for ((t, key), _) in &rows {
        confine::may_write_row(access, tables, t, key)?;
    }
    let total = rows.len();
    let mut applied = 0;
    let mut seq = 0;
    let mut rows = rows.into_iter().peekable();
    while let Some(((t, key), write)) = rows.next() {
        let (written, result) = match write {
            RowWrite::Delete(whats) => (1, tables.delete(&t, &key, &whats)),
            RowWrite::Put(cells) => {
                let mut group = vec![(key, cells)];
                while group.len() < HBASE_PUT_GROUP {
                    match rows.next_if(|((next, _), w)| *next == t && matches!(w, RowWrite::Put(_))) {
                        Some(((_, key), RowWrite::Put(cells))) => group.push((key, cells)),
                        _ => break,
                    }
                }
                (group.len(), tables.put_rows(&t, &group))
            }
        };
        match result {
            Ok(at) => seq = at,
            Err(e) => {
                let mut e = ApiError::from(e);
                e.message = format!(
                    "{applied} of the batch's {total} rows were applied (in the order they first appear); the next \
                 {written} may or may not be (HBase applies a multi-row put row by row), the rest were not: {}",
                    e.message
                );
                return Err(e);
            }
        }
        applied += written;
    }
    ok(json!({"rows": total, "seq": seq, "tables": named, "atomicity": "row"}))
}

/// `{"cells":[{"column","value","timestamp"?}]}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RowRequest {
    cells: Vec<CellRequest>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CellRequest {
    column: String,
    value: String,
    timestamp: Option<u64>,
}

impl RowRequest {
    fn cells(self, enc: Encoding) -> Result<Vec<PutCell>, ApiError> {
        if self.cells.is_empty() {
            return Err(ApiError::bad_request("a put needs at least one cell"));
        }
        self.cells
            .into_iter()
            .map(|c| match Column::parse(&binary(enc, "column", &c.column)?) {
                Column::Qualifier(family, qualifier) => Ok(PutCell {
                    family,
                    qualifier,
                    timestamp: c.timestamp,
                    value: binary(enc, "value", &c.value)?,
                }),
                Column::Family(f) => {
                    Err(ApiError::bad_request(format!("column {f:?}: a put needs family:qualifier")))
                }
            })
            .collect()
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MutationRequest {
    put: Option<PutRequest>,
    delete: Option<DeleteRequest>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PutRequest {
    /// The table (`POST /mutate`; on `/tables/{t}/mutate` absent or `t`).
    table: Option<String>,
    key: Option<String>,
    key_fields: Option<Value>,
    #[serde(flatten)]
    row: RowRequest,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteRequest {
    table: Option<String>,
    key: Option<String>,
    key_fields: Option<Value>,
    #[serde(default)]
    columns: Vec<String>,
    timestamp: Option<u64>,
    #[serde(default)]
    exact: bool,
}

/// The deletes a `columns` selection means: the whole row when empty;
/// with `exact`, the one version at the timestamp of each
/// `family:qualifier` (HBase's `Delete.addColumn` with a timestamp), else
/// every version up to it.
fn deletes(columns: &[Column], up_to: Option<u64>, exact: bool) -> Result<Vec<Delete>, ApiError> {
    if exact {
        let timestamp = up_to.ok_or_else(|| {
            ApiError::bad_request("exact deletes one version of each column: give its timestamp")
        })?;
        if columns.is_empty() {
            return Err(ApiError::bad_request(
                "exact deletes one version of columns: name family:qualifier columns",
            ));
        }
        return columns
            .iter()
            .map(|c| match c {
                Column::Qualifier(family, qualifier) => {
                    Ok(Delete::Version { family: family.clone(), qualifier: qualifier.clone(), timestamp })
                }
                Column::Family(family) => Err(ApiError::bad_request(format!(
                    "exact deletes one version of a column: {family:?} is a family; name family:qualifier"
                ))),
            })
            .collect();
    }
    if columns.is_empty() {
        return Ok(vec![Delete::Row { up_to }]);
    }
    Ok(columns
        .iter()
        .map(|c| match c {
            Column::Family(family) => Delete::Family { family: family.clone(), up_to },
            Column::Qualifier(family, qualifier) => {
                Delete::Column { family: family.clone(), qualifier: qualifier.clone(), up_to }
            }
        })
        .collect())
}

/// `{"mutations":[...]}` read one mutation at a time.
mod stream {
    use std::fmt;

    use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

    use super::MutationRequest;
    use crate::http::error::ApiError;
    use crate::http::params::json_error;

    type Each<'f> = &'f mut dyn FnMut(MutationRequest) -> Result<(), ApiError>;

    /// Hands each mutation of `body` to `each` as it is read; the first
    /// error (the body's, or one `each` returns) ends it.
    pub(super) fn mutations(body: &[u8], each: Each<'_>) -> Result<(), ApiError> {
        let mut failed = None;
        let mut de = serde_json::Deserializer::from_slice(body);
        let read = Body { each, failed: &mut failed }.deserialize(&mut de).and_then(|()| de.end());
        match (failed, read) {
            (Some(e), _) => Err(e),
            (None, read) => read.map_err(json_error),
        }
    }

    /// The body object: exactly one field, `mutations`.
    struct Body<'f, 'e> {
        each: Each<'f>,
        failed: &'e mut Option<ApiError>,
    }

    impl<'de> DeserializeSeed<'de> for Body<'_, '_> {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Body<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object with \"mutations\"")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut list = Some(List { each: self.each, failed: self.failed });
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key != "mutations" {
                    return Err(de::Error::unknown_field(&key, &["mutations"]));
                }
                let Some(list) = list.take() else { return Err(de::Error::duplicate_field("mutations")) };
                map.next_value_seed(list)?;
            }
            match list {
                Some(_) => Err(de::Error::missing_field("mutations")),
                None => Ok(()),
            }
        }
    }

    /// The `mutations` array.
    struct List<'f, 'e> {
        each: Each<'f>,
        failed: &'e mut Option<ApiError>,
    }

    impl<'de> DeserializeSeed<'de> for List<'_, '_> {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for List<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of mutations")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(m) = seq.next_element::<MutationRequest>()? {
                if let Err(e) = (self.each)(m) {
                    *self.failed = Some(e);
                    return Err(de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
}
