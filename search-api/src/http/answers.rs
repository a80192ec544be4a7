//! Answers waiting to be sent share a server-wide budget.
//!
//! An answer is in memory from the moment its work ends until the client
//! has read it. A client that asks and never reads (an HTTP/1.1
//! connection that does not read its socket, an HTTP/2 stream whose flow
//! window stays shut) would hold it for as long as it keeps the
//! connection: 300 such connections held 2 GB. So an answer larger than
//! [`SMALL`] takes its size from a budget (`serve --max-answers-bytes`,
//! KiB permits) before it is handed to hyper, and gives it back when its
//! last byte has gone to the socket or the connection is gone; an answer
//! that does not fit is replaced by a 503 `busy` (the work is done, the
//! client may retry). The answer goes out in [`CHUNK`] slices of the same
//! bytes, so hyper copies at most its write buffer's worth at a time (the
//! rest stays in the budgeted bytes) and a `Content-Length` still frames
//! it. Small answers (errors, single rows, most searches) are sent as they
//! are: each connection's write buffer bounds what they hold.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use warp::Reply as _;
use warp::http::{HeaderValue, header};
use warp::reply::Response;

use super::error::{ApiError, Refusal};

/// Answers up to this size are sent without taking from the budget.
pub(super) const SMALL: usize = 64 << 10;
/// The slices a budgeted answer is handed to hyper in.
const CHUNK: usize = 64 << 10;

/// The bytes of an answer with their share of the budget, given back when
/// the last slice of them is dropped.
struct Held {
    bytes: Bytes,
    _share: Option<OwnedSemaphorePermit>,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// `response` with its body held within `budget` (KiB permits of a budget
/// of `budget_bytes`), or a 503 `busy` when it does not fit, unless it
/// `must_go` (a write's answer says what was written: it goes, outside the
/// budget when the budget is spent).
pub(super) async fn held(
    response: Response,
    budget: &Arc<Semaphore>,
    budget_bytes: u64,
    must_go: bool,
) -> Response {
    let (mut parts, body) = response.into_parts();
    // The routes' bodies are whole already: this takes them as they are.
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return ApiError::from(Refusal::Internal(format!("answer body: {e}"))).into_response(),
    };
    if bytes.len() <= SMALL {
        return Response::from_parts(parts, bytes.into());
    }
    let kib = u32::try_from(bytes.len().div_ceil(1024)).unwrap_or(u32::MAX);
    let share = match Arc::clone(budget).try_acquire_many_owned(kib) {
        Ok(share) => Some(share),
        Err(_) if must_go => None,
        Err(_) => return ApiError::from(Refusal::AnswersBusy(budget_bytes)).into_response(),
    };
    let len = bytes.len();
    let owner = Bytes::from_owner(Held { bytes, _share: share });
    let slices: Vec<Result<Bytes, std::convert::Infallible>> =
        (0..len).step_by(CHUNK).map(|at| Ok(owner.slice(at..len.min(at + CHUNK)))).collect();
    drop(owner);
    let body = warp::reply::stream(futures_util::stream::iter(slices)).into_response().into_body();
    parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    Response::from_parts(parts, body)
}

/// A budget of `bytes`, in KiB permits.
pub(super) fn budget(bytes: u64) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(
        usize::try_from(bytes.div_ceil(1024)).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS),
    ))
}
