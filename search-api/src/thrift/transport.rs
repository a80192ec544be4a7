//! Thrift's two transports, as HBase's gateway offers them, told apart by
//! a connection's first byte: buffered (messages back to back on the
//! stream, the protocol's own first byte: 0x80 binary, 0x82 compact) and
//! framed (each message behind a 4-byte big-endian length). Replies go
//! back the way the calls came. A message past the limit or bytes that are
//! no message end that connection only.

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

/// One client connection: reads calls, writes replies.
pub(crate) struct Connection<S> {
    stream: S,
    buf: Vec<u8>,
    limits: Limits,
    /// Found from the first bytes.
    mode: Option<(Framing, Protocol)>,
}

/// How many bytes a read asks for at once.
const READ_CHUNK: usize = 64 * 1024;

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    pub(crate) fn new(stream: S, limits: Limits) -> Self {
        Connection { stream, buf: Vec::new(), limits, mode: None }
    }

    /// The framing and protocol the client speaks, once known.
    #[cfg(test)]
    pub(crate) fn mode(&self) -> Option<(Framing, Protocol)> {
        self.mode
    }

    /// Reads more bytes; false at the end of the stream.
    async fn fill(&mut self) -> Result<bool, TransportError> {
        let have = self.buf.len();
        let want =
            READ_CHUNK.min(self.limits.max_message_bytes.saturating_add(4).saturating_sub(have)).max(1);
        self.buf.resize(have + want, 0);
        let n = self.stream.read(&mut self.buf[have..]).await;
        self.buf.truncate(have + n.as_ref().map_or(0, |n| *n));
        Ok(n? > 0)
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
        Ok(Some(message))
    }

    /// Writes `reply` the way the calls come.
    ///
    /// # Errors
    /// The connection failed.
    pub(crate) async fn send(&mut self, reply: &Message) -> Result<(), TransportError> {
        let (framing, protocol) = self.mode.unwrap_or((Framing::Buffered, Protocol::Binary));
        let mut bytes = codec::encode(protocol, reply);
        if framing == Framing::Framed {
            // One write: a length written apart waits out Nagle's delay.
            let len = (bytes.len() as u32).to_be_bytes();
            bytes.splice(0..0, len);
        }
        self.stream.write_all(&bytes).await?;
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
                        let mut conn = Connection::new(server, Limits::default());
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
                let mut conn = Connection::new(server, limits);
                let err = conn.next().await.unwrap_err();
                assert!(err.to_string().contains(why), "{bytes:?}: {err}");
            });
        }
        rt().block_on(async {
            let (client, server) = tokio::io::duplex(64);
            drop(client);
            assert!(Connection::new(server, limits).next().await.unwrap().is_none());
        });
    }
}
