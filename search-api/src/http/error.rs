//! Every error of the HTTP API as `{"error": {"code", "message"}}` with its
//! status (API.md): the one place where errors meet HTTP. Handlers raise
//! library errors or a [`Refusal`]; this module alone chooses the status
//! and the code of each.

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
    /// For a query that does not parse: the byte where it goes wrong.
    pub position: Option<usize>,
}

impl ApiError {
    /// 404 `not_in_a_cluster`: a route between searchers of a cluster on
    /// a server that is not one.
    pub(crate) fn not_in_a_cluster() -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_in_a_cluster",
            "this server is not a searcher of a cluster (serve --cluster)",
        )
    }

    /// 501 `cluster_unsupported`: what a cluster of searchers does not
    /// serve (yet), and why.
    pub(crate) fn cluster_unsupported(why: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_IMPLEMENTED, "cluster_unsupported", why)
    }

    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), position: None }
    }

    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        Refusal::BadRequest(message.into()).into()
    }

    /// The error with the data directory's path written as `<data>`: a
    /// client has no business knowing where the server keeps its files.
    pub fn without_path(mut self, data: &std::path::Path) -> ApiError {
        self.message = hide_data_path(&self.message, data);
        self
    }
}

/// `text` with the data directory's path (as given, absolute and
/// canonical) written as `<data>`: what every error message, health reason
/// and job error shows instead. Only where the path stands as a path: not
/// inside a word or a longer path (`--data data` leaves "metadata" alone).
pub(crate) fn hide_data_path(text: &str, data: &std::path::Path) -> String {
    hide_path(text, data, "<data>")
}

/// `text` with `dir` (as given, absolute and canonical) written as `name`
/// where it stands as a path ([`hide_data_path`]'s rule).
pub(crate) fn hide_path(text: &str, dir: &std::path::Path, name: &str) -> String {
    let mut out = text.to_owned();
    let paths = [Some(dir.to_path_buf()), std::path::absolute(dir).ok(), dir.canonicalize().ok()];
    for path in paths.into_iter().flatten() {
        let path = path.to_string_lossy();
        let path = path.trim_end_matches('/');
        // The root would turn every slash into the name.
        if !path.is_empty() && out.contains(path) {
            out = replace_path(&out, path, name);
        }
    }
    out
}

/// `text` with each occurrence of `path` that stands as a path (not
/// preceded by a character of a name or path, and followed by the end, a
/// `/`, or a character no name holds) written as `<data>`.
fn replace_path(text: &str, path: &str, name: &str) -> String {
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(path) {
        let before = rest[..at].chars().last().or_else(|| out.chars().last());
        let after = &rest[at + path.len()..];
        let starts = before.is_none_or(|c| !(name_char(c) || c == '/'));
        let ends = match after.chars().next() {
            None => true,
            Some('/') => true,
            // A full stop ends a sentence; `data.mdb` is a name.
            Some('.') => after[1..].chars().next().is_none_or(|c| !name_char(c)),
            Some(c) => !name_char(c),
        };
        out.push_str(&rest[..at]);
        out.push_str(if starts && ends { name } else { path });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// What the HTTP layer itself refuses or reports (the libraries' errors
/// come as [`Error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A parameter or body that does not make sense.
    BadRequest(String),
    /// A query string that does not decode.
    InvalidQueryString(String),
    /// Query parameters (or JSON body fields) the endpoint does not take.
    UnknownParameter {
        /// The names not taken, in the order given.
        unknown: Vec<String>,
        /// The names the endpoint takes.
        known: Vec<&'static str>,
    },
    /// A field of a JSON body that the endpoint does not take.
    UnknownField {
        /// The field.
        field: String,
        /// What serde says the body takes (`expected one of ...`, and where).
        detail: String,
    },
    /// An empty or unusable search query.
    InvalidQuery(String),
    /// A body whose content type is not JSON.
    UnsupportedMediaType(String),
    /// A row read that found no row.
    RowNotFound,
    /// A thread id no thread of the table has (or one of a mailbox the key
    /// may not see).
    ThreadNotFound(String),
    /// An unknown job id.
    JobNotFound(String),
    /// A reindex of the table is already running as this job.
    ReindexRunning {
        /// The running job.
        job: String,
        /// The table.
        table: String,
    },
    /// A build or rebuild of the index is already running as this job.
    IndexJobRunning {
        /// The running job.
        job: String,
        /// The table.
        table: String,
        /// The index.
        index: String,
    },
    /// A backup is already running as this job.
    BackupRunning(String),
    /// `POST /backups` on a server started without `--backup-dir`.
    NoBackupDir,
    /// The server runs without a master key: there are no keys to manage.
    KeysDisabled,
    /// An unknown key uid.
    KeyNotFound(String),
    /// No access key was given (the server has a master key).
    MissingKey,
    /// The access key is not valid (unknown, deleted, expired, malformed).
    InvalidKey,
    /// The key may not do this.
    Forbidden(String),
    /// A browser request from another origin.
    ForeignOrigin(String),
    /// A request naming a host the server does not answer for (DNS
    /// rebinding; `gate.rs`).
    ForeignHost(String),
    /// The path exists, not with this method.
    MethodNotAllowed {
        /// The method asked.
        method: String,
        /// The methods the path takes.
        allow: Vec<&'static str>,
    },
    /// The request body did not arrive within the time limit (in ms).
    BodyTimeout(u128),
    /// The server holds its budget of request bodies in flight (bytes).
    BodiesBusy(u64),
    /// Answers waiting to be sent hold the server's budget (bytes).
    AnswersBusy(u64),
    /// The request body is larger than the limit (in bytes).
    BodyTooLarge(u64),
    /// The request body is larger than the whole budget of bodies in
    /// flight (bytes): it could never fit, so it is not kept waiting.
    BodyPastBudget(u64),
    /// The request outlived the time limit (in ms).
    Timeout(u128),
    /// A worker failed while doing the request.
    Internal(String),
    /// A route the server does not serve over HBase (`serve --hbase`).
    NotOverHbase(&'static str, &'static str),
    /// A `mutate` of this many rows asking to be all or nothing, over
    /// HBase, whose atomicity is per row.
    NotAtomicOverHbase(usize),
}

impl Refusal {
    /// The status and code of this refusal.
    pub fn status(&self) -> (StatusCode, &'static str) {
        use StatusCode as S;
        match self {
            Refusal::BadRequest(_) => (S::BAD_REQUEST, "bad_request"),
            Refusal::InvalidQueryString(_) => (S::BAD_REQUEST, "invalid_query_string"),
            Refusal::UnknownParameter { .. } | Refusal::UnknownField { .. } => {
                (S::BAD_REQUEST, "unknown_parameter")
            }
            Refusal::InvalidQuery(_) => (S::BAD_REQUEST, "invalid_query"),
            Refusal::UnsupportedMediaType(_) => (S::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            Refusal::RowNotFound => (S::NOT_FOUND, "row_not_found"),
            Refusal::ThreadNotFound(_) => (S::NOT_FOUND, "thread_not_found"),
            Refusal::JobNotFound(_) => (S::NOT_FOUND, "job_not_found"),
            Refusal::ReindexRunning { .. } => (S::CONFLICT, "reindex_running"),
            Refusal::IndexJobRunning { .. } => (S::CONFLICT, "index_building"),
            Refusal::BackupRunning(_) => (S::CONFLICT, "backup_running"),
            Refusal::NoBackupDir => (S::CONFLICT, "no_backup_dir"),
            Refusal::KeysDisabled => (S::CONFLICT, "keys_disabled"),
            Refusal::KeyNotFound(_) => (S::NOT_FOUND, "key_not_found"),
            Refusal::MissingKey => (S::UNAUTHORIZED, "missing_key"),
            Refusal::InvalidKey => (S::FORBIDDEN, "invalid_key"),
            Refusal::Forbidden(_) => (S::FORBIDDEN, "forbidden"),
            Refusal::ForeignOrigin(_) => (S::FORBIDDEN, "forbidden_origin"),
            Refusal::ForeignHost(_) => (S::FORBIDDEN, "forbidden_host"),
            Refusal::MethodNotAllowed { .. } => (S::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Refusal::BodyTimeout(_) => (S::REQUEST_TIMEOUT, "body_timeout"),
            Refusal::BodiesBusy(_) | Refusal::AnswersBusy(_) => (S::SERVICE_UNAVAILABLE, "busy"),
            Refusal::BodyTooLarge(_) | Refusal::BodyPastBudget(_) => (S::PAYLOAD_TOO_LARGE, "body_too_large"),
            Refusal::Timeout(_) => (S::SERVICE_UNAVAILABLE, "timeout"),
            Refusal::Internal(_) => (S::INTERNAL_SERVER_ERROR, "internal"),
            Refusal::NotOverHbase(..) => (S::NOT_IMPLEMENTED, "not_over_hbase"),
            Refusal::NotAtomicOverHbase(_) => (S::UNPROCESSABLE_ENTITY, "not_atomic_over_hbase"),
        }
    }

    fn message(self) -> String {
        match self {
            Refusal::BadRequest(m)
            | Refusal::InvalidQueryString(m)
            | Refusal::InvalidQuery(m)
            | Refusal::UnsupportedMediaType(m)
            | Refusal::Forbidden(m)
            | Refusal::Internal(m) => m,
            Refusal::KeysDisabled => {
                "this server runs without a master key, so keys do nothing: start it with --master-key"
                    .to_owned()
            }
            Refusal::KeyNotFound(uid) => format!("no key {uid:?}"),
            Refusal::MissingKey => {
                "this server needs an access key: send Authorization: Bearer <key>".to_owned()
            }
            Refusal::InvalidKey => "the access key is not valid (unknown, deleted or expired)".to_owned(),
            Refusal::ForeignHost(host) => format!(
                "requests for host {host:?} are refused: the server answers for loopback names and \
                 addresses, the address it listens on and those --allow-host names"
            ),
            Refusal::ForeignOrigin(origin) => format!(
                "requests from origin {origin:?} are refused; the server takes its own origin and those \
                 --allow-origin names"
            ),
            Refusal::UnknownParameter { unknown, known } => {
                let takes = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                format!("unknown parameter {}; this endpoint takes: {takes}", unknown.join(", "))
            }
            Refusal::UnknownField { field, detail } => {
                format!("unknown field {field} in the request body; {detail}")
            }
            Refusal::RowNotFound => "no such row".to_owned(),
            Refusal::ThreadNotFound(id) => format!("no thread {id:?} in this table"),
            Refusal::JobNotFound(id) => format!("no job {id:?}"),
            Refusal::ReindexRunning { job, table } => {
                format!("job {job} is already reindexing table {table:?}")
            }
            Refusal::IndexJobRunning { job, table, index } => {
                format!("job {job} is already building index {index:?} of table {table:?}")
            }
            Refusal::BackupRunning(job) => format!("job {job} is already taking a backup"),
            Refusal::NoBackupDir => {
                "this server takes no backups: start it with --backup-dir DIR (or run `rowsearch backup DEST`)"
                    .to_owned()
            }
            Refusal::MethodNotAllowed { method, allow } => {
                format!("{method} is not allowed on this path; it takes {}", allow.join(", "))
            }
            Refusal::BodyTimeout(ms) => format!("the request body did not arrive within {ms} ms"),
            Refusal::AnswersBusy(bytes) => format!(
                "answers waiting to be sent to their clients hold the server's budget ({bytes} bytes, \
                 serve --max-answers-bytes): retry"
            ),
            Refusal::BodiesBusy(bytes) => format!(
                "the server holds its budget of request bodies in flight ({bytes} bytes, serve \
                 --max-bodies-bytes) and this one did not fit in time: retry"
            ),
            Refusal::BodyTooLarge(max) => format!("the request body is larger than {max} bytes"),
            Refusal::BodyPastBudget(bytes) => format!(
                "the request body is larger than the server's whole budget of request bodies in flight \
                 ({bytes} bytes, serve --max-bodies-bytes): it can never fit; send it in smaller requests"
            ),
            Refusal::Timeout(ms) => format!("request took longer than {ms} ms"),
            Refusal::NotAtomicOverHbase(rows) => format!(
                "this batch writes {rows} rows and asks to be all or nothing, but HBase is atomic per row: \
                 send atomic=false to have each row applied on its own (the answer says which were), or one \
                 row per request"
            ),
            Refusal::NotOverHbase(route, why) => format!(
                "{route} is not served over HBase (serve --hbase): {}",
                why
            ),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> ApiError {
        let (status, code) = refusal.status();
        ApiError::new(status, code, refusal.message())
    }
}

impl Reply for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some(position) = self.position {
            body["error"]["position"] = json!(position);
        }
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
        ErrorKind::KeyTooLarge { .. } => (S::UNPROCESSABLE_ENTITY, "value_too_large"),
        ErrorKind::NotACounter { .. } => (S::UNPROCESSABLE_ENTITY, "not_a_counter"),
        ErrorKind::TableDisabled { .. } => (S::CONFLICT, "table_disabled"),
        ErrorKind::InvalidName { .. } => (S::BAD_REQUEST, "invalid_name"),
        ErrorKind::InvalidSchema { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_schema"),
        ErrorKind::SchemaConflict { .. } => (S::CONFLICT, "schema_conflict"),
        ErrorKind::IndexConflict { .. } => (S::CONFLICT, "index_conflict"),
        ErrorKind::IndexBuilding { .. } => (S::CONFLICT, "index_building"),
        ErrorKind::InvalidFilter { .. } | ErrorKind::FilterBytes { .. } => (S::BAD_REQUEST, "invalid_filter"),
        ErrorKind::InvalidCursor { .. } => (S::BAD_REQUEST, "invalid_cursor"),
        ErrorKind::UnknownConsumer { .. } => (S::NOT_FOUND, "consumer_not_found"),
        ErrorKind::FellBehind { .. } => (S::GONE, "fell_behind"),
        ErrorKind::PastFeedEnd { .. } => (S::BAD_REQUEST, "past_feed_end"),
        ErrorKind::CursorMismatch { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_cursor"),
        ErrorKind::InvalidIndexQuery { .. } => (S::BAD_REQUEST, "invalid_index_query"),
        ErrorKind::InvalidKeywordQuery { .. } => (S::BAD_REQUEST, "invalid_keyword_query"),
        ErrorKind::NotSearchable { .. } => (S::UNPROCESSABLE_ENTITY, "not_searchable"),
        ErrorKind::NotThreaded { .. } => (S::UNPROCESSABLE_ENTITY, "not_threaded"),
        ErrorKind::DiskFull { .. } => (S::INSUFFICIENT_STORAGE, "disk_full"),
        ErrorKind::TooManyDatabases { .. } => (S::UNPROCESSABLE_ENTITY, "too_many_families"),
        ErrorKind::Poisoned => (S::SERVICE_UNAVAILABLE, "store_unavailable"),
        ErrorKind::InUse { .. } => (S::SERVICE_UNAVAILABLE, "store_in_use"),
        ErrorKind::Cancelled { .. } => (S::SERVICE_UNAVAILABLE, "timeout"),
        ErrorKind::Callback { source } if source.downcast_ref::<crate::hbase::HbaseError>().is_some() => {
            source
                .downcast_ref::<crate::hbase::HbaseError>()
                .map_or((S::INTERNAL_SERVER_ERROR, "internal"), hbase_status)
        }
        _ if e.is_user_error() => (S::BAD_REQUEST, "bad_request"),
        _ => (S::INTERNAL_SERVER_ERROR, "internal"),
    }
}

/// Status and code of a failure of the HBase the tables live in: 503
/// while it cannot be reached (the request may be retried), 502 when it
/// refused.
pub fn hbase_status(e: &crate::hbase::HbaseError) -> (StatusCode, &'static str) {
    use crate::hbase::HbaseError as H;
    use crate::thrift::ClientError as C;
    use StatusCode as S;
    match e {
        H::UnknownTable { .. } => (S::NOT_FOUND, "table_not_found"),
        H::Schema { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_schema"),
        H::UnknownFamily { .. } => (S::UNPROCESSABLE_ENTITY, "unknown_family"),
        H::SchemaConflict { .. } => (S::CONFLICT, "schema_conflict"),
        H::Client(C::Unavailable { .. }) => (S::SERVICE_UNAVAILABLE, "hbase_unavailable"),
        H::Client(_) => (S::BAD_GATEWAY, "hbase_refused"),
        H::Corrupted { .. } => (S::INTERNAL_SERVER_ERROR, "internal"),
        H::Store(e) => store_status(e),
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
        IndexerError::Corrupted { .. } => (S::SERVICE_UNAVAILABLE, "index_unavailable"),
        IndexerError::Schema { .. } => (S::UNPROCESSABLE_ENTITY, "not_searchable"),
        IndexerError::Input { .. } | IndexerError::TableMismatch { .. } | IndexerError::FutureSeq { .. } => {
            (S::BAD_REQUEST, "bad_request")
        }
        IndexerError::StaleCursor { .. } => (S::CONFLICT, "stale_cursor"),
        IndexerError::NotFresh { .. } => (S::SERVICE_UNAVAILABLE, "timeout"),
        IndexerError::Backup { .. } => (S::CONFLICT, "backup_refused"),
        _ => (S::INTERNAL_SERVER_ERROR, "internal"),
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let (status, code) = match &e {
            Error::Store(e) => store_status(e),
            Error::Indexer(e) => indexer_status(e),
            Error::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            Error::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            Error::ShardUnavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable"),
        };
        let position = match &e {
            Error::Indexer(IndexerError::Query { position, .. }) => *position,
            _ => None,
        };
        ApiError { position, ..ApiError::new(status, code, e.to_string()) }
    }
}

impl From<crate::hbase::HbaseError> for ApiError {
    fn from(e: crate::hbase::HbaseError) -> ApiError {
        let (status, code) = hbase_status(&e);
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

#[cfg(test)]
mod tests {
    use rowsearch_store::ErrorKind;

    use super::*;

    #[test]
    fn the_data_path_is_hidden_only_where_it_stands_as_a_path() {
        let data = std::path::Path::new("data");
        let abs = std::path::absolute(data).unwrap();
        let abs = abs.to_string_lossy();
        for (text, want) in [
            ("unknown family \"metadata\"", "unknown family \"metadata\"".to_owned()),
            ("data/index/CURRENT is damaged", "<data>/index/CURRENT is damaged".to_owned()),
            ("cannot open data: no such file", "cannot open <data>: no such file".to_owned()),
            ("in 'data'.", "in '<data>'.".to_owned()),
            ("data.mdb and datas", "data.mdb and datas".to_owned()),
            ("/elsewhere/data/x", "/elsewhere/data/x".to_owned()),
            (&format!("open {abs}/data.mdb: denied"), "open <data>/data.mdb: denied".to_owned()),
            (&format!("{abs}2/x"), format!("{abs}2/x")),
        ] {
            assert_eq!(hide_data_path(text, data), want, "{text}");
        }
        // `st` and "timestamp".
        assert_eq!(
            hide_data_path("bad timestamp in st/x", std::path::Path::new("st")),
            "bad timestamp in <data>/x"
        );
    }

    /// The status and code of every error kind of every layer, walked from
    /// the layers' own lists of their kinds (`examples`, which do not
    /// compile without a new kind): a kind added without a decision here
    /// fails this test.
    #[test]
    fn every_error_kind_has_its_status_and_code() {
        let store: Vec<(u16, &str)> = vec![
            (500, "internal"),              // NotAStore
            (500, "internal"),              // UnsupportedFormat
            (500, "internal"),              // AlreadyOpen
            (503, "store_in_use"),          // InUse
            (500, "internal"),              // Io
            (500, "internal"),              // Lmdb
            (404, "table_not_found"),       // UnknownTable
            (422, "unknown_family"),        // UnknownFamily
            (400, "invalid_name"),          // InvalidName
            (422, "invalid_schema"),        // InvalidSchema
            (422, "invalid_key"),           // InvalidRowKey
            (404, "index_not_found"),       // UnknownIndex
            (400, "invalid_index_query"),   // InvalidIndexQuery
            (400, "invalid_keyword_query"), // InvalidKeywordQuery
            (422, "not_searchable"),        // NotSearchable
            (422, "not_threaded"),          // NotThreaded
            (500, "internal"),              // NoAnalyzer
            (400, "invalid_filter"),        // InvalidFilter
            (400, "invalid_filter"),        // FilterBytes
            (404, "region_not_found"),      // UnknownRegion
            (409, "schema_conflict"),       // SchemaConflict
            (409, "index_conflict"),        // IndexConflict
            (409, "index_building"),        // IndexBuilding
            (422, "invalid_key"),           // EmptyRowKey
            (422, "invalid_key"),           // RowKeyTooLong
            (422, "invalid_key"),           // QualifierTooLong
            (422, "value_too_large"),       // KeyTooLarge
            (400, "invalid_cursor"),        // InvalidCursor
            (422, "invalid_cursor"),        // CursorMismatch
            (503, "timeout"),               // Cancelled
            (500, "internal"),              // Corrupted
            (500, "internal"),              // MapFull
            (422, "too_many_families"),     // TooManyDatabases
            (422, "not_a_counter"),         // NotACounter
            (409, "table_disabled"),        // TableDisabled
            (404, "consumer_not_found"),    // UnknownConsumer
            (410, "fell_behind"),           // FellBehind
            (400, "past_feed_end"),         // PastFeedEnd
            (503, "store_unavailable"),     // Poisoned
            (507, "disk_full"),             // DiskFull
            (500, "internal"),              // Callback
        ];
        let examples = ErrorKind::examples();
        assert_eq!(examples.len(), store.len(), "a store error kind has no status decided here");
        for (e, want) in examples.into_iter().zip(store) {
            let user = e.is_user_error();
            let got = ApiError::from(e);
            assert_eq!((got.status.as_u16(), got.code), want, "{}", got.message);
            // A user error is a 4xx and says so; anything else is a 5xx.
            assert_eq!(got.status.is_client_error(), user, "{}", got.message);
        }

        let indexer: Vec<(u16, &str)> = vec![
            (503, "store_unavailable"), // Store (a poisoned store: the store's own status)
            (400, "bad_request"),       // Input
            (400, "bad_request"),       // TableMismatch
            (422, "not_searchable"),    // Schema
            (503, "index_not_ready"),   // NoIndex
            (409, "reindex_running"),   // Busy
            (400, "invalid_query"),     // Query
            (500, "internal"),          // Tantivy
            (500, "internal"),          // Check
            (503, "index_unavailable"), // Corrupted
            (500, "internal"),          // Io
            (409, "stale_cursor"),      // StaleCursor
            (503, "timeout"),           // NotFresh
            (400, "bad_request"),       // FutureSeq
            (500, "internal"),          // FailPoint
            (409, "backup_refused"),    // Backup
            (500, "internal"),          // Report
        ];
        let examples = IndexerError::examples();
        assert_eq!(examples.len(), indexer.len(), "an indexer error kind has no status decided here");
        for (e, want) in examples.into_iter().zip(indexer) {
            let got = ApiError::from(e);
            assert_eq!((got.status.as_u16(), got.code), want, "{}", got.message);
        }

        let facade = [
            (Error::BadRequest("x".into()), (400, "bad_request")),
            (Error::Forbidden("x".into()), (403, "forbidden")),
            (
                Error::ShardUnavailable { table: "mail".into(), shard: 3, reason: "x".into() },
                (503, "shard_unavailable"),
            ),
        ];
        for (e, want) in facade {
            // Store and Indexer wrap the kinds walked above.
            match &e {
                Error::Store(_) | Error::Indexer(_) => unreachable!(),
                Error::BadRequest(_) | Error::Forbidden(_) | Error::ShardUnavailable { .. } => {}
            }
            let got = ApiError::from(e);
            assert_eq!((got.status.as_u16(), got.code), want);
        }

        let refusals = [
            (Refusal::BadRequest("x".into()), (400, "bad_request")),
            (Refusal::InvalidQueryString("x".into()), (400, "invalid_query_string")),
            (
                Refusal::UnknownParameter { unknown: vec!["limt".into()], known: vec!["limit"] },
                (400, "unknown_parameter"),
            ),
            (Refusal::UnknownField { field: "x".into(), detail: "y".into() }, (400, "unknown_parameter")),
            (Refusal::InvalidQuery("x".into()), (400, "invalid_query")),
            (Refusal::UnsupportedMediaType("x".into()), (415, "unsupported_media_type")),
            (Refusal::RowNotFound, (404, "row_not_found")),
            (Refusal::ThreadNotFound("x".into()), (404, "thread_not_found")),
            (Refusal::JobNotFound("j1".into()), (404, "job_not_found")),
            (Refusal::ReindexRunning { job: "j1".into(), table: "t".into() }, (409, "reindex_running")),
            (
                Refusal::IndexJobRunning { job: "j1".into(), table: "t".into(), index: "i".into() },
                (409, "index_building"),
            ),
            (Refusal::BackupRunning("j1".into()), (409, "backup_running")),
            (Refusal::NoBackupDir, (409, "no_backup_dir")),
            (
                Refusal::MethodNotAllowed { method: "PATCH".into(), allow: vec!["GET"] },
                (405, "method_not_allowed"),
            ),
            (Refusal::BodyTimeout(30_000), (408, "body_timeout")),
            (Refusal::BodyTooLarge(1), (413, "body_too_large")),
            (Refusal::BodyPastBudget(1), (413, "body_too_large")),
            (Refusal::Timeout(30_000), (503, "timeout")),
            (Refusal::Internal("x".into()), (500, "internal")),
            (Refusal::ForeignHost("x".into()), (403, "forbidden_host")),
            (Refusal::BodiesBusy(1), (503, "busy")),
            (Refusal::AnswersBusy(1), (503, "busy")),
            (Refusal::NotOverHbase("changes", "why"), (501, "not_over_hbase")),
            (Refusal::NotAtomicOverHbase(2), (422, "not_atomic_over_hbase")),
        ];
        for (r, want) in refusals {
            match &r {
                Refusal::BadRequest(_)
                | Refusal::InvalidQueryString(_)
                | Refusal::UnknownParameter { .. }
                | Refusal::UnknownField { .. }
                | Refusal::InvalidQuery(_)
                | Refusal::UnsupportedMediaType(_)
                | Refusal::RowNotFound
                | Refusal::ThreadNotFound(_)
                | Refusal::JobNotFound(_)
                | Refusal::ReindexRunning { .. }
                | Refusal::IndexJobRunning { .. }
                | Refusal::BackupRunning(_)
                | Refusal::NoBackupDir
                | Refusal::KeysDisabled
                | Refusal::KeyNotFound(_)
                | Refusal::MissingKey
                | Refusal::InvalidKey
                | Refusal::Forbidden(_)
                | Refusal::ForeignOrigin(_)
                | Refusal::NotOverHbase(..)
                | Refusal::NotAtomicOverHbase(_)
                | Refusal::ForeignHost(_)
                | Refusal::MethodNotAllowed { .. }
                | Refusal::BodyTimeout(_)
                | Refusal::BodiesBusy(_)
                | Refusal::AnswersBusy(_)
                | Refusal::BodyTooLarge(_)
                | Refusal::BodyPastBudget(_)
                | Refusal::Timeout(_)
                | Refusal::Internal(_) => {}
            }
            let got = ApiError::from(r);
            assert_eq!((got.status.as_u16(), got.code), want, "{}", got.message);
            assert!(!got.message.is_empty());
        }
    }

    /// "This table has no search section" is one answer wherever it comes
    /// from: the store (keyword lookups), the indexer (a reindex) or the
    /// searcher.
    #[test]
    fn not_searchable_is_one_answer() {
        let from_store =
            ApiError::from(rowsearch_store::Error::from(ErrorKind::NotSearchable { table: "t".into() }));
        let from_indexer = ApiError::from(IndexerError::Schema { table: "t".into(), reason: "x".into() });
        assert_eq!((from_store.status, from_store.code), (from_indexer.status, from_indexer.code));
        assert_eq!((from_store.status.as_u16(), from_store.code), (422, "not_searchable"));
    }
}
