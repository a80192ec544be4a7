//! Binary strings (API.md, "Byte strings"): UTF-8 text as is, `\\` for a
//! backslash, `\xNN` for any other byte that is not printable UTF-8.

/// Encodes bytes as a binary string.
///
/// ```
/// use rowsearch_store::binstr::{decode, encode};
/// assert_eq!(encode(b"caf\xc3\xa9\x00\\"), "café\\x00\\\\");
/// assert_eq!(decode(&encode(b"\xff\x00a")).unwrap(), b"\xff\x00a");
/// ```
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for &b in c.encode_utf8(&mut buf).as_bytes() {
                        push_hex(&mut out, b);
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            push_hex(&mut out, b);
        }
    }
    out
}

/// `\xHH` (lowercase) for `b`: a search answers every hit's key so
/// (most keys hold a few such bytes), without the formatter's machinery.
fn push_hex(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\x");
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 15)]));
}

/// An error decoding a binary string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid binary string at byte {position}: {reason}")]
pub struct WireError {
    /// Byte offset of the offending escape.
    pub position: usize,
    /// What was wrong.
    pub reason: &'static str,
}

/// Decodes a binary string.
///
/// # Errors
/// A [`WireError`] for a lone backslash or a bad `\x` escape.
pub fn decode(text: &str) -> Result<Vec<u8>, WireError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex =
                    text.get(i + 2..i + 4).ok_or(WireError { position: i, reason: "short \\x escape" })?;
                // Two hex digits, nothing else (`from_str_radix` alone
                // would take a sign: `\\x+f`).
                let b = Some(hex)
                    .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(WireError { position: i, reason: "\\x needs two hex digits" })?;
                out.push(b);
                i += 4;
            }
            _ => return Err(WireError { position: i, reason: "backslash must be followed by \\ or x" }),
        }
    }
    Ok(out)
}

/// Serde for a list of byte strings written as binary strings
/// (`#[serde(with = "rowsearch_store::binstr::list")]`).
pub mod list {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises each byte string as a binary string.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(items: &[Vec<u8>], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(items.iter().map(|b| super::encode(b)))
    }

    /// Parses binary strings.
    ///
    /// # Errors
    /// A string that is not a valid binary string.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        texts.iter().map(|t| super::decode(t).map_err(D::Error::custom)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn wire_roundtrips_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }

        #[test]
        fn wire_decode_never_panics(text in ".{0,32}") {
            let _ = decode(&text);
        }
    }

    #[test]
    fn wire_rejects_bad_escapes() {
        assert_eq!(decode("a\\q").unwrap_err().position, 1);
        assert!(decode("\\x4").is_err());
        assert!(decode("\\xzz").is_err());
        assert!(decode("\\").is_err());
        // Two hex digits exactly: no sign (u8::from_str_radix takes one).
        assert!(decode("\\x+f").is_err());
        assert!(decode("\\x-0").is_err());
        assert_eq!(decode("\\x0F\\xa0").unwrap(), vec![0x0f, 0xa0]);
    }
}
