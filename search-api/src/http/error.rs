//! Every error of the HTTP API as `{"error": {"code", "message"}}` with its
//! status (API.md): the one place where errors meet HTTP.

use std::convert::Infallible;

use rowsearch_indexer::Error as IndexerError;
use rowsearch_store::ErrorKind;
use serde_json::json;
use warp::http::StatusCode;
use warp::reply::Response;
use warp::{Rejection, Reply};

use crate::Error;

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// snake_case code.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

impl ApiError {
    /// A new error answer.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }

    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
}

impl Reply for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        warp::reply::with_status(warp::reply::json(&body), self.status).into_response()
    }
}

/// Status and code of a store error.
pub fn store_status(e: &rowsearch_store::Error) -> (StatusCode, &'static str) {
    use StatusCode as S;
    match e.kind() {
        ErrorKind::UnknownTable { .. } => (S::NOT_FOUND, "table_not_found"),
        ErrorKind::UnknownIndex { .. } => (S::NOT_FOUND, "index_not_found"),
        ErrorKind::UnknownRegion { .. } => (S::NOT_FOUND, "region_not_found"),
        ErrorKind::UnknownFamily { .. } => (S::UNPROCESSABLE_ENTITY, "unknown_family"),
        ErrorKind::InvalidRowKey { .. }
        | ErrorKind::EmptyRowKey { .. }
        | ErrorKind::RowKeyTooLong { .. }
        | ErrorKind::QualifierTooLong { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_key"),
        ErrorKind::InvalidName { .. } => (S::BAD_REQUEST, "invalid_name"),
        ErrorKind::InvalidSchema { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_schema"),
        ErrorKind::SchemaConflict { .. } => (S::CONFLICT, "schema_conflict"),
        ErrorKind::InvalidFilter { .. } => (S::BAD_REQUEST, "invalid_filter"),
        ErrorKind::InvalidCursor { .. } => (S::BAD_REQUEST, "invalid_cursor"),
        ErrorKind::InvalidIndexQuery { .. } => (S::BAD_REQUEST, "invalid_index_query"),
        ErrorKind::InvalidKeywordQuery { .. } => (S::BAD_REQUEST, "invalid_keyword_query"),
        ErrorKind::NotSearchable { .. } => (S::UNPROCESSABLE_ENTITY, "not_searchable"),
        _ if e.is_user_error() => (S::BAD_REQUEST, "bad_request"),
        _ => (S::INTERNAL_SERVER_ERROR, "internal"),
    }
}

/// Status and code of an indexer error.
pub fn indexer_status(e: &IndexerError) -> (StatusCode, &'static str) {
    use StatusCode as S;
    match e {
        IndexerError::Store(e) => store_status(e),
        IndexerError::NoIndex { .. } => (S::SERVICE_UNAVAILABLE, "index_not_ready"),
        IndexerError::Query { .. } => (S::BAD_REQUEST, "invalid_query"),
        IndexerError::Busy { .. } => (S::CONFLICT, "reindex_running"),
        IndexerError::Schema { .. } => (S::UNPROCESSABLE_ENTITY, "not_searchable"),
        IndexerError::Input { .. } | IndexerError::TableMismatch { .. } => (S::BAD_REQUEST, "bad_request"),
        _ => (S::INTERNAL_SERVER_ERROR, "internal"),
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let (status, code) = match &e {
            Error::Store(e) => store_status(e),
            Error::Indexer(e) => indexer_status(e),
            Error::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            Error::StaleCursor { .. } => (StatusCode::CONFLICT, "stale_cursor"),
            Error::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<rowsearch_store::Error> for ApiError {
    fn from(e: rowsearch_store::Error) -> ApiError {
        Error::Store(e).into()
    }
}

impl From<IndexerError> for ApiError {
    fn from(e: IndexerError) -> ApiError {
        Error::Indexer(e).into()
    }
}

/// Turns warp's own rejections (no route, wrong method, body too large...)
/// into the JSON error shape. Handlers never reject: they answer.
pub async fn recover(rejection: Rejection) -> Result<Response, Infallible> {
    use StatusCode as S;
    let error = if rejection.is_not_found() {
        ApiError::new(S::NOT_FOUND, "not_found", "no such route")
    } else if let Some(e) = rejection.find::<warp::reject::PayloadTooLarge>() {
        ApiError::new(S::PAYLOAD_TOO_LARGE, "body_too_large", e.to_string())
    } else if let Some(e) = rejection.find::<warp::reject::UnsupportedMediaType>() {
        ApiError::new(S::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", e.to_string())
    } else if let Some(e) = rejection.find::<warp::reject::InvalidQuery>() {
        ApiError::new(S::BAD_REQUEST, "invalid_query_string", e.to_string())
    } else if let Some(e) = rejection.find::<warp::reject::LengthRequired>() {
        ApiError::new(S::LENGTH_REQUIRED, "length_required", e.to_string())
    } else if let Some(e) = rejection.find::<warp::reject::MethodNotAllowed>() {
        ApiError::new(S::METHOD_NOT_ALLOWED, "method_not_allowed", e.to_string())
    } else if let Some(e) = rejection.find::<warp::reject::InvalidHeader>() {
        ApiError::new(S::BAD_REQUEST, "invalid_header", e.to_string())
    } else {
        ApiError::new(S::BAD_REQUEST, "bad_request", format!("{rejection:?}"))
    };
    Ok(error.into_response())
}
