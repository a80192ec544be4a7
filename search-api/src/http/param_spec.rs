//! Every query parameter, declared once: its name, its kind (flag, number
//! with its bounds, one of a list of values, byte string, list, JSON
//! object, query text), what it means and whether it must be given. The
//! route table lists a route's parameters from these; everything else
//! reads them from there: the query string's decoding (which values are
//! byte strings, which names repeat) and the unknown-parameter check
//! (`params.rs`), the syntax check of each value before a handler runs
//! (flags, numbers, values from a list), the JSON types of a scan body,
//! the OpenAPI document (`openapi.rs`), and the bounds that come from the
//! server's options ([`Max`], resolved against [`Limits`]).

use super::state::Limits;

/// One parameter of a route.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name in the query string (or the scan body).
    pub name: &'static str,
    /// What it takes.
    pub kind: Kind,
    /// What it means (the OpenAPI description).
    pub about: &'static str,
    /// Whether the route needs it.
    pub required: bool,
}

/// What a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `true`, `1` or empty; `false` or `0`.
    Flag,
    /// Text.
    Text,
    /// Query text (the query language, `MAX_QUERY_BYTES` at most, not blank).
    Query,
    /// The text typed so far (as [`Kind::Query`], read as words, not the
    /// query language).
    Typed,
    /// A filter in HBase's filter language (`--max-filter-bytes` at most).
    Filter,
    /// A byte string in the request's encoding.
    Bytes,
    /// Byte strings, comma-separated and repeatable.
    BytesList,
    /// Texts, comma-separated and repeatable.
    TextList,
    /// `INDEX:eq|prefix:VALUE`, repeatable (`--max-lookups` at most).
    Lookups,
    /// One of these values; the first is the default.
    Choice(&'static [&'static str]),
    /// A non-negative integer from `min` to `max`.
    Integer {
        /// The least value taken.
        min: u64,
        /// The greatest.
        max: Max,
    },
    /// A number of versions (1 and up) or `all`.
    Versions,
    /// A JSON object (the fields of a typed row key).
    Object,
    /// A scan's cursor: `f1.` or `r1.` and lowercase hex.
    ScanCursor,
}

/// The greatest value of an integer parameter: fixed, or a server option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Max {
    /// Any `u64`.
    Any,
    /// This value.
    Fixed(u64),
    /// `--max-scan-limit`.
    ScanLimit,
    /// `--max-search-limit`.
    SearchLimit,
}

impl Max {
    /// The bound for a server with `limits`.
    pub fn of(self, limits: &Limits) -> u64 {
        match self {
            Max::Any => u64::MAX,
            Max::Fixed(n) => n,
            Max::ScanLimit => limits.max_scan_limit as u64,
            Max::SearchLimit => limits.max_search_limit as u64,
        }
    }
}

impl Kind {
    /// Whether it may be given more than once (its values add up).
    pub fn repeats(self) -> bool {
        matches!(self, Kind::BytesList | Kind::TextList | Kind::Lookups)
    }

    /// Whether its percent-decoded value may hold any bytes (API.md, "Byte
    /// strings"); every other parameter is text and must be UTF-8.
    pub fn takes_bytes(self) -> bool {
        matches!(self, Kind::Bytes | Kind::BytesList | Kind::Lookups)
    }

    /// Checks the syntax of one value (bounds that carry their own error,
    /// such as the search limit's, are the handler's).
    pub fn check(self, name: &str, value: &str) -> Result<(), String> {
        match self {
            Kind::Flag => match value {
                "true" | "1" | "" | "false" | "0" => Ok(()),
                v => Err(format!("{name}: expected true or false, got {v:?}")),
            },
            Kind::Integer { min, max } => {
                let n = value.parse::<u64>().map_err(|_| format!("{name}: not a number: {value:?}"))?;
                // A bound of the server's options is checked where the
                // options are known; a fixed one here.
                let fixed = match max {
                    Max::Fixed(max) => Some(max),
                    Max::Any | Max::ScanLimit | Max::SearchLimit => None,
                };
                if n < min || fixed.is_some_and(|max| n > max) {
                    let bound = fixed.map_or(format!("at least {min}"), |max| format!("{min} to {max}"));
                    return Err(format!("{name} {n}: {bound}"));
                }
                Ok(())
            }
            Kind::Choice(values) if !values.contains(&value) => {
                Err(format!("{name} {value:?}: {}", one_of(values)))
            }
            _ => Ok(()),
        }
    }
}

/// `a, b or c`.
fn one_of(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

const fn param(name: &'static str, kind: Kind, about: &'static str) -> Param {
    Param { name, kind, about, required: false }
}

const fn required(name: &'static str, kind: Kind, about: &'static str) -> Param {
    Param { name, kind, about, required: true }
}

/// The values of `encoding`.
pub const ENCODINGS: &[&str] = &["binary", "base64", "hex"];

pub const ENCODING: Param = param(
    "encoding",
    Kind::Choice(ENCODINGS),
    "how every byte string of the request and the answer is written",
);
pub const COLUMNS: Param =
    param("columns", Kind::BytesList, "family or family:qualifier, comma-separated and repeatable");
pub const VERSIONS: Param = param("versions", Kind::Versions, "versions per column: a number or all");
pub const MIN_TS: Param =
    param("min_ts", Kind::Integer { min: 0, max: Max::Any }, "inclusive lower bound on timestamps (ms)");
pub const MAX_TS: Param =
    param("max_ts", Kind::Integer { min: 0, max: Max::Any }, "exclusive upper bound on timestamps (ms)");
pub const TIMESTAMP: Param = param(
    "timestamp",
    Kind::Integer { min: 0, max: Max::Any },
    "delete only versions up to this timestamp (ms)",
);
pub const EXACT: Param = param(
    "exact",
    Kind::Flag,
    "delete exactly the version at timestamp of each family:qualifier column (HBase's Delete.addColumn), \
     not every version up to it",
);
pub const ATOMIC: Param = param(
    "atomic",
    Kind::Flag,
    "true (the default): all or nothing. Over HBase, whose atomicity is per row, a batch of more than one row \
     is refused unless atomic=false, which applies each row on its own and says which were applied",
);
pub const START: Param = param("start", Kind::Bytes, "first key, inclusive (the upper bound with reverse)");
pub const STOP: Param = param("stop", Kind::Bytes, "last key, exclusive (the lower bound with reverse)");
pub const PREFIX: Param = param("prefix", Kind::Bytes, "only keys with this prefix");
pub const PREFIX_FIELDS: Param =
    param("prefix_fields", Kind::Object, "JSON object of the leading fields of a typed row key");
pub const KEY_FIELDS: Param =
    required("key_fields", Kind::Object, "JSON object of every field of the table's typed row key");
pub const REVERSE: Param = param("reverse", Kind::Flag, "true or false");
pub const KEYS_ONLY: Param = param("keys_only", Kind::Flag, "true or false");
pub const ROWS: Param = param("rows", Kind::Flag, "true or false");
pub const FILTER: Param = param("filter", Kind::Filter, "HBase filter language");
pub const SCAN_LIMIT: Param =
    param("limit", Kind::Integer { min: 0, max: Max::ScanLimit }, "most rows or keys (default 100)");
pub const KEYS_LIMIT: Param = param(
    "limit",
    Kind::Integer { min: 0, max: Max::Any },
    "most keys (default 100; more is taken as the scan limit)",
);
pub const OFFSET: Param = param("offset", Kind::Integer { min: 0, max: Max::Any }, "rows to skip");
// A scan's cursor says where it resumes and nothing else: any well-formed
// one is a place to resume from.
pub const SCAN_CURSOR: Param = param(
    "cursor",
    Kind::ScanCursor,
    "resume after the page that returned this cursor (f1. forward, r1. reverse)",
);
pub const CURSOR: Param = param("cursor", Kind::Text, "resume after the page that returned this cursor");
/// A cursor that is a row key: a byte string in the request's encoding.
pub const KEY_CURSOR: Param =
    param("cursor", Kind::Bytes, "resume after this key (the next_cursor of the page before)");
pub const REGION: Param =
    param("region", Kind::Integer { min: 0, max: Max::Fixed(65535) }, "only this region");
pub const EQ: Param = param("eq", Kind::BytesList, "the value of each leading indexed column, in order");
pub const LOOKUPS: Param = required("q", Kind::Lookups, "INDEX:eq|prefix:VALUE, repeatable");
pub const OP: Param = param("op", Kind::Choice(&["intersect", "union"]), "keys in every lookup, or in any");
pub const USER: Param = param("user", Kind::Bytes, "the partition (mailbox)");
pub const USER_REQUIRED: Param = required("user", Kind::Bytes, "the partition (mailbox)");
pub const TERMS: Param = param("terms", Kind::TextList, "terms, comma-separated and repeatable");
pub const MODE: Param = param("mode", Kind::Choice(&["auto", "full", "incremental"]), "how to reindex");

/// The page's own state (what was searched): it opens by relevance on what
/// it does not know.
pub const PAGE: &[Param] = &[
    param("table", Kind::Text, "the table the page opens on"),
    param("q", Kind::Text, "the query the page opens with"),
    param("sort", Kind::Text, "relevance, newest or oldest"),
    param("conversations", Kind::Text, "off: the page opens on plain messages, not conversations"),
];

/// The values of a search's `sort`.
pub const SORTS: &[&str] = &["relevance", "newest", "oldest"];

pub const QUERY: Param =
    required("q", Kind::Query, "the query: terms (ANDed), field:term, \"phrases\", date ranges");
pub const SORT: Param = param("sort", Kind::Choice(SORTS), "order of the hits");
pub const COLLAPSE: Param = param(
    "collapse",
    Kind::Choice(&["thread"]),
    "thread: one hit per thread (its best matching message, with the thread's id, matches, messages and participants); total counts threads",
);
pub const SEARCH_LIMIT: Param = param(
    "limit",
    Kind::Integer { min: 0, max: Max::SearchLimit },
    "hits per page (default 10; 0: the total alone)",
);
pub const SEARCH_OFFSET: Param = param(
    "offset",
    Kind::Integer { min: 0, max: Max::Fixed(crate::searcher::MAX_RESULT_WINDOW as u64 - 1) },
    "hits to skip (offset + limit at most 10,000)",
);
pub const HIGHLIGHT: Param = param("highlight", Kind::Flag, "true or false");
pub const HIGHLIGHT_ENCODER: Param = param(
    "highlight_encoder",
    Kind::Choice(&["html", "raw"]),
    "html (default): the text of highlights is HTML-escaped (<, >, &), only the <em> markers are markup; raw: the text as stored",
);
pub const TYPOS: Param = param(
    "typos",
    Kind::Choice(&["off", "auto"]),
    "auto: words of 5+ characters match one typo away, 9+ two, a typo on the first character counting as two (exact matches first)",
);
pub const FACETS: Param = param(
    "facets",
    Kind::Text,
    "facets to count over every match, comma-separated: the partition's name, fields declared facet, month, year",
);
pub const FACET_LIMIT: Param = param(
    "facet_limit",
    Kind::Integer { min: 1, max: Max::Fixed(crate::searcher::MAX_FACET_LIMIT as u64) },
    "values per facet, most matches first (default 10)",
);
pub const FIELDS: Param = param(
    "fields",
    Kind::TextList,
    "only these names in each document (search fields, the partition, date, family:qualifier columns), \
     comma-separated and repeatable; only their columns are read",
);
pub const CROP: Param = param(
    "crop",
    Kind::TextList,
    "search fields cropped to WORDS words around the first matched word (FIELD or FIELD:WORDS, default 10, \
     at most 1000; … where cut), comma-separated and repeatable; each is in the document",
);
pub const FORMAT: Param =
    param("format", Kind::Choice(&["documents", "cells"]), "hits as documents (default) or as rows of cells");
pub const CONSISTENCY: Param = param(
    "consistency",
    Kind::Choice(&["snapshot", "eventual"]),
    "snapshot (default): reflect every write committed before the search; eventual: the index as it stands",
);
pub const MIN_SEQ: Param = param(
    "min_seq",
    Kind::Integer { min: 0, max: Max::Any },
    "answer only once the index reflects this write's seq (waits within the time limit)",
);
pub const SINCE: Param = param(
    "since",
    Kind::Integer { min: 0, max: Max::Any },
    "the changes after this sequence (default: the consumer's position, else the oldest change the feed holds)",
);
pub const CHANGES_LIMIT: Param =
    param("limit", Kind::Integer { min: 1, max: Max::Fixed(10_000) }, "changes in the page (default 1000)");
pub const WAIT_MS: Param = param(
    "wait_ms",
    Kind::Integer { min: 0, max: Max::Fixed(60_000) },
    "when there is no change yet, wait up to this long for one (long poll; default 0)",
);
pub const CELLS: Param = param("cells", Kind::Flag, "each changed row's cells as it stands now");
pub const CONSUMER: Param = param(
    "consumer",
    Kind::Text,
    "start after this consumer's position (PUT /consumers/{name} acknowledges)",
);
pub const TYPED: Param = required("q", Kind::Typed, "the text typed so far: its last word is completed");
pub const SUGGEST_LIMIT: Param = param(
    "limit",
    Kind::Integer { min: 1, max: Max::Fixed(crate::suggest::MAX_SUGGEST_LIMIT as u64) },
    "suggestions (default 5)",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_name_every_value_in_their_error() {
        assert_eq!(
            MODE.kind.check("mode", "fast"),
            Err("mode \"fast\": auto, full or incremental".to_owned())
        );
        assert_eq!(MODE.kind.check("mode", "auto"), Ok(()));
        assert!(REVERSE.kind.check("reverse", "yes").is_err());
        assert!(SCAN_LIMIT.kind.check("limit", "-1").is_err());
        assert!(SCAN_LIMIT.kind.check("limit", "12").is_ok());
    }
}
