//! `/keys`: access keys, managed with the master key.

use rowsearch_store::KeyRecord;
use serde_json::{Value, json};
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, json_reply, ok};
use crate::http::error::Refusal;
use crate::http::params::parse_json;
use crate::http::state::State;
use crate::keys::NewKey;

/// A key's record as `/keys` shows it (never the key).
pub(crate) fn record_json(record: &KeyRecord) -> Value {
    let expires_at = record
        .expires_at_ms
        .and_then(|ms| jiff::Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok())
        .map(|t| t.to_string());
    json!({
        "uid": record.uid,
        "actions": record.actions,
        "tables": record.tables,
        "partitions": record.partitions,
        "expires_at": expires_at,
        "description": record.description,
    })
}

fn enabled(st: &State) -> Result<(), Refusal> {
    match st.access.checker {
        Some(_) => Ok(()),
        None => Err(Refusal::KeysDisabled),
    }
}

/// `POST /keys`: 201 with the key (the only time it is shown).
pub(crate) fn create(st: &State, body: &[u8]) -> Answer {
    let new: NewKey = parse_json(body)?;
    enabled(st)?;
    let (record, key) = crate::keys::create(st.store(), &new)?;
    let mut out = record_json(&record);
    out["key"] = json!(key);
    Ok(json_reply(&out, StatusCode::CREATED))
}

/// `GET /keys`.
pub(crate) fn list(st: &State) -> Answer {
    enabled(st)?;
    let keys: Vec<Value> = st.store().keys()?.iter().map(record_json).collect();
    ok(json!({"keys": keys}))
}

/// `DELETE /keys/{uid}`.
pub(crate) fn delete(st: &State, uid: &str) -> Answer {
    enabled(st)?;
    if st.store().delete_key(uid)? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(Refusal::KeyNotFound(uid.to_owned()).into())
    }
}
