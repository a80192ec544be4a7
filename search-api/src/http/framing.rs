//! Request framing as the bytes arrive, before hyper parses them: a request
//! head with both `Content-Length` and `Transfer-Encoding` is refused.
//!
//! Behind a proxy that frames by the length, such a request can carry a
//! second, smuggled request in what this server reads as chunked body (or
//! the reverse). hyper reads it by its chunked framing and closes the
//! connection afterwards; RFC 9112 (6.3) lets a server refuse it outright,
//! and so does this one: each request head is held until it is complete,
//! and a head with both headers is handed to hyper with the
//! `Transfer-Encoding` header's name made invalid, so hyper answers 400
//! (given the JSON body by `conn.rs`) and closes the connection. Bodies
//! are followed by their framing (a length, or chunks up to the last one
//! and its trailers) to find where the next head starts; anything this
//! does not follow (an upgrade, HTTP/2, a malformed chunk) ends the
//! tracking and the bytes pass as they are. A head past [`MAX_HEAD`] is
//! answered 431 by `conn.rs`.

/// Longest request head taken: past it the connection is answered 431 and
/// closed (by `conn.rs`). hyper's own limit (about 400 KB) held only for
/// heads that arrived in pieces; a held head comes whole.
pub(super) const MAX_HEAD: usize = 256 << 10;

#[derive(Debug)]
enum State {
    /// Collecting a request head.
    Head,
    /// Passing a body of this many bytes still.
    Body(u64),
    /// A chunk-size line, collected.
    ChunkSize,
    /// Passing this many bytes of chunk data, then its CRLF.
    ChunkData(u64),
    /// Trailer lines after the last chunk, collected, up to the empty one.
    Trailers,
    /// Not followed any more: everything passes.
    Off,
}

/// A connection's framing tracker.
#[derive(Debug)]
pub(super) struct Framing {
    state: State,
    /// Bytes held: a head, a chunk-size line or trailers not yet complete.
    held: Vec<u8>,
    /// How many of `held` went to hyper already: a head's first byte goes
    /// at once, so hyper's header read timer starts with it (a client
    /// trickling a head is closed as before); it cannot be part of a
    /// header's name.
    sent: usize,
    /// A head grew past [`MAX_HEAD`]: nothing more goes to hyper.
    pub(super) too_large: bool,
}

impl Framing {
    pub(super) fn new() -> Framing {
        Framing { state: State::Head, held: Vec::new(), sent: 0, too_large: false }
    }

    /// Takes bytes read from the client; appends to `out` what may go to
    /// hyper now (a head only once complete).
    pub(super) fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match self.state {
                State::Off => {
                    out.extend_from_slice(input);
                    return;
                }
                State::Body(n) => {
                    let left = pass(n, &mut input, out);
                    self.state = if left == 0 { State::Head } else { State::Body(left) };
                }
                State::ChunkData(n) => {
                    let left = pass(n, &mut input, out);
                    // The data's CRLF is read as an empty size line.
                    self.state = if left == 0 { State::ChunkSize } else { State::ChunkData(left) };
                }
                State::Head | State::ChunkSize | State::Trailers => {
                    let end = match self.state {
                        State::Head => find(&self.held, input, b"\r\n\r\n"),
                        _ => find(&self.held, input, b"\n"),
                    };
                    let Some(end) = end else {
                        if self.held.is_empty() && matches!(self.state, State::Head) {
                            out.push(input[0]);
                            self.sent = 1;
                        }
                        self.held.extend_from_slice(input);
                        if self.held.len() > MAX_HEAD {
                            if matches!(self.state, State::Head) {
                                self.too_large = true;
                                self.held.clear();
                            } else {
                                self.give_up(out);
                            }
                        }
                        return;
                    };
                    // `end`: how many bytes of `input` complete the unit.
                    self.held.extend_from_slice(&input[..end]);
                    input = &input[end..];
                    let unit = std::mem::take(&mut self.held);
                    let sent = std::mem::take(&mut self.sent);
                    self.complete(unit, sent, out);
                }
            }
        }
    }

    /// At the end of the input: whatever is held goes to hyper as it is.
    pub(super) fn flush(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.held[self.sent.min(self.held.len())..]);
        self.held.clear();
        self.sent = 0;
    }

    fn give_up(&mut self, out: &mut Vec<u8>) {
        // Chunk-size and trailer lines past the limit: hyper judges them.
        self.flush(out);
        self.state = State::Off;
    }

    /// A complete head, chunk-size line or trailer line, of which the
    /// first `sent` bytes went to hyper already.
    fn complete(&mut self, mut unit: Vec<u8>, sent: usize, out: &mut Vec<u8>) {
        match self.state {
            State::Head => {
                // Empty lines before a request line are allowed.
                let start = unit.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(unit.len());
                if unit[start..].starts_with(b"PRI * HTTP/2") {
                    out.extend_from_slice(&unit[sent..]);
                    self.state = State::Off;
                    return;
                }
                self.state = head_framing(&mut unit[start..]);
                out.extend_from_slice(&unit[sent..]);
            }
            State::ChunkSize => {
                let line = String::from_utf8_lossy(&unit);
                let size = line.trim().split(';').next().unwrap_or_default().trim().to_owned();
                out.extend_from_slice(&unit);
                self.state = if size.is_empty() {
                    // The CRLF closing a chunk's data.
                    State::ChunkSize
                } else {
                    match u64::from_str_radix(&size, 16) {
                        Ok(0) => State::Trailers,
                        Ok(n) => State::ChunkData(n),
                        Err(_) => State::Off,
                    }
                };
            }
            State::Trailers => {
                let empty = unit == b"\r\n" || unit == b"\n";
                out.extend_from_slice(&unit);
                if empty {
                    self.state = State::Head;
                }
            }
            _ => out.extend_from_slice(&unit),
        }
    }
}

/// Passes up to `n` bytes of `input` to `out` (and off `input`); returns
/// how many of the `n` are still to come.
fn pass(n: u64, input: &mut &[u8], out: &mut Vec<u8>) -> u64 {
    let take = usize::try_from(n).unwrap_or(usize::MAX).min(input.len());
    out.extend_from_slice(&input[..take]);
    *input = &input[take..];
    n - take as u64
}

/// Where `pattern` ends in `held ‖ input`, as an offset into `input`.
fn find(held: &[u8], input: &[u8], pattern: &[u8]) -> Option<usize> {
    // A match across the seam: the last bytes of `held`, the first of
    // `input` (a few bytes copied), then within `input` alone.
    let keep = held.len().min(pattern.len() - 1);
    if keep > 0 {
        let mut seam = held[held.len() - keep..].to_vec();
        seam.extend_from_slice(&input[..input.len().min(pattern.len() - 1)]);
        if let Some(at) = seam.windows(pattern.len()).position(|w| w == pattern) {
            return Some(at + pattern.len() - keep);
        }
    }
    let at = input.windows(pattern.len()).position(|w| w == pattern)?;
    Some(at + pattern.len())
}

/// The framing of the body after request head `head` (request line and
/// headers, without the leading empty lines); a head with both
/// `Content-Length` and `Transfer-Encoding` gets the latter's name made
/// invalid (a DEL byte), which hyper refuses with 400. (Its first byte is
/// a header line's, never the head's first.)
fn head_framing(head: &mut [u8]) -> State {
    let (mut length, mut chunked, mut te_name_at, mut upgrade) = (None, false, None, false);
    let mut at = 0;
    let mut first = true;
    while at < head.len() {
        let end = head[at..].iter().position(|&b| b == b'\n').map_or(head.len(), |p| at + p + 1);
        let line = &head[at..end];
        if !first && let Some(colon) = line.iter().position(|&b| b == b':') {
            let name = String::from_utf8_lossy(&line[..colon]).trim().to_ascii_lowercase();
            let value = String::from_utf8_lossy(&line[colon + 1..]).trim().to_ascii_lowercase();
            match name.as_str() {
                "content-length" => length = value.parse::<u64>().ok().or(Some(u64::MAX)),
                "transfer-encoding" => {
                    chunked |= value.split(',').any(|v| v.trim() == "chunked");
                    te_name_at = Some(at);
                }
                "upgrade" => upgrade = true,
                _ => {}
            }
        }
        first = false;
        at = end;
    }
    if let (Some(_), Some(te)) = (length, te_name_at) {
        head[te] = 0x7F;
        // hyper refuses the head and closes: nothing after it is read.
        return State::Off;
    }
    if upgrade || (te_name_at.is_some() && !chunked) {
        // An upgrade, or a transfer coding hyper refuses: not followed.
        return State::Off;
    }
    if chunked {
        return State::ChunkSize;
    }
    match length {
        None | Some(0) => State::Head,
        // A length that does not parse: hyper refuses it.
        Some(u64::MAX) => State::Off,
        Some(n) => State::Body(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; what hyper gets.
    fn run(input: &[u8], step: usize) -> Vec<u8> {
        let mut f = Framing::new();
        let mut out = Vec::new();
        for piece in input.chunks(step.max(1)) {
            f.feed(piece, &mut out);
        }
        f.flush(&mut out);
        out
    }

    #[test]
    fn ordinary_requests_pass_unchanged_whatever_the_pieces() {
        let mut input = Vec::new();
        input.extend_from_slice(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        input.extend_from_slice(b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
        input.extend_from_slice(
            b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhe\r\nl\r\n0\r\nT: 1\r\n\r\n",
        );
        // A body that looks like a smuggling head is only a body.
        let body = b"GET /e HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n";
        input.extend_from_slice(
            format!("POST /d HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
        );
        input.extend_from_slice(body);
        input.extend_from_slice(b"GET /f HTTP/1.1\r\nHost: x\r\n\r\n");
        for step in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(run(&input, step), input, "pieces of {step}");
        }
    }

    #[test]
    fn a_head_with_length_and_chunked_gets_an_invalid_header_name() {
        for head in [
            &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            &b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: x\r\ncontent-length: 4\r\n\r\n"[..],
        ] {
            let mut input = head.to_vec();
            input.extend_from_slice(b"0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n");
            for step in [1, 5, 4096] {
                let out = run(&input, step);
                assert_eq!(out.len(), input.len());
                let at = head.windows(17).position(|w| w.eq_ignore_ascii_case(b"transfer-encoding")).unwrap();
                assert_eq!(out[at], 0x7F, "pieces of {step}");
                let mut fixed = out.clone();
                fixed[at] = input[at];
                assert_eq!(fixed, input);
                // hyper's parser refuses it.
                let mut headers = [httparse::EMPTY_HEADER; 8];
                assert!(httparse::Request::new(&mut headers).parse(&out).is_err());
            }
        }
    }
}
