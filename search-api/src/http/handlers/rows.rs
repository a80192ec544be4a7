//! `/tables/{t}/rows/{key}` and `/tables/{t}/mutate`: single-row writes and
//! reads, and atomic batches.

use rowsearch_store::{Batch, Column, Delete, PutCell};
use serde_json::json;
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, ok};
use crate::http::error::{ApiError, Refusal};
use crate::http::params::{Params, binary, columns_of, parse_json, path_key, read_options};
use crate::http::state::State;
use crate::json::{Encoding, row_json_in};

/// `PUT /tables/{t}/rows/{key}`.
pub(crate) fn put(st: &State, t: &str, key: &str, p: &Params, body: &[u8]) -> Answer {
    let key = path_key(key)?;
    let body: RowRequest = parse_json(body)?;
    let info = st.store().put(t, &key, body.cells(p.encoding()?)?)?;
    ok(json!({"seq": info.last_seq}))
}

/// `GET /tables/{t}/rows/{key}`.
pub(crate) fn get(st: &State, t: &str, key: &str, p: &Params) -> Answer {
    let key = path_key(key)?;
    let schema = st.store().schema(t)?;
    match st.store().get(t, &key, &read_options(p)?)? {
        Some(row) => ok(row_json_in(&row, schema.row_key.as_ref(), p.encoding()?)),
        None => Err(Refusal::RowNotFound.into()),
    }
}

/// `DELETE /tables/{t}/rows/{key}`: the row, or the `columns` given.
pub(crate) fn delete(st: &State, t: &str, key: &str, p: &Params) -> Answer {
    let key = path_key(key)?;
    let mut batch = Batch::new();
    for what in deletes(&columns_of(p.encoding()?, &p.all("columns"))?, p.number("timestamp")?) {
        batch.delete(t, key.clone(), what);
    }
    st.store().apply(&batch)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /tables/{t}/mutate`: puts and deletes in one atomic batch.
pub(crate) fn mutate(st: &State, t: &str, p: &Params, body: &[u8]) -> Answer {
    let enc = p.encoding()?;
    let body: MutateRequest = parse_json(body)?;
    let mut batch = Batch::new();
    for m in body.mutations {
        match (m.put, m.delete) {
            (Some(put), None) => {
                batch.put(t, binary(enc, "key", &put.key)?, put.row.cells(enc)?);
            }
            (None, Some(del)) => {
                let key = binary(enc, "key", &del.key)?;
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
    key: String,
    #[serde(flatten)]
    row: RowRequest,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteRequest {
    key: String,
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
