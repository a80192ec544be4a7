//! Thrift over HTTP, as HBase's gateways offer it (their `-http` option)
//! and HBase's Java client speaks it (`ThriftConnection` with its
//! `HTTPThriftClientBuilder`): each call is a `POST` whose body is one
//! message in the binary protocol; the reply is the response's body
//! (`application/x-thrift`). A connection is told apart from the socket
//! transports by its first byte (`P`). Scanner ids live for one request
//! (HBase's Java client over HTTP reads with `getScannerResults`, which
//! opens, reads and closes in one call).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

use super::calls::{CallObserver, Service, answer};
use super::codec::{self, Limits, MessageType, Protocol};
use super::scanners::Session;

/// Serves one HTTP connection's calls.
pub(super) async fn connection(
    stream: tokio::net::TcpStream,
    gateway: Arc<Service>,
    observe: CallObserver,
    idle: std::time::Duration,
) -> Result<(), String> {
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (gateway, observe) = (Arc::clone(&gateway), Arc::clone(&observe));
        async move { Ok::<_, Infallible>(call(&gateway, &observe, request).await) }
    });
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(stream), service)
        .await
        .map_err(|e| e.to_string())
}

fn plain(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message)));
    *response.status_mut() = status;
    response
}

async fn call(
    gateway: &Arc<Service>,
    observe: &CallObserver,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    if request.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "Thrift over HTTP: POST a call".into());
    }
    let limits = Limits::default();
    let body = match Limited::new(request.into_body(), limits.max_message_bytes).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return plain(StatusCode::PAYLOAD_TOO_LARGE, format!("the call's body: {e}")),
    };
    let message = match codec::decode(Protocol::Binary, &body, &limits) {
        Ok((message, _)) if matches!(message.kind, MessageType::Call | MessageType::Oneway) => message,
        Ok((message, _)) => {
            return plain(StatusCode::BAD_REQUEST, format!("a {:?} message from a client", message.kind));
        }
        Err(e) => {
            return plain(StatusCode::BAD_REQUEST, format!("not a Thrift call in the binary protocol: {e}"));
        }
    };
    match answer(gateway, observe, Session::default(), message).await {
        Ok((_, reply)) => {
            let bytes = reply.map(|r| codec::encode(Protocol::Binary, &r)).unwrap_or_default();
            let mut response = Response::new(Full::new(Bytes::from(bytes)));
            response
                .headers_mut()
                .insert("content-type", hyper::header::HeaderValue::from_static("application/x-thrift"));
            response
        }
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
