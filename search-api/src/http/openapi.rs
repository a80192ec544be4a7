//! The OpenAPI document served at `/openapi.json`, built from the route
//! table: every route of [`ROUTES`] with every parameter it takes (so the
//! document cannot miss one), each parameter's type, limits and enums, the
//! request body, every status the route answers, and `links` between the
//! operations of the stateful flows (a table, then its rows and indexes; a
//! job, then its state). The shapes of bodies and answers are in
//! `openapi_base.json`.

use serde_json::{Map, Value, json};

use super::param_spec::{Kind, Param};
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
                "name" => ("consumer name", json!({"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"})),
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
        route.params.iter().map(|declared| param(declared, limits)).collect()
    };
    let mut op = json!({"operationId": operation_id(route), "summary": summary, "parameters": query});
    let mut responses = Map::new();
    let (status, schema) = success;
    responses.insert(status.to_string(), answer("the answer", schema));
    match route.name {
        "consumers_put" => {
            responses.insert("200".into(), answer("the consumer's position acknowledged", Some("Consumer")));
        }
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
            .map(|declared_param| {
                let declared = param(declared_param, limits);
                let mut schema = match declared.get("schema") {
                    Some(schema) => schema.clone(),
                    None => declared["content"]["application/json"]["schema"].clone(),
                };
                // The JSON type the body reads it as (`JsonKind`; the
                // test below holds the two together); null is as if the
                // field were absent.
                use super::params::JsonKind;
                match JsonKind::of(declared_param.kind) {
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
                    // A number as an integer too (`"versions": 3`).
                    JsonKind::Versions => {
                        schema["nullable"] = json!(true);
                        schema = json!({"anyOf": [{"type": "integer", "minimum": 1}, schema]});
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
                (declared_param.name.to_owned(), any)
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
        "regions" => ("a table's regions: key ranges in order", None, (200, Some("Regions"))),
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
        "mutate_tables" => (
            "puts and deletes across tables in one atomic batch",
            Some("Mutate"),
            (200, Some("MutateResult")),
        ),
        "changes" => (
            "a table's changes after a sequence, in order (waits up to wait_ms for one)",
            None,
            (200, Some("ChangesPage")),
        ),
        "consumers_list" => ("the change feed's consumers", None, (200, Some("ConsumerList"))),
        "consumers_put" => (
            "create a consumer (201) or acknowledge its position (200)",
            Some("ConsumerBody"),
            (201, Some("Consumer")),
        ),
        "consumers_get" => ("a consumer and where it stands", None, (200, Some("Consumer"))),
        "consumers_delete" => {
            ("delete a consumer (the feed is no longer held for it)", None, (200, Some("ConsumerDeleted")))
        }
        "backups_create" => ("take a backup (a job; master key only)", None, (202, Some("JobStarted"))),
        "backups_list" => ("the backups in --backup-dir (master key only)", None, (200, Some("BackupList"))),
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
    if has_table
        || route.path.contains("{id}")
        || route.path.contains("{uid}")
        || route.path.contains("{name}")
    {
        out.push((404, "no such table, row, index, region, job or consumer"));
    }
    if matches!(route.name, "changes" | "consumers_put") {
        out.push((410, "fell behind: the feed no longer holds the changes after that position"));
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
    let link =
        |operation: &str, parameters: Value| json!({"operationId": operation, "parameters": parameters});
    let listed = json!({"table": "$response.body#/tables/0/name"});
    let listed_with = |extra: &str, value: &str| {
        let mut parameters = listed.clone();
        parameters[extra] = json!(value);
        parameters
    };
    let table = json!({"table": "$request.path.table"});
    let table_with = |extra: &str, value: &str| {
        let mut parameters = table.clone();
        parameters[extra] = json!(value);
        parameters
    };
    Some(match name {
        // The hub: the tables there are, and from the first one every
        // operation on a table; the service's own operations besides. A
        // table is deleted only where one was made (tables_put's links).
        "tables_list" => {
            let mut links = Map::new();
            for (operation, id) in [
                ("GetTable", "tables_get"),
                ("Regions", "regions"),
                ("Mutate", "mutate"),
                ("Scan", "scan_get"),
                ("ScanBody", "scan_post"),
                ("Count", "count"),
                ("ListIndexes", "indexes_list"),
                ("Intersect", "index_intersect"),
                ("Search", "search"),
                ("Suggest", "suggest"),
                ("PutRowByFields", "rows_put_fields"),
                ("GetRowByFields", "rows_get_fields"),
                ("DeleteRowByFields", "rows_delete_fields"),
                ("Keywords", "keywords"),
                ("Reindex", "reindex"),
            ] {
                links.insert(operation.into(), link(id, listed.clone()));
            }
            for (operation, id, extra, value) in [
                ("PutRow", "rows_put", "key", "r1"),
                ("GetRow", "rows_get", "key", "r1"),
                ("PutIndex", "index_put", "index", "i1"),
                ("MakeTable", "tables_put", "table", "made"),
                ("DropMadeTable", "tables_delete", "table", "made"),
            ] {
                let parameters = if extra == "key" || extra == "index" {
                    listed_with(extra, value)
                } else {
                    json!({extra: value})
                };
                links.insert(operation.into(), link(id, parameters));
            }
            for (operation, id) in [
                ("Health", "health"),
                ("Metrics", "metrics"),
                ("Document", "openapi"),
                ("Page", "page"),
                ("PageScript", "page_script"),
                ("PageStyle", "page_style"),
                ("ListKeys", "keys_list"),
                ("MakeKey", "keys_create"),
            ] {
                links.insert(operation.into(), link(id, json!({})));
            }
            links.insert("DeleteKey".into(), link("keys_delete", json!({"uid": "none"})));
            links.insert("GetJob".into(), link("jobs", json!({"id": "j1"})));
            Value::Object(links)
        }
        "tables_put" => json!({
            "GetTable": link("tables_get", table.clone()),
            "PutRow": link("rows_put", table_with("key", "r1")),
            "GetRow": link("rows_get", table_with("key", "r1")),
            "Mutate": link("mutate", table.clone()),
            "Scan": link("scan_get", table.clone()),
            "Count": link("count", table.clone()),
            "PutIndex": link("index_put", table_with("index", "i1")),
            "Search": link("search", table.clone()),
            "DeleteTable": link("tables_delete", table.clone()),
        }),
        "rows_put" => {
            let row = json!({"table": "$request.path.table", "key": "$request.path.key"});
            json!({"GetRow": link("rows_get", row.clone()), "DeleteRow": link("rows_delete", row)})
        }
        // From the index just made (a table may have none to list).
        "index_put" => {
            let index = json!({"table": "$request.path.table", "index": "$request.path.index"});
            json!({
                "GetJob": link("jobs", json!({"id": "$response.body#/job"})),
                "Verify": link("index_verify", index.clone()),
                "Lookup": link("index_lookup", index.clone()),
                "Rebuild": link("index_rebuild", index.clone()),
                "Delete": link("index_delete", index),
            })
        }
        "index_rebuild" => json!({
            "GetJob": link("jobs", json!({"id": "$response.body#/job"})),
            "Verify": link("index_verify", json!({"table": "$request.path.table", "index": "$request.path.index"})),
        }),
        "reindex" => json!({"GetJob": link("jobs", json!({"id": "$response.body#/job"}))}),
        "keys_create" => json!({"DeleteKey": link("keys_delete", json!({"uid": "$response.body#/uid"}))}),
        "scan" => json!({"NextPage": link("scan_get",
            json!({"table": "$request.path.table", "cursor": "$response.body#/next_cursor"}))}),
        _ => return None,
    })
}

/// A binary string (API.md, "Byte strings": UTF-8 as is, a doubled
/// backslash for a backslash, backslash-x and two hex digits for any byte):
/// what the server decodes, no more.
const BINARY_STRING: &str = r"^([^\\]|\\\\|\\x[0-9A-Fa-f]{2})*$";

/// One declared query parameter: its schema from its kind (with the
/// server's bounds), its description, whether it is required, repetition.
fn param(declared: &Param, limits: &Limits) -> Value {
    let bytes = json!({"type": "string", "pattern": BINARY_STRING});
    let repeated = |item: Value| json!({"type": "array", "items": item});
    let query_text = |format: Option<&str>| {
        let mut schema = json!({"type": "string", "minLength": 1,
            "maxLength": rowsearch_indexer::query::MAX_QUERY_BYTES, "pattern": "\\S"});
        if let Some(format) = format {
            schema["format"] = json!(format);
        }
        schema
    };
    let schema = match declared.kind {
        Kind::Flag => json!({"type": "boolean"}),
        Kind::Text => json!({"type": "string"}),
        Kind::Query => query_text(Some("rowsearch-query")),
        Kind::Typed => query_text(None),
        Kind::Filter => {
            json!({"type": "string", "format": "hbase-filter", "minLength": 1, "maxLength": limits.max_filter_bytes})
        }
        Kind::Bytes => bytes,
        Kind::BytesList => repeated(bytes),
        Kind::TextList => repeated(json!({"type": "string"})),
        Kind::Lookups => json!({"type": "array", "minItems": 1, "maxItems": limits.max_lookups,
            "items": {"type": "string", "pattern": r"^[^:]+:(eq|prefix):([^\\]|\\\\|\\x[0-9A-Fa-f]{2})*$"}}),
        Kind::Choice(values) => json!({"type": "string", "enum": values}),
        Kind::Integer { min, max } => json!({"type": "integer", "minimum": min, "maximum": max.of(limits)}),
        Kind::Versions => json!({"type": "string", "pattern": "^([1-9][0-9]{0,8}|all)$"}),
        Kind::Object => json!({"type": "object"}),
        Kind::ScanCursor => json!({"type": "string", "pattern": "^[fr]1\\.([0-9a-f]{2})+$"}),
    };
    let mut out = json!({"name": declared.name, "in": "query", "required": declared.required,
        "description": declared.about});
    if declared.kind == Kind::Object {
        // A JSON object in the query string (`content`, not `schema`: the
        // value is JSON text).
        out["content"] = json!({"application/json": {"schema": schema}});
    } else {
        if declared.kind.repeats() {
            out["style"] = json!("form");
            out["explode"] = json!(true);
        }
        out["schema"] = schema;
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
                route.params.iter().map(|p| p.name).filter(|p| body[*p].is_object()).collect()
            } else {
                op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect()
            };
            let declared: Vec<&str> = route.params.iter().map(|p| p.name).collect();
            assert_eq!(names, declared, "{} {}", route.method, route.path);
            assert!(op["responses"]["400"].is_object(), "{} {}", route.method, route.path);
            let ids = ROUTES.iter().filter(|r| operation_id(r) == operation_id(route)).count();
            assert_eq!(ids, 1, "operation id {} is not unique", operation_id(route));
        }
        // A body's fields have the JSON types the server reads them as.
        use super::super::params::JsonKind;
        let scan = ROUTES.iter().find(|r| params_in_body(r)).unwrap();
        let body = &doc["paths"][scan.path]["post"]["requestBody"]["content"]["application/json"]["schema"];
        for declared in scan.params {
            let name = declared.name;
            let field = &body["properties"][name];
            let kind = match JsonKind::of(declared.kind) {
                JsonKind::Texts => field["anyOf"][1]["type"].as_str(),
                JsonKind::Integer | JsonKind::Flag | JsonKind::Versions => field["anyOf"][0]["type"].as_str(),
                _ => field["type"].as_str(),
            };
            let want = match JsonKind::of(declared.kind) {
                JsonKind::Text => "string",
                JsonKind::Texts => "array",
                JsonKind::Integer | JsonKind::Versions => "integer",
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
