//! Every route of API.md, in its order: filters parse the request, a
//! handler does the work on the work pool and answers, errors become
//! the JSON error shape (error.rs).

use std::sync::Arc;
use std::time::Instant;

use rowsearch_indexer::{ReindexMode, SortBy};
use rowsearch_store::{
    ALL_VERSIONS, Batch, Column, Delete, Filter, IndexQuery, IndexTerm, PutCell, ReadOptions, Scan,
    ScanCursor, SetOp, TableSchema,
};
use serde_json::{Value, json};
use warp::http::StatusCode;
use warp::reply::Response;
use warp::{Filter as _, Reply};

use super::State;
use super::error::{ApiError, recover};
use crate::SearchRequest;
use crate::json::{Encoding, key_json_in, row_json_in};

type Answer = Result<Response, ApiError>;

/// The query string as (name, value) pairs, decoded.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    fn parse(raw: &str) -> Result<Params, ApiError> {
        serde_urlencoded::from_str::<Vec<(String, String)>>(raw)
            .map(Params)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query_string", e.to_string()))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<T>().map_err(|_| ApiError::bad_request(format!("{name}: not a number: {v:?}")))
            })
            .transpose()
    }

    fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") | Some("") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!("{name}: expected true or false, got {v:?}"))),
        }
    }

    fn bytes(&self, name: &str) -> Result<Option<Vec<u8>>, ApiError> {
        let enc = self.encoding()?;
        self.get(name).map(|v| binary(enc, name, v)).transpose()
    }

    /// `encoding=binary|base64|hex`: how every byte string of the request
    /// and the response is written.
    fn encoding(&self) -> Result<Encoding, ApiError> {
        Encoding::parse(self.get("encoding")).map_err(ApiError::bad_request)
    }
}

fn binary(enc: Encoding, what: &str, text: &str) -> Result<Vec<u8>, ApiError> {
    enc.decode(text).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))
}

/// A key from a URL path segment: percent-encoded bytes.
fn path_key(segment: &str) -> Result<Vec<u8>, ApiError> {
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            if hex.is_none() {
                return Err(ApiError::bad_request(format!("row key {segment:?}: invalid percent-encoding")));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(percent_encoding::percent_decode_str(segment).collect())
}

fn columns_of(enc: Encoding, list: &[&str]) -> Result<Vec<Column>, ApiError> {
    let mut out = Vec::new();
    for item in list {
        for c in item.split(',').filter(|c| !c.is_empty()) {
            out.push(Column::parse(&binary(enc, "columns", c)?));
        }
    }
    Ok(out)
}

fn read_options(p: &Params) -> Result<ReadOptions, ApiError> {
    let versions = match p.get("versions") {
        None => 1,
        Some("all") => ALL_VERSIONS,
        Some(v) => v.parse().ok().filter(|&n: &u32| n > 0).ok_or_else(|| {
            ApiError::bad_request(format!("versions: expected a positive number or all, got {v:?}"))
        })?,
    };
    Ok(ReadOptions {
        columns: columns_of(p.encoding()?, &p.all("columns"))?,
        versions,
        min_ts: p.number("min_ts")?.unwrap_or(0),
        max_ts: p.number("max_ts")?,
    })
}

fn json_reply(value: &Value, status: StatusCode) -> Response {
    warp::reply::with_status(warp::reply::json(value), status).into_response()
}

fn ok(value: Value) -> Answer {
    Ok(json_reply(&value, StatusCode::OK))
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("request body: {e}")))
}

/// Runs `work` on the work pool (in arrival order) within the request time
/// limit (waiting included), and counts the request under `route`.
async fn run<F>(state: Arc<State>, route: &'static str, work: F) -> Result<Response, std::convert::Infallible>
where
    F: FnOnce(&State) -> Answer + Send + 'static,
{
    let started = Instant::now();
    let limit = state.limits.request_timeout;
    let worker = Arc::clone(&state);
    let task = state.work.run(move || work(&worker));
    let response = match tokio::time::timeout(limit, task).await {
        Ok(Ok(Ok(response))) => response,
        Ok(Ok(Err(error))) => error.into_response(),
        Ok(Err(join)) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", join.to_string()).into_response()
        }
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!("request took longer than {} ms", limit.as_millis()),
        )
        .into_response(),
    };
    state.metrics.observe(route, response.status().as_u16(), started.elapsed().as_secs_f64());
    Ok(response)
}

fn with_state(
    state: Arc<State>,
) -> impl warp::Filter<Extract = (Arc<State>,), Error = std::convert::Infallible> + Clone {
    warp::any().map(move || Arc::clone(&state))
}

/// The query string (empty when absent), parsed.
fn params() -> impl warp::Filter<Extract = (Params,), Error = warp::Rejection> + Clone {
    warp::query::raw().or(warp::any().map(String::new)).unify().and_then(|raw: String| async move {
        Params::parse(&raw).map_err(|e| warp::reject::custom(Rejected(e)))
    })
}

/// A request body (JSON if a content type is given), within the size limit.
fn body(max: u64) -> impl warp::Filter<Extract = (bytes::Bytes,), Error = warp::Rejection> + Clone {
    warp::header::optional::<String>("content-type")
        .and_then(|ct: Option<String>| async move {
            match ct {
                Some(ct) if !ct.to_ascii_lowercase().contains("json") => {
                    Err(warp::reject::custom(Rejected(ApiError::new(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        "unsupported_media_type",
                        format!("content type {ct:?}: send application/json"),
                    ))))
                }
                _ => Ok(()),
            }
        })
        .untuple_one()
        .and(warp::body::content_length_limit(max))
        .and(warp::body::bytes())
}

/// An [`ApiError`] raised by a filter.
#[derive(Debug)]
pub struct Rejected(pub ApiError);
impl warp::reject::Reject for Rejected {}

/// All routes, with the final recovery.
pub fn routes(
    state: Arc<State>,
) -> impl warp::Filter<Extract = (Response,), Error = std::convert::Infallible> + Clone {
    let max_body = state.limits.max_body_bytes;
    let s = move || with_state(Arc::clone(&state));
    let table = || warp::path("tables").and(warp::path::param::<String>());

    // Service.
    let health = warp::path!("health").and(warp::get()).and(s()).and_then(|st: Arc<State>| {
        run(st, "health", |_| ok(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})))
    });
    let metrics = warp::path!("metrics").and(warp::get()).and(s()).and_then(|st: Arc<State>| {
        run(st, "metrics", |st| {
            let text = st.metrics.render(&st.table_figures());
            Ok(warp::reply::with_header(text, "content-type", "text/plain; version=0.0.4").into_response())
        })
    });
    let openapi = warp::path!("openapi.json").and(warp::get()).and(s()).and_then(|st: Arc<State>| {
        run(st, "openapi", |_| {
            Ok(warp::reply::with_header(super::OPENAPI, "content-type", "application/json").into_response())
        })
    });

    // Tables.
    let list_tables = warp::path!("tables").and(warp::get()).and(s()).and_then(|st: Arc<State>| {
        run(st, "tables_list", |st| {
            let tables: Vec<Value> =
                st.store().tables().into_iter().map(|name| json!({"name": name})).collect();
            ok(json!({"tables": tables}))
        })
    });
    let put_table = table().and(warp::path::end()).and(warp::put()).and(body(max_body)).and(s()).and_then(
        |t: String, b: bytes::Bytes, st: Arc<State>| {
            run(st, "tables_put", move |st| {
                let schema: TableSchema = parse_json(&b)?;
                let created = st.store().create_table(&t, &schema)?;
                let status = if created { StatusCode::CREATED } else { StatusCode::OK };
                Ok(json_reply(&json!({"table": t, "created": created}), status))
            })
        },
    );
    let get_table =
        table().and(warp::path::end()).and(warp::get()).and(s()).and_then(|t: String, st: Arc<State>| {
            run(st, "tables_get", move |st| {
                let schema = st.store().schema(&t)?;
                let stats = st.store().stats(&t)?;
                let regions = st.store().regions(&t)?.len();
                // Rows are counted by a keys-only scan: exact, and linear in
                // the table (cells and bytes come from LMDB's counters).
                let rows = st.store().count(&t, &Scan { keys_only: true, ..Scan::new() })?;
                let index = st.index_figures(&t);
                ok(json!({
                    "name": t,
                    "schema": schema,
                    "stats": {"rows": rows, "cells": stats.cells, "bytes": stats.bytes, "regions": regions,
                              "index": index.map(|(generation, bytes, when)| json!({
                                  "generation": generation, "bytes": bytes, "updated_unix_seconds": when}))},
                }))
            })
        });
    let delete_table =
        table().and(warp::path::end()).and(warp::delete()).and(s()).and_then(|t: String, st: Arc<State>| {
            run(st, "tables_delete", move |st| {
                rowsearch_indexer::drop_table(st.store(), &t)?;
                st.searcher.forget(&t);
                Ok(StatusCode::NO_CONTENT.into_response())
            })
        });

    // Rows.
    let row = || table().and(warp::path("rows")).and(warp::path::param::<String>()).and(warp::path::end());
    let put_row = row().and(warp::put()).and(params()).and(body(max_body)).and(s()).and_then(
        |t: String, key: String, p: Params, b: bytes::Bytes, st: Arc<State>| {
            run(st, "rows_put", move |st| {
                let key = path_key(&key)?;
                let body: RowRequest = parse_json(&b)?;
                let info = st.store().put(&t, &key, body.cells(p.encoding()?)?)?;
                ok(json!({"seq": info.last_seq}))
            })
        },
    );
    let get_row = row().and(warp::get()).and(params()).and(s()).and_then(
        |t: String, key: String, p: Params, st: Arc<State>| {
            run(st, "rows_get", move |st| {
                let key = path_key(&key)?;
                let schema = st.store().schema(&t)?;
                match st.store().get(&t, &key, &read_options(&p)?)? {
                    Some(row) => ok(row_json_in(&row, schema.row_key.as_ref(), p.encoding()?)),
                    None => Err(ApiError::new(StatusCode::NOT_FOUND, "row_not_found", "no such row")),
                }
            })
        },
    );
    let delete_row = row().and(warp::delete()).and(params()).and(s()).and_then(
        |t: String, key: String, p: Params, st: Arc<State>| {
            run(st, "rows_delete", move |st| {
                let key = path_key(&key)?;
                let mut batch = Batch::new();
                for what in deletes(&columns_of(p.encoding()?, &p.all("columns"))?, p.number("timestamp")?) {
                    batch.delete(t.as_str(), key.clone(), what);
                }
                st.store().apply(&batch)?;
                Ok(StatusCode::NO_CONTENT.into_response())
            })
        },
    );
    let mutate = table()
        .and(warp::path!("mutate"))
        .and(warp::post())
        .and(params())
        .and(body(max_body))
        .and(s())
        .and_then(|t: String, p: Params, b: bytes::Bytes, st: Arc<State>| {
            run(st, "mutate", move |st| {
                let enc = p.encoding()?;
                let body: MutateBody = parse_json(&b)?;
                let mut batch = Batch::new();
                for m in body.mutations {
                    match (m.put, m.delete) {
                        (Some(put), None) => {
                            batch.put(t.as_str(), binary(enc, "key", &put.key)?, put.row.cells(enc)?);
                        }
                        (None, Some(del)) => {
                            let key = binary(enc, "key", &del.key)?;
                            let columns: Vec<&str> = del.columns.iter().map(String::as_str).collect();
                            for what in deletes(&columns_of(enc, &columns)?, del.timestamp) {
                                batch.delete(t.as_str(), key.clone(), what);
                            }
                        }
                        _ => {
                            return Err(ApiError::bad_request(
                                "each mutation is {\"put\": ...} or {\"delete\": ...}",
                            ));
                        }
                    }
                }
                let info = st.store().apply(&batch)?;
                ok(json!({"rows": info.rows, "seq": info.last_seq}))
            })
        });

    // Scans.
    let scan_get =
        table().and(warp::path!("scan")).and(warp::get()).and(params()).and(s()).and_then(
            |t: String, p: Params, st: Arc<State>| run(st, "scan", move |st| scan(st, &t, &p, false)),
        );
    let scan_post = table().and(warp::path!("scan")).and(warp::post()).and(body(max_body)).and(s()).and_then(
        |t: String, b: bytes::Bytes, st: Arc<State>| {
            run(st, "scan", move |st| {
                let p = params_from_json(&b)?;
                scan(st, &t, &p, false)
            })
        },
    );
    let count =
        table().and(warp::path!("count")).and(warp::get()).and(params()).and(s()).and_then(
            |t: String, p: Params, st: Arc<State>| run(st, "count", move |st| scan(st, &t, &p, true)),
        );

    // Secondary indexes.
    let index_lookup = table()
        .and(warp::path("indexes"))
        .and(warp::path::param::<String>())
        .and(warp::path::end())
        .and(warp::get())
        .and(params())
        .and(s())
        .and_then(|t: String, index: String, p: Params, st: Arc<State>| {
            run(st, "index_lookup", move |st| {
                let query = index_query(&p)?;
                let enc = p.encoding()?;
                let schema = st.store().schema(&t)?;
                let rk = schema.row_key.as_ref();
                let rtxn = st.store().begin_read()?;
                let page = rtxn.index_lookup(&t, &index, &query)?;
                let out: Vec<Value> = if p.flag("rows")? {
                    let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
                    rtxn.multi_get(&t, &keys, &ReadOptions::default())?
                        .into_iter()
                        .flatten()
                        .map(|r| row_json_in(&r, rk, enc))
                        .collect()
                } else {
                    page.hits.iter().map(|h| key_json_in(&h.key, rk, enc)).collect()
                };
                drop(rtxn);
                let name = if p.flag("rows")? { "rows" } else { "keys" };
                ok(json!({name: out, "next_cursor": page.next_cursor}))
            })
        });
    let intersect = table()
        .and(warp::path!("indexes:intersect"))
        .and(warp::get())
        .and(params())
        .and(s())
        .and_then(|t: String, p: Params, st: Arc<State>| {
            run(st, "index_intersect", move |st| {
                let enc = p.encoding()?;
                let mut terms = Vec::new();
                for q in p.all("q") {
                    let mut parts = q.splitn(3, ':');
                    let (Some(index), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next())
                    else {
                        return Err(ApiError::bad_request(format!(
                            "q {q:?}: expected index:eq|prefix:value"
                        )));
                    };
                    let value = binary(enc, "q", value)?;
                    let query = match kind {
                        "eq" => IndexQuery { eq: vec![value], ..IndexQuery::default() },
                        "prefix" => IndexQuery { prefix: Some(value), ..IndexQuery::default() },
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "q {q:?}: {other:?} is not eq or prefix"
                            )));
                        }
                    };
                    terms.push(IndexTerm { index: index.to_owned(), query });
                }
                if terms.is_empty() {
                    return Err(ApiError::bad_request("give at least one q=index:eq:value"));
                }
                let op = match p.get("op") {
                    None | Some("intersect") => SetOp::Intersect,
                    Some("union") => SetOp::Union,
                    Some(o) => return Err(ApiError::bad_request(format!("op {o:?}: intersect or union"))),
                };
                let after = p.bytes("cursor")?;
                let limit = Some(p.number("limit")?.unwrap_or(100).min(st.limits.max_scan_limit));
                let schema = st.store().schema(&t)?;
                let page = st.store().begin_read()?.index_combine(&t, &terms, op, after.as_deref(), limit)?;
                let keys: Vec<Value> =
                    page.keys.iter().map(|k| key_json_in(k, schema.row_key.as_ref(), enc)).collect();
                ok(json!({"keys": keys, "next_cursor": page.next_after.map(|k| enc.encode(&k))}))
            })
        });

    // Search.
    let search = table()
        .and(warp::path!("search"))
        .and(warp::get())
        .and(params())
        .and(s())
        .and_then(|t: String, p: Params, st: Arc<State>| run(st, "search", move |st| search(st, &t, &p)));
    let keywords = table().and(warp::path!("keywords")).and(warp::get()).and(params()).and(s()).and_then(
        |t: String, p: Params, st: Arc<State>| {
            run(st, "keywords", move |st| {
                let enc = p.encoding()?;
                let user = p.get("user").unwrap_or_default();
                let terms: Vec<String> = p
                    .all("terms")
                    .iter()
                    .flat_map(|t| t.split(','))
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
                let query = rowsearch_store::KeywordQuery {
                    partition: binary(p.encoding()?, "user", user)?,
                    terms,
                    limit: Some(p.number("limit")?.unwrap_or(100).min(st.limits.max_scan_limit)),
                    cursor: p.get("cursor").map(str::to_owned),
                };
                let schema = st.store().schema(&t)?;
                let page = st.store().keyword_lookup(&t, &query)?;
                let keys: Vec<Value> = page
                    .hits
                    .iter()
                    .map(|h| {
                        let mut k = key_json_in(&h.key, schema.row_key.as_ref(), enc);
                        k["date_ms"] = json!(h.date_ms);
                        k
                    })
                    .collect();
                ok(json!({"keys": keys, "next_cursor": page.next_cursor}))
            })
        },
    );
    let reindex = table().and(warp::path!("reindex")).and(warp::post()).and(params()).and(s()).and_then(
        |t: String, p: Params, st: Arc<State>| {
            run(st, "reindex", move |st| {
                let mode = match p.get("mode") {
                    None | Some("auto") => ReindexMode::Auto,
                    Some("full") => ReindexMode::Full,
                    Some("incremental") => ReindexMode::Incremental,
                    Some(m) => return Err(ApiError::bad_request(format!("mode {m:?}: full or incremental"))),
                };
                let schema = st.store().schema(&t)?;
                if schema.search.is_none() {
                    return Err(ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "not_searchable",
                        format!("table {t:?} has no search section"),
                    ));
                }
                match st.jobs.start_reindex(Arc::clone(st.store()), &t, mode) {
                    Ok(job) => Ok(json_reply(&json!({"job": job}), StatusCode::ACCEPTED)),
                    Err(running) => Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "reindex_running",
                        format!("job {running} is already reindexing table {t:?}"),
                    )),
                }
            })
        },
    );
    let job =
        warp::path!("jobs" / String).and(warp::get()).and(s()).and_then(|id: String, st: Arc<State>| {
            run(st, "jobs", move |st| match st.jobs.get(&id) {
                Some(job) => ok(serde_json::to_value(job).unwrap_or_default()),
                None => Err(ApiError::new(StatusCode::NOT_FOUND, "job_not_found", format!("no job {id:?}"))),
            })
        });

    let service = health.or(metrics).unify().or(openapi).unify().boxed();
    let tables = list_tables.or(put_table).unify().or(get_table).unify().or(delete_table).unify().boxed();
    let rows = put_row.or(get_row).unify().or(delete_row).unify().or(mutate).unify().boxed();
    let scans = scan_get.or(scan_post).unify().or(count).unify().boxed();
    let indexes = intersect.or(index_lookup).unify().boxed();
    let searches = search.or(keywords).unify().or(reindex).unify().or(job).unify().boxed();
    service
        .or(tables)
        .unify()
        .or(rows)
        .unify()
        .or(scans)
        .unify()
        .or(indexes)
        .unify()
        .or(searches)
        .unify()
        .recover(|r: warp::Rejection| async move {
            match r.find::<Rejected>() {
                Some(Rejected(e)) => Ok(e.clone().into_response()),
                None => recover(r).await,
            }
        })
        .unify()
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
struct MutateBody {
    mutations: Vec<MutationBody>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MutationBody {
    put: Option<PutBody>,
    delete: Option<DeleteBody>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PutBody {
    key: String,
    #[serde(flatten)]
    row: RowRequest,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteBody {
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

/// A scan's JSON body as query parameters (`columns` may be a list).
fn params_from_json(body: &[u8]) -> Result<Params, ApiError> {
    let value: serde_json::Map<String, Value> = parse_json(body)?;
    let mut out = Vec::new();
    for (k, v) in value {
        match v {
            Value::String(s) => out.push((k, s)),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => out.push((k.clone(), s)),
                        other => {
                            return Err(ApiError::bad_request(format!("{k}: expected strings, got {other}")));
                        }
                    }
                }
            }
            Value::Null => {}
            Value::Object(_) if k == "prefix_fields" => out.push((k, v.to_string())),
            other => out.push((k, other.to_string())),
        }
    }
    Ok(Params(out))
}

fn scan(st: &State, table: &str, p: &Params, count: bool) -> Answer {
    let schema = st.store().schema(table)?;
    let prefix = match p.get("prefix_fields") {
        Some(json) => {
            let value: Value = serde_json::from_str(json)
                .map_err(|e| ApiError::bad_request(format!("prefix_fields: {e}")))?;
            let rk = schema.row_key.as_ref().filter(|rk| !rk.fields.is_empty()).ok_or_else(|| {
                ApiError::bad_request(format!("prefix_fields: table {table:?} has no typed row key"))
            })?;
            Some(rk.encode_json(&value)?)
        }
        None => p.bytes("prefix")?,
    };
    let filter = match p.get("filter") {
        Some(f) if f.len() > st.limits.max_filter_bytes => {
            return Err(ApiError::bad_request(format!(
                "filter is {} bytes, the limit is {}",
                f.len(),
                st.limits.max_filter_bytes
            )));
        }
        Some(f) => Some(Filter::parse(f)?),
        None => None,
    };
    let limit = p.number::<usize>("limit")?;
    if limit.is_some_and(|l| l > st.limits.max_scan_limit) {
        return Err(ApiError::bad_request(format!("limit is at most {}", st.limits.max_scan_limit)));
    }
    let scan = Scan {
        start: p.bytes("start")?,
        stop: p.bytes("stop")?,
        prefix,
        reverse: p.flag("reverse")?,
        read: read_options(p)?,
        offset: p.number("offset")?.unwrap_or(0),
        limit: if count { limit } else { Some(limit.unwrap_or(100)) },
        cursor: p.get("cursor").map(ScanCursor::from_token).transpose()?,
        keys_only: p.flag("keys_only")?,
        filter,
        region: p.number("region")?,
    };
    if count {
        return ok(json!({"count": st.store().count(table, &scan)?}));
    }
    let rtxn = st.store().begin_read()?;
    let page = rtxn.scan_page(table, &scan)?;
    drop(rtxn);
    let enc = p.encoding()?;
    let rows: Vec<Value> = page.rows.iter().map(|r| row_json_in(r, schema.row_key.as_ref(), enc)).collect();
    ok(json!({"rows": rows, "next_cursor": page.next_cursor.map(|c| c.to_token())}))
}

fn index_query(p: &Params) -> Result<IndexQuery, ApiError> {
    Ok(IndexQuery {
        eq: p.all("eq").iter().map(|v| binary(p.encoding()?, "eq", v)).collect::<Result<_, _>>()?,
        prefix: p.bytes("prefix")?,
        start: p.bytes("start")?,
        stop: p.bytes("stop")?,
        limit: Some(p.number("limit")?.unwrap_or(100)),
        cursor: p.get("cursor").map(str::to_owned),
        region: p.number("region")?,
    })
}

fn search(st: &State, table: &str, p: &Params) -> Answer {
    let sort = match p.get("sort") {
        None | Some("relevance") => SortBy::Relevance,
        Some("newest") => SortBy::Newest,
        Some("oldest") => SortBy::Oldest,
        Some(s) => return Err(ApiError::bad_request(format!("sort {s:?}: relevance, newest or oldest"))),
    };
    let query = p.get("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", "q is empty"));
    }
    let request = SearchRequest {
        query: query.to_owned(),
        partition: p.bytes("user")?,
        sort,
        limit: p.number("limit")?,
        offset: p.number("offset")?.unwrap_or(0),
        cursor: p.get("cursor").map(str::to_owned),
        columns: columns_of(p.encoding()?, &p.all("columns"))?,
        highlight: p.flag("highlight")?,
    };
    let results = st.searcher.search(table, &request)?;
    st.metrics.stale(results.dropped);
    let schema = st.store().schema(table)?;
    let body =
        crate::json::SearchBody::new(&results, schema.row_key.as_ref(), request.highlight, p.encoding()?);
    Ok(warp::reply::with_status(warp::reply::json(&body), StatusCode::OK).into_response())
}
