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
                Ok(key_from_fields(&st.store().schema(t)?, t, fields)?)
            }
        }
    }
}

/// `PUT /tables/{t}/rows/{key}` (or `?key_fields=`).
pub(crate) fn put(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params, body: &[u8]) -> Answer {
    let key = at.key(st, t, p)?;
    confine::may_write_row(access, st.store(), t, &key)?;
    let body: RowRequest = parse_json(body)?;
    let info = st.store().put(t, &key, body.cells(p.encoding()?)?)?;
    ok(json!({"seq": info.last_seq}))
}

/// `GET /tables/{t}/rows/{key}` (or `?key_fields=`).
pub(crate) fn get(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params) -> Answer {
    let key = at.key(st, t, p)?;
    let rtxn = st.store().begin_read()?;
    let schema = rtxn.schema(t)?;
    // A row of a partition the key may not see is no row at all to it.
    if !confine::sees_row(access, &rtxn, t, &key)? {
        return Err(Refusal::RowNotFound.into());
    }
    match rtxn.get(t, &key, &read_options(p)?)? {
        Some(row) => ok(row_json_in(&row, schema.row_key.as_ref(), p.encoding()?)),
        None => Err(Refusal::RowNotFound.into()),
    }
}

/// `DELETE /tables/{t}/rows/{key}` (or `?key_fields=`): the row, or the
/// `columns` given; 200 with the commit's `seq`.
pub(crate) fn delete(st: &State, access: &Access, t: &str, at: &RowAt, p: &Params) -> Answer {
    let key = at.key(st, t, p)?;
    confine::may_write_row(access, st.store(), t, &key)?;
    let mut batch = Batch::new();
    for what in deletes(&columns_of(p.encoding()?, &p.all("columns"))?, p.number("timestamp")?) {
        batch.delete(t, key.clone(), what);
    }
    let info = st.store().apply(&batch)?;
    ok(json!({"seq": info.last_seq}))
}

/// `POST /tables/{t}/mutate`: puts and deletes in one atomic batch.
/// The raw body is let go once parsed, and each mutation's strings once
/// decoded into the batch: a large batch holds about two copies of its
/// data at a time, not four.
pub(crate) fn mutate(st: &State, access: &Access, t: &str, p: &Params, raw: bytes::Bytes) -> Answer {
    let enc = p.encoding()?;
    let body: MutateRequest = parse_json(&raw)?;
    drop(raw);
    let schema = st.store().schema(t)?;
    let key_of = |key: &Option<String>, fields: &Option<Value>| -> Result<Vec<u8>, ApiError> {
        match (key, fields) {
            (Some(key), None) => binary(enc, "key", key),
            (None, Some(fields)) => Ok(key_from_fields(&schema, t, &fields.to_string())?),
            _ => Err(ApiError::bad_request(
                "each mutation names its row by key or by key_fields (one of them)",
            )),
        }
    };
    let mut batch = Batch::new();
    for m in body.mutations {
        match (m.put, m.delete) {
            (Some(put), None) => {
                batch.put(t, key_of(&put.key, &put.key_fields)?, put.row.cells(enc)?);
            }
            (None, Some(del)) => {
                let key = key_of(&del.key, &del.key_fields)?;
                let columns: Vec<&str> = del.columns.iter().map(String::as_str).collect();
                for what in deletes(&columns_of(enc, &columns)?, del.timestamp) {
                    batch.delete(t, key.clone(), what);
                }
            }
            _ => {
                return Err(ApiError::bad_request("each mutation is {\"put\": ...} or {\"delete\": ...}"));
            }
        }
    }
    if access.partitions().is_some() {
        let rtxn = st.store().begin_read()?;
        for m in &batch.mutations {
            confine::may_write(access, &rtxn, t, m.row())?;
        }
    }
    let info = st.store().apply(&batch)?;
    ok(json!({"rows": info.rows, "seq": info.last_seq}))
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
struct MutateRequest {
    mutations: Vec<MutationRequest>,
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
    key: Option<String>,
    key_fields: Option<Value>,
    #[serde(flatten)]
    row: RowRequest,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteRequest {
    key: Option<String>,
    key_fields: Option<Value>,
    #[serde(default)]
    columns: Vec<String>,
    timestamp: Option<u64>,
}

/// The deletes a `columns` selection means: the whole row when empty.
fn deletes(columns: &[Column], up_to: Option<u64>) -> Vec<Delete> {
    if columns.is_empty() {
        return vec![Delete::Row { up_to }];
    }
    columns
        .iter()
        .map(|c| match c {
            Column::Family(family) => Delete::Family { family: family.clone(), up_to },
            Column::Qualifier(family, qualifier) => {
                Delete::Column { family: family.clone(), qualifier: qualifier.clone(), up_to }
            }
        })
        .collect()
}
