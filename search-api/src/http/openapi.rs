//! The OpenAPI document served at `/openapi.json`, built from the route
//! table: every route of [`ROUTES`] with every parameter it takes (so the
//! document cannot miss one), each parameter's type, limits and enums, the
//! request body, every status the route answers, and `links` between the
//! operations of the stateful flows (a table, then its rows and indexes; a
//! job, then its state). The shapes of bodies and answers are in
//! `openapi_base.json`.

use serde_json::{Map, Value, json};

use super::route_table::{ROUTES, RouteSpec};
use super::state::Limits;

/// The document for a server with `limits`.
pub fn document(limits: &Limits) -> Value {
    let mut doc: Value = serde_json::from_str(include_str!("openapi_base.json"))
        .unwrap_or_else(|_| json!({"openapi": "3.0.3"}));
    let mut paths = Map::new();
    for route in ROUTES {
        let item = paths.entry(route.path).or_insert_with(|| json!({}));
        let path_params: Vec<Value> = path_params(route.path);
        if !path_params.is_empty() {
            item["parameters"] = Value::Array(path_params);
        }
        item[route.method.to_ascii_lowercase()] = operation(route, limits);
    }
    doc["paths"] = Value::Object(paths);
    doc["components"]["securitySchemes"] = json!({"bearer": {"type": "http", "scheme": "bearer",
        "description": "an access key, when the server runs with --master-key"}});
    doc["security"] = json!([{"bearer": []}, {}]);
    doc
}

/// `{table}`, `{index}`, `{key}`, `{id}` of a path.
fn path_params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            let (description, schema) = match name {
                "table" => ("table name", json!({"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$"})),
                "index" => ("index name", json!({"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,31}$"})),
                "key" => ("row key: percent-encoded bytes", json!({"type": "string", "minLength": 1})),
                "uid" => ("access key uid", json!({"type": "string"})),
                _ => ("job id", json!({"type": "string"})),
            };
            json!({"name": name, "in": "path", "required": true, "description": description, "schema": schema})
        })
        .collect()
}

/// Whether the route's parameters come as a JSON body (`POST .../scan`).
fn params_in_body(route: &RouteSpec) -> bool {
    route.name == "scan" && route.method == "POST"
}

fn operation(route: &RouteSpec, limits: &Limits) -> Value {
    let (summary, body, success) = shape(route.name);
    let query: Vec<Value> = if params_in_body(route) {
        Vec::new()
    } else {
        route.params.iter().map(|name| param(route, name, limits)).collect()
    };
    let mut op = json!({"operationId": operation_id(route), "summary": summary, "parameters": query});
    let mut responses = Map::new();
    let (status, schema) = success;
    responses.insert(status.to_string(), answer("the answer", schema));
    match route.name {
        "tables_put" => {
            responses.insert("200".into(), answer("a table with this schema exists", Some("TableCreated")));
        }
        "index_put" => {
            responses.insert("200".into(), answer("the index exists alike and is ready", Some("IndexReady")));
        }
        "page" | "page_script" | "page_style" => {
            responses.insert("304".into(), answer("unchanged since the ETag in If-None-Match", None));
        }
        _ => {}
    }
    for (status, why) in errors(route) {
        let schema = if route.name == "health" && status == 503 { "Health" } else { "Error" };
        responses.insert(status.to_string(), answer(why, Some(schema)));
    }
    if params_in_body(route) {
        let properties: Map<String, Value> = route
            .params
            .iter()
            .map(|name| {
                let declared = param(route, name, limits);
                let mut schema = match declared.get("schema") {
                    Some(schema) => schema.clone(),
                    None => declared["content"]["application/json"]["schema"].clone(),
                };
                // The JSON type the body reads it as (`JsonKind`; the
                // test below holds the two together); null is as if the
                // field were absent.
                use super::params::JsonKind;
                match JsonKind::of(name) {
                    JsonKind::Texts => {
                        let mut one = schema["items"].clone();
                        one["nullable"] = json!(true);
                        schema = json!({"anyOf": [one, schema]});
                    }
                    // Its text too, as in a query string (a number of up
                    // to four digits: every limit the server takes).
                    JsonKind::Integer => {
                        schema["nullable"] = json!(true);
                        schema = json!({"anyOf": [schema, {"type": "string", "pattern": "^[0-9]{1,4}$"}]});
                    }
                    JsonKind::Flag => {
                        schema["nullable"] = json!(true);
                        schema = json!({"anyOf": [schema, {"type": "string", "enum": ["true", "false", "1", "0", ""]}]});
                    }
                    JsonKind::Text | JsonKind::Object => {
                        schema["nullable"] = json!(true);
                        // A nullable enum lists null (OpenAPI 3.0.3).
                        if let Some(Value::Array(values)) = schema.get_mut("enum") {
                            values.push(Value::Null);
                        }
                    }
                }
                let any = schema;
                ((*name).to_owned(), any)
            })
            .collect();
        op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": false, "properties": properties}}}});
    }
    if let Some(links) = links(route.name) {
        responses[&status.to_string()]["links"] = links;
    }
    op["responses"] = Value::Object(responses);
    if let Some(schema) = body {
        op["requestBody"] =
            json!({"required": true, "content": {"application/json": {"schema": reference(schema)}}});
    }
    op
}

/// A distinct id per operation (the metrics name, plus the method where
/// one name serves two).
fn operation_id(route: &RouteSpec) -> String {
    if ROUTES.iter().filter(|r| r.name == route.name).count() > 1 {
        format!("{}_{}", route.name, route.method.to_ascii_lowercase())
    } else {
        route.name.to_owned()
    }
}

fn reference(schema: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{schema}")})
}

fn answer(description: &str, schema: Option<&str>) -> Value {
    match schema {
        None => json!({"description": description}),
        Some("Text") => {
            json!({"description": description, "content": {"text/plain": {"schema": {"type": "string"}}}})
        }
        Some(media @ ("text/html" | "text/javascript" | "text/css")) => {
            json!({"description": description, "content": {media: {"schema": {"type": "string"}}}})
        }
        Some(s) => {
            json!({"description": description, "content": {"application/json": {"schema": reference(s)}}})
        }
    }
}

/// Summary, request body and success (status, answer) of each route.
fn shape(name: &str) -> (&'static str, Option<&'static str>, (u16, Option<&'static str>)) {
    match name {
        "page" => ("the search page (HTML)", None, (200, Some("text/html"))),
        "page_script" => ("the search page's script", None, (200, Some("text/javascript"))),
        "page_style" => ("the search page's style sheet", None, (200, Some("text/css"))),
        "health" => ("health: ok, degraded (why) or unhealthy (503)", None, (200, Some("Health"))),
        "metrics" => ("Prometheus metrics", None, (200, Some("Text"))),
        "openapi" => ("this document", None, (200, None)),
        "tables_list" => ("list tables", None, (200, Some("TableList"))),
        "tables_put" => {
            ("create a table (201; 200 when it exists alike)", Some("Schema"), (201, Some("TableCreated")))
        }
        "tables_get" => ("a table's schema and figures", None, (200, Some("TableInfo"))),
        "tables_delete" => ("drop a table with its rows and indexes", None, (204, None)),
        "rows_put" | "rows_put_fields" => {
            ("write cells into one row atomically", Some("RowWrite"), (200, Some("Seq")))
        }
        "rows_get" | "rows_get_fields" => ("read one row", None, (200, Some("Row"))),
        "rows_delete" | "rows_delete_fields" => {
            ("delete a row, families or columns", None, (200, Some("Seq")))
        }
        "mutate" => ("puts and deletes in one atomic batch", Some("Mutate"), (200, Some("MutateResult"))),
        "scan" => (
            "scan rows (GET: query parameters; POST: the same as a JSON body)",
            None,
            (200, Some("ScanPage")),
        ),
        "count" => ("count the rows a scan selects", None, (200, Some("Count"))),
        "indexes_list" => ("a table's secondary indexes", None, (200, Some("IndexList"))),
        "index_put" => (
            "add an index: a job builds it while writes go on (200 when it exists alike and is ready)",
            Some("IndexBody"),
            (202, Some("IndexJob")),
        ),
        "index_rebuild" => ("rebuild an index (a job)", None, (202, Some("IndexJob"))),
        "index_verify" => ("compare an index with the rows", None, (200, Some("VerifyReport"))),
        "index_delete" => ("drop an index", None, (204, None)),
        "index_lookup" => ("look keys (or rows) up in an index", None, (200, Some("KeyPage"))),
        "index_intersect" => ("keys in every (or any) of several lookups", None, (200, Some("KeyPage"))),
        "search" => ("keyword search", None, (200, Some("SearchResults"))),
        "suggest" => {
            ("completions of the query's last word, most documents first", None, (200, Some("Suggestions")))
        }
        "keywords" => {
            ("keys of a partition's rows holding every term, newest first", None, (200, Some("KeywordPage")))
        }
        "reindex" => ("start a reindex job", None, (202, Some("JobStarted"))),
        "keys_create" => (
            "make an access key (master key only); the key is shown once",
            Some("NewKey"),
            (201, Some("KeyMade")),
        ),
        "keys_list" => ("the access keys (never the keys)", None, (200, Some("KeyList"))),
        "keys_delete" => ("delete an access key", None, (204, None)),
        _ => ("a job's state", None, (200, Some("Job"))),
    }
}

/// Every error status a route answers, with why.
fn errors(route: &RouteSpec) -> Vec<(u16, &'static str)> {
    let mut out = vec![
        (400, "bad input: a parameter, its value or the body"),
        (414, "the request line is too long"),
        (431, "the request headers are too large"),
        (503, "past the request time limit, or the store cannot serve"),
    ];
    let has_table = route.path.contains("{table}");
    let has_body = route.example_body.is_some();
    let writes = route.mutates;
    if route.action != crate::keys::Action::Public {
        out.push((401, "no access key (the server has a master key)"));
        out.push((403, "the key is not valid or may not do this; or a foreign Origin"));
    }
    if has_table || route.path.contains("{id}") || route.path.contains("{uid}") {
        out.push((404, "no such table, row, index, region or job"));
    }
    if has_body {
        out.extend([
            (408, "the body came too slowly"),
            (413, "the body is too large"),
            (415, "the body is not application/json"),
        ]);
    }
    if writes
        || matches!(
            route.name,
            "index_lookup" | "index_intersect" | "search" | "keywords" | "index_verify" | "keys_list"
        )
    {
        out.push((409, "a conflict: another schema or index of that name, a job running, an index being built, a stale cursor"));
    }
    if has_table {
        out.push((422, "not valid for this table: unknown family, bad key, invalid schema, not searchable"));
    }
    if writes {
        out.push((507, "the disk is full; nothing was written"));
    }
    out.sort_unstable();
    out
}

/// The `links` of a route's success answer: what a client (or a stateful
/// tester) does next with what it got.
fn links(name: &str) -> Option<Value> {
    let table = json!({"table": "$request.path.table"});
    let link =
        |operation: &str, parameters: &Value| json!({"operationId": operation, "parameters": parameters});
    Some(match name {
        "tables_put" => json!({
            "GetTable": link("tables_get", &table),
            "PutRow": json!({"operationId": "rows_put", "parameters": {"table": "$request.path.table", "key": "r1"}}),
            "GetRow": json!({"operationId": "rows_get", "parameters": {"table": "$request.path.table", "key": "r1"}}),
            "Mutate": link("mutate", &table),
            "Scan": link("scan_get", &table),
            "ScanBody": link("scan_post", &table),
            "Count": link("count", &table),
            "ListIndexes": link("indexes_list", &table),
            "PutIndex": json!({"operationId": "index_put", "parameters": {"table": "$request.path.table", "index": "i1"}}),
            "Intersect": link("index_intersect", &table),
            "Search": link("search", &table),
            "Suggest": link("suggest", &table),
            "PutRowByFields": link("rows_put_fields", &table),
            "GetRowByFields": link("rows_get_fields", &table),
            "DeleteRowByFields": link("rows_delete_fields", &table),
            "Keywords": link("keywords", &table),
            "Reindex": link("reindex", &table),
            "DeleteTable": link("tables_delete", &table),
        }),
        "indexes_list" => json!({
            "Lookup": json!({"operationId": "index_lookup", "parameters": {"table": "$request.path.table", "index": "$response.body#/indexes/0/name"}}),
            "Rebuild": json!({"operationId": "index_rebuild", "parameters": {"table": "$request.path.table", "index": "$response.body#/indexes/0/name"}}),
            "Delete": json!({"operationId": "index_delete", "parameters": {"table": "$request.path.table", "index": "$response.body#/indexes/0/name"}}),
        }),
        "rows_put" => json!({
            "GetRow": json!({"operationId": "rows_get", "parameters": {"table": "$request.path.table", "key": "$request.path.key"}}),
            "DeleteRow": json!({"operationId": "rows_delete", "parameters": {"table": "$request.path.table", "key": "$request.path.key"}}),
        }),
        "index_put" | "index_rebuild" => json!({
            "GetJob": json!({"operationId": "jobs", "parameters": {"id": "$response.body#/job"}}),
            "Verify": json!({"operationId": "index_verify", "parameters": {"table": "$request.path.table", "index": "$request.path.index"}}),
        }),
        "reindex" => {
            json!({"GetJob": json!({"operationId": "jobs", "parameters": {"id": "$response.body#/job"}})})
        }
        "scan" => {
            json!({"NextPage": json!({"operationId": "scan_get", "parameters": {"table": "$request.path.table", "cursor": "$response.body#/next_cursor"}})})
        }
        _ => return None,
    })
}

/// A binary string (API.md, "Byte strings": UTF-8 as is, a doubled
/// backslash for a backslash, backslash-x and two hex digits for any byte):
/// what the server decodes, no more.
const BINARY_STRING: &str = r"^([^\\]|\\\\|\\x[0-9A-Fa-f]{2})*$";

/// One query parameter of `route`: type, limits, enum, repetition.
/// The search-only query parameters: type, limits, enum; `None` for
/// another name.
fn search_param(name: &str) -> Option<(Value, &'static str, bool)> {
    let text = json!({"type": "string"});
    let repeated = |item: Value| json!({"type": "array", "items": item});
    let u64s = json!({"type": "integer", "minimum": 0, "maximum": u64::MAX});
    Some(match name {
        "highlight_encoder" => (
            json!({"type": "string", "enum": ["html", "raw"]}),
            "html (default): the text of highlights is HTML-escaped (<, >, &), only the <em> markers are markup; raw: the text as stored",
            false,
        ),
        "typos" => (
            json!({"type": "string", "enum": ["off", "auto"]}),
            "auto: words of 5+ characters match one typo away, 9+ two, a typo on the first character counting as two (exact matches first)",
            false,
        ),
        "facets" => (
            text.clone(),
            "facets to count over every match, comma-separated: the partition's name, fields declared facet, month, year",
            false,
        ),
        "facet_limit" => (
            json!({"type": "integer", "minimum": 1, "maximum": crate::searcher::MAX_FACET_LIMIT}),
            "values per facet, most matches first (default 10)",
            false,
        ),
        "fields" => (
            repeated(text.clone()),
            "only these names in each document (search fields, the partition, date, family:qualifier columns), \
             comma-separated and repeatable; only their columns are read",
            false,
        ),
        "format" => (
            json!({"type": "string", "enum": ["documents", "cells"]}),
            "hits as documents (default) or as rows of cells",
            false,
        ),
        "consistency" => (
            json!({"type": "string", "enum": ["snapshot", "eventual"]}),
            "snapshot (default): reflect every write committed before the search; eventual: the index as it stands",
            false,
        ),
        "min_seq" => (
            u64s,
            "answer only once the index reflects this write's seq (waits within the time limit)",
            false,
        ),
        _ => return None,
    })
}

fn param(route: &RouteSpec, name: &str, limits: &Limits) -> Value {
    let max_scan = limits.max_scan_limit;
    let boolean = json!({"type": "boolean"});
    let text = json!({"type": "string"});
    let bytes = json!({"type": "string", "pattern": BINARY_STRING});
    let u64s = json!({"type": "integer", "minimum": 0, "maximum": u64::MAX});
    let repeated = |item: Value| json!({"type": "array", "items": item});
    let (schema, description, required) = match name {
        "encoding" => (
            json!({"type": "string", "enum": ["binary", "base64", "hex"]}),
            "how every byte string of the request and the answer is written",
            false,
        ),
        "columns" => {
            (repeated(bytes.clone()), "family or family:qualifier, comma-separated and repeatable", false)
        }
        "versions" => (
            json!({"type": "string", "pattern": "^([1-9][0-9]{0,8}|all)$"}),
            "versions per column: a number or all",
            false,
        ),
        "min_ts" => (u64s.clone(), "inclusive lower bound on timestamps (ms)", false),
        "max_ts" => (u64s.clone(), "exclusive upper bound on timestamps (ms)", false),
        "timestamp" => (u64s.clone(), "delete only versions up to this timestamp (ms)", false),
        "start" => (bytes.clone(), "first key, inclusive (the upper bound with reverse)", false),
        "stop" => (bytes.clone(), "last key, exclusive (the lower bound with reverse)", false),
        "prefix" => (bytes.clone(), "only keys with this prefix", false),
        "prefix_fields" => {
            (json!({"type": "object"}), "JSON object of the leading fields of a typed row key", false)
        }
        "key_fields" => {
            (json!({"type": "object"}), "JSON object of every field of the table's typed row key", true)
        }
        "reverse" | "keys_only" | "rows" | "highlight" => (boolean, "true or false", false),
        "filter" => (
            json!({"type": "string", "format": "hbase-filter", "maxLength": limits.max_filter_bytes}),
            "HBase filter language",
            false,
        ),
        "limit" if route.name == "suggest" => (
            json!({"type": "integer", "minimum": 1, "maximum": crate::suggest::MAX_SUGGEST_LIMIT}),
            "suggestions (default 5)",
            false,
        ),
        "limit" if route.name == "search" => (
            json!({"type": "integer", "minimum": 0, "maximum": limits.max_search_limit}),
            "hits per page (default 10; 0: the total alone)",
            false,
        ),
        "limit" if route.name == "scan" || route.name == "count" || route.name == "index_lookup" => (
            json!({"type": "integer", "minimum": 0, "maximum": max_scan}),
            "most rows or keys (default 100)",
            false,
        ),
        "limit" => (u64s.clone(), "most keys (default 100; more is taken as the scan limit)", false),
        "offset" if route.name == "search" => (
            json!({"type": "integer", "minimum": 0, "maximum": crate::searcher::MAX_RESULT_WINDOW - 1}),
            "hits to skip (offset + limit at most 10,000)",
            false,
        ),
        "offset" => (u64s.clone(), "rows to skip", false),
        // A scan's cursor says where it resumes and nothing else: any
        // well-formed one is a place to resume from.
        "cursor" if route.name == "scan" || route.name == "count" => (
            json!({"type": "string", "pattern": "^[fr]1\\.([0-9a-f]{2})+$"}),
            "resume after the page that returned this cursor (f1. forward, r1. reverse)",
            false,
        ),
        "cursor" => (text.clone(), "resume after the page that returned this cursor", false),
        "region" => (json!({"type": "integer", "minimum": 0, "maximum": 65535}), "only this region", false),
        "eq" => (repeated(bytes.clone()), "the value of each leading indexed column, in order", false),
        "q" if route.name == "index_intersect" => (
            json!({"type": "array", "minItems": 1, "maxItems": limits.max_lookups, "items": {"type": "string",
                "pattern": r"^[^:]+:(eq|prefix):([^\\]|\\\\|\\x[0-9A-Fa-f]{2})*$"}}),
            "INDEX:eq|prefix:VALUE, repeatable",
            true,
        ),
        "q" if route.name == "page" => (text.clone(), "the query the page opens with", false),
        "table" => (text.clone(), "the table the page opens on", false),
        "q" if route.name == "suggest" => (
            json!({"type": "string", "minLength": 1, "maxLength": rowsearch_indexer::query::MAX_QUERY_BYTES,
                "pattern": "\\S"}),
            "the text typed so far: its last word is completed",
            true,
        ),
        "q" => (
            json!({"type": "string", "format": "rowsearch-query", "minLength": 1,
                "maxLength": rowsearch_indexer::query::MAX_QUERY_BYTES, "pattern": "\\S"}),
            "the query: terms (ANDed), field:term, \"phrases\", date ranges",
            true,
        ),
        "op" => (
            json!({"type": "string", "enum": ["intersect", "union"]}),
            "keys in every lookup, or in any",
            false,
        ),
        // The page's own state: it opens by relevance on what it does not know.
        "sort" if route.name == "page" => (text.clone(), "relevance, newest or oldest", false),
        "sort" => {
            (json!({"type": "string", "enum": ["relevance", "newest", "oldest"]}), "order of the hits", false)
        }
        "user" => (bytes, "the partition (mailbox)", route.name == "keywords"),
        "terms" => (repeated(text), "terms, comma-separated and repeatable", false),
        "mode" => {
            (json!({"type": "string", "enum": ["auto", "full", "incremental"]}), "how to reindex", false)
        }
        _ => search_param(name).unwrap_or((json!({"type": "string"}), "", false)),
    };
    let mut out = json!({"name": name, "in": "query", "required": required, "description": description, "schema": schema});
    // A JSON object in the query string (`content`, not `schema`: the value
    // is JSON text).
    if matches!(name, "key_fields" | "prefix_fields") {
        let object = out["schema"].take();
        out.as_object_mut().map(|o| o.remove("schema"));
        out["content"] = json!({"application/json": {"schema": object}});
    }
    if out["schema"]["type"] == "array" {
        out["style"] = json!("form");
        out["explode"] = json!(true);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route and every parameter it takes is in the document, with
    /// a success answer and a 400.
    #[test]
    fn the_document_covers_the_route_table() {
        let doc = document(&Limits::default());
        for route in ROUTES {
            let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
            assert!(op.is_object(), "{} {} missing", route.method, route.path);
            let names: Vec<&str> = if params_in_body(route) {
                let body = &op["requestBody"]["content"]["application/json"]["schema"]["properties"];
                route.params.iter().copied().filter(|p| body[*p].is_object()).collect()
            } else {
                op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect()
            };
            assert_eq!(names, route.params, "{} {}", route.method, route.path);
            assert!(op["responses"]["400"].is_object(), "{} {}", route.method, route.path);
            let ids = ROUTES.iter().filter(|r| operation_id(r) == operation_id(route)).count();
            assert_eq!(ids, 1, "operation id {} is not unique", operation_id(route));
        }
        // A body's fields have the JSON types the server reads them as.
        use super::super::params::JsonKind;
        let scan = ROUTES.iter().find(|r| params_in_body(r)).unwrap();
        let body = &doc["paths"][scan.path]["post"]["requestBody"]["content"]["application/json"]["schema"];
        for name in scan.params {
            let field = &body["properties"][*name];
            let kind = match JsonKind::of(name) {
                JsonKind::Texts => field["anyOf"][1]["type"].as_str(),
                JsonKind::Integer | JsonKind::Flag => field["anyOf"][0]["type"].as_str(),
                _ => field["type"].as_str(),
            };
            let want = match JsonKind::of(name) {
                JsonKind::Text => "string",
                JsonKind::Texts => "array",
                JsonKind::Integer => "integer",
                JsonKind::Flag => "boolean",
                JsonKind::Object => "object",
            };
            assert_eq!(kind, Some(want), "{name}: {field}");
        }
        // Every link names an operation that exists.
        let ids: Vec<String> = ROUTES.iter().map(operation_id).collect();
        for route in ROUTES {
            if let Some(Value::Object(links)) = links(route.name) {
                for (name, link) in links {
                    let id = link["operationId"].as_str().unwrap();
                    assert!(ids.iter().any(|i| i == id), "{}: link {name} to {id}", route.name);
                }
            }
        }
    }
}
