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
pub(crate) fn start(st: &State, access: &Access, p: &Params) -> Result<u64, ApiError> {
    if let Some(since) = p.number::<u64>("since")? {
        return Ok(since);
    }
    match p.get("consumer") {
        Some(name) => Ok(st.tables().consumer(&stored_name(access, name)?)?.position),
        None => Ok(st.tables().feed_oldest()? - 1),
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
    read_page(st.tables(), &request, &|key| confine::sees_key(access, st.tables(), t, key))
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

/// Whose consumers a key reaches: an access key its own (its uid), the
/// master key and a server without keys the store's own.
fn scope(access: &Access) -> Option<&str> {
    match access {
        Access::Key(record) => Some(record.uid.as_str()),
        Access::Open | Access::Master => None,
    }
}

/// The stored name of the consumer a client names (checked as a client's
/// name: a scope of its own is not written into it).
fn stored_name(access: &Access, name: &str) -> Result<String, ApiError> {
    rowsearch_store::validate_consumer_name(name)?;
    Ok(rowsearch_store::scoped_name(scope(access), name))
}

/// Most feed entries looked at to count what a key's consumer has pending.
const PENDING_LOOK_AT: usize = 100_000;

/// The changes after `c`'s position that `access` may see: every change
/// for the store's own consumers; for an access key's, those of the
/// tables and partitions it reaches (counted over at most
/// [`PENDING_LOOK_AT`] entries).
fn pending(st: &State, access: &Access, c: &Consumer, all: u64) -> Result<u64, ApiError> {
    let Access::Key(_) = access else { return Ok(all) };
    let entries = match st.tables().changes_after(c.position, PENDING_LOOK_AT) {
        Ok(read) => read.entries,
        // Fallen behind: what it has pending is no longer known by entry.
        Err(_) => return Ok(0),
    };
    let mut n = 0;
    for entry in &entries {
        if access.may_touch(&entry.table)
            && confine::sees_key(access, st.tables(), &entry.table, &entry.row).unwrap_or(false)
        {
            n += 1;
        }
    }
    Ok(n)
}

fn consumer_json(st: &State, access: &Access, c: &Consumer) -> Result<Value, ApiError> {
    let state = st.tables().consumer_state(c)?;
    let name = rowsearch_store::name_in_scope(scope(access), &c.name).unwrap_or(&c.name);
    Ok(json!({
        "name": name,
        "position": c.position,
        "retention_ms": c.retention_ms,
        "updated_ms": c.updated_ms,
        "pending": pending(st, access, c, state.pending)?,
        "holding": state.holding,
        "fell_behind": state.fell_behind,
        "oldest_seq": state.oldest,
    }))
}

/// `PUT /consumers/{name}`: creates the consumer (201; at the feed's end
/// unless `position` is given) or acknowledges its position (200). A key's
/// consumers are its own: no other key sees or moves them.
pub(crate) fn put(st: &State, access: &Access, name: &str, body: &[u8]) -> Answer {
    let request: ConsumerRequest =
        if body.iter().all(u8::is_ascii_whitespace) { ConsumerRequest::default() } else { parse_json(body)? };
    if let Some(ms) = request.retention_ms.filter(|&ms| ms > rowsearch_store::MAX_RETENTION_MS) {
        return Err(ApiError::bad_request(format!(
            "retention_ms {ms}: a consumer holds the feed at most {} ms (30 days)",
            rowsearch_store::MAX_RETENTION_MS
        )));
    }
    let stored = stored_name(access, name)?;
    let existed = st.tables().consumer(&stored).is_ok();
    let consumer = st.tables().set_consumer(&stored, request.position, request.retention_ms)?;
    let status = if existed { warp::http::StatusCode::OK } else { warp::http::StatusCode::CREATED };
    Ok(json_reply(&consumer_json(st, access, &consumer)?, status))
}

/// `GET /consumers/{name}`.
pub(crate) fn get(st: &State, access: &Access, name: &str) -> Answer {
    let consumer = st.tables().consumer(&stored_name(access, name)?)?;
    ok(consumer_json(st, access, &consumer)?)
}

/// `GET /consumers`: the key's own.
pub(crate) fn list(st: &State, access: &Access) -> Answer {
    let consumers = st
        .tables()
        .consumers()?
        .iter()
        .filter(|c| rowsearch_store::name_in_scope(scope(access), &c.name).is_some())
        .map(|c| consumer_json(st, access, c))
        .collect::<Result<Vec<_>, _>>()?;
    ok(json!({ "consumers": consumers }))
}

/// `DELETE /consumers/{name}`: the feed is no longer held for it.
pub(crate) fn delete(st: &State, access: &Access, name: &str) -> Answer {
    if st.tables().delete_consumer(&stored_name(access, name)?)? {
        ok(json!({ "deleted": name }))
    } else {
        Err(ApiError::from(rowsearch_store::Error::from(rowsearch_store::ErrorKind::UnknownConsumer {
            name: name.to_owned(),
        })))
    }
}
