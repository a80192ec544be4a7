//! Ids as rows carry and name them, subjects as replies share them, and
//! the hash a thread id is the smallest of.

use super::entries;

/// The ids a row carries: one per line of its id column, without angle
/// brackets, as kept in keys ([`entries::key_part`]).
pub(crate) fn row_ids(value: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for line in value.split(|&b| b == b'\n') {
        let id = trim(line);
        let id = id.strip_prefix(b"<").and_then(|i| i.strip_suffix(b">")).unwrap_or(id);
        let id = trim(id);
        if !id.is_empty() {
            let kept = entries::key_part(id, entries::MAX_ID_BYTES).into_owned();
            if !out.contains(&kept) {
                out.push(kept);
            }
        }
    }
    out
}

/// The ids a header names: each `<...>`, comments `( ... )` skipped (as
/// notmuch reads In-Reply-To and References), as kept in keys.
pub(crate) fn named_ids(value: &[u8], out: &mut Vec<Vec<u8>>) {
    let mut i = 0;
    let mut depth = 0usize;
    while i < value.len() {
        match value[i] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'<' if depth == 0 => {
                let Some(end) = value[i + 1..].iter().position(|&b| b == b'>') else { return };
                let id = trim(&value[i + 1..i + 1 + end]);
                if !id.is_empty() {
                    let kept = entries::key_part(id, entries::MAX_ID_BYTES).into_owned();
                    if !out.contains(&kept) {
                        out.push(kept);
                    }
                }
                i += end + 1;
            }
            _ => {}
        }
        i += 1;
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &bytes[start..end.max(start)]
}

/// A subject without its reply and forward prefixes (`Re:`, `RE[2]:`,
/// `Fwd:`, `Fw:`, `AW:`, `SV:`, `WG:`, `Antw:`, as Thunderbird strips
/// them), lowercased with its spaces collapsed; and whether it had one.
pub fn normalize_subject(subject: &str) -> (String, bool) {
    let mut rest = subject.trim_start();
    let mut stripped = false;
    while let Some(after) = strip_prefix_word(rest) {
        rest = after.trim_start();
        stripped = true;
    }
    let normal = rest.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    (normal, stripped)
}

fn strip_prefix_word(text: &str) -> Option<&str> {
    const WORDS: [&str; 8] = ["re", "fwd", "fw", "aw", "sv", "wg", "antw", "tr"];
    let lower: String = text.chars().take(6).collect::<String>().to_ascii_lowercase();
    let word = WORDS.iter().find(|w| lower.starts_with(*w))?;
    let mut rest = &text[word.len()..];
    // `Re[2]:` and `Re(2):`
    if let Some(r) = rest.strip_prefix('[').or_else(|| rest.strip_prefix('(')) {
        let digits = r.find(|c: char| !c.is_ascii_digit())?;
        let close = r[digits..].chars().next()?;
        if digits == 0 || !matches!(close, ']' | ')') {
            return None;
        }
        rest = &r[digits + 1..];
    }
    rest.trim_start_matches(' ').strip_prefix(':').or_else(|| rest.strip_prefix('：'))
}

/// The hash a thread id is the smallest of: an id's in a partition.
pub(crate) fn id_hash(partition: &[u8], kept_id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(kept_id, xxhash_rust::xxh3::xxh3_64(partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_as_notmuch_reads_them() {
        assert_eq!(row_ids(b"<a@b>\n c@d \n\n<a@b>"), vec![b"a@b".to_vec(), b"c@d".to_vec()]);
        let mut out = Vec::new();
        named_ids(b"<x@y> (comment <not@this>)\r\n\t<z@w> mumble <x@y>", &mut out);
        assert_eq!(out, vec![b"x@y".to_vec(), b"z@w".to_vec()]);
        let mut none = Vec::new();
        named_ids(b"mumble", &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn subjects_lose_their_reply_prefixes() {
        assert_eq!(normalize_subject("Re: RE[2]: Fwd:  Burrito   Lunch"), ("burrito lunch".into(), true));
        assert_eq!(normalize_subject("Burrito lunch"), ("burrito lunch".into(), false));
        assert_eq!(normalize_subject("Reply needed"), ("reply needed".into(), false));
        assert_eq!(normalize_subject("AW: Termin"), ("termin".into(), true));
        assert_eq!(normalize_subject("Re:"), (String::new(), true));
    }
}
