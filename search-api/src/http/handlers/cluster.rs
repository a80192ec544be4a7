//! A searcher of a cluster (`serve --cluster`): its searches go over the
//! shards (`crate::cluster::search`), and `POST /cluster/shard` answers
//! the other searchers' calls for the shards it holds.

use std::time::Instant;

use warp::Reply;
use warp::http::StatusCode;
use warp::reply::Response;

use super::Answer;
use crate::cluster::search::{Coordinated, Route, answer, route};
use crate::cluster::wire::ShardCall;
use crate::cluster::{Cluster, ShardId};
use crate::http::error::{ApiError, Refusal};
use crate::http::state::State;
use crate::{SearchRequest, SearchResults};

/// What a search passed on to another searcher carries of the request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Forward {
    /// The path and query string, as received.
    pub path_and_query: String,
    /// The caller's `Authorization`.
    pub authorization: Option<String>,
    /// Passed on already by another searcher.
    pub passed_on: bool,
}

/// A search's outcome in a cluster.
pub(crate) enum Clustered {
    /// Coordinated here.
    Results(Box<SearchResults>),
    /// Answered by the searcher it was passed on to.
    Relayed(Response),
}

/// Runs `request` over `table`'s shards (see `crate::cluster::search`).
///
/// # Errors
/// `shard_unavailable` (503) naming a shard without a holder; the search's
/// own errors.
pub(crate) fn search(
    st: &State,
    cluster: &Cluster,
    table: &str,
    request: &SearchRequest,
    from: &Forward,
) -> Result<Clustered, ApiError> {
    let schema = st.tables().schema(table)?;
    let Some(search) = schema.search.as_ref() else {
        // The searcher's own error for a table without a search section.
        return Ok(Clustered::Results(Box::new(st.searcher.search(table, request)?)));
    };
    let count = search.shard_count();
    match route(cluster, table, count, request.partition.as_deref(), from.passed_on)? {
        Route::Here(index) => {
            let keys = Coordinated { cluster, table, count };
            Ok(Clustered::Results(Box::new(index.searcher.search_with(table, request, Some(&keys))?)))
        }
        Route::There(addr) => {
            let shard =
                request.partition.as_deref().map_or(0, |p| rowsearch_store::SearchSchema::shard_of(p, count));
            Ok(Clustered::Relayed(relay(st, cluster, &addr, (table, shard), from, request.deadline)?))
        }
    }
}

/// The answer of the searcher at `addr` to the request `from` names,
/// passed on to it (a search or suggestion of a shard it holds).
fn relay(
    st: &State,
    cluster: &Cluster,
    addr: &str,
    (table, shard): (&str, u32),
    from: &Forward,
    deadline: Option<Instant>,
) -> Result<Response, ApiError> {
    let unavailable = |reason: String| {
        ApiError::from(crate::Error::ShardUnavailable { table: table.to_owned(), shard, reason })
    };
    let peers =
        cluster.peers().ok_or_else(|| unavailable("this searcher has no client to the others".into()))?;
    let deadline = deadline.unwrap_or_else(|| Instant::now() + st.limits.request_timeout);
    let (status, content_type, timing, body) = peers
        .relay(addr, &from.path_and_query, from.authorization.as_deref(), deadline)
        .map_err(|e| unavailable(e.to_string()))?;
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in [("content-type", content_type), ("server-timing", timing)] {
        if let Some(value) = value.and_then(|v| warp::http::HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(name, value);
        }
    }
    Ok(response)
}

/// Suggestions in a cluster: a mailbox's (the `user` asked, or the one
/// mailbox a key is confined to) from its shard, here or passed on to
/// its holder; across mailboxes they are not served yet (501).
///
/// # Errors
/// `cluster_unsupported` (501) without one mailbox; `shard_unavailable`.
pub(crate) fn suggest(
    st: &State,
    cluster: &Cluster,
    table: &str,
    request: &crate::SuggestRequest,
    from: &Forward,
) -> Answer {
    let schema = st.tables().schema(table)?;
    let count = schema.search.as_ref().map_or(1, |s| s.shard_count());
    let mailbox = match (&request.partition, request.scope.as_deref()) {
        (Some(p), _) => p.clone(),
        (None, Some([only])) => only.clone(),
        _ => {
            return Err(ApiError::cluster_unsupported(
                "a cluster of searchers suggests within one mailbox: name it (user=...)",
            ));
        }
    };
    match route(cluster, table, count, Some(&mailbox), from.passed_on)? {
        Route::Here(index) => {
            let suggestions = index.searcher.suggest(table, request)?;
            Ok(warp::reply::json(&suggestions).into_response())
        }
        Route::There(addr) => relay(
            st,
            cluster,
            &addr,
            (table, rowsearch_store::SearchSchema::shard_of(&mailbox, count)),
            from,
            None,
        ),
    }
}

/// `POST /cluster/shard`: another searcher's call for a shard this one
/// holds, with the cluster's secret (`crate::cluster::wire`).
pub(crate) fn shard(
    st: &State,
    secret: Option<&str>,
    body: &[u8],
    cancel: &rowsearch_store::Cancel,
) -> Answer {
    let Some(cluster) = &st.cluster else {
        return Err(ApiError::not_in_a_cluster());
    };
    if !cluster.peers().is_some_and(|p| p.admits(secret)) {
        return Err(Refusal::Forbidden("calls between searchers carry the cluster's secret".into()).into());
    }
    let call: ShardCall = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the call does not parse: {e}")))?;
    let id = ShardId { table: call.table.clone(), shard: call.shard };
    let deadline = Instant::now() + st.limits.request_timeout;
    let index = crate::cluster::search::opened(cluster, &id, call.count, deadline).ok_or_else(|| {
        ApiError::from(crate::Error::ShardUnavailable {
            table: call.table.clone(),
            shard: call.shard,
            reason: "the searcher asked does not hold it now".into(),
        })
    })?;
    let answered = answer(&index, &call, cancel, deadline)?;
    cluster.count_answer(call.phase);
    Ok(warp::reply::json(&answered).into_response())
}
