//! `/tables/{t}/search` (the tantivy index, resolved against the store)
//! and `/tables/{t}/keywords` (straight from the keyword rows).

use rowsearch_indexer::SortBy;
use rowsearch_store::KeywordQuery;
use serde_json::{Value, json};
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, ok};
use crate::http::error::{ApiError, Refusal};
use crate::http::params::{Params, binary, columns_of};
use crate::http::state::State;
use crate::json::key_json_in;
use crate::keys::Access;
use crate::{Consistency, SearchRequest};
use rowsearch_store::Cancel;

/// `GET /tables/{t}/search`.
pub(crate) fn search(
    st: &State,
    access: &Access,
    table: &str,
    p: &Params,
    cancel: &Cancel,
    from: &super::cluster::Forward,
) -> Answer {
    // Each choice's values are declared (and checked) in param_spec.rs.
    let sort = match p.choice("sort") {
        "newest" => SortBy::Newest,
        "oldest" => SortBy::Oldest,
        _ => SortBy::Relevance,
    };
    let format = crate::json::HitFormat::parse(p.get("format")).map_err(ApiError::bad_request)?;
    let query = p.get("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(Refusal::InvalidQuery("q is empty".into()).into());
    }
    let request = SearchRequest {
        query: query.to_owned(),
        partition: p.bytes("user")?,
        scope: access.partitions().map(|ps| ps.iter().map(|p| p.as_bytes().to_vec()).collect()),
        sort,
        limit: p.number("limit")?,
        offset: p.number("offset")?.unwrap_or(0),
        cursor: p.get("cursor").map(str::to_owned),
        columns: columns_of(p.encoding()?, &p.all("columns"))?,
        highlight: p.flag("highlight")?,
        max_expansions: st.limits.max_expansions,
        max_clauses: st.limits.max_clauses,
        cancel: cancel.clone(),
        max_limit: st.limits.max_search_limit,
        max_highlight_bytes: st.limits.max_highlight_bytes,
        highlight_raw: p.choice("highlight_encoder") == "raw",
        rows_only: format == crate::json::HitFormat::Cells,
        crop: crate::document::parse_crop(&p.all("crop")).map_err(ApiError::bad_request)?,
        fields: {
            let fields = p.all("fields");
            if fields.is_empty() {
                None
            } else {
                Some(fields.iter().flat_map(|f| f.split(',')).map(str::trim).map(str::to_owned).collect())
            }
        },
        typos: p.choice("typos") == "auto",
        consistency: match p.choice("consistency") {
            "eventual" => Consistency::Eventual,
            _ => Consistency::Snapshot,
        },
        min_seq: p.number("min_seq")?,
        facets: p
            .all("facets")
            .iter()
            .flat_map(|f| f.split(','))
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
        facet_limit: p.number("facet_limit")?,
        // Inside the request's time limit, so a search that cannot be
        // brought current answers why rather than a bare timeout.
        deadline: Some(std::time::Instant::now() + st.limits.request_timeout.mul_f64(0.9)),
        collapse: p.get("collapse").map(str::to_owned),
    };
    let results = match &st.cluster {
        Some(cluster) => match super::cluster::search(st, cluster, table, &request, from)? {
            super::cluster::Clustered::Results(results) => *results,
            super::cluster::Clustered::Relayed(response) => return Ok(response),
        },
        None => st.searcher.search(table, &request)?,
    };
    st.metrics.stale(results.dropped);
    let body = crate::json::SearchBody::new(
        &results,
        results.row_key.as_ref(),
        request.highlight,
        p.encoding()?,
        format,
    );
    let json_started = std::time::Instant::now();
    let mut response = warp::reply::with_status(warp::reply::json(&body), StatusCode::OK).into_response();
    let steps = results.steps;
    // The feed read beside the page (over HBase) overlapped the others.
    let feed = steps.feed_ms.map(|ms| format!(", feed;dur={ms:.3}")).unwrap_or_default();
    let timing = format!(
        "snapshot;dur={:.3}, query;dur={:.3}, rows;dur={:.3}, json;dur={:.3}{feed}",
        steps.snapshot_ms,
        steps.query_ms,
        steps.rows_ms,
        json_started.elapsed().as_secs_f64() * 1e3
    );
    if let Ok(value) = warp::http::HeaderValue::from_str(&timing) {
        response.headers_mut().append("server-timing", value);
    }
    Ok(response)
}

/// `GET /tables/{t}/keywords?user=&terms=`: newest first.
pub(crate) fn keywords(st: &State, access: &Access, t: &str, p: &Params) -> Answer {
    let enc = p.encoding()?;
    let user = p.get("user").unwrap_or_default();
    if !access.may_see(&binary(enc, "user", user)?) {
        return Err(Refusal::Forbidden(format!("this key may not read partition {user:?}")).into());
    }
    let terms: Vec<String> = p
        .all("terms")
        .iter()
        .flat_map(|t| t.split(','))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let query = KeywordQuery {
        partition: binary(enc, "user", user)?,
        terms,
        limit: Some(p.number("limit")?.unwrap_or(100).min(st.limits.max_scan_limit)),
        cursor: p.get("cursor").map(str::to_owned),
    };
    let rows = st.searcher.rows();
    let schema = rows.schema(t)?;
    let page = rows.keyword_lookup(t, &query)?;
    let keys: Vec<Value> = page
        .hits
        .iter()
        .map(|h| {
            let mut k = key_json_in(&h.key, schema.row_key.as_ref(), enc);
            k["date_ms"] = json!(h.date_ms);
            k
        })
        .collect();
    let mut answer = json!({"keys": keys, "next_cursor": page.next_cursor});
    // A mailbox that holds nothing (a misspelt `user`): said, as a search
    // says it.
    // (A cluster's searchers hold shards, not the index the names come
    // from: not said there.)
    if keys.is_empty() && query.cursor.is_none() && schema.search.is_some() && st.cluster.is_none() {
        let scope: Option<Vec<Vec<u8>>> =
            access.partitions().map(|ps| ps.iter().map(|p| p.as_bytes().to_vec()).collect());
        if let Some(unknown) = st.searcher.unknown_user(t, &query.partition, scope.as_deref())? {
            answer["unknown_user"] = serde_json::to_value(unknown).unwrap_or(Value::Null);
        }
    }
    ok(answer)
}

/// `GET /tables/{t}/suggest?q=&user=&limit=`.
pub(crate) fn suggest(
    st: &State,
    access: &Access,
    table: &str,
    p: &Params,
    from: &super::cluster::Forward,
) -> Answer {
    let query = p.get("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(ApiError::bad_request("q is empty"));
    }
    let request = crate::SuggestRequest {
        query: query.to_owned(),
        partition: p.bytes("user")?,
        scope: access.partitions().map(|ps| ps.iter().map(|p| p.as_bytes().to_vec()).collect()),
        limit: p.number("limit")?,
    };
    if let Some(cluster) = &st.cluster {
        return super::cluster::suggest(st, cluster, table, &request, from);
    }
    let suggestions = st.searcher.suggest(table, &request)?;
    ok(serde_json::to_value(&suggestions).unwrap_or(Value::Null))
}

/// `GET /tables/{t}/threads/{id}`: the conversation in reading order, each
/// message a document with its depth and parent.
pub(crate) fn thread(
    st: &State,
    access: &Access,
    table: &str,
    id: &str,
    p: &Params,
    cancel: &Cancel,
) -> Answer {
    let fields = p.all("fields");
    let request = crate::threads::ThreadRequest {
        fields: (!fields.is_empty())
            .then(|| fields.iter().flat_map(|f| f.split(',')).map(str::trim).map(str::to_owned).collect()),
        columns: columns_of(p.encoding()?, &p.all("columns"))?,
        scope: access.partitions().map(|ps| ps.iter().map(|p| p.as_bytes().to_vec()).collect()),
        cancel: cancel.clone(),
    };
    let view = crate::threads::thread_view(st.tables(), table, id, &request)?
        .ok_or_else(|| Refusal::ThreadNotFound(id.to_owned()))?;
    let row_key = st.tables().schema(table)?.row_key;
    ok(crate::json::thread_json(&view, row_key.as_ref()))
}
