//! The handlers, one file per resource. A handler runs on the work pool
//! with the request already parsed by the route (`routes.rs`) and answers
//! or fails with an error that `error.rs` turns into a status and code.

pub(super) mod changes;
pub(super) mod cluster;
mod confine;
pub(super) mod indexes;
pub(super) mod jobs;
pub(super) mod keys;
pub(crate) mod page;
pub(super) mod rows;
pub(super) mod scans;
pub(super) mod search;
pub(super) mod service;
pub(super) mod tables;

use serde_json::Value;
use warp::Reply;
use warp::http::StatusCode;
use warp::reply::Response;

use super::error::ApiError;

/// What a handler answers.
pub(super) type Answer = Result<Response, ApiError>;

/// `value` as JSON with `status`.
fn json_reply(value: &Value, status: StatusCode) -> Response {
    warp::reply::with_status(warp::reply::json(value), status).into_response()
}

/// `value` as JSON with 200.
fn ok(value: Value) -> Answer {
    Ok(json_reply(&value, StatusCode::OK))
}
