//! Thrift's two transports, as HBase's gateway offers them, told apart by
//! a connection's first byte: buffered (messages back to back on the
//! stream, the protocol's own first byte: 0x80 binary, 0x82 compact) and
//! framed (each message behind a 4-byte big-endian length). Replies go
//! back the way the calls came. A message past the limit or bytes that are
//! no message end that connection only. The bytes of messages being read
//! are bounded across connections too ([`ReadBudget`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::codec::{self, DecodeError, Limits, Message, Protocol};

/// How a connection's messages are delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Back to back.
    Buffered,
    /// Each behind its length.
    Framed,
}

/// Why a connection ends.
#[derive(Debug)]
pub(crate) enum TransportError {
    /// The bytes are not messages (or are past a limit).
    Decode(DecodeError),
    /// The connection failed, or closed within a message.
    Io(std::io::Error),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Decode(e) => write!(f, "{e}"),
            TransportError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<std::io::Error> for TransportError {
    fn from(e: std::io::Error) -> Self {
        TransportError::Io(e)
    }
}

impl From<DecodeError> for TransportError {
    fn from(e: DecodeError) -> Self {
        TransportError::Decode(e)
    }
}

/// The bytes every connection's read buffer may hold beyond its first
/// [`READ_CHUNK`], together: with 256 connections each allowed a 16 MiB
/// message, the sum is what bounds the gateway's memory. A connection
/// whose message would take it past the budget is ended (its client sees
/// the connection close; the others go on).
#[derive(Debug)]
pub(crate) struct ReadBudget {
    in_use: AtomicUsize,
    max: usize,
}

impl ReadBudget {
    pub(crate) fn new(max: usize) -> Arc<ReadBudget> {
        Arc::new(ReadBudget { in_use: AtomicUsize::new(0), max })
    }

    /// Bytes held now, by every connection.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }

    fn take(&self, bytes: usize) -> bool {
        let mut now = self.in_use.load(Ordering::Acquire);
        loop {
            let Some(next) = now.checked_add(bytes).filter(|n| *n <= self.max) else { return false };
            match self.in_use.compare_exchange_weak(now, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    fn give(&self, bytes: usize) {
        self.in_use.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// One client connection: reads calls, writes replies.
pub(crate) struct Connection<S> {
    stream: S,
    buf: Vec<u8>,
    limits: Limits,
    /// Found from the first bytes.
    mode: Option<(Framing, Protocol)>,
    budget: Arc<ReadBudget>,
    /// Bytes of `budget` this connection holds (its buffer past READ_CHUNK).
    held: usize,
}

/// How many bytes a read asks for at once; a buffer this size is each
/// connection's own, outside the shared budget.
const READ_CHUNK: usize = 64 * 1024;

impl<S> Drop for Connection<S> {
    fn drop(&mut self) {
        self.budget.give(self.held);
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    pub(crate) fn new(stream: S, limits: Limits, budget: Arc<ReadBudget>) -> Self {
        Connection { stream, buf: Vec::new(), limits, mode: None, budget, held: 0 }
    }

    /// Holds budget for a buffer of `len` bytes.
    fn reserve(&mut self, len: usize) -> Result<(), TransportError> {
        let need = len.saturating_sub(READ_CHUNK);
        if need > self.held {
            if !self.budget.take(need - self.held) {
                return Err(DecodeError::TooLarge(format!(
                    "messages being read hold the gateway's {} MiB for all connections; \
                     this one's {len} bytes do not fit",
                    self.budget.max >> 20
                ))
                .into());
            }
            self.held = need;
        }
        Ok(())
    }

    /// Gives back what a drained buffer no longer needs.
    fn release(&mut self) {
        if self.held > 0 && self.buf.len() <= READ_CHUNK {
            self.buf.shrink_to(READ_CHUNK);
            self.budget.give(self.held);
            self.held = 0;
        }
    }

    /// The framing and protocol the client speaks, once known.
    #[cfg(test)]
    pub(crate) fn mode(&self) -> Option<(Framing, Protocol)> {
        self.mode
    }

    /// Reads more bytes; false at the end of the stream. Cancel-safe: the
    /// buffer holds only bytes read (a call timed out keeps its part).
    async fn fill(&mut self) -> Result<bool, TransportError> {
        let have = self.buf.len();
        let want =
            READ_CHUNK.min(self.limits.max_message_bytes.saturating_add(4).saturating_sub(have)).max(1);
        self.reserve(have + want)?;
        self.buf.reserve_exact(want);
        let n = (&mut self.stream).take(want as u64).read_buf(&mut self.buf).await?;
        Ok(n > 0)
    }

    /// The next call; `None` when the client closed between messages.
    ///
    /// # Errors
    /// [`TransportError`]: the connection is over.
    pub(crate) async fn next(&mut self) -> Result<Option<Message>, TransportError> {
        loop {
            if let Some(found) = self.parse()? {
                return Ok(Some(found));
            }
            if !self.fill().await? {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed within a message")
                        .into())
                };
            }
        }
    }

    /// A whole message from the buffer, if it holds one.
    fn parse(&mut self) -> Result<Option<Message>, TransportError> {
        let Some(&first) = self.buf.first() else { return Ok(None) };
        let (framing, protocol) = match self.mode {
            Some(mode) => mode,
            None => match Protocol::detect(first) {
                Some(protocol) => (Framing::Buffered, protocol),
                None if self.buf.len() < 5 => return Ok(None),
                None => match Protocol::detect(self.buf[4]) {
                    Some(protocol) => (Framing::Framed, protocol),
                    None => {
                        return Err(DecodeError::Invalid(format!(
                            "neither a framed nor a buffered Thrift message (first bytes {:02x?})",
                            &self.buf[..5]
                        ))
                        .into());
                    }
                },
            },
        };
        self.mode = Some((framing, protocol));
        let (message, used) = match framing {
            Framing::Buffered => match codec::decode(protocol, &self.buf, &self.limits) {
                Ok(found) => found,
                Err(DecodeError::Incomplete) => return Ok(None),
                Err(e) => return Err(e.into()),
            },
            Framing::Framed => {
                let Some(head) = self.buf.get(..4) else { return Ok(None) };
                let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
                if len > self.limits.max_message_bytes {
                    return Err(DecodeError::TooLarge(format!(
                        "a frame of {len} bytes, at most {}",
                        self.limits.max_message_bytes
                    ))
                    .into());
                }
                let Some(frame) = self.buf.get(4..4 + len) else { return Ok(None) };
                match codec::decode(protocol, frame, &self.limits) {
                    Ok((message, used)) if used == len => (message, 4 + len),
                    Ok((_, used)) => {
                        return Err(DecodeError::Invalid(format!(
                            "a frame of {len} bytes holds a message of {used}"
                        ))
                        .into());
                    }
                    // A whole frame cut short is no message.
                    Err(DecodeError::Incomplete) => {
                        return Err(DecodeError::Invalid("a frame ends within its message".into()).into());
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        self.buf.drain(..used);
        self.release();
        Ok(Some(message))
    }

    /// Writes `reply` the way the calls come.
    ///
    /// # Errors
    /// The connection failed.
    #[cfg(test)]
    pub(crate) async fn send(&mut self, reply: &Message) -> Result<(), TransportError> {
        let bytes = self.encode(reply);
        self.write(&bytes).await
    }

    /// `reply`'s bytes as this connection frames and encodes them.
    pub(crate) fn encode(&self, reply: &Message) -> Vec<u8> {
        let (framing, protocol) = self.mode.unwrap_or((Framing::Buffered, Protocol::Binary));
        let mut bytes = codec::encode(protocol, reply);
        if framing == Framing::Framed {
            // One write: a length written apart waits out Nagle's delay.
            let len = (bytes.len() as u32).to_be_bytes();
            bytes.splice(0..0, len);
        }
        bytes
    }

    /// Writes a reply [`Self::encode`] made.
    pub(crate) async fn write(&mut self, bytes: &[u8]) -> Result<(), TransportError> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thrift::codec::{MessageType, Value};

    fn call(seq: i32) -> Message {
        Message {
            name: "getTableNames".into(),
            kind: MessageType::Call,
            seq,
            body: Value::Struct(vec![(1, Value::Binary(vec![b'x'; 100]))]),
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// Both transports and both protocols, calls split at every size of
    /// write: each call read whole, in order, and the reply framed alike.
    #[test]
    fn calls_arrive_whole_whatever_the_transport_and_the_writes() {
        for framing in [Framing::Buffered, Framing::Framed] {
            for protocol in [Protocol::Binary, Protocol::Compact] {
                for chunk in [1, 3, 7, 64, 4096] {
                    rt().block_on(async {
                        let (mut client, server) = tokio::io::duplex(1 << 16);
                        let mut wire = Vec::new();
                        for seq in 0..3 {
                            let bytes = codec::encode(protocol, &call(seq));
                            if framing == Framing::Framed {
                                wire.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                            }
                            wire.extend_from_slice(&bytes);
                        }
                        let writer = tokio::spawn(async move {
                            for part in wire.chunks(chunk) {
                                client.write_all(part).await.unwrap();
                            }
                            client
                        });
                        let mut conn =
                            Connection::new(server, Limits::default(), ReadBudget::new(usize::MAX));
                        for seq in 0..3 {
                            assert_eq!(
                                conn.next().await.unwrap(),
                                Some(call(seq)),
                                "{framing:?} {protocol:?}"
                            );
                        }
                        assert_eq!(conn.mode(), Some((framing, protocol)));
                        let mut client = writer.await.unwrap();
                        conn.send(&call(9)).await.unwrap();
                        drop(client.shutdown().await);
                        let mut back = vec![0u8; 4096];
                        let n = client.read(&mut back).await.unwrap();
                        let back = &back[..n];
                        let body = if framing == Framing::Framed { &back[4..] } else { back };
                        assert_eq!(codec::decode(protocol, body, &Limits::default()).unwrap().0, call(9));
                    });
                }
            }
        }
    }

    /// A frame past the limit, bytes that are no message, and a client that
    /// leaves within a message end the connection with a reason; one that
    /// leaves between messages is a clean end.
    #[test]
    fn bad_streams_end_the_connection() {
        let limits = Limits { max_depth: 8, max_message_bytes: 1024 };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0, 0, 0x10, 0, 0x80, 1, 0, 1], "too large"),
            (b"GET / HTTP/1.1\r\n\r\n".to_vec(), "neither a framed nor a buffered"),
            (vec![0x80, 1, 0, 1, 0, 0], "closed within a message"),
        ];
        for (bytes, why) in cases {
            rt().block_on(async {
                let (mut client, server) = tokio::io::duplex(4096);
                client.write_all(&bytes).await.unwrap();
                drop(client);
                let mut conn = Connection::new(server, limits, ReadBudget::new(usize::MAX));
                let err = conn.next().await.unwrap_err();
                assert!(err.to_string().contains(why), "{bytes:?}: {err}");
            });
        }
        rt().block_on(async {
            let (client, server) = tokio::io::duplex(64);
            drop(client);
            assert!(
                Connection::new(server, limits, ReadBudget::new(usize::MAX)).next().await.unwrap().is_none()
            );
        });
    }

    /// Two connections reading large messages at once share the budget:
    /// the one that would pass it is ended, the other reads its message,
    /// small messages go on, and every byte is given back.
    #[test]
    fn the_read_budget_bounds_large_messages_across_connections() {
        rt().block_on(async {
            let budget = ReadBudget::new(400 * 1024);
            let big = |seq| Message {
                name: "mutateRow".into(),
                kind: MessageType::Call,
                seq,
                body: Value::Struct(vec![(1, Value::Binary(vec![b'x'; 300 * 1024]))]),
            };
            let wire = |m: &Message| codec::encode(Protocol::Binary, m);
            let (mut a_client, a_server) = tokio::io::duplex(1 << 20);
            let (mut b_client, b_server) = tokio::io::duplex(1 << 20);
            let mut a = Connection::new(a_server, Limits::default(), Arc::clone(&budget));
            let mut b = Connection::new(b_server, Limits::default(), Arc::clone(&budget));
            // A's message arrives in part: A holds most of the budget.
            let a_bytes = wire(&big(1));
            a_client.write_all(&a_bytes[..250 * 1024]).await.unwrap();
            let a_reads = tokio::time::timeout(std::time::Duration::from_millis(200), a.next()).await;
            assert!(a_reads.is_err(), "A's message is not whole yet");
            assert!(budget.in_use() > 150 * 1024);
            // B's does not fit beside it: B is ended, with the reason.
            b_client.write_all(&wire(&big(2))).await.unwrap();
            let err = b.next().await.unwrap_err();
            assert!(err.to_string().contains("hold the gateway's"), "{err}");
            drop(b);
            // A's finishes, and a small call after it reads.
            a_client.write_all(&a_bytes[250 * 1024..]).await.unwrap();
            a_client.write_all(&wire(&call(3))).await.unwrap();
            assert_eq!(a.next().await.unwrap(), Some(big(1)));
            assert_eq!(a.next().await.unwrap(), Some(call(3)));
            assert_eq!(budget.in_use(), 0, "a drained buffer gives its bytes back");
            drop(a);
            assert_eq!(budget.in_use(), 0);
        });
    }
}
