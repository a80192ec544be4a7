//! `/tables/{t}/indexes` (admin: list, add, drop, rebuild, verify),
//! `/tables/{t}/indexes/{index}` (lookups) and
//! `/tables/{t}/indexes:intersect` (combinations).

use rowsearch_store::{IndexQuery, IndexSchema, IndexTerm, ReadOptions, SetOp};
use serde_json::{Value, json};
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, confine, json_reply, ok};
use crate::http::error::{ApiError, Refusal};
use crate::http::params::{Params, binary, index_query, parse_json};
use crate::http::state::State;
use crate::json::{index_state_json, key_json_in, row_json_in, verify_json};
use crate::keys::Access;

/// `GET /tables/{t}/indexes`.
pub(crate) fn list(st: &State, access: &Access, t: &str) -> Answer {
    confine::whole_table(access, "a table's index figures")?;
    let states = st.tables().indexes(t)?;
    ok(json!({"indexes": states.iter().map(index_state_json).collect::<Vec<_>>()}))
}

/// The body of `PUT /tables/{t}/indexes/{i}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexBody {
    columns: Vec<String>,
}

/// `PUT /tables/{t}/indexes/{i}`: 202 with the job that builds it from the
/// rows while writes go on; 200 when it exists alike and is ready.
pub(crate) fn put(st: &State, t: &str, index: &str, body: &[u8]) -> Answer {
    let body: IndexBody = parse_json(body)?;
    st.tables().start_index(t, IndexSchema::new(index, body.columns))?;
    let building = st.tables().indexes(t)?.iter().any(|s| s.schema.name == index && s.building);
    if !building {
        return ok(json!({"index": index, "state": "ready"}));
    }
    // New, or a build that stopped (a restart): (re)start its job.
    let job = st.jobs.start_index_build(st.shared_tables(), t, index).unwrap_or_else(|running| running);
    Ok(json_reply(&json!({"job": job, "index": index, "state": "building"}), StatusCode::ACCEPTED))
}

/// `DELETE /tables/{t}/indexes/{i}`.
pub(crate) fn delete(st: &State, t: &str, index: &str) -> Answer {
    st.tables().drop_index(t, index)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /tables/{t}/indexes/{i}/rebuild`: 202 with the job.
pub(crate) fn rebuild(st: &State, t: &str, index: &str) -> Answer {
    st.tables().indexes(t)?.iter().find(|s| s.schema.name == index).ok_or_else(|| {
        rowsearch_store::Error::from(rowsearch_store::ErrorKind::UnknownIndex {
            table: t.to_owned(),
            index: index.to_owned(),
        })
    })?;
    if let Some(job) = st.jobs.running_index_build(t, index) {
        return Err(Refusal::IndexJobRunning { job, table: t.to_owned(), index: index.to_owned() }.into());
    }
    st.tables().start_index_rebuild(t, index)?;
    let job = st.jobs.start_index_build(st.shared_tables(), t, index).unwrap_or_else(|running| running);
    Ok(json_reply(&json!({"job": job, "index": index, "state": "building"}), StatusCode::ACCEPTED))
}

/// `GET /tables/{t}/indexes/{i}/verify`.
pub(crate) fn verify(st: &State, access: &Access, t: &str, index: &str) -> Answer {
    confine::whole_table(access, "an index's verify report")?;
    ok(verify_json(&st.tables().verify_index(t, index)?))
}

/// `GET /tables/{t}/indexes/{index}`: keys, or rows with `rows=true`.
pub(crate) fn lookup(st: &State, access: &Access, t: &str, index: &str, p: &Params) -> Answer {
    let mut query = index_query(p, st.limits.max_scan_limit)?;
    query.cursor = confine::open_cursor(st, access, query.cursor.as_deref())?;
    let enc = p.encoding()?;
    let tables = st.tables();
    let schema = tables.schema(t)?;
    let rk = schema.row_key.as_ref();
    let rows = p.flag("rows")?;
    let (page, found) = if rows {
        let (page, found) = tables.index_rows(t, index, &query, &ReadOptions::default())?;
        (page, Some(found))
    } else {
        (tables.index_lookup(t, index, &query)?, None)
    };
    let mut visible = Vec::with_capacity(page.hits.len());
    for (i, hit) in page.hits.iter().enumerate() {
        if confine::sees_key(access, tables, t, &hit.key)? {
            visible.push(i);
        }
    }
    let out: Vec<Value> = match found {
        Some(mut found) => visible
            .iter()
            .filter_map(|&i| found.get_mut(i).and_then(Option::take))
            .map(|r| row_json_in(&r, rk, enc))
            .collect(),
        None => visible.iter().map(|&i| key_json_in(&page.hits[i].key, rk, enc)).collect(),
    };
    let name = if rows { "rows" } else { "keys" };
    ok(json!({name: out, "next_cursor": confine::seal_cursor(st, access, page.next_cursor)?}))
}

/// `GET /tables/{t}/indexes:intersect`: `q=index:eq|prefix:value`, ANDed
/// (or ORed with `op=union`).
pub(crate) fn combine(st: &State, access: &Access, t: &str, p: &Params) -> Answer {
    let enc = p.encoding()?;
    let mut terms = Vec::new();
    for q in p.all("q") {
        let mut parts = q.splitn(3, ':');
        let (Some(index), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(ApiError::bad_request(format!("q {q:?}: expected index:eq|prefix:value")));
        };
        let value = binary(enc, "q", value)?;
        let query = match kind {
            "eq" => IndexQuery { eq: vec![value], ..IndexQuery::default() },
            "prefix" => IndexQuery { prefix: Some(value), ..IndexQuery::default() },
            other => {
                return Err(ApiError::bad_request(format!("q {q:?}: {other:?} is not eq or prefix")));
            }
        };
        terms.push(IndexTerm { index: index.to_owned(), query });
    }
    if terms.is_empty() {
        return Err(ApiError::bad_request("give at least one q=index:eq:value"));
    }
    if terms.len() > st.limits.max_lookups {
        return Err(ApiError::bad_request(format!(
            "{} lookups combined; at most {} (serve --max-lookups)",
            terms.len(),
            st.limits.max_lookups
        )));
    }
    let op = if p.choice("op") == "union" { SetOp::Union } else { SetOp::Intersect };
    let after = match confine::open_cursor(st, access, p.get("cursor"))? {
        Some(token) => Some(binary(enc, "cursor", &token)?),
        None => None,
    };
    let limit = Some(p.number("limit")?.unwrap_or(100).min(st.limits.max_scan_limit));
    let tables = st.tables();
    let schema = tables.schema(t)?;
    let mut page = tables.index_combine(t, &terms, op, after.as_deref(), limit)?;
    if access.partitions().is_some() {
        let mut visible = Vec::with_capacity(page.keys.len());
        for key in page.keys {
            if confine::sees_key(access, tables, t, &key)? {
                visible.push(key);
            }
        }
        page.keys = visible;
    }
    let keys: Vec<Value> = page.keys.iter().map(|k| key_json_in(k, schema.row_key.as_ref(), enc)).collect();
    let next = confine::seal_cursor(st, access, page.next_after.map(|k| enc.encode(&k)))?;
    ok(json!({"keys": keys, "next_cursor": next}))
}
