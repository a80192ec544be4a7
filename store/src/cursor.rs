//! Every cursor token the store hands out, and the one codec for them.
//!
//! A token is a kind tag, the format version `1`, a dot, then the bytes
//! the next page resumes after, in lowercase hex, so a token is URL-safe
//! and opaque to callers:
//!
//! | token  | made by                 | bytes                                          |
//! |--------|-------------------------|------------------------------------------------|
//! | `f1.`  | a forward scan          | the last row key returned                      |
//! | `r1.`  | a reverse scan          | the last row key returned                      |
//! | `i1.`  | a secondary-index lookup | the last entry, without its region prefix     |
//! | `k1.`  | a keyword lookup        | the last version tail, `!date (u64 BE) ‖ row key` |
//!
//! No other module writes or parses token text.

/// What a token resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A scan in key order.
    ScanForward,
    /// A scan in reverse key order.
    ScanReverse,
    /// A secondary-index lookup.
    Index,
    /// A keyword lookup.
    Keyword,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::ScanForward, Kind::ScanReverse, Kind::Index, Kind::Keyword];

    fn tag(self) -> &'static str {
        match self {
            Kind::ScanForward => "f1.",
            Kind::ScanReverse => "r1.",
            Kind::Index => "i1.",
            Kind::Keyword => "k1.",
        }
    }
}

/// The token of `kind` resuming after `bytes`.
pub(crate) fn encode(kind: Kind, bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let tag = kind.tag();
    let mut out = String::with_capacity(tag.len() + 2 * bytes.len());
    out.push_str(tag);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0F)]));
    }
    out
}

/// The kind and bytes of a token, or why it is not one. Tokens carry at
/// least one byte.
pub(crate) fn decode(token: &str) -> Result<(Kind, Vec<u8>), &'static str> {
    let (kind, hex) = Kind::ALL
        .into_iter()
        .find_map(|k| token.strip_prefix(k.tag()).map(|hex| (k, hex)))
        .ok_or("unknown cursor version")?;
    if hex.is_empty() || hex.len() % 2 != 0 {
        return Err("bad cursor length");
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| {
            // Lowercase hex digits, as written (no sign, no capitals).
            hex.get(i..i + 2)
                .filter(|h| h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("cursor is not lowercase hex")
        })
        .collect::<Result<Vec<u8>, _>>()?;
    Ok((kind, bytes))
}

/// The bytes of a token that must be of `kind`.
pub(crate) fn decode_as(kind: Kind, token: &str) -> Result<Vec<u8>, &'static str> {
    match decode(token)? {
        (k, bytes) if k == kind => Ok(bytes),
        _ => Err("cursor comes from another kind of read"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The token bytes are pinned: tokens handed out by one build must
    /// resume on the next.
    #[test]
    fn token_bytes_are_pinned() {
        assert_eq!(encode(Kind::ScanForward, b"a\x00"), "f1.6100");
        assert_eq!(encode(Kind::ScanReverse, b"\xff"), "r1.ff");
        assert_eq!(encode(Kind::Index, &[0x10, 0x02]), "i1.1002");
        assert_eq!(encode(Kind::Keyword, b"\x00\x01"), "k1.0001");
    }

    #[test]
    fn every_kind_round_trips_and_keeps_its_kind() {
        for kind in Kind::ALL {
            for bytes in [&b"x"[..], b"\x00\xff\x80", &[7u8; 40]] {
                let token = encode(kind, bytes);
                assert_eq!(decode(&token), Ok((kind, bytes.to_vec())));
                assert_eq!(decode_as(kind, &token), Ok(bytes.to_vec()));
                for other in Kind::ALL.into_iter().filter(|&o| o != kind) {
                    assert!(decode_as(other, &token).is_err());
                }
            }
        }
    }

    #[test]
    fn garbage_is_refused() {
        for token in ["", "f1.", "f1.abc", "f1.zz", "x1.00", "f2.00", "F1.00", "f1.é0", "f1.+f", "f1.AB"] {
            assert!(decode(token).is_err(), "{token:?}");
        }
    }
}
