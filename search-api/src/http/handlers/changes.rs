//! `/tables/{t}/changes` and `/consumers`: the change feed for others. A
//! page of changes is read in one snapshot; the wait of a long poll is the
//! route's (`routes.rs`), between pages.

use rowsearch_store::Consumer;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Answer, confine, json_reply, ok};
use crate::feed::{ChangesPage, DEFAULT_LIMIT, PageRequest, read_page};
use crate::http::error::ApiError;
use crate::http::params::{Params, parse_json};
use crate::http::state::State;
use crate::keys::Access;

/// The sequence a read of the feed starts after: `since`, else the
/// position of `consumer`, else just before the oldest change the feed
/// holds.
pub(crate) fn start(st: &State, p: &Params) -> Result<u64, ApiError> {
    if let Some(since) = p.number::<u64>("since")? {
        return Ok(since);
    }
    match p.get("consumer") {
        Some(name) => Ok(st.store().consumer(name)?.position),
        None => Ok(st.store().begin_read()?.feed_oldest()? - 1),
    }
}

/// `GET /tables/{t}/changes`: a page of table `t`'s changes after `since`
/// ([`crate::feed::read_page`]); a key confined to partitions sees its
/// partitions' rows only.
pub(crate) fn read(
    st: &State,
    access: &Access,
    t: &str,
    p: &Params,
    since: u64,
) -> Result<ChangesPage, ApiError> {
    let request = PageRequest {
        table: t,
        since,
        limit: p.number::<usize>("limit")?.unwrap_or(DEFAULT_LIMIT),
        cells: p.flag("cells")?,
        encoding: p.encoding()?,
    };
    read_page(st.store(), &request, &|rtxn, key| confine::sees_row(access, rtxn, t, key))
}

/// The body of `PUT /consumers/{name}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsumerRequest {
    /// The last sequence handled (acknowledged).
    #[serde(default)]
    position: Option<u64>,
    /// How long it holds the feed (ms).
    #[serde(default)]
    retention_ms: Option<u64>,
}

fn consumer_json(st: &State, c: &Consumer) -> Result<Value, ApiError> {
    let state = st.store().consumer_state(c)?;
    Ok(json!({
        "name": c.name,
        "position": c.position,
        "retention_ms": c.retention_ms,
        "updated_ms": c.updated_ms,
        "pending": state.pending,
        "holding": state.holding,
        "fell_behind": state.fell_behind,
        "oldest_seq": state.oldest,
    }))
}

/// `PUT /consumers/{name}`: creates the consumer (201; at the feed's end
/// unless `position` is given) or acknowledges its position (200).
pub(crate) fn put(st: &State, name: &str, body: &[u8]) -> Answer {
    let request: ConsumerRequest =
        if body.iter().all(u8::is_ascii_whitespace) { ConsumerRequest::default() } else { parse_json(body)? };
    let existed = st.store().consumer(name).is_ok();
    let consumer = st.store().set_consumer(name, request.position, request.retention_ms)?;
    let status = if existed { warp::http::StatusCode::OK } else { warp::http::StatusCode::CREATED };
    Ok(json_reply(&consumer_json(st, &consumer)?, status))
}

/// `GET /consumers/{name}`.
pub(crate) fn get(st: &State, name: &str) -> Answer {
    let consumer = st.store().consumer(name)?;
    ok(consumer_json(st, &consumer)?)
}

/// `GET /consumers`.
pub(crate) fn list(st: &State) -> Answer {
    let consumers =
        st.store().consumers()?.iter().map(|c| consumer_json(st, c)).collect::<Result<Vec<_>, _>>()?;
    ok(json!({ "consumers": consumers }))
}

/// `DELETE /consumers/{name}`: the feed is no longer held for it.
pub(crate) fn delete(st: &State, name: &str) -> Answer {
    if st.store().delete_consumer(name)? {
        ok(json!({ "deleted": name }))
    } else {
        Err(ApiError::from(rowsearch_store::Error::from(rowsearch_store::ErrorKind::UnknownConsumer {
            name: name.to_owned(),
        })))
    }
}
