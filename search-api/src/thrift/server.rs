//! The Thrift gateway's server: connections accepted on their own
//! listener beside HTTP, each read call by call (`transport.rs`), each
//! call run off the async workers (`hbase.rs` over the store), the reply
//! written back. Bounded: connections at once and per client address,
//! idle time, scanners per connection, message size, and the bytes of
//! replies waiting for their clients to read them (a client that does not
//! read its reply in time is closed, freeing it).

use std::sync::Arc;
use std::time::Duration;

use rowsearch_store::Store;
use tokio::net::TcpListener;

use super::calls::{Service, answer};
use super::codec::{Limits, MessageType};
use super::hbase::Gateway;
use super::scanners::Session;
use super::thbase::Thrift2;
use super::transport::{Connection, ReadBudget};
use crate::client_slots::{ClientSlot, Clients};

/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 256;

/// Connections one client address holds at once; more are closed as they
/// come, so silent connections from one client do not lock others out.
const MAX_CONNECTIONS_PER_CLIENT: usize = 32;

/// Bytes of replies being written, across connections (KiB permits): a
/// reply waits for its share, then has [`SEND_TIME`] to be read.
const ANSWER_BUDGET: usize = 64 << 20;

/// How long a reply may wait for its share of [`ANSWER_BUDGET`], and then
/// for the client to read it; past either the connection is closed.
const SEND_TIME: Duration = Duration::from_secs(30);

/// Bytes of messages being read, across connections, past each one's
/// first 64 KiB (see `ReadBudget`): 4 messages at the 16 MiB limit.
const READ_BUDGET: usize = 64 << 20;

/// A connection idle this long between calls (or this long reading one
/// call) is closed: HBase's Thrift server's read timeout.
const IDLE: Duration = Duration::from_secs(60);

pub use super::calls::CallObserver;

/// Which of HBase's Thrift services a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// The `Hbase` service of HBase's Thrift gateway (happybase, most
    /// generated clients).
    Hbase,
    /// `THBaseService`, HBase's Thrift2 gateway; its methods are counted
    /// as `thrift2.METHOD`.
    Thrift2,
}

/// Serves `api` on `listener` over `store`, until the runtime stops,
/// telling `observe` of each call.
pub async fn serve(listener: TcpListener, store: Arc<Store>, api: Api, observe: CallObserver) {
    let gateway = Arc::new(match api {
        Api::Hbase => Service::Hbase(Gateway::new(store)),
        Api::Thrift2 => Service::Thrift2(Thrift2::new(store)),
    });
    let budget = ReadBudget::new(READ_BUDGET);
    let answers = Arc::new(tokio::sync::Semaphore::new(ANSWER_BUDGET >> 10));
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let clients: Clients = Arc::default();
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else { return };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(target: "rowsearch::thrift", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(client_slot) = ClientSlot::take(&clients, peer.ip(), MAX_CONNECTIONS_PER_CLIENT) else {
            observe("connection", "refused_per_client");
            drop(stream);
            continue;
        };
        // Replies are whole messages: send each at once.
        let _ = stream.set_nodelay(true);
        let (gateway, observe, budget) = (Arc::clone(&gateway), Arc::clone(&observe), Arc::clone(&budget));
        let answers = Arc::clone(&answers);
        tokio::spawn(async move {
            let _permit = permit;
            let _client_slot = client_slot;
            // A connection that ends on bad bytes or idleness ends alone.
            // One whose first byte is `P` (a `POST`) is Thrift over HTTP;
            // the others a socket transport (transport.rs tells which).
            let mut first = [0u8; 1];
            match tokio::time::timeout(IDLE, stream.peek(&mut first)).await {
                Ok(Ok(1..)) if first[0] == b'P' => {
                    let _ = super::http::connection(stream, gateway, observe, IDLE).await;
                }
                Ok(Ok(1..)) => {
                    let _ = connection(stream, gateway, observe, budget, answers).await;
                }
                _ => {}
            }
        });
    }
}

/// One connection, call after call.
async fn connection(
    stream: tokio::net::TcpStream,
    gateway: Arc<Service>,
    observe: CallObserver,
    budget: Arc<ReadBudget>,
    answers: Arc<tokio::sync::Semaphore>,
) -> Result<(), String> {
    let mut conn = Connection::new(stream, Limits::default(), budget);
    let mut session = Some(Session::default());
    loop {
        let call = match tokio::time::timeout(IDLE, conn.next()).await {
            Err(_) => return Err("idle".into()),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(None)) => return Ok(()),
            Ok(Ok(Some(call))) => call,
        };
        if !matches!(call.kind, MessageType::Call | MessageType::Oneway) {
            return Err(format!("a {:?} message from a client", call.kind));
        }
        let (s, reply) = answer(&gateway, &observe, session.take().unwrap_or_default(), call).await?;
        session = Some(s);
        let Some(reply) = reply else { continue };
        let bytes = conn.encode(&reply);
        drop(reply);
        // The reply's share of the budget, held until it is written.
        let kib =
            u32::try_from(bytes.len().div_ceil(1024)).unwrap_or(u32::MAX).min(ANSWER_BUDGET as u32 >> 10);
        let share = match tokio::time::timeout(SEND_TIME, Arc::clone(&answers).acquire_many_owned(kib)).await
        {
            Ok(Ok(share)) => share,
            _ => return Err("the budget of replies stayed full".into()),
        };
        match tokio::time::timeout(SEND_TIME, conn.write(&bytes)).await {
            Ok(written) => written.map_err(|e| e.to_string())?,
            Err(_) => return Err("the client did not read its reply".into()),
        }
        drop(share);
    }
}
