//! The analyzer: one for ingest (keyword rows), index building and query
//! parsing, so store lookups and index lookups agree.
//!
//! Rules (DESIGN.md, "Analyzer"):
//! - text splits on every character that is not alphanumeric (Unicode);
//! - terms are lowercased (Unicode lowercase) and their accents folded
//!   (Lucene's ASCII folding, as tantivy's `AsciiFoldingFilter` and
//!   Elasticsearch's `asciifolding` do it: `Crème` is `creme`, `Straße`
//!   `strasse`, `Ærø` `aero`), so `creme` finds "Crème" and `crème` finds
//!   "creme" ([`normalize`]);
//! - terms longer than [`MAX_TERM_BYTES`] bytes are dropped (they still take
//!   a position, so a phrase never matches across them);
//! - no stemming, no stop words;
//! - an email address (`phillip.allen@enron.com`) yields itself as one term
//!   and also its parts (`phillip`, `allen`, `enron`, `com`); the address
//!   shares the position of its first part. This applies in every field, so
//!   an address quoted in a body is found as well as one in `from`.
//!
//! A keyword field's value is a term per line, whole: trimmed, lowercased,
//! folded and cut to [`MAX_KEYWORD_BYTES`] (`Sent Items` is the term `sent
//! items`).
//!
//! Dates (the table's date column) are read as milliseconds since the epoch
//! (decimal digits) or as RFC 3339 (`2001-05-14T16:39:00-07:00`).

use rowsearch_store::{Analyzer, FieldKind, SearchField};

/// Longest term kept, in bytes (UTF-8).
pub const MAX_TERM_BYTES: usize = 40;
/// Longest keyword value kept whole, in bytes (UTF-8); a longer one is cut
/// at the last character that fits.
pub const MAX_KEYWORD_BYTES: usize = 100;

/// A keyword field's one term: the value trimmed, lowercased and folded,
/// cut to [`MAX_KEYWORD_BYTES`]; `None` for a blank value.
pub fn keyword_term(text: &str) -> Option<String> {
    let mut lower = String::new();
    normalize_into(&mut lower, text.trim());
    let mut end = lower.len().min(MAX_KEYWORD_BYTES);
    while !lower.is_char_boundary(end) {
        end -= 1;
    }
    lower.truncate(end);
    (!lower.is_empty()).then_some(lower)
}

/// The default analyzer (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct TextAnalyzer;

impl TextAnalyzer {
    /// The terms of `text` with their positions, in order.
    pub fn tokens(&self, text: &str) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        tokenize(text, &mut |t, p| out.push((t.to_owned(), p)));
        out
    }
}

/// Characters that end an address candidate besides whitespace.
fn is_delimiter(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '<' | '>' | ',' | ';' | '"' | '\'' | '(' | ')' | '[' | ']' | ':' | '/' | '\\')
}

/// `chunk` as an email address (`local@domain.tld`, trimmed of surrounding
/// punctuation), if it is one.
fn email_address(chunk: &str) -> Option<&str> {
    // Most chunks hold no `@`: one byte search before any trimming.
    if !chunk.as_bytes().contains(&b'@') {
        return None;
    }
    let trimmed = chunk.trim_matches(|c: char| !c.is_alphanumeric());
    let (local, domain) = trimmed.split_once('@')?;
    let allowed = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-');
    let ok = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && local.chars().all(allowed)
        && domain.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-'));
    ok.then_some(trimmed)
}

/// A word as the analyzer keeps it: lowercased, its accents folded (the
/// form of every term, in keyword rows, indexes and queries alike).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalize_into(&mut out, text);
    out
}

/// [`normalize`] into `out` (ASCII, most of mail, byte by byte).
pub fn normalize_into(out: &mut String, text: &str) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
        return;
    }
    let lower: String = text.chars().flat_map(char::to_lowercase).collect();
    FOLD.with_borrow_mut(|fold| {
        let mut stream = fold.token_stream(&lower);
        if stream.advance() {
            out.push_str(&stream.token().text);
        }
    });
    // A folding's letters are lowercase already, but never trust a table.
    out.make_ascii_lowercase();
}

thread_local! {
    /// Lucene's ASCII folding over a whole word (tantivy's filter, behind a
    /// tokenizer that yields its text as one token).
    static FOLD: std::cell::RefCell<tantivy::tokenizer::TextAnalyzer> = std::cell::RefCell::new(
        tantivy::tokenizer::TextAnalyzer::builder(tantivy::tokenizer::RawTokenizer::default())
            .filter(tantivy::tokenizer::AsciiFoldingFilter)
            .build(),
    );
}

fn tokenize(text: &str, sink: &mut dyn FnMut(&str, u32)) {
    if text.is_ascii() { tokenize_ascii(text, sink) } else { tokenize_chars(text, sink) }
}

/// Byte classes of ASCII text for [`tokenize_ascii`]: a letter or digit
/// (a term's), a delimiter (ends an address candidate, as
/// [`is_delimiter`]), or other punctuation (splits terms only).
const ALNUM: u8 = 0;
const DELIMITER: u8 = 1;
const PUNCTUATION: u8 = 2;
static ASCII_CLASS: [u8; 128] = {
    let mut class = [PUNCTUATION; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() {
            class[b] = ALNUM;
        } else if matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
            || matches!(
                c,
                b'<' | b'>' | b',' | b';' | b'"' | b'\'' | b'(' | b')' | b'[' | b']' | b':' | b'/' | b'\\'
            )
        {
            class[b] = DELIMITER;
        }
        b += 1;
    }
    class
};

/// [`tokenize_chars`] of ASCII text (most of mail), byte by byte: the same
/// terms at the same positions (`char::is_whitespace` and
/// `char::is_alphanumeric` of an ASCII character are its ASCII classes).
fn tokenize_ascii(text: &str, sink: &mut dyn FnMut(&str, u32)) {
    let bytes = text.as_bytes();
    let class = |i: usize| ASCII_CLASS[usize::from(bytes[i] & 0x7f)];
    let mut position = 0u32;
    let mut lower = String::new();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && class(i) == DELIMITER {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && class(i) != DELIMITER {
            i += 1;
        }
        if start == i {
            continue;
        }
        if let Some(address) = email_address(&text[start..i]) {
            normalize_into(&mut lower, address);
            if lower.len() <= MAX_TERM_BYTES {
                sink(&lower, position);
            }
        }
        let mut j = start;
        while j < i {
            while j < i && class(j) != ALNUM {
                j += 1;
            }
            let part = j;
            while j < i && class(j) == ALNUM {
                j += 1;
            }
            if part == j {
                continue;
            }
            if j - part <= MAX_TERM_BYTES {
                normalize_into(&mut lower, &text[part..j]);
                sink(&lower, position);
            }
            position = position.saturating_add(1);
        }
    }
}

/// The terms of any text, character by character (see the module docs).
fn tokenize_chars(text: &str, sink: &mut dyn FnMut(&str, u32)) {
    let mut position = 0u32;
    let mut lower = String::new();
    for chunk in text.split(is_delimiter) {
        if chunk.is_empty() {
            continue;
        }
        if let Some(address) = email_address(chunk) {
            normalize_into(&mut lower, address);
            if lower.len() <= MAX_TERM_BYTES {
                sink(&lower, position);
            }
        }
        for part in chunk.split(|c: char| !c.is_alphanumeric()) {
            if part.is_empty() {
                continue;
            }
            normalize_into(&mut lower, part);
            if lower.len() <= MAX_TERM_BYTES {
                sink(&lower, position);
            }
            position = position.saturating_add(1);
        }
    }
}

/// Reads a date value: decimal milliseconds or RFC 3339; `None` otherwise
/// (and for dates before 1970).
pub fn parse_date_ms(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    let ts: jiff::Timestamp = text.parse().ok()?;
    u64::try_from(ts.as_millisecond()).ok()
}

/// `text` cropped to `words` words (runs of non-whitespace) around the
/// first word holding a match (its normalized alphanumeric runs tested with
/// `matches`), or its first `words` words when none does, with `…` where
/// text was cut (Meilisearch's `attributesToCrop` with `cropLength`). The
/// whitespace between the kept words is kept as it is. A word overlapping
/// one of `spans` (byte ranges: where a phrase stands) holds a match too.
pub fn crop(text: &str, matches: &dyn Fn(&str) -> bool, spans: &[(usize, usize)], words: usize) -> String {
    if words == 0 {
        return String::new();
    }
    let span = |w: &str| {
        let start = w.as_ptr() as usize - text.as_ptr() as usize;
        (start, start + w.len())
    };
    let mut lower = String::new();
    let mut is_match = |(s, e): (usize, usize)| {
        spans.iter().any(|&(a, b)| a < e && s < b)
            || text[s..e].split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()).any(|piece| {
                if !piece.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
                    normalize_into(&mut lower, piece);
                    matches(&lower)
                } else {
                    matches(piece)
                }
            })
    };
    // One pass that stops at the first match (a long body's words after
    // it are never tested), keeping the words that go before it.
    let lead = words / 3;
    let mut tokens = text.split_whitespace().map(span);
    let mut window: std::collections::VecDeque<(usize, usize)> = std::collections::VecDeque::new();
    let mut cut_before = false;
    let mut matched = false;
    for token in tokens.by_ref() {
        window.push_back(token);
        if window.len() > lead + 1 {
            window.pop_front();
            cut_before = true;
        }
        if is_match(token) {
            matched = true;
            break;
        }
    }
    if !matched {
        // No match: the first words.
        window.clear();
        cut_before = false;
        tokens = text.split_whitespace().map(span);
    }
    while window.len() < words {
        match tokens.next() {
            Some(token) => window.push_back(token),
            None => break,
        }
    }
    let cut_after = tokens.next().is_some();
    if window.len() < words && cut_before {
        // A match near the end: the window ends with the text and starts
        // early enough to hold `words` words.
        let all: Vec<(usize, usize)> = text.split_whitespace().map(span).collect();
        window = all[all.len().saturating_sub(words)..].iter().copied().collect();
        cut_before = all.len() > words;
    }
    let (Some(&(from, _)), Some(&(_, to))) = (window.front(), window.back()) else { return String::new() };
    let mut out = String::with_capacity(to - from + 8);
    if cut_before {
        out.push('…');
    }
    out.push_str(&text[from..to]);
    if cut_after {
        out.push('…');
    }
    out
}

/// A snippet of `text` around the first word whose analysed form
/// ([`normalize`]d) `matches` (for a search: [`crate::expand::QueryWords`])
/// or the first of `spans` (byte ranges: where a phrase stands), with every
/// such word and span wrapped in `<em>` and `</em>`; `None` when nothing
/// matches. About `width` bytes of context, cut at word edges. Email
/// addresses match by their parts. With `escape`, `<`, `>` and `&` of the
/// text are written as HTML entities, so the markers are the only markup.
pub fn highlight(
    text: &str,
    matches: &dyn Fn(&str) -> bool,
    phrases: &[(usize, usize)],
    width: usize,
    escape: bool,
) -> Option<String> {
    // (start, end) of matching words, by byte offsets.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    let mut lower = String::new();
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_alphanumeric() && i < text.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                normalize_into(&mut lower, &text[s..i]);
                if matches(&lower) {
                    spans.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    if !phrases.is_empty() {
        // Phrases and words, in order, overlapping ones made one.
        spans.extend_from_slice(phrases);
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        spans = merged;
    }
    let &(first, _) = spans.first()?;
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let from = text[..floor(first.saturating_sub(width / 3))].rfind(char::is_whitespace).map_or(0, |p| p + 1);
    let from = if first.saturating_sub(width / 3) == 0 { 0 } else { from };
    let to = floor((from + width).min(text.len()));
    let to = if to < text.len() {
        text[..to].rfind(char::is_whitespace).filter(|&p| p > first).unwrap_or(to)
    } else {
        to
    };
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let push = |out: &mut String, piece: &str| {
        if !escape {
            out.push_str(piece);
            return;
        }
        for c in piece.chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                c => out.push(c),
            }
        }
    };
    let mut at = from;
    for &(s, e) in spans.iter().filter(|&&(s, e)| s >= from && e <= to) {
        push(&mut out, &text[at..s]);
        out.push_str("<em>");
        push(&mut out, &text[s..e]);
        out.push_str("</em>");
        at = e;
    }
    push(&mut out, &text[at..to]);
    if to < text.len() {
        out.push('…');
    }
    Some(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

impl Analyzer for TextAnalyzer {
    fn terms(&self, field: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
        match field.kind {
            FieldKind::Text => tokenize(text, sink),
            // One term per line: a folded message's folders and ids.
            FieldKind::Keyword => {
                for (n, line) in text.split('\n').enumerate() {
                    if let Some(term) = keyword_term(line) {
                        sink(&term, n as u32);
                    }
                }
            }
        }
    }

    fn date_ms(&self, value: &[u8]) -> Option<u64> {
        parse_date_ms(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<(String, u32)> {
        TextAnalyzer.tokens(text)
    }

    /// One of the two ways of tokenizing.
    type Tokenize = fn(&str, &mut dyn FnMut(&str, u32));

    proptest::proptest! {
        /// The ASCII fast path lowercases exactly as Unicode does; any
        /// text normalizes to what its lowercase folds to, and folding
        /// twice changes nothing.
        #[test]
        fn normalizing_lowercases_as_unicode_and_folds_once(text in "[ -~]{0,40}|\\PC{0,20}") {
            let mut out = String::new();
            normalize_into(&mut out, &text);
            let lower = text.chars().flat_map(char::to_lowercase).collect::<String>();
            if text.is_ascii() {
                proptest::prop_assert_eq!(&out, &lower);
            }
            proptest::prop_assert_eq!(&normalize(&lower), &out);
            proptest::prop_assert_eq!(&normalize(&out), &out);
        }

        /// ASCII text gives the same terms at the same positions byte by
        /// byte as character by character: words, addresses (and what is
        /// almost one), every delimiter and punctuation, control
        /// characters, over-long words.
        #[test]
        fn ascii_text_tokenizes_as_character_by_character(
            pieces in proptest::collection::vec(
                "[A-Za-z0-9]{1,6}|[a-z.]{1,5}@[a-z.-]{1,8}|x{38,42}|[\\x00-\\x20]|[\\x00-\\x7f]{1,3}|[ -/:-@\\[-`{-~]{1,2}",
                0..30,
            ),
        ) {
            let text = pieces.concat();
            let collect = |tokenize: Tokenize| {
                let mut out = Vec::new();
                tokenize(&text, &mut |t, p| out.push((t.to_owned(), p)));
                out
            };
            proptest::prop_assert_eq!(collect(tokenize_ascii), collect(tokenize_chars));
        }
    }

    #[test]
    fn accents_fold_in_words_addresses_and_keywords() {
        let words = |text: &str| terms(text).into_iter().map(|(t, _)| t).collect::<Vec<_>>();
        assert_eq!(words("Crème BRÛLÉE à Zürich"), ["creme", "brulee", "a", "zurich"]);
        assert_eq!(words("Straße Ærø naïve façade Łódź"), ["strasse", "aero", "naive", "facade", "lodz"]);
        assert_eq!(words("josé.pérez@enron.com"), ["jose.perez@enron.com", "jose", "perez", "enron", "com"]);
        // Letters without an ASCII form stay as they are, lowercased.
        assert_eq!(words("Жёлтый 東京"), ["жёлтый", "東京"]);
        assert_eq!(keyword_term(" Boîte de Réception ").as_deref(), Some("boite de reception"));
    }

    #[test]
    fn keyword_fields_are_a_whole_term_per_line() {
        let field = SearchField::keyword("folder", "m:folder");
        let mut out = Vec::new();
        TextAnalyzer.terms(&field, "  Sent_Items/Ärger \n", &mut |t, p| out.push((t.to_owned(), p)));
        assert_eq!(out, vec![("sent_items/arger".to_owned(), 0)]);
        out.clear();
        TextAnalyzer.terms(&field, " \t ", &mut |t, p| out.push((t.to_owned(), p)));
        assert!(out.is_empty(), "a blank value has no term");
        // A value of several lines (a folded message's folders) is a term
        // per line.
        out.clear();
        TextAnalyzer.terms(&field, "inbox\n\nAll_Documents\n", &mut |t, p| out.push((t.to_owned(), p)));
        assert_eq!(out, vec![("inbox".to_owned(), 0), ("all_documents".to_owned(), 2)]);
        let long = "ж".repeat(80);
        let term = keyword_term(&long).unwrap();
        assert_eq!(term.len(), MAX_KEYWORD_BYTES, "cut at a character edge");
        assert!(long.starts_with(&term));
        assert_eq!(
            keyword_term(&"é".repeat(120)).unwrap(),
            "e".repeat(MAX_KEYWORD_BYTES),
            "folded, then cut"
        );
    }

    #[test]
    fn highlight_escapes_the_text_so_the_markers_are_the_only_markup() {
        let terms = |w: &str| ["click", "here"].contains(&w);
        let text = "click <em>HERE</em> </em><script>x</script> & more";
        assert_eq!(
            highlight(text, &terms, &[], 200, true).as_deref(),
            Some(
                "<em>click</em> &lt;em&gt;<em>HERE</em>&lt;/em&gt; &lt;/em&gt;&lt;script&gt;x&lt;/script&gt; &amp; more"
            )
        );
        assert_eq!(
            highlight(text, &terms, &[], 200, false).as_deref(),
            Some("<em>click</em> <em><em>HERE</em></em> </em><script>x</script> & more")
        );
    }

    #[test]
    fn crop_keeps_words_around_the_first_match() {
        let terms = |w: &str| w == "gas";
        let text = "one two three four five six Gas-fired seven eight nine ten";
        assert_eq!(crop(text, &terms, &[], 3), "…six Gas-fired seven…");
        assert_eq!(crop(text, &terms, &[], 100), text);
        // No match: the first words.
        assert_eq!(crop(text, &|_| false, &[], 2), "one two…");
        // A match near the end: the window ends with the text.
        assert_eq!(crop("a b c d gas", &terms, &[], 3), "…c d gas");
        assert_eq!(crop("a\r\n  b c", &|_| false, &[], 2), "a\r\n  b…");
        assert_eq!(crop("  ", &terms, &[], 3), "");
        assert_eq!(crop("a b", &terms, &[], 0), "");
    }

    /// The crop as first written: every word's span, the first match, the
    /// window slid back to hold `words` words near the end.
    fn crop_model(text: &str, matches: &dyn Fn(&str) -> bool, words: usize) -> String {
        let spans: Vec<(usize, usize)> = text
            .split_whitespace()
            .map(|w| {
                let start = w.as_ptr() as usize - text.as_ptr() as usize;
                (start, start + w.len())
            })
            .collect();
        if words == 0 || spans.is_empty() {
            return String::new();
        }
        let hit = spans.iter().position(|&(s, e)| {
            text[s..e]
                .split(|c: char| !c.is_alphanumeric())
                .any(|p| !p.is_empty() && matches(&p.to_lowercase()))
        });
        let first = hit.map_or(0, |h| h.saturating_sub(words / 3)).min(spans.len().saturating_sub(words));
        let last = (first + words).min(spans.len()) - 1;
        let mut out = String::new();
        if first > 0 {
            out.push('…');
        }
        out.push_str(&text[spans[first].0..spans[last].1]);
        if last + 1 < spans.len() {
            out.push('…');
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn crop_equals_the_model(
            pieces in proptest::collection::vec(
                (proptest::sample::select(vec!["gas", "Gas-fired", "deal", "x", "\u{e9}t\u{e9}", "GAS", ""]),
                 proptest::sample::select(vec![" ", "  ", "\r\n", "\t"])),
                0..30),
            words in 0usize..12,
        ) {
            let text: String = pieces.iter().map(|(w, sep)| format!("{w}{sep}")).collect();
            let terms = |w: &str| w == "gas";
            proptest::prop_assert_eq!(crop(&text, &terms, &[], words), crop_model(&text, &terms, words), "{:?}", text);
        }
    }

    #[test]
    fn highlight_marks_matching_words_in_a_window() {
        let terms = |w: &str| ["gas", "deal"].contains(&w);
        assert_eq!(
            highlight("The Gas deal is done; gas-fired.", &terms, &[], 200, true).as_deref(),
            Some("The <em>Gas</em> <em>deal</em> is done; <em>gas</em>-fired.")
        );
        assert_eq!(highlight("nothing here", &terms, &[], 200, true), None);
        let long = format!("{} the gas {}", "word ".repeat(100), "tail ".repeat(100));
        let snippet = highlight(&long, &terms, &[], 60, true).unwrap();
        assert!(
            snippet.starts_with('…') && snippet.ends_with('…') && snippet.contains("<em>gas</em>"),
            "{snippet}"
        );
        assert!(snippet.len() < 90, "{snippet}");
        // Multi-byte text: cuts stay on character boundaries.
        let text = format!("{}gas{}", "é".repeat(80), "ü".repeat(80));
        assert!(highlight(&format!("{text} gas"), &terms, &[], 50, true).is_some());
    }

    fn t(items: &[(&str, u32)]) -> Vec<(String, u32)> {
        items.iter().map(|(s, p)| (s.to_string(), *p)).collect()
    }

    #[test]
    fn splits_on_non_alphanumerics_and_lowercases() {
        assert_eq!(terms("Gas-prices, UP 10%!"), t(&[("gas", 0), ("prices", 1), ("up", 2), ("10", 3)]));
        assert_eq!(terms("Ärger über Öl"), t(&[("arger", 0), ("uber", 1), ("ol", 2)]));
        assert_eq!(terms("  \t\n"), t(&[]));
        assert_eq!(terms("it's"), t(&[("it", 0), ("s", 1)]));
    }

    #[test]
    fn email_addresses_yield_themselves_and_their_parts() {
        assert_eq!(
            terms("From: Phillip.Allen@enron.com, ok"),
            t(&[
                ("from", 0),
                ("phillip.allen@enron.com", 1),
                ("phillip", 1),
                ("allen", 2),
                ("enron", 3),
                ("com", 4),
                ("ok", 5)
            ])
        );
        assert_eq!(
            terms("<jeff.dasovich@enron.com>"),
            t(&[("jeff.dasovich@enron.com", 0), ("jeff", 0), ("dasovich", 1), ("enron", 2), ("com", 3)])
        );
        // Not addresses: no dot in the domain, nothing before the @.
        assert_eq!(terms("a@b"), t(&[("a", 0), ("b", 1)]));
        assert_eq!(terms("@enron.com"), t(&[("enron", 0), ("com", 1)]));
    }

    #[test]
    fn long_terms_are_dropped_but_keep_their_position() {
        let long = "x".repeat(41);
        let exact = "y".repeat(40);
        assert_eq!(terms(&format!("a {long} {exact} b")), t(&[("a", 0), (exact.as_str(), 2), ("b", 3)]));
        // A multi-byte term is measured in bytes (once folded): 21
        // two-byte letters = 42 bytes.
        assert_eq!(terms(&"ж".repeat(21)), t(&[]));
        assert_eq!(terms(&"é".repeat(21)), t(&[(&"e".repeat(21), 0)]));
    }

    #[test]
    fn dates_are_milliseconds_or_rfc3339() {
        assert_eq!(parse_date_ms(b"988000000000"), Some(988_000_000_000));
        assert_eq!(parse_date_ms(b"2001-05-14T16:39:00-07:00"), Some(989_883_540_000));
        assert_eq!(parse_date_ms(b"2001-05-14T23:39:00Z"), Some(989_883_540_000));
        assert_eq!(parse_date_ms(b"1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_date_ms(b"yesterday"), None);
        assert_eq!(parse_date_ms(b""), None);
    }
}
