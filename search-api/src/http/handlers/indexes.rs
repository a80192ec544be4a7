//! `/tables/{t}/indexes/{index}` (lookups) and
//! `/tables/{t}/indexes:intersect` (combinations).

use rowsearch_store::{IndexQuery, IndexTerm, ReadOptions, SetOp};
use serde_json::{Value, json};

use super::{Answer, ok};
use crate::http::error::ApiError;
use crate::http::params::{Params, binary, index_query};
use crate::http::state::State;
use crate::json::{key_json_in, row_json_in};

/// `GET /tables/{t}/indexes/{index}`: keys, or rows with `rows=true`.
pub(crate) fn lookup(st: &State, t: &str, index: &str, p: &Params) -> Answer {
    let query = index_query(p, st.limits.max_scan_limit)?;
    let enc = p.encoding()?;
    let schema = st.store().schema(t)?;
    let rk = schema.row_key.as_ref();
    let rtxn = st.store().begin_read()?;
    let page = rtxn.index_lookup(t, index, &query)?;
    let out: Vec<Value> = if p.flag("rows")? {
        let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
        rtxn.multi_get(t, &keys, &ReadOptions::default())?
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
}

/// `GET /tables/{t}/indexes:intersect`: `q=index:eq|prefix:value`, ANDed
/// (or ORed with `op=union`).
pub(crate) fn combine(st: &State, t: &str, p: &Params) -> Answer {
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
    let op = match p.get("op") {
        None | Some("intersect") => SetOp::Intersect,
        Some("union") => SetOp::Union,
        Some(o) => return Err(ApiError::bad_request(format!("op {o:?}: intersect or union"))),
    };
    let after = p.bytes("cursor")?;
    let limit = Some(p.number("limit")?.unwrap_or(100).min(st.limits.max_scan_limit));
    let schema = st.store().schema(t)?;
    let page = st.store().begin_read()?.index_combine(t, &terms, op, after.as_deref(), limit)?;
    let keys: Vec<Value> = page.keys.iter().map(|k| key_json_in(k, schema.row_key.as_ref(), enc)).collect();
    ok(json!({"keys": keys, "next_cursor": page.next_after.map(|k| enc.encode(&k))}))
}
