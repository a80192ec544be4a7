//! JSON shapes shared by the CLI and the HTTP API (API.md).

use rowsearch_store::{IndexState, IndexVerifyReport, Row, RowKeySchema, TableSchema};
use serde::Serialize;
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
    let view = RowView {
        key: encoding.encode(&row.key),
        key_fields: key_fields(&row.key, row_key),
        cells: cell_views(&row.cells, encoding),
    };
    // Strings and numbers only: nothing in it can fail to serialize.
    serde_json::to_value(view).unwrap_or(Value::Null)
}

/// A typed key's fields (`None` for a key without fields, or bytes that
/// are not one of its keys).
fn key_fields(key: &[u8], row_key: Option<&RowKeySchema>) -> Option<Value> {
    row_key.filter(|rk| !rk.fields.is_empty()).and_then(|rk| rk.decode_json(key).ok())
}

/// Cells as API.md shows them: `family:qualifier`, timestamp, value.
fn cell_views(cells: &[rowsearch_store::Cell], encoding: Encoding) -> Vec<CellView> {
    cells
        .iter()
        .map(|c| {
            let mut column = Vec::with_capacity(c.family.len() + 1 + c.qualifier.len());
            column.extend_from_slice(c.family.as_bytes());
            column.push(b':');
            column.extend_from_slice(&c.qualifier);
            CellView {
                column: encoding.encode(&column),
                timestamp: c.timestamp,
                value: encoding.encode(&c.value),
            }
        })
        .collect()
}

/// `{"key": ..., "key_fields": ...}` (the fields only for a typed key).
pub fn key_json(key: &[u8], row_key: Option<&RowKeySchema>) -> Value {
    key_json_in(key, row_key, Encoding::Binary)
}

/// [`key_json`] with the key in `encoding`.
pub fn key_json_in(key: &[u8], row_key: Option<&RowKeySchema>, encoding: Encoding) -> Value {
    let mut out = json!({ "key": encoding.encode(key) });
    if let Some(fields) = key_fields(key, row_key) {
        out["key_fields"] = fields;
    }
    out
}

/// How search hits are shown: as documents (the default) or as the
/// HBase-shaped row of cells (`format=cells`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HitFormat {
    /// `document`: the search fields by name, partition, date, columns asked.
    #[default]
    Documents,
    /// `row`: the row's cells as binary strings.
    Cells,
}

impl HitFormat {
    /// `documents` (or absent) or `cells`.
    ///
    /// # Errors
    /// Any other name.
    pub fn parse(name: Option<&str>) -> Result<HitFormat, String> {
        match name {
            None | Some("documents") => Ok(HitFormat::Documents),
            Some("cells") => Ok(HitFormat::Cells),
            Some(other) => Err(format!("format {other:?}: documents or cells")),
        }
    }
}

/// The search response of API.md (hits as documents).
pub fn search_json(
    results: &crate::SearchResults,
    row_key: Option<&RowKeySchema>,
    highlights: bool,
) -> Value {
    search_json_in(results, row_key, highlights, Encoding::Binary, HitFormat::Documents)
}

/// [`search_json`] with byte strings in `encoding`.
pub fn search_json_in(
    results: &crate::SearchResults,
    row_key: Option<&RowKeySchema>,
    highlights: bool,
    encoding: Encoding,
    format: HitFormat,
) -> Value {
    serde_json::to_value(SearchBody::new(results, row_key, highlights, encoding, format))
        .unwrap_or(Value::Null)
}

/// The search response of API.md as a serializable view of the results:
/// what [`search_json_in`] builds, written straight to bytes without a
/// `Value` tree (the server's path; the tree cost a fifth of a search's
/// CPU).
#[derive(Serialize)]
pub struct SearchBody<'a> {
    total: u64,
    took_ms: f64,
    hits: Vec<HitBody<'a>>,
    next_cursor: &'a Option<String>,
    generation: u64,
    seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    facets: Option<FacetsView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    did_you_mean: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unknown_user: Option<&'a crate::searcher::UnknownUser>,
}

/// Facets as API.md's object of objects, in the order asked for and each
/// facet's values most matches first.
struct FacetsView<'a>(&'a [(String, Vec<(String, u64)>)]);

impl Serialize for FacetsView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Values<'a>(&'a [(String, u64)]);
        impl Serialize for Values<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (value, n) in self.0 {
                    map.serialize_entry(value, n)?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, values) in self.0 {
            map.serialize_entry(name, &Values(values))?;
        }
        map.end()
    }
}

impl<'a> SearchBody<'a> {
    /// The view of `results`, hits in `format`, byte strings (keys, and
    /// cells) in `encoding`, and the highlights when asked for.
    pub fn new(
        results: &'a crate::SearchResults,
        row_key: Option<&RowKeySchema>,
        highlights: bool,
        encoding: Encoding,
        format: HitFormat,
    ) -> SearchBody<'a> {
        let hits = results
            .hits
            .iter()
            .map(|h| {
                let key = encoding.encode(&h.row.key);
                let key_fields = key_fields(&h.row.key, row_key);
                let (row, document) = match format {
                    HitFormat::Documents => (None, Some(&h.document)),
                    HitFormat::Cells => (
                        Some(RowView {
                            key: key.clone(),
                            key_fields: key_fields.clone(),
                            cells: cell_views(&h.row.cells, encoding),
                        }),
                        None,
                    ),
                };
                HitBody {
                    row,
                    document,
                    key,
                    key_fields,
                    score: h.score,
                    date_ms: h.date_ms,
                    highlights: highlights.then_some(&h.highlights),
                    thread: h.thread.as_ref(),
                }
            })
            .collect();
        SearchBody {
            total: results.total,
            took_ms: results.took_ms,
            hits,
            next_cursor: &results.next_cursor,
            generation: results.generation,
            seq: results.seq,
            facets: (!results.facets.is_empty()).then_some(FacetsView(&results.facets)),
            did_you_mean: results.did_you_mean.as_deref(),
            unknown_user: results.unknown_user.as_ref(),
        }
    }
}

/// One hit: the key (and its fields), score or date, the row, highlights.
#[derive(Serialize)]
struct HitBody<'a> {
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_fields: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    date_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    document: Option<&'a crate::document::Document>,
    #[serde(skip_serializing_if = "Option::is_none")]
    row: Option<RowView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    highlights: Option<&'a std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<&'a crate::threads::ThreadSummary>,
}

/// A row as [`row_json_in`] shows it.
#[derive(Serialize)]
struct RowView {
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_fields: Option<Value>,
    cells: Vec<CellView>,
}

/// A cell as [`row_json_in`] shows it.
#[derive(Serialize)]
struct CellView {
    column: String,
    timestamp: u64,
    value: String,
}

/// An index verify report, as `index verify` prints it and
/// `GET /tables/{t}/indexes/{i}/verify` answers it: counts, the first
/// missing row keys and extra entries, and whether it is clean.
pub fn verify_json(report: &IndexVerifyReport) -> Value {
    json!({
        "entries": report.entries,
        "missing": report.missing_count,
        "extra": report.extra_count,
        "missing_keys": report.missing.iter().map(|k| wire::encode(k)).collect::<Vec<_>>(),
        "extra_entries": report.extra.iter().map(|k| wire::encode(k)).collect::<Vec<_>>(),
        "clean": report.is_clean(),
    })
}

/// An index as `GET /tables/{t}/indexes` lists it.
pub fn index_state_json(state: &IndexState) -> Value {
    json!({
        "name": state.schema.name,
        "columns": state.schema.columns,
        "state": if state.building { "building" } else { "ready" },
        "entries": state.entries,
    })
}

/// The row key of `table`'s typed row key from `fields`, a JSON object of
/// every key field (`key_fields` over HTTP, `--key-fields` on the CLI).
///
/// # Errors
/// `BadRequest` for a table without a typed row key, JSON that does not
/// parse, or a missing field; `Store` (`InvalidRowKey`) for a value of the
/// wrong type or an unknown field.
pub fn key_from_fields(schema: &TableSchema, table: &str, fields: &str) -> crate::Result<Vec<u8>> {
    use crate::Error;
    // Text that is not JSON is a bad request; JSON that does not fit this
    // table's key (it has none, a field is missing or of another type) is
    // well-formed but not valid for the table: 422 `invalid_key`.
    let value: Value =
        serde_json::from_str(fields).map_err(|e| Error::BadRequest(format!("key_fields: {e}")))?;
    let unfit = |detail: String| Error::Store(rowsearch_store::ErrorKind::InvalidRowKey { detail }.into());
    let rk = schema
        .row_key
        .as_ref()
        .filter(|rk| !rk.fields.is_empty())
        .ok_or_else(|| unfit(format!("key_fields: table {table:?} has no typed row key")))?;
    let missing: Vec<&str> =
        rk.fields.iter().map(|f| f.name.as_str()).filter(|name| value.get(name).is_none()).collect();
    if !missing.is_empty() {
        return Err(unfit(format!("key_fields: missing {}", missing.join(", "))));
    }
    Ok(rk.encode_json(&value)?)
}

/// A thread view as `GET /tables/{t}/threads/{id}` answers it and
/// `rowsearch thread` prints it: the thread, its mailbox, and its messages
/// in reading order, each with its key, depth, parent (a place in the
/// list) and document.
pub fn thread_json(view: &crate::threads::ThreadView, row_key: Option<&RowKeySchema>) -> Value {
    let messages: Vec<Value> = view
        .messages
        .iter()
        .map(|m| {
            let mut out = serde_json::json!({
                "key": Encoding::Binary.encode(&m.key),
                "depth": m.depth,
                "parent": m.parent,
                "document": m.document,
            });
            if let Some(fields) = key_fields(&m.key, row_key) {
                out["key_fields"] = fields;
            }
            out
        })
        .collect();
    serde_json::json!({
        "thread": view.thread,
        "user": String::from_utf8_lossy(&view.partition),
        "count": view.messages.len(),
        "missing": view.missing,
        "messages": messages,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rowsearch_store::{Cell, KeyField, KeyOrder, KeyType, KeyValue};

    use super::*;
    use crate::{SearchHit, SearchResults};

    /// The response as it was built before [`SearchBody`]: a `Value` tree.
    fn tree(
        results: &SearchResults,
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
            "seq": results.seq,
        })
    }

    #[test]
    fn the_search_body_serializes_like_the_value_tree() {
        let typed = RowKeySchema::new([
            KeyField::new("user", KeyType::String, KeyOrder::Asc),
            KeyField::new("id", KeyType::U64, KeyOrder::Desc),
        ]);
        let key = typed.encode(&[KeyValue::String("ann".into()), KeyValue::U64(7)]).unwrap();
        let cell = |q: &[u8], v: &[u8]| Cell {
            family: "m".into(),
            qualifier: q.to_vec(),
            timestamp: 5,
            value: v.to_vec(),
        };
        let hit = |score: Option<f64>, date_ms: Option<u64>| SearchHit {
            row: Row {
                key: key.clone(),
                cells: vec![cell(b"subject", b"gas \\ \x00\xff"), cell(b"\x01q", b"")],
            },
            document: crate::document::Document::default(),
            score,
            date_ms,
            highlights: BTreeMap::from([("subject".to_owned(), "<em>gas</em>".to_owned())]),
            thread: None,
        };
        for next_cursor in [None, Some("c1.1.ab.10".to_owned())] {
            let results = SearchResults {
                steps: Default::default(),
                total: 12,
                took_ms: 0.25,
                hits: vec![hit(Some(1.5), None), hit(None, Some(988_000_000_000))],
                next_cursor,
                dropped: 0,
                generation: 3,
                seq: 41,
                row_key: None,
                overlay_rows: 0,
                facets: Vec::new(),
                did_you_mean: None,
                unknown_user: None,
            };
            for row_key in [None, Some(&typed)] {
                for highlights in [false, true] {
                    for encoding in [Encoding::Binary, Encoding::Base64, Encoding::Hex] {
                        let body = SearchBody::new(&results, row_key, highlights, encoding, HitFormat::Cells);
                        let want = tree(&results, row_key, highlights, encoding).to_string();
                        assert_eq!(
                            serde_json::to_string(&body).unwrap(),
                            want,
                            "{row_key:?} {highlights} {encoding:?}"
                        );
                        // As documents: the same but `document` for `row`.
                        let documents =
                            SearchBody::new(&results, row_key, highlights, encoding, HitFormat::Documents);
                        let mut want: Value = serde_json::from_str(&want).unwrap();
                        for hit in want["hits"].as_array_mut().unwrap() {
                            let hit = hit.as_object_mut().unwrap();
                            hit.shift_remove("row");
                            hit.insert("document".into(), json!({}));
                        }
                        assert_eq!(serde_json::to_value(&documents).unwrap(), want);
                    }
                }
            }
        }
    }

    /// Facets keep the order asked for, and each facet's values the order
    /// counted (most first), not the keys' order; `did_you_mean` shows
    /// only when there is one.
    #[test]
    fn facets_and_did_you_mean_in_order() {
        let results = SearchResults {
            steps: Default::default(),
            total: 3,
            took_ms: 0.5,
            hits: Vec::new(),
            next_cursor: None,
            dropped: 0,
            generation: 1,
            seq: 2,
            row_key: None,
            overlay_rows: 0,
            facets: vec![
                ("month".into(), vec![("2001-05".into(), 2), ("2000-01".into(), 1)]),
                ("from".into(), vec![("z@x.com".into(), 3), ("a@x.com".into(), 1)]),
            ],
            did_you_mean: Some("gas deal".into()),
            unknown_user: None,
        };
        let body = serde_json::to_string(&SearchBody::new(
            &results,
            None,
            false,
            Encoding::Binary,
            HitFormat::Documents,
        ))
        .unwrap();
        assert!(
            body.ends_with(
                r#""facets":{"month":{"2001-05":2,"2000-01":1},"from":{"z@x.com":3,"a@x.com":1}},"did_you_mean":"gas deal"}"#
            ),
            "{body}"
        );
        let plain = SearchResults { facets: Vec::new(), did_you_mean: None, ..results };
        let body = serde_json::to_string(&SearchBody::new(
            &plain,
            None,
            false,
            Encoding::Binary,
            HitFormat::Documents,
        ))
        .unwrap();
        assert!(!body.contains("facets") && !body.contains("did_you_mean"), "{body}");
    }
}
