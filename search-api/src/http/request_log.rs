//! One log line per request (`tracing`, target `rowsearch::request`):
//! method, route, status, duration, request id and the key's uid (never
//! the key); at `WARN` when it took longer than the slow-request mark. The
//! request id is the client's `X-Request-Id` when it is a sane one (1-64
//! of `A-Z a-z 0-9 . _ -`), else one made here, and comes back in the
//! answer's `X-Request-Id`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use warp::http::{HeaderValue, Request};

/// The header a request id travels in, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// What a route tells the log about the request it answered (a response
/// extension): its name in the route table and the key's uid.
#[derive(Debug, Clone, Default)]
pub(crate) struct Logged {
    pub route: &'static str,
    pub key: Option<String>,
}

/// The service that logs every request of `inner`.
#[derive(Clone)]
pub(super) struct RequestLog<S> {
    pub inner: S,
    /// Requests slower than this are logged at `WARN`.
    pub slow: Duration,
}

/// Request ids made here: a per-process random start and a counter.
fn next_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_or(u64::from(std::process::id()), |()| u64::from_le_bytes(bytes))
    });
    format!("{:016x}", start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)))
}

fn sane(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl<S, B> tower_service::Service<Request<B>> for RequestLog<S>
where
    S: tower_service::Service<Request<B>, Response = warp::reply::Response>,
    S::Future: Send + 'static,
{
    type Response = warp::reply::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<warp::reply::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let id = match request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()) {
            Some(given) if sane(given) => given.to_owned(),
            _ => next_id(),
        };
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let slow = self.slow;
        let answer = self.inner.call(request);
        Box::pin(async move {
            // Logged if the answer is dropped unfinished: its client left.
            let mut gone = Gone { id: Some(id.clone()), method: method.clone(), path: path.clone(), started };
            let mut response = answer.await?;
            gone.id = None;
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(REQUEST_ID, value);
            }
            let logged = response.extensions().get::<Logged>().cloned().unwrap_or_default();
            let took = started.elapsed();
            let ms = took.as_secs_f64() * 1e3;
            let status = response.status().as_u16();
            // Refused before its route ran (a parameter check): named from
            // the route table.
            let route = match logged.route {
                "" => super::route_table::route_name(method.as_str(), &path).unwrap_or("-"),
                route => route,
            };
            let key = logged.key.as_deref().unwrap_or("-");
            if took >= slow {
                tracing::warn!(target: "rowsearch::request", request_id = %id, method = %method, route, status, duration_ms = ms, key, slow = true, "slow request");
            } else {
                tracing::info!(target: "rowsearch::request", request_id = %id, method = %method, route, status, duration_ms = ms, key, "request");
            }
            Ok(response)
        })
    }
}

/// A request in flight; when dropped with its id still set, the client
/// left before the answer and the log says so (status 499, as nginx
/// logs it).
struct Gone {
    id: Option<String>,
    method: warp::http::Method,
    path: String,
    started: Instant,
}

impl Drop for Gone {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let route = super::route_table::route_name(self.method.as_str(), &self.path).unwrap_or("-");
        let ms = self.started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(target: "rowsearch::request", request_id = %id, method = %self.method, route, status = 499u16, duration_ms = ms, gone = true, "client left before the answer");
    }
}

/// Installs the log for this process on stderr: `json` (one object per
/// line) or `text`. Once per process; a second call does nothing.
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(tracing::Level::INFO);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `TIME LEVEL target: message key=value ...`.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`,
    /// `message` and the fields.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_checked_and_made_unique() {
        assert!(sane("abc-1.2_3") && !sane("") && !sane("a b") && !sane(&"x".repeat(65)) && !sane("é"));
        let (a, b) = (next_id(), next_id());
        assert!(a != b && sane(&a) && a.len() == 16);
    }
}
