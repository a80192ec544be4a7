//! `/keys`: access keys, managed with the master key.

use serde_json::{Value, json};
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, json_reply, ok};
use crate::http::error::Refusal;
use crate::http::params::parse_json;
use crate::http::state::State;
use crate::keys::NewKey;

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
    let mut out = crate::keys::record_json(&record);
    out["key"] = json!(key);
    Ok(json_reply(&out, StatusCode::CREATED))
}

/// `GET /keys`.
pub(crate) fn list(st: &State) -> Answer {
    enabled(st)?;
    let keys: Vec<Value> = st.store().keys()?.iter().map(crate::keys::record_json).collect();
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
