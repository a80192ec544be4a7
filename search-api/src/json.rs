//! JSON shapes shared by the CLI and the HTTP API (API.md).

use rowsearch_store::{Row, RowKeySchema};
use serde_json::{Value, json};

use crate::wire;

/// How byte strings are written in a request and its response (API.md,
/// "Byte strings"): binary strings by default, or `encoding=base64` / `hex`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 as is, `\\` for a backslash, `\xNN` for other bytes.
    #[default]
    Binary,
    /// Standard base64 with padding.
    Base64,
    /// Lowercase hex (either case read).
    Hex,
}

impl Encoding {
    /// `binary` (or absent), `base64` or `hex`.
    ///
    /// # Errors
    /// Any other name.
    pub fn parse(name: Option<&str>) -> Result<Encoding, String> {
        match name {
            None | Some("binary") => Ok(Encoding::Binary),
            Some("base64") => Ok(Encoding::Base64),
            Some("hex") => Ok(Encoding::Hex),
            Some(other) => Err(format!("encoding {other:?}: binary, base64 or hex")),
        }
    }

    /// Writes bytes.
    pub fn encode(self, bytes: &[u8]) -> String {
        use base64::Engine as _;
        match self {
            Encoding::Binary => wire::encode(bytes),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(bytes),
            Encoding::Hex => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// Reads bytes.
    ///
    /// # Errors
    /// Text that is not valid in this encoding.
    pub fn decode(self, text: &str) -> Result<Vec<u8>, String> {
        use base64::Engine as _;
        match self {
            Encoding::Binary => wire::decode(text).map_err(|e| e.to_string()),
            Encoding::Base64 => {
                base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| e.to_string())
            }
            Encoding::Hex => {
                if !text.len().is_multiple_of(2) {
                    return Err(format!("odd number of hex digits in {text:?}"));
                }
                (0..text.len())
                    .step_by(2)
                    .map(|i| {
                        text.get(i..i + 2)
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or_else(|| format!("not hex: {text:?}"))
                    })
                    .collect()
            }
        }
    }
}

/// A row as API.md's JSON: key and cells as binary strings, and the key's
/// fields when the table declares a typed key.
pub fn row_json(row: &Row, row_key: Option<&RowKeySchema>) -> Value {
    row_json_in(row, row_key, Encoding::Binary)
}

/// [`row_json`] with byte strings in `encoding`.
pub fn row_json_in(row: &Row, row_key: Option<&RowKeySchema>, encoding: Encoding) -> Value {
    let cells: Vec<Value> = row
        .cells
        .iter()
        .map(|c| {
            let mut column = c.family.as_bytes().to_vec();
            column.push(b':');
            column.extend_from_slice(&c.qualifier);
            json!({
                "column": encoding.encode(&column),
                "timestamp": c.timestamp,
                "value": encoding.encode(&c.value),
            })
        })
        .collect();
    let mut out = key_json_in(&row.key, row_key, encoding);
    out["cells"] = Value::Array(cells);
    out
}

/// `{"key": ..., "key_fields": ...}` (the fields only for a typed key).
pub fn key_json(key: &[u8], row_key: Option<&RowKeySchema>) -> Value {
    key_json_in(key, row_key, Encoding::Binary)
}

/// [`key_json`] with the key in `encoding`.
pub fn key_json_in(key: &[u8], row_key: Option<&RowKeySchema>, encoding: Encoding) -> Value {
    let mut out = json!({ "key": encoding.encode(key) });
    if let Some(fields) = row_key.filter(|rk| !rk.fields.is_empty()).and_then(|rk| rk.decode_json(key).ok()) {
        out["key_fields"] = fields;
    }
    out
}

/// The search response of API.md.
pub fn search_json(
    results: &crate::SearchResults,
    row_key: Option<&RowKeySchema>,
    highlights: bool,
) -> Value {
    search_json_in(results, row_key, highlights, Encoding::Binary)
}

/// [`search_json`] with byte strings in `encoding`.
pub fn search_json_in(
    results: &crate::SearchResults,
    row_key: Option<&RowKeySchema>,
    highlights: bool,
    encoding: Encoding,
) -> Value {
    let hits: Vec<Value> = results
        .hits
        .iter()
        .map(|h| {
            let mut hit = key_json_in(&h.row.key, row_key, encoding);
            if let Some(score) = h.score {
                hit["score"] = json!(score);
            }
            if let Some(date) = h.date_ms {
                hit["date_ms"] = json!(date);
            }
            hit["row"] = row_json_in(&h.row, row_key, encoding);
            if highlights {
                hit["highlights"] = json!(h.highlights);
            }
            hit
        })
        .collect();
    json!({
        "total": results.total,
        "took_ms": results.took_ms,
        "hits": hits,
        "next_cursor": results.next_cursor,
        "generation": results.generation,
    })
}
