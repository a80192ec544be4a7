//! One client connection as hyper sees it: the socket with an idle timer
//! (a connection on which nothing is read or written for the idle time is
//! closed, so keep-alive connections and stalled clients do not stay open
//! for good), and the answers hyper writes on its own in the JSON error
//! shape, and a lingering close.
//!
//! hyper answers a request it cannot parse by itself, before any route
//! runs: 400 (not HTTP, a bad header value), 414 (the request line too
//! long), 431 (the headers too large), always with an empty body. Those
//! answers are recognised as they are written (a `4xx` head with
//! `content-length: 0`, which the routes never write: every error of
//! theirs has a body) and given the JSON body every other error has.
//!
//! A connection closed with bytes the server has not read is reset by the
//! kernel, and a reset can discard the answer before its client reads it:
//! an upload refused from its length (413) would see a reset. So a close
//! first ends the writing side, then reads and drops what the client still
//! sends, until it closes too, nothing comes for [`LINGER_QUIET`] or
//! [`LINGER_MAX`] has passed (nginx's lingering close).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::framing::Framing;

/// A closing connection waits this long for more of its client's bytes.
pub(super) const LINGER_QUIET: Duration = Duration::from_secs(1);
/// And this long in all.
pub(super) const LINGER_MAX: Duration = Duration::from_secs(10);

/// A connection's socket, with the idle timer, error bodies and request
/// framing checked (`framing.rs`).
pub(super) struct Conn<S> {
    inner: S,
    framing: Framing,
    /// Bytes read and let through by `framing`, not yet handed to hyper.
    ready: Vec<u8>,
    taken: usize,
    /// The connection was answered 431 by this layer.
    refused: bool,
    idle: Duration,
    /// When something was last read or written: the idle time counts from
    /// here. The timer is not moved at each read and write (a timer moved
    /// is a lock and a change to tokio's timer wheel, several per request):
    /// when it fires early it is set again from this.
    active: Instant,
    timer: Pin<Box<Sleep>>,
    /// A rewritten answer still to be written, and how much of it is.
    pending: Vec<u8>,
    written: usize,
    /// Closing: the writing side ended, the rest read and dropped until
    /// this time (see the module's notes).
    linger_until: Option<Instant>,
}

impl<S> Conn<S> {
    pub(super) fn new(inner: S, idle: Duration) -> Conn<S> {
        Conn {
            inner,
            framing: Framing::new(),
            ready: Vec::new(),
            taken: 0,
            refused: false,
            idle,
            active: Instant::now(),
            timer: Box::pin(tokio::time::sleep(idle)),
            pending: Vec::new(),
            written: 0,
            linger_until: None,
        }
    }

    fn touch(&mut self) {
        self.active = Instant::now();
    }

    /// `Err(TimedOut)` once the idle time has passed with nothing done.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        loop {
            match self.timer.as_mut().poll(cx) {
                Poll::Pending => return Ok(()),
                Poll::Ready(()) => {
                    let due = self.active + self.idle;
                    if due <= self.timer.deadline() {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "connection idle"));
                    }
                    // Something was done since the timer was set.
                    self.timer.as_mut().reset(due);
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> Conn<S> {
    /// Writes what is left of a rewritten answer.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Conn<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.framing.too_large {
                // Answered here (hyper has read nothing of this head), then
                // the end for hyper: it closes the connection.
                if !this.refused {
                    this.refused = true;
                    this.pending = headers_too_large();
                    this.written = 0;
                }
                ready!(this.poll_pending(cx))?;
                return Poll::Ready(Ok(()));
            }
            if this.taken < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.taken);
                buf.put_slice(&this.ready[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.ready.len() {
                    this.ready.clear();
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            // Not zeroed: tokio writes before it lets anything be read.
            let mut chunk = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
            let mut read = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    this.touch();
                    if read.filled().is_empty() {
                        // The end: what is held goes as it is, then the end.
                        this.framing.flush(&mut this.ready);
                        if this.ready.is_empty() {
                            return Poll::Ready(Ok(()));
                        }
                    } else {
                        this.framing.feed(read.filled(), &mut this.ready);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    this.poll_idle(cx)?;
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Conn<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if let Some((head_len, answer)) = with_error_body(buf) {
            this.pending = answer;
            this.touch();
            // The empty answer counts as written; its rewrite goes out next.
            return match this.poll_pending(cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Ready(Ok(head_len)),
            };
        }
        let result = ready!(Pin::new(&mut this.inner).poll_write(cx, buf));
        this.touch();
        Poll::Ready(result)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.linger_until.is_none() {
            ready!(this.poll_pending(cx))?;
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            let now = Instant::now();
            this.linger_until = Some(now + LINGER_MAX);
            this.timer.as_mut().reset(now + LINGER_QUIET);
        }
        this.poll_linger(cx)
    }
}

impl<S: AsyncRead + Unpin> Conn<S> {
    /// Reads and drops the client's bytes until it closes, goes quiet or
    /// the linger is over; never an error (the answer is out already).
    fn poll_linger(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let until = self.linger_until.unwrap_or_else(Instant::now);
        let mut chunk = [0u8; 16384];
        loop {
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut self.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    let now = Instant::now();
                    if now >= until {
                        return Poll::Ready(Ok(()));
                    }
                    self.timer.as_mut().reset((now + LINGER_QUIET).min(until));
                }
                Poll::Ready(_) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    return match self.timer.as_mut().poll(cx) {
                        Poll::Ready(()) => Poll::Ready(Ok(())),
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }
}

/// The answer to a request head past `framing::MAX_HEAD`.
fn headers_too_large() -> Vec<u8> {
    let body = serde_json::json!({"error": {"code": "headers_too_large",
        "message": "the request headers are larger than the server takes"}})
    .to_string();
    format!(
        "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// When `buf` starts with an answer hyper made on its own (a 4xx head
/// with an empty body): the head's length and the answer with a JSON body.
fn with_error_body(buf: &[u8]) -> Option<(usize, Vec<u8>)> {
    if !buf.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    let head_len = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..head_len]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line.get(9..12)?.parse().ok()?;
    let headers: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if !headers.iter().any(|h| h.eq_ignore_ascii_case("content-length: 0")) {
        return None;
    }
    let (code, message) = match status {
        400 => (
            "bad_request",
            "the request is not valid HTTP/1.1 (request line, header or framing; Content-Length and \
             Transfer-Encoding together are refused)",
        ),
        413 => ("body_too_large", "the request body is larger than the server takes"),
        414 => ("uri_too_long", "the request line is longer than the server takes"),
        431 => ("headers_too_large", "the request headers are larger than the server takes"),
        _ => return None,
    };
    let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
    let mut answer = format!("{status_line}\r\n");
    for header in headers {
        if !header.to_ascii_lowercase().starts_with("content-length:") {
            answer.push_str(header);
            answer.push_str("\r\n");
        }
    }
    answer
        .push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    Some((head_len, answer.into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_connection_closes_the_idle_time_after_its_last_read_not_its_first() {
        let idle = Duration::from_secs(10);
        let (mut client, server) = tokio::io::duplex(1024);
        let mut conn = Conn::new(server, idle);
        let opened = Instant::now();
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            loop {
                match conn.read(&mut buf).await {
                    Ok(0) => return (got, None),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) => return (got, Some((e.kind(), Instant::now()))),
                }
            }
        });
        // A request head in five pieces, one every 6 s: never idle for 10 s
        // (the head is handed on once whole: `framing.rs`).
        let pieces = ["GET /x HT", "TP/1.1\r\n", "Host: a\r\n", "X: y\r\n", "\r\n"];
        for piece in pieces {
            tokio::time::sleep(Duration::from_secs(6)).await;
            client.write_all(piece.as_bytes()).await.unwrap();
        }
        let last = Instant::now();
        let (got, end) = reader.await.unwrap();
        assert_eq!(got, pieces.concat().as_bytes(), "{end:?} at {:?}", end.map(|(_, at)| at - opened));
        let (kind, at) = end.expect("closed as idle");
        assert_eq!(kind, io::ErrorKind::TimedOut);
        assert!(last - opened >= Duration::from_secs(30));
        // Closed at the idle time after the last byte (the paused clock
        // moves only to the timers' deadlines).
        assert_eq!(at - last, idle, "closed {:?} after the last read", at - last);
    }

    #[test]
    fn empty_error_answers_get_the_json_shape_and_others_pass() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let (len, answer) = with_error_body(head).unwrap();
        assert_eq!(len, head.len());
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("connection: close") && head.contains("content-type: application/json"));
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "headers_too_large");
        // Answers with a body, 2xx and 204s are left alone.
        assert!(
            with_error_body(b"HTTP/1.1 404 Not Found\r\ncontent-length: 12\r\n\r\n{\"error\":{}}").is_none()
        );
        assert!(with_error_body(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(with_error_body(b"HTTP/1.1 204 No Content\r\n\r\n").is_none());
    }
}
