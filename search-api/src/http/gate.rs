//! What every request passes before routing, whatever its route: HEAD
//! answered as GET, and the checks that protect a server on loopback from
//! pages elsewhere and requests that proxies may read otherwise.
//!
//! - **Host.** A page on `evil.example` whose name is re-pointed at
//!   127.0.0.1 (DNS rebinding) reaches a loopback server with `Host:
//!   evil.example`; its `Origin` then matches that Host, so the `Origin`
//!   check alone lets it in. A request is refused (403 `forbidden_host`),
//!   keyed or not, unless its host is a loopback name (`localhost`,
//!   `*.localhost`) or address, the address the server listens on, or one
//!   `serve --allow-host` lists (`*`: any), as Jupyter and Vite do.
//! - **Two `Host` headers**: 400. (`Content-Length` with
//!   `Transfer-Encoding` never reaches here: `framing.rs` has hyper refuse
//!   it.)

use std::sync::Arc;

use futures_util::future::{Either, Ready, ready};
use warp::Reply as _;
use warp::http::{Request, header};

use super::error::{ApiError, Refusal};
use super::hosts::HostRule;
use super::state::State;

/// Why a request is refused before routing, if it is.
fn check<B>(request: &Request<B>, rule: &HostRule) -> Option<Refusal> {
    let headers = request.headers();
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Some(Refusal::BadRequest("two Host headers".into()));
    }
    let host = match headers.get(header::HOST) {
        Some(h) => Some(h.to_str().map_err(|_| ()).ok()?),
        None => request.uri().authority().map(|a| a.as_str()),
    };
    // A request without any host (HTTP/1.0) comes from no browser.
    let host = host?;
    (!rule.admits(host)).then(|| Refusal::ForeignHost(host.to_owned()))
}

/// The service in front of the routes.
#[derive(Clone)]
pub(super) struct Gate<S> {
    pub inner: S,
    pub state: Arc<State>,
}

impl<S, B> tower_service::Service<Request<B>> for Gate<S>
where
    S: tower_service::Service<Request<B>, Response = warp::reply::Response>,
{
    type Response = warp::reply::Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<warp::reply::Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if let Some(refusal) = check(&request, &self.state.access.hosts) {
            self.state.metrics.refused(refusal.status().1);
            return Either::Left(ready(Ok(ApiError::from(refusal).into_response())));
        }
        // HEAD is answered as GET without the body, as HTTP requires of a
        // server that answers GET (RFC 9110, 9.3.2): the routes see a GET,
        // and hyper, which knows it was a HEAD, sends the headers
        // (`Content-Length` included) and leaves the body out.
        if request.method() == warp::http::Method::HEAD {
            *request.method_mut() = warp::http::Method::GET;
        }
        Either::Right(self.inner.call(request))
    }
}
