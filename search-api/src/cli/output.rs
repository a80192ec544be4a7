//! JSON shapes printed by the CLI: the row shape of API.md.

use rowsearch::store::Row;
use rowsearch::wire;
use serde_json::{Value, json};

/// A row as API.md's JSON: key and cells as binary strings.
pub fn row_json(row: &Row) -> Value {
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
    json!({ "key": wire::encode(&row.key), "cells": cells })
}
