//! The Thrift gateway's server: connections accepted on their own
//! listener beside HTTP, each read call by call (`transport.rs`), each
//! call run off the async workers (`hbase.rs` over the store), the reply
//! written back. Bounded: connections at once, idle time, scanners per
//! connection, message size.

use std::sync::Arc;
use std::time::Duration;

use rowsearch_store::Store;
use tokio::net::TcpListener;

use super::codec::{Limits, Message, MessageType, Value};
use super::hbase::{Gateway, reply_body};
use super::hbase_types::HbaseError;
use super::scanners::Session;
use super::thbase::{self, Thrift2};
use super::transport::{Connection, ReadBudget};

/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 256;

/// Bytes of messages being read, across connections, past each one's
/// first 64 KiB (see `ReadBudget`): 4 messages at the 16 MiB limit.
const READ_BUDGET: usize = 64 << 20;

/// A connection idle this long between calls is closed.
const IDLE: Duration = Duration::from_secs(300);

/// What the server tells of each call: the method (or `unknown`) and its
/// outcome (`ok`, `io_error`, `illegal_argument`, `already_exists`,
/// `application`).
pub type CallObserver = Arc<dyn Fn(&str, &'static str) + Send + Sync>;

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

/// A service: its calls over a connection's session, and their replies.
pub(crate) enum Service {
    Hbase(Gateway),
    Thrift2(Thrift2),
}

impl Service {
    fn call(
        &self,
        session: &mut Session,
        method: &str,
        args: &Value,
    ) -> Option<Result<Option<Value>, HbaseError>> {
        match self {
            Service::Hbase(g) => g.call(session, method, args),
            Service::Thrift2(t) => t.call(session, method, args),
        }
    }

    fn reply(&self, method: &str, outcome: Result<Option<Value>, HbaseError>) -> Value {
        match self {
            Service::Hbase(_) => reply_body(method, outcome),
            Service::Thrift2(_) => thbase::reply_body(method, outcome),
        }
    }

    /// The method's name in metrics.
    fn label(&self, method: &str) -> String {
        match self {
            Service::Hbase(_) => method.to_owned(),
            Service::Thrift2(_) => format!("thrift2.{method}"),
        }
    }
}

/// Serves `api` on `listener` over `store`, until the runtime stops,
/// telling `observe` of each call.
pub async fn serve(listener: TcpListener, store: Arc<Store>, api: Api, observe: CallObserver) {
    let gateway = Arc::new(match api {
        Api::Hbase => Service::Hbase(Gateway::new(store)),
        Api::Thrift2 => Service::Thrift2(Thrift2::new(store)),
    });
    let budget = ReadBudget::new(READ_BUDGET);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else { return };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                eprintln!("thrift: accept failed: {e}");
                continue;
            }
        };
        // Replies are whole messages: send each at once.
        let _ = stream.set_nodelay(true);
        let (gateway, observe, budget) = (Arc::clone(&gateway), Arc::clone(&observe), Arc::clone(&budget));
        tokio::spawn(async move {
            let _permit = permit;
            // A connection that ends on bad bytes or idleness ends alone.
            let _ = (peer, connection(stream, gateway, observe, budget).await);
        });
    }
}

/// One connection, call after call.
async fn connection(
    stream: tokio::net::TcpStream,
    gateway: Arc<Service>,
    observe: CallObserver,
    budget: Arc<ReadBudget>,
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
        let oneway = call.kind == MessageType::Oneway;
        let (name, seq) = (call.name.clone(), call.seq);
        let g = Arc::clone(&gateway);
        let mut s = session.take().unwrap_or_default();
        let (s, outcome) = tokio::task::spawn_blocking(move || {
            let outcome = g.call(&mut s, &call.name, &call.body);
            (s, outcome)
        })
        .await
        .map_err(|e| format!("a call failed: {e}"))?;
        session = Some(s);
        match &outcome {
            None => observe("unknown", "application"),
            Some(Ok(_)) => observe(&gateway.label(&name), "ok"),
            Some(Err(e)) => observe(&gateway.label(&name), e.label()),
        }
        if oneway {
            continue;
        }
        let reply = match outcome {
            Some(outcome) => Message {
                name: name.clone(),
                kind: MessageType::Reply,
                seq,
                body: gateway.reply(&name, outcome),
            },
            // TApplicationException UNKNOWN_METHOD (1).
            None => Message {
                name: name.clone(),
                kind: MessageType::Exception,
                seq,
                body: Value::Struct(vec![
                    (
                        1,
                        Value::Binary(
                            format!("method {name} is not served by rowsearch's Thrift gateway").into_bytes(),
                        ),
                    ),
                    (2, Value::I32(1)),
                ]),
            },
        };
        conn.send(&reply).await.map_err(|e| e.to_string())?;
    }
}
