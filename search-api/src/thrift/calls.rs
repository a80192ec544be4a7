//! One call to a gateway, whatever carried it (a socket transport,
//! `server.rs`; HTTP, `http.rs`): the service that runs it, off the async
//! workers, and its reply.

use std::sync::Arc;

use super::codec::{Message, MessageType, Value};
use super::hbase::{Gateway, reply_body};
use super::hbase_types::HbaseError;
use super::scanners::Session;
use super::thbase::{self, Thrift2};

/// Most bytes of an unknown method's name said back in its exception.
const NAME_ECHO: usize = 64;

/// What the server tells of each call: the method (or `unknown`) and its
/// outcome (`ok`, `io_error`, `illegal_argument`, `already_exists`,
/// `application`).
pub type CallObserver = Arc<dyn Fn(&str, &'static str) + Send + Sync>;

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

/// The method's name as an answer may say it: at most [`NAME_ECHO`]
/// bytes (a client's 15 MiB name is not written back).
fn echoed(name: &str) -> String {
    if name.len() <= NAME_ECHO {
        return name.to_owned();
    }
    let mut end = NAME_ECHO;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &name[..end])
}

/// Runs one call off the async workers (with the connection's `session`)
/// and makes its reply: `None` for a oneway call.
pub(super) async fn answer(
    gateway: &Arc<Service>,
    observe: &CallObserver,
    mut session: Session,
    call: Message,
) -> Result<(Session, Option<Message>), String> {
    let oneway = call.kind == MessageType::Oneway;
    let (name, seq) = (call.name.clone(), call.seq);
    let g = Arc::clone(gateway);
    let (session, outcome) = tokio::task::spawn_blocking(move || {
        let outcome = g.call(&mut session, &call.name, &call.body);
        (session, outcome)
    })
    .await
    .map_err(|e| format!("a call failed: {e}"))?;
    match &outcome {
        None => observe("unknown", "application"),
        Some(Ok(_)) => observe(&gateway.label(&name), "ok"),
        Some(Err(e)) => observe(&gateway.label(&name), e.label()),
    }
    if oneway {
        return Ok((session, None));
    }
    let reply = match outcome {
        Some(outcome) => {
            Message { name: name.clone(), kind: MessageType::Reply, seq, body: gateway.reply(&name, outcome) }
        }
        // TApplicationException UNKNOWN_METHOD (1), naming the method
        // within bounds.
        None => Message {
            name: echoed(&name),
            kind: MessageType::Exception,
            seq,
            body: Value::Struct(vec![
                (
                    1,
                    Value::Binary(
                        format!("method {} is not served by rowsearch's Thrift gateway", echoed(&name))
                            .into_bytes(),
                    ),
                ),
                (2, Value::I32(1)),
            ]),
        },
    };
    Ok((session, Some(reply)))
}
