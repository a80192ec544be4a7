//! Accepting connections: hyper with the warp routes as the service.

use std::sync::Arc;
use std::time::Duration;

use super::conn::Conn;
use super::gate::Gate;
use super::request_log::RequestLog;
use super::routes;
use super::state::State;
use crate::client_slots::{ClientSlot, Clients};

/// Most concurrent HTTP/2 streams (requests) on one connection.
pub const H2_MAX_STREAMS: u32 = 16;
/// Most bytes of an answer hyper buffers per HTTP/2 stream beyond what the
/// client's flow-control window takes.
const H2_SEND_BUFFER: usize = 64 << 10;

/// Serves the API on `listener` until `shutdown` completes, then stops
/// accepting and finishes the requests in flight.
///
/// Connections are served by hyper (HTTP/1.1 and HTTP/2) with the warp
/// routes as the service, and a timer, so a client that does not finish
/// sending its headers within
/// [`Limits::header_read_timeout`](super::Limits::header_read_timeout) is
/// disconnected; so is one that sends nothing at all in that time (hyper's
/// timer starts at the first byte), and a keep-alive connection on which
/// no next request starts within it. A connection on which nothing at all
/// is read or written for longer than a request, its body and its headers
/// may take is closed too (`conn.rs`). At most
/// [`Limits::max_connections`](super::Limits::max_connections) are open at
/// once: past that the server stops accepting until one closes, and the
/// operating system's backlog holds the rest, so idle clients cannot
/// exhaust its file descriptors.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let header_timeout = state.limits.header_read_timeout;
    // Nothing read or written for this long: the connection goes. Longer
    // than any request may run, so only idle and stalled ones are closed.
    let idle = state.limits.request_timeout + state.limits.body_read_timeout + header_timeout;
    let slots = Arc::new(tokio::sync::Semaphore::new(state.limits.max_connections.max(1)));
    let clients: Clients = Arc::default();
    let shared = Arc::clone(&state);
    let slow = state.limits.slow_request;
    let service =
        RequestLog { inner: Gate { inner: warp::service(routes::routes(Arc::clone(&state))), state }, slow };
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(target: "rowsearch::serve", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // One client (address) holds at most its share of the connections,
        // so a flood from one leaves room for the others' requests.
        let Some(client_slot) =
            ClientSlot::take(&clients, peer.ip(), shared.limits.max_connections_per_client)
        else {
            shared.metrics.refused("per_client_connections");
            drop(stream);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        let watcher = graceful.watcher();
        let state = Arc::clone(&shared);
        tokio::spawn(async move {
            // Held while the connection lives.
            let _slot = slot;
            let _client_slot = client_slot;
            // A client that sends nothing is closed like one that stops
            // half-way through its headers.
            let mut first = [0u8; 1];
            if !matches!(tokio::time::timeout(header_timeout, stream.peek(&mut first)).await, Ok(Ok(1..))) {
                state.metrics.connection_closed_idle();
                return;
            }
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout);
            // An HTTP/2 client holds at most this many answers at once on a
            // connection (each answer is in memory until sent; a client that
            // opens 200 streams and never reads held 2.3 GB on 3 of them).
            builder
                .http2()
                .timer(TokioTimer::new())
                .max_concurrent_streams(H2_MAX_STREAMS)
                .max_send_buf_size(H2_SEND_BUFFER)
                .keep_alive_interval(header_timeout)
                .keep_alive_timeout(header_timeout);
            let connection =
                builder.serve_connection_with_upgrades(TokioIo::new(Conn::new(stream, idle)), service);
            // A connection that ends badly (reset, timed out) concerns only it.
            let _ = watcher.watch(connection).await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
