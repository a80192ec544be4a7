//! One mail message, parsed with `mail-parser`, and the mail table it goes
//! into (API.md, "The mail table").

use std::borrow::Cow;

use mail_parser::{Address, MessageParser};
use rowsearch_store::{
    Column, Compression, FamilySchema, IndexSchema, KeyField, KeyOrder, KeyType, KeyValue, PutCell,
    ReadOptions, RowKeySchema, SearchField, SearchSchema, TableSchema, ThreadSchema,
};

/// The schema `rowsearch ingest` creates for mail (API.md's example): key
/// `user, date desc, id`; family `m` for headers and `b` for the body;
/// indexes by sender; searchable subject, body, from, to and folder (a
/// keyword), partitioned by user and dated by `m:date`; facets on from and
/// to (whole addresses) and folder; documents without the body by default
/// ([`MAIL_DISPLAY`]). Threads by Message-ID, In-Reply-To and References
/// and replies gathered by subject (`m:thread`, searchable as `thread:`,
/// a facet so searches can collapse by it); copies of a message folded
/// ([`ThreadSchema::fold_copies`]); `id:` finds a Message-ID.
pub fn mail_schema() -> TableSchema {
    // The body family, most of a mail row's bytes, compressed (zstd, with
    // a dictionary the first ingest trains). The headers stay plain: zstd
    // on them saved 15 MB of the full corpus's 343 MB but cost every search
    // that reads whole rows 8% (search-api/BENCHMARKS.md, issue 65).
    TableSchema::new([FamilySchema::new("m"), FamilySchema::new("b").compression(Compression::Zstd)])
        .row_key(RowKeySchema::new([
            KeyField::new("user", KeyType::String, KeyOrder::Asc),
            KeyField::new("date", KeyType::U64, KeyOrder::Desc),
            KeyField::new("id", KeyType::U64, KeyOrder::Asc),
        ]))
        .splits([b"g".to_vec(), b"n".to_vec(), b"t".to_vec()])
        .index(IndexSchema::new("by_from", ["m:from"]))
        .index(IndexSchema::new("by_from_date", ["m:from", "m:date"]))
        .search(
            SearchSchema::new([
                SearchField::text("subject", "m:subject"),
                SearchField::text("body", "b:text"),
                SearchField::text("from", "m:from").facet(),
                SearchField::text("to", "m:to").facet(),
                SearchField::keyword("folder", "m:folder").facet(),
                SearchField::keyword("id", "m:message_id"),
                SearchField::keyword("thread", "m:thread").facet(),
            ])
            .partition("user")
            .date_column("m:date")
            .display(MAIL_DISPLAY),
        )
        .threads(
            ThreadSchema::new("m:message_id", ["m:in_reply_to", "m:references"], "m:thread")
                .by_subject("m:subject")
                .fold_copies(),
        )
}

/// What a mail search's documents carry unless a search names its fields:
/// everything but the body (a list needs the subject, who, where and when;
/// `crop=body:30` adds the words around the match, `fields=*` everything).
pub const MAIL_DISPLAY: [&str; 7] = ["subject", "from", "to", "folder", "user", "date", "thread"];

/// The decoded fields of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage {
    /// `Message-ID` without angle brackets; empty when missing.
    pub message_id: String,
    /// `Date` in milliseconds since the epoch, when present and valid.
    pub date_ms: Option<u64>,
    /// `From`, decoded: `Name <address>` or `address`, comma-separated.
    pub from: String,
    /// `To`, decoded the same way.
    pub to: String,
    /// `Cc`, decoded the same way.
    pub cc: String,
    /// `Subject`, with RFC 2047 encoded words decoded.
    pub subject: String,
    /// `In-Reply-To` as written (unfolded): the `<id>`s it names.
    pub in_reply_to: String,
    /// `References` as written (unfolded).
    pub references: String,
    /// The text/plain body (parts joined by a blank line), else text derived
    /// from the HTML body; attachments are skipped.
    pub text: String,
}

/// Why a file or message was not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotMail {
    /// The bytes do not start with a header line (`Name: value`).
    NoHeaders,
    /// Larger than the configured maximum.
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The maximum.
        max: u64,
    },
    /// The parser found no message.
    Unparsable,
}

impl std::fmt::Display for NotMail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotMail::NoHeaders => f.write_str("not a mail message: no header lines"),
            NotMail::TooLarge { bytes, max } => write!(f, "message too large: {bytes} bytes, max {max}"),
            NotMail::Unparsable => f.write_str("not a mail message: the MIME parser found none"),
        }
    }
}

/// Whether `raw` starts like a message: a header field (printable ASCII
/// name, a colon) or an mbox `From ` line.
fn starts_with_header(raw: &[u8]) -> bool {
    if raw.starts_with(b"From ") {
        return true;
    }
    let line_end = raw.iter().position(|&b| b == b'\n').unwrap_or(raw.len());
    let line = &raw[..line_end];
    match line.iter().position(|&b| b == b':') {
        Some(colon) if colon > 0 => line[..colon].iter().all(|&b| (33..=126).contains(&b)),
        _ => false,
    }
}

fn addresses(address: Option<&Address<'_>>) -> String {
    let Some(address) = address else { return String::new() };
    let mut out = String::new();
    for addr in address.iter() {
        let name = addr.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        let email = addr.address.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let one = match (name, email) {
            (Some(n), Some(e)) if n != e => format!("{n} <{e}>"),
            (_, Some(e)) => e.to_owned(),
            (Some(n), None) => n.to_owned(),
            (None, None) => continue,
        };
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&one);
    }
    out
}

/// Parses one raw RFC 5322 message.
///
/// # Errors
/// [`NotMail`] when `raw` does not start with a header line or the parser
/// finds no message. Truncated messages (what is there is kept), unknown charsets and broken
/// encodings are not errors: they decode as far as they can (unknown
/// charsets as UTF-8 with replacement characters).
pub fn parse_message(raw: &[u8]) -> Result<MailMessage, NotMail> {
    if !starts_with_header(raw) {
        return Err(NotMail::NoHeaders);
    }
    // A file cut off inside its last line: end that line, so the parser
    // keeps it (it drops an unterminated header).
    let terminated: Cow<'_, [u8]> =
        if raw.ends_with(b"\n") { Cow::Borrowed(raw) } else { Cow::Owned([raw, b"\n"].concat()) };
    let terminated = match utf8_headers(&terminated) {
        Some(fixed) => Cow::Owned(fixed),
        None => terminated,
    };
    let message = MessageParser::default().parse(&terminated[..]).ok_or(NotMail::Unparsable)?;
    let date_ms = message
        .date()
        .filter(|d| d.is_valid())
        .and_then(|d| u64::try_from(d.to_timestamp()).ok())
        .and_then(|s| s.checked_mul(1000));
    let mut text = String::new();
    for i in 0..message.text_body_count() {
        if let Some(part) = message.body_text(i) {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&part);
        }
    }
    if text.is_empty() && message.html_body_count() > 0 {
        text = message.body_text(0).map(Cow::into_owned).unwrap_or_default();
    }
    Ok(MailMessage {
        message_id: message.message_id().unwrap_or_default().trim().to_owned(),
        date_ms,
        from: addresses(message.from()),
        to: addresses(message.to()),
        cc: addresses(message.cc()),
        subject: message.subject().unwrap_or_default().to_owned(),
        in_reply_to: raw_header(&message, "In-Reply-To"),
        references: raw_header(&message, "References"),
        text,
    })
}

/// The message with its header lines that hold raw 8-bit bytes which are
/// not UTF-8 read as Windows-1252 (Latin-1's superset) and written in
/// UTF-8, as mail clients read undeclared 8-bit headers; `None` when every
/// header line is ASCII or UTF-8 already (the usual case: nothing copied).
/// The body is left as it is: its charset is declared or guessed by the
/// parser.
fn utf8_headers(raw: &[u8]) -> Option<Vec<u8>> {
    // The header section ends at the first empty line.
    let end = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|p| p + 1)
        .into_iter()
        .chain(raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 2))
        .min()
        .unwrap_or(raw.len());
    let head = &raw[..end];
    if head.is_ascii() || std::str::from_utf8(head).is_ok() {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() + 64);
    for line in head.split_inclusive(|&b| b == b'\n') {
        if line.is_ascii() || std::str::from_utf8(line).is_ok() {
            out.extend_from_slice(line);
        } else {
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(line);
            out.extend_from_slice(text.as_bytes());
        }
    }
    out.extend_from_slice(&raw[end..]);
    Some(out)
}

/// A header's raw value, unfolded and trimmed; empty when absent.
fn raw_header(message: &mail_parser::Message<'_>, name: &str) -> String {
    message.header_raw(name).map(|v| v.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

impl MailMessage {
    /// The id of the message when copies fold (see
    /// [`ThreadSchema::fold_copies`]): a hash of what a copy keeps (sender,
    /// date, subject and body), so copies in other folders, with other
    /// Message-IDs, are one row.
    pub fn content_id(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for part in [self.from.as_bytes(), &self.date_ms.unwrap_or(0).to_be_bytes(), self.subject.as_bytes()]
        {
            h.update(part);
            h.update(&[0]);
        }
        h.update(self.text.as_bytes());
        h.digest()
    }

    /// The stable id of the message: a hash of its Message-ID, or of its
    /// raw bytes when it has none.
    pub fn id(&self, raw: &[u8]) -> u64 {
        if self.message_id.is_empty() {
            xxhash_rust::xxh3::xxh3_64(raw)
        } else {
            xxhash_rust::xxh3::xxh3_64(self.message_id.as_bytes())
        }
    }

    /// The date as stored in `m:date`: RFC 3339 in UTC, empty when unknown.
    pub fn date_text(&self) -> String {
        self.date_ms
            .and_then(|ms| i64::try_from(ms).ok())
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|ts| ts.to_string())
            .unwrap_or_default()
    }

    /// The values of the row key the message has as `user`'s with `id`.
    pub fn key(&self, user: &str, id: u64) -> Vec<KeyValue> {
        vec![KeyValue::String(user.to_owned()), KeyValue::U64(self.date_ms.unwrap_or(0)), KeyValue::U64(id)]
    }

    /// The row key in the mail table and its cells (empty values left out;
    /// every cell timestamped with the message's date, so ingesting the
    /// same message twice writes identical cells).
    pub fn row(&self, user: &str, id: u64, folder: &str, path: &str) -> (Vec<KeyValue>, Vec<PutCell>) {
        let date_ms = self.date_ms.unwrap_or(0);
        let key = self.key(user, id);
        let date = self.date_text();
        let mut cells = Vec::with_capacity(11);
        for (family, qualifier, value) in [
            ("m", "from", self.from.as_str()),
            ("m", "to", self.to.as_str()),
            ("m", "cc", self.cc.as_str()),
            ("m", "subject", self.subject.as_str()),
            ("m", "date", date.as_str()),
            ("m", "message_id", self.message_id.as_str()),
            ("m", "in_reply_to", self.in_reply_to.as_str()),
            ("m", "references", self.references.as_str()),
            ("m", "folder", folder),
            ("m", "path", path),
            ("b", "text", self.text.as_str()),
        ] {
            if !value.is_empty() {
                cells.push(PutCell::new(family, qualifier, value).at(date_ms));
            }
        }
        (key, cells)
    }
}

/// What a table must have to take mail, in words (for errors).
pub const MAIL_TABLE_SHAPE: &str =
    "mail needs the mail table's key (user string, date u64 desc, id u64) and families m and b";

/// Whether `schema` can take mail: the mail table's key and its families.
pub fn fits_mail(schema: &TableSchema) -> bool {
    let wanted = mail_schema();
    schema.row_key == wanted.row_key && wanted.families.iter().all(|f| schema.family(&f.name).is_some())
}

/// The read that tells whether a mail row exists (its header family):
/// ingest skips messages already stored.
pub fn existence_probe() -> ReadOptions {
    ReadOptions::default().column(Column::Family("m".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_encoded_words_quoted_printable_and_multipart() {
        let raw = b"Message-ID: <a@b>\r\nDate: Mon, 14 May 2001 16:39:00 -0700 (PDT)\r\n\
From: \"Allen, Phillip\" <phillip.allen@enron.com>\r\nTo: tim@enron.com, ann@enron.com\r\n\
Subject: =?ISO-8859-1?Q?Caf=E9_prices?=\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/alternative; boundary=\"XX\"\r\n\r\n\
--XX\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
Gr=FC=DFe, caf=E9 soft=\r\nbreak\r\n--XX\r\nContent-Type: text/html\r\n\r\n<p>ignored</p>\r\n--XX--\r\n";
        let m = parse_message(raw).unwrap();
        assert_eq!(m.message_id, "a@b");
        assert_eq!(m.date_ms, Some(989_883_540_000));
        assert_eq!(m.date_text(), "2001-05-14T23:39:00Z");
        assert_eq!(m.from, "Allen, Phillip <phillip.allen@enron.com>");
        assert_eq!(m.to, "tim@enron.com, ann@enron.com");
        assert_eq!(m.subject, "Café prices");
        assert_eq!(m.text.trim_end(), "Grüße, café softbreak");
    }

    #[test]
    fn html_only_bodies_become_text() {
        let raw = b"Subject: x\r\nContent-Type: text/html\r\n\r\n<html><body><p>Hello <b>world</b></p></body></html>\r\n";
        let m = parse_message(raw).unwrap();
        assert!(
            m.text.contains("Hello") && m.text.contains("world") && !m.text.contains('<'),
            "{:?}",
            m.text
        );
    }

    #[test]
    fn rejects_what_is_not_mail() {
        // Undeclared 8-bit headers: UTF-8 when valid, else Windows-1252.
        let latin1 =
            b"From: Ren\xe9 Dupr\xe9 <rene@example.com>\nSubject: caf\xe9 \x80 pay\n\nbody caf\xc3\xa9\n";
        let m = parse_message(latin1).unwrap();
        assert_eq!(m.from, "Ren\u{e9} Dupr\u{e9} <rene@example.com>");
        assert_eq!(m.subject, "caf\u{e9} \u{20ac} pay");
        let utf8 = "From: Ren\u{e9} <rene@example.com>\nSubject: na\u{ef}ve\n\nx\n";
        let m = parse_message(utf8.as_bytes()).unwrap();
        assert_eq!(m.from, "Ren\u{e9} <rene@example.com>");
        assert_eq!(m.subject, "na\u{ef}ve");
        assert_eq!(parse_message(b""), Err(NotMail::NoHeaders));
        assert_eq!(parse_message(b"just some text\nmore"), Err(NotMail::NoHeaders));
        assert_eq!(parse_message(b"\x00\x01\x02\xff: binary"), Err(NotMail::NoHeaders));
        assert_eq!(parse_message(b": empty name"), Err(NotMail::NoHeaders));
    }

    #[test]
    fn ids_come_from_the_message_id_else_the_content() {
        let a = parse_message(b"Message-ID: <x@y>\r\nSubject: a\r\n\r\nbody").unwrap();
        let b = parse_message(b"Message-ID: <x@y>\r\nSubject: b\r\n\r\nother").unwrap();
        assert_eq!(a.id(b"raw a"), b.id(b"raw b"));
        let c = parse_message(b"Subject: c\r\n\r\nbody").unwrap();
        assert_ne!(c.id(b"one"), c.id(b"two"));
    }
}
