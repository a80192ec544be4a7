//! JSON shapes printed by the CLI: the row shape of API.md.

use rowsearch::store::{Row, RowKeySchema};
use rowsearch::wire;
use serde_json::{Value, json};

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
    let mut out = json!({ "key": wire::encode(&row.key) });
    if let Some(fields) =
        row_key.filter(|rk| !rk.fields.is_empty()).and_then(|rk| rk.decode_json(&row.key).ok())
    {
        out["key_fields"] = fields;
    }
    out["cells"] = Value::Array(cells);
    out
}
