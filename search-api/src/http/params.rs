//! Request parameters, in one place: the query string and its typed
//! values, byte strings in the request's encoding, keys from the path, read
//! options, JSON bodies, and the warp filters that extract them.

use rowsearch_store::{ALL_VERSIONS, Column, IndexQuery, ReadOptions};
use serde_json::Value;

use super::error::{ApiError, Refusal};
use super::param_spec::{Kind, Param};
use crate::json::Encoding;

/// The declaration of `name` among `declared`.
fn find(declared: &'static [Param], name: &str) -> Option<&'static Param> {
    declared.iter().find(|p| p.name == name)
}

/// The query string as (name, value) pairs, decoded and checked against
/// the route's declared parameters (`param_spec.rs`).
#[derive(Debug, Default, Clone)]
pub struct Params {
    pairs: Vec<(String, String)>,
    declared: &'static [Param],
}

impl Params {
    /// Parses a raw query string (`application/x-www-form-urlencoded`),
    /// byte-exact: a byte-string parameter ([`Kind::takes_bytes`]) keeps
    /// bytes that are not UTF-8 (written as `\xNN` in the binary-string
    /// text its decoder reads), a text parameter with them is refused,
    /// never silently changed. A name the route does not take keeps its
    /// bytes too, to be refused by name.
    fn parse(raw: &str, declared: &'static [Param]) -> Result<Params, ApiError> {
        let mut pairs = Vec::new();
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = String::from_utf8(form_decode(name)).map_err(|_| {
                ApiError::from(Refusal::InvalidQueryString(format!("parameter name {name:?} is not UTF-8")))
            })?;
            let value = match String::from_utf8(form_decode(value)) {
                Ok(value) => value,
                Err(e) if find(declared, &name).is_none_or(|p| p.kind.takes_bytes()) => {
                    escape_non_utf8(e.as_bytes())
                }
                Err(_) => {
                    return Err(Refusal::InvalidQueryString(format!(
                        "{name}: its value is not UTF-8 once percent-decoded, and {name} is text \
                         (only byte-string parameters such as start, stop, prefix, eq and columns take any bytes)"
                    ))
                    .into());
                }
            };
            pairs.push((name, value));
        }
        Ok(Params { pairs, declared })
    }

    /// The parameters, when every name is declared, each is given once but
    /// for lists (a second `min_ts` is a mistake, not a value to choose
    /// between), and each value has its kind's syntax.
    fn checked(self) -> Result<Params, ApiError> {
        let mut unknown: Vec<String> = Vec::new();
        for (name, _) in &self.pairs {
            if find(self.declared, name).is_none() && !unknown.contains(name) {
                unknown.push(name.clone());
            }
        }
        if !unknown.is_empty() {
            let known = self.declared.iter().map(|p| p.name).collect();
            return Err(Refusal::UnknownParameter { unknown, known }.into());
        }
        // Repetition first: `min_ts=j&min_ts=5` is two values for one.
        for (i, (name, _)) in self.pairs.iter().enumerate() {
            let repeats = find(self.declared, name).is_some_and(|p| p.kind.repeats());
            if !repeats && self.pairs[..i].iter().any(|(seen, _)| seen == name) {
                return Err(ApiError::bad_request(format!(
                    "{name} is given more than once; it takes one value"
                )));
            }
        }
        for (name, value) in &self.pairs {
            if let Some(param) = find(self.declared, name) {
                param.kind.check(name, value).map_err(ApiError::bad_request)?;
            }
        }
        Ok(self)
    }

    /// The value of `name`, one of its declared [`Kind::Choice`] values;
    /// the first when it is not given.
    pub(super) fn choice(&self, name: &str) -> &str {
        match (self.get(name), find(self.declared, name).map(|p| p.kind)) {
            (Some(v), _) => v,
            (None, Some(Kind::Choice(values))) => values.first().copied().unwrap_or_default(),
            (None, _) => "",
        }
    }

    /// The last value of `name`.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order.
    pub(super) fn all(&self, name: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// `name` as a number.
    pub(super) fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<T>().map_err(|_| ApiError::bad_request(format!("{name}: not a number: {v:?}")))
            })
            .transpose()
    }

    /// `name` as a flag (`true`, `1` or empty; `false` or `0`).
    pub(super) fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") | Some("") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!("{name}: expected true or false, got {v:?}"))),
        }
    }

    /// `name` as a byte string in the request's encoding.
    pub(super) fn bytes(&self, name: &str) -> Result<Option<Vec<u8>>, ApiError> {
        let enc = self.encoding()?;
        self.get(name).map(|v| binary(enc, name, v)).transpose()
    }

    /// `encoding=binary|base64|hex`: how every byte string of the request
    /// and the response is written.
    pub(super) fn encoding(&self) -> Result<Encoding, ApiError> {
        Encoding::parse(self.get("encoding")).map_err(ApiError::bad_request)
    }
}

/// One name or value of a query string: `+` is a space, `%XX` a byte.
fn form_decode(text: &str) -> Vec<u8> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).collect()
}

/// Bytes as binary-string text: UTF-8 runs as they are, every other byte
/// as `\xNN` (which the binary-string decoder reads back as that byte).
fn escape_non_utf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A byte string in encoding `enc`; `what` names it in the error.
pub(super) fn binary(enc: Encoding, what: &str, text: &str) -> Result<Vec<u8>, ApiError> {
    enc.decode(text).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))
}

/// A key from a URL path segment: percent-encoded bytes.
pub(super) fn path_key(segment: &str) -> Result<Vec<u8>, ApiError> {
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

/// `columns` values (each a comma-separated list) as column selections.
pub(super) fn columns_of(enc: Encoding, list: &[&str]) -> Result<Vec<Column>, ApiError> {
    let mut out = Vec::new();
    for item in list {
        for c in item.split(',').filter(|c| !c.is_empty()) {
            out.push(Column::parse(&binary(enc, "columns", c)?));
        }
    }
    Ok(out)
}

/// `columns`, `versions`, `min_ts` and `max_ts`.
pub(super) fn read_options(p: &Params) -> Result<ReadOptions, ApiError> {
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
        ..ReadOptions::default()
    })
}

/// An index lookup's `eq`, `prefix`, `start`, `stop`, `limit` (at most
/// `max_limit`), `cursor` and `region`.
pub(super) fn index_query(p: &Params, max_limit: usize) -> Result<IndexQuery, ApiError> {
    let limit = p.number::<usize>("limit")?.unwrap_or(100);
    if limit > max_limit {
        return Err(ApiError::bad_request(format!("limit is at most {max_limit}")));
    }
    Ok(IndexQuery {
        eq: p.all("eq").iter().map(|v| binary(p.encoding()?, "eq", v)).collect::<Result<_, _>>()?,
        prefix: p.bytes("prefix")?,
        start: p.bytes("start")?,
        stop: p.bytes("stop")?,
        limit: Some(limit),
        cursor: p.get("cursor").map(str::to_owned),
        region: p.number("region")?,
    })
}

/// A JSON request body as `T`.
/// A field the body's type does not have is a 400 `unknown_parameter`
/// naming it, like an unknown query parameter.
pub(super) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(json_error)
}

/// A request body's JSON error as the API says it (an unknown field is
/// `unknown_parameter`).
pub(super) fn json_error(e: serde_json::Error) -> ApiError {
    let message = e.to_string();
    match message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')) {
        Some((field, rest)) => Refusal::UnknownField {
            field: field.to_owned(),
            detail: rest.trim_start_matches(", ").to_owned(),
        }
        .into(),
        None => ApiError::bad_request(format!("request body: {message}")),
    }
}

/// A scan's JSON body as query parameters (`columns` may be a list); its
/// fields must be among `declared`, with their kinds' JSON types.
pub(super) fn params_from_json(body: &[u8], declared: &'static [Param]) -> Result<Params, ApiError> {
    let value: serde_json::Map<String, Value> = parse_json(body)?;
    let mut pairs = Vec::new();
    for (k, v) in value {
        let Some(param) = find(declared, &k) else {
            // Refused by name below, whatever its value.
            pairs.push((k, String::new()));
            continue;
        };
        let expected =
            |what: &str, got: &Value| ApiError::bad_request(format!("{k}: expected {what}, got {got}"));
        match (JsonKind::of(param.kind), v) {
            // null: as if the field were absent.
            (_, Value::Null) => {}
            (JsonKind::Text, Value::String(s)) => pairs.push((k, s)),
            (JsonKind::Texts, Value::String(s)) => pairs.push((k, s)),
            (JsonKind::Texts, Value::Array(items)) => {
                for item in items {
                    match item {
                        Value::String(s) => pairs.push((k.clone(), s)),
                        other => return Err(expected("strings", &other)),
                    }
                }
            }
            (JsonKind::Integer | JsonKind::Versions, Value::Number(n)) if n.is_u64() => {
                pairs.push((k, n.to_string()));
            }
            (JsonKind::Flag, Value::Bool(b)) => pairs.push((k, b.to_string())),
            // A number or a flag may come as its text, as in a query string.
            (JsonKind::Integer | JsonKind::Flag | JsonKind::Versions, Value::String(s)) => pairs.push((k, s)),
            (JsonKind::Object, v @ Value::Object(_)) => pairs.push((k, v.to_string())),
            (kind, other) => return Err(expected(kind.what(), &other)),
        }
    }
    Params { pairs, declared }.checked()
}

/// How a parameter is written in a JSON body (`POST .../scan`): its JSON
/// type, which the OpenAPI document states too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonKind {
    /// A string.
    Text,
    /// A string or an array of strings.
    Texts,
    /// A non-negative integer, or its decimal text.
    Integer,
    /// `true` or `false`, or their text.
    Flag,
    /// A number of versions (an integer or its text) or `"all"`.
    Versions,
    /// A JSON object.
    Object,
}

impl JsonKind {
    /// The JSON kind of a parameter of `kind`.
    pub(super) fn of(kind: Kind) -> JsonKind {
        match kind {
            Kind::Integer { .. } => JsonKind::Integer,
            Kind::Flag => JsonKind::Flag,
            Kind::Object => JsonKind::Object,
            Kind::Versions => JsonKind::Versions,
            Kind::BytesList | Kind::TextList | Kind::Lookups => JsonKind::Texts,
            _ => JsonKind::Text,
        }
    }

    fn what(self) -> &'static str {
        match self {
            JsonKind::Text => "a string",
            JsonKind::Texts => "a string or an array of strings",
            JsonKind::Integer => "a non-negative integer or its text",
            JsonKind::Flag => "true or false (or their text)",
            JsonKind::Object => "a JSON object",
            JsonKind::Versions => "a positive integer or \"all\"",
        }
    }
}

/// The query string (empty when absent), parsed and checked against the
/// route's `declared` parameters (a misspelt `limt=1` must not scan the
/// whole table).
pub(super) fn params(
    declared: &'static [Param],
) -> impl warp::Filter<Extract = (Params,), Error = warp::Rejection> + Clone {
    use warp::Filter as _;
    warp::query::raw().or(warp::any().map(String::new)).unify().and_then(move |raw: String| async move {
        Params::parse(&raw, declared).and_then(Params::checked).map_err(|e| warp::reject::custom(Rejected(e)))
    })
}

/// A query string that must name none but `declared` (routes that read
/// none: any parameter is a mistake).
pub(super) fn no_params(
    declared: &'static [Param],
) -> impl warp::Filter<Extract = (), Error = warp::Rejection> + Clone {
    use warp::Filter as _;
    params(declared).map(|_| ()).untuple_one()
}

/// Whether a `Content-Type` names JSON: `application/json`, parameters
/// (`; charset=utf-8`) allowed.
fn is_json(content_type: &str) -> bool {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json")
}

/// A request body, JSON by its `Content-Type` (415 otherwise, and without
/// one: a web page's form or plain-text post must not write through a
/// server on loopback), within the size limit (413 past it, read no
/// further: a `Content-Length` over it is refused before reading, a
/// chunked body as soon as it passes it) and the time limit (408).
/// What a request body is read within: its own limit, the time it may
/// take, and the server-wide budget of bodies in flight (KiB permits).
#[derive(Clone)]
pub(super) struct BodyRules {
    pub max: u64,
    pub timeout: std::time::Duration,
    pub budget: std::sync::Arc<tokio::sync::Semaphore>,
    pub budget_bytes: u64,
}

/// A body's bytes with its share of the budget, given back when the last
/// handle on the bytes is dropped (the request is done with them).
struct Budgeted {
    bytes: bytes::Bytes,
    _share: tokio::sync::OwnedSemaphorePermit,
}

impl AsRef<[u8]> for Budgeted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

pub(super) fn body(
    rules: BodyRules,
) -> impl warp::Filter<Extract = (bytes::Bytes,), Error = warp::Rejection> + Clone {
    use warp::Filter as _;
    warp::header::optional::<String>("content-type")
        .and_then(|ct: Option<String>| async move {
            let refusal = match ct {
                Some(ct) if is_json(&ct) => return Ok(()),
                Some(ct) => format!("content type {ct:?}: send application/json"),
                None => "no content type: send application/json".to_owned(),
            };
            Err(warp::reject::custom(Rejected(Refusal::UnsupportedMediaType(refusal).into())))
        })
        .untuple_one()
        .and(warp::header::optional::<u64>("content-length"))
        .and(warp::body::stream())
        .and_then(move |length: Option<u64>, stream| read_body(length, stream, rules.clone()))
}

/// Reads a body within `rules`: its share of the budget of bodies in
/// flight is taken before a byte is read (the whole length when known,
/// else chunk by chunk), waiting up to half the body's time; a body that
/// cannot have it is refused 503 `busy` unread.
async fn read_body<B: bytes::Buf>(
    length: Option<u64>,
    stream: impl futures_util::Stream<Item = Result<B, warp::Error>>,
    rules: BodyRules,
) -> Result<bytes::Bytes, warp::Rejection> {
    use futures_util::StreamExt as _;
    let (max, timeout) = (rules.max, rules.timeout);
    let refuse = |refusal: Refusal| warp::reject::custom(Rejected(refusal.into()));
    if length.is_some_and(|l| l > max) {
        return Err(refuse(Refusal::BodyTooLarge(max)));
    }
    // One that can never have its share is refused at once, not after
    // waiting for a share that does not exist.
    let budget_bytes = rules.budget_bytes;
    if length.is_some_and(|l| l > budget_bytes) {
        return Err(refuse(Refusal::BodyPastBudget(budget_bytes)));
    }
    let kib = |bytes: u64| u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX);
    let take = |bytes: u64| {
        let budget = std::sync::Arc::clone(&rules.budget);
        let busy = rules.budget_bytes;
        async move {
            // Half the body's time: a body that waited it all would not
            // arrive in time anyway.
            match tokio::time::timeout(timeout / 2, budget.acquire_many_owned(kib(bytes))).await {
                Ok(Ok(share)) => Ok(share),
                _ => Err(refuse(Refusal::BodiesBusy(busy))),
            }
        }
    };
    let mut share = take(length.unwrap_or(0)).await?;
    let mut granted = u64::from(kib(length.unwrap_or(0))) * 1024;
    let read = async move {
        let mut stream = std::pin::pin!(stream);
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = stream.next().await {
            let mut chunk = chunk.map_err(|e| refuse(Refusal::BadRequest(format!("request body: {e}"))))?;
            if body.len() as u64 + chunk.remaining() as u64 > max {
                return Err(refuse(Refusal::BodyTooLarge(max)));
            }
            let need = body.len() as u64 + chunk.remaining() as u64;
            if need > budget_bytes {
                return Err(refuse(Refusal::BodyPastBudget(budget_bytes)));
            }
            if need > granted {
                // A body of no stated length (chunked): its share grows
                // with it, at least 64 KiB at a time.
                let more = (need - granted).max(64 << 10);
                // Past the whole budget (as the permits count it): it can
                // never have its share.
                if (granted + u64::from(kib(more)) * 1024).div_ceil(1024) > budget_bytes.div_ceil(1024) {
                    return Err(refuse(Refusal::BodyPastBudget(budget_bytes)));
                }
                share.merge(take(more).await?);
                granted += u64::from(kib(more)) * 1024;
            }
            while chunk.has_remaining() {
                let part = chunk.chunk();
                let n = part.len();
                body.extend_from_slice(part);
                chunk.advance(n);
            }
        }
        Ok(bytes::Bytes::from_owner(Budgeted { bytes: body.freeze(), _share: share }))
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(refuse(Refusal::BodyTimeout(timeout.as_millis()))),
    }
}

/// An [`ApiError`] raised by a filter.
#[derive(Debug)]
pub struct Rejected(pub ApiError);
impl warp::reject::Reject for Rejected {}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http::param_spec as spec;

    const DECLARED: &[Param] = &[spec::START, spec::PREFIX, spec::QUERY, spec::EQ, spec::REVERSE];

    #[test]
    fn query_strings_are_byte_exact() {
        let p = Params::parse("start=a%FFb&prefix=%00&q=caf%C3%A9+au+lait&eq=x%2By", DECLARED).unwrap();
        assert_eq!(p.get("start"), Some("a\\xffb"));
        assert_eq!(p.bytes("start").unwrap(), Some(b"a\xffb".to_vec()));
        assert_eq!(p.bytes("prefix").unwrap(), Some(vec![0]));
        assert_eq!(p.get("q"), Some("café au lait"));
        assert_eq!(p.bytes("eq").unwrap(), Some(b"x+y".to_vec()));
        // A text parameter with bytes that are not UTF-8 is refused.
        let err = Params::parse("q=caf%E9", DECLARED).unwrap_err();
        assert_eq!(err.code, "invalid_query_string");
        assert!(err.message.contains("q: its value is not UTF-8"), "{}", err.message);
        // Unless the route takes it as bytes.
        assert_eq!(Params::parse("q=%E9", &[spec::LOOKUPS]).unwrap().get("q"), Some("\\xe9"));
        // A name the route does not take is refused by name, whatever its bytes.
        let err = Params::parse("limt=%E9", DECLARED).and_then(Params::checked).unwrap_err();
        assert_eq!(err.code, "unknown_parameter");
    }

    /// The declarations decide what repeats and each value's syntax.
    #[test]
    fn values_are_checked_against_their_declarations() {
        let checked = |raw| Params::parse(raw, DECLARED).and_then(Params::checked);
        assert!(checked("eq=a&eq=b&reverse=1").is_ok());
        assert!(checked("start=a&start=b").unwrap_err().message.contains("given more than once"));
        assert!(checked("reverse=j&reverse=1").unwrap_err().message.contains("given more than once"));
        assert!(checked("reverse=yes").unwrap_err().message.contains("expected true or false"));
        let modes: &'static [Param] = &[spec::MODE];
        let p = Params::parse("", modes).and_then(Params::checked).unwrap();
        assert_eq!(p.choice("mode"), "auto");
        let err = Params::parse("mode=fast", modes).and_then(Params::checked).unwrap_err();
        assert_eq!(err.message, "mode \"fast\": auto, full or incremental");
    }

    #[test]
    fn only_json_is_json() {
        for ct in ["application/json", "Application/JSON", "application/json; charset=utf-8"] {
            assert!(is_json(ct), "{ct}");
        }
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
            "text/json",
            "",
        ] {
            assert!(!is_json(ct), "{ct}");
        }
    }
}
