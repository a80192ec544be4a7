//! JSON shapes shared by the CLI and the HTTP API (API.md).

use rowsearch_store::{Row, RowKeySchema};
use serde_json::{Value, json};

use crate::wire;

/// A row as API.md's JSON: key and cells as binary strings, and the key's
/// fields when the table declares a typed key.
pub fn row_json(row: &Row, row_key: Option<&RowKeySchema>) -> Value {
    let cells: Vec<Value> = row
        .cells
        .iter()
        .map(|c| {
            let mut column = c.family.as_bytes().to_vec();
            column.push(b':');
            column.extend_from_slice(&c.qualifier);
            json!({
                "column": wire::encode(&column),
                "timestamp": c.timestamp,
                "value": wire::encode(&c.value),
            })
        })
        .collect();
    let mut out = key_json(&row.key, row_key);
    out["cells"] = Value::Array(cells);
    out
}

/// `{"key": ..., "key_fields": ...}` (the fields only for a typed key).
pub fn key_json(key: &[u8], row_key: Option<&RowKeySchema>) -> Value {
    let mut out = json!({ "key": wire::encode(key) });
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
    let hits: Vec<Value> = results
        .hits
        .iter()
        .map(|h| {
            let mut hit = key_json(&h.row.key, row_key);
            if let Some(score) = h.score {
                hit["score"] = json!(score);
            }
            if let Some(date) = h.date_ms {
                hit["date_ms"] = json!(date);
            }
            hit["row"] = row_json(&h.row, row_key);
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
