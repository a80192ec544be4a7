//! The route table: every route of API.md with its name, the action a key
//! needs, method, path, an example request and the parameters it takes.
//! A leaf: the filters (`routes.rs`), the access check (`auth.rs`) and the
//! OpenAPI document (`openapi.rs`) all read it.

use super::over_hbase::BACKUPS;
use super::param_spec::{self as p, Param};
use crate::keys::Action;

/// One route of the table: what `/metrics` calls it, its method and path,
/// an example request (for tests that walk every route), and the query
/// parameters it takes; any other is a 400 `unknown_parameter`.
#[derive(Debug, Clone, Copy)]
pub struct RouteSpec {
    /// The route's name in `/metrics`.
    pub name: &'static str,
    /// What a key needs to use it.
    pub action: Action,
    /// The HTTP method.
    pub method: &'static str,
    /// The path pattern (API.md's).
    pub path: &'static str,
    /// A request of it that succeeds on the mail fixture: path and query.
    pub example: &'static str,
    /// Its body, for routes that take one.
    pub example_body: Option<&'static str>,
    /// The query parameters it takes (for `POST .../scan`, its body's
    /// fields), declared in `param_spec.rs`.
    pub params: &'static [Param],
    /// Whether it writes: a write, once it runs, is waited for past the
    /// time limit and never cancelled (`routes.rs`); a read stops when its
    /// request is over. Every method but GET writes unless the route says
    /// otherwise (the POST of a scan only reads).
    pub mutates: bool,
    /// What the route needs of the place the tables live in.
    pub needs: Needs,
}

/// What a route needs of the place the tables live in: any place, or the
/// embedded store (what only it keeps: the change feed, backups), with why for a place elsewhere (a 501
/// `not_over_hbase` says it; `routes.rs` checks it, in one place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Served wherever the tables live.
    Anywhere,
    /// Served by the embedded store only, with why.
    Store(&'static str),
    /// Served by a searcher of a cluster only (`serve --cluster`): calls
    /// between searchers; any other server answers 404 `not_in_a_cluster`
    /// (`routes.rs` checks it, in one place).
    Cluster,
}

impl RouteSpec {
    /// The same route, one that only reads (a POST whose body is a query).
    const fn reading(self) -> RouteSpec {
        RouteSpec { mutates: false, ..self }
    }

    /// The same route, served by the embedded store only, for `why`.
    const fn store_only(self, why: &'static str) -> RouteSpec {
        RouteSpec { needs: Needs::Store(why), ..self }
    }

    /// The same route, served by a searcher of a cluster only.
    const fn in_cluster(self) -> RouteSpec {
        RouteSpec { needs: Needs::Cluster, ..self }
    }

    /// Whether the route called `name` is served by a searcher of a
    /// cluster only.
    pub(super) fn needs_cluster(name: &str) -> bool {
        ROUTES.iter().any(|r| r.name == name && r.needs == Needs::Cluster)
    }

    /// Why the route called `name` is not served when the tables live
    /// elsewhere (`serve --hbase`); `None`: it is.
    pub(super) fn needs_store(name: &str) -> Option<&'static str> {
        ROUTES.iter().find(|r| r.name == name).and_then(|r| match r.needs {
            Needs::Anywhere | Needs::Cluster => None,
            Needs::Store(why) => Some(why),
        })
    }

    /// Whether the route called `name` writes (routes of one name agree).
    pub(super) fn mutates(name: &str) -> bool {
        ROUTES.iter().any(|r| r.name == name && r.mutates)
    }
}

const READ: &[Param] = &[p::COLUMNS, p::VERSIONS, p::MIN_TS, p::MAX_TS, p::ENCODING];
const SCAN: &[Param] = &[
    p::START,
    p::STOP,
    p::PREFIX,
    p::PREFIX_FIELDS,
    p::REVERSE,
    p::COLUMNS,
    p::VERSIONS,
    p::MIN_TS,
    p::MAX_TS,
    p::FILTER,
    p::SCAN_LIMIT,
    p::OFFSET,
    p::SCAN_CURSOR,
    p::KEYS_ONLY,
    p::REGION,
    p::ENCODING,
];

/// Every route, in API.md's order.
pub const ROUTES: &[RouteSpec] = &[
    // The page's own state (what was searched) is in its address.
    route("page", Action::Public, "GET", "/", "/?q=gas", None, p::PAGE),
    route("page_script", Action::Public, "GET", "/page.js", "/page.js", None, &[]),
    route("page_style", Action::Public, "GET", "/page.css", "/page.css", None, &[]),
    route("health", Action::Public, "GET", "/health", "/health", None, &[]),
    route("metrics", Action::Admin, "GET", "/metrics", "/metrics", None, &[]),
    route("cluster", Action::Admin, "GET", "/cluster", "/cluster", None, &[]),
    // Between searchers of a cluster: the cluster's secret, not a key.
    route("cluster_shard", Action::Public, "POST", "/cluster/shard", "/cluster/shard", Some("{}"), &[])
        .reading()
        .in_cluster(),
    route("openapi", Action::Any, "GET", "/openapi.json", "/openapi.json", None, &[]),
    route("tables_list", Action::Any, "GET", "/tables", "/tables", None, &[]),
    route(
        "tables_put",
        Action::Admin,
        "PUT",
        "/tables/{table}",
        "/tables/probe",
        Some(r#"{"families":[{"name":"f"}]}"#),
        &[],
    ),
    route("tables_get", Action::Read, "GET", "/tables/{table}", "/tables/mail", None, &[]),
    route("tables_delete", Action::Admin, "DELETE", "/tables/{table}", "/tables/probe", None, &[]),
    route(
        "regions",
        Action::Read,
        "GET",
        "/tables/{table}/regions",
        "/tables/mail/regions",
        None,
        &[p::ENCODING],
    ),
    route(
        "tables_disable",
        Action::Admin,
        "POST",
        "/tables/{table}/disable",
        "/tables/probe/disable",
        None,
        &[],
    ),
    route(
        "tables_enable",
        Action::Admin,
        "POST",
        "/tables/{table}/enable",
        "/tables/probe/enable",
        None,
        &[],
    ),
    route(
        "tables_display",
        Action::Admin,
        "PUT",
        "/tables/{table}/display",
        "/tables/mail/display",
        Some(r#"{"display":["subject","from"]}"#),
        &[],
    ),
    route(
        "rows_put",
        Action::Write,
        "PUT",
        "/tables/{table}/rows/{key}",
        "/tables/probe/rows/r",
        Some(r#"{"cells":[{"column":"f:q","value":"x"}]}"#),
        &[p::ENCODING],
    ),
    route("rows_get", Action::Read, "GET", "/tables/{table}/rows/{key}", "/tables/probe/rows/r", None, READ),
    route(
        "rows_delete",
        Action::Write,
        "DELETE",
        "/tables/{table}/rows/{key}",
        "/tables/probe/rows/r",
        None,
        &[p::COLUMNS, p::TIMESTAMP, p::EXACT, p::ENCODING],
    ),
    route(
        "rows_put_fields",
        Action::Write,
        "PUT",
        "/tables/{table}/rows",
        "/tables/mail/rows?key_fields=%7B%22user%22%3A%22probe%22%2C%22date%22%3A1%2C%22id%22%3A1%7D",
        Some(r#"{"cells":[{"column":"m:subject","value":"x"}]}"#),
        &[p::KEY_FIELDS, p::ENCODING],
    ),
    route(
        "rows_get_fields",
        Action::Read,
        "GET",
        "/tables/{table}/rows",
        "/tables/mail/rows?key_fields=%7B%22user%22%3A%22probe%22%2C%22date%22%3A1%2C%22id%22%3A1%7D",
        None,
        &[p::KEY_FIELDS, p::COLUMNS, p::VERSIONS, p::MIN_TS, p::MAX_TS, p::ENCODING],
    ),
    route(
        "rows_delete_fields",
        Action::Write,
        "DELETE",
        "/tables/{table}/rows",
        "/tables/mail/rows?key_fields=%7B%22user%22%3A%22probe%22%2C%22date%22%3A1%2C%22id%22%3A1%7D",
        None,
        &[p::KEY_FIELDS, p::COLUMNS, p::TIMESTAMP, p::EXACT, p::ENCODING],
    ),
    route(
        "mutate",
        Action::Write,
        "POST",
        "/tables/{table}/mutate",
        "/tables/probe/mutate",
        Some(r#"{"mutations":[]}"#),
        &[p::ATOMIC, p::ENCODING],
    ),
    route(
        "mutate_tables",
        Action::Write,
        "POST",
        "/mutate",
        "/mutate",
        Some(r#"{"mutations":[]}"#),
        &[p::ATOMIC, p::ENCODING],
    ),
    route("scan", Action::Read, "GET", "/tables/{table}/scan", "/tables/mail/scan?limit=1", None, SCAN),
    route(
        "scan",
        Action::Read,
        "POST",
        "/tables/{table}/scan",
        "/tables/mail/scan",
        Some(r#"{"limit":"1"}"#),
        SCAN,
    )
    .reading(),
    route("count", Action::Read, "GET", "/tables/{table}/count", "/tables/mail/count?limit=1", None, SCAN),
    route("indexes_list", Action::Read, "GET", "/tables/{table}/indexes", "/tables/mail/indexes", None, &[]),
    route(
        "index_put",
        Action::Admin,
        "PUT",
        "/tables/{table}/indexes/{index}",
        "/tables/mail/indexes/by_subject",
        Some(r#"{"columns":["m:subject"]}"#),
        &[],
    ),
    route(
        "index_rebuild",
        Action::Admin,
        "POST",
        "/tables/{table}/indexes/{index}/rebuild",
        "/tables/mail/indexes/by_from/rebuild",
        None,
        &[],
    ),
    route(
        "index_verify",
        Action::Read,
        "GET",
        "/tables/{table}/indexes/{index}/verify",
        "/tables/mail/indexes/by_from/verify",
        None,
        &[],
    ),
    route(
        "index_delete",
        Action::Admin,
        "DELETE",
        "/tables/{table}/indexes/{index}",
        "/tables/mail/indexes/by_subject",
        None,
        &[],
    ),
    route(
        "index_lookup",
        Action::Read,
        "GET",
        "/tables/{table}/indexes/{index}",
        "/tables/mail/indexes/by_from?eq=x",
        None,
        &[p::EQ, p::PREFIX, p::START, p::STOP, p::SCAN_LIMIT, p::CURSOR, p::REGION, p::ROWS, p::ENCODING],
    ),
    route(
        "index_intersect",
        Action::Read,
        "GET",
        "/tables/{table}/indexes:intersect",
        "/tables/mail/indexes:intersect?q=by_from:eq:x",
        None,
        &[p::LOOKUPS, p::OP, p::KEY_CURSOR, p::KEYS_LIMIT, p::ENCODING],
    ),
    route(
        "search",
        Action::Search,
        "GET",
        "/tables/{table}/search",
        "/tables/mail/search?q=gas",
        None,
        &[
            p::QUERY,
            p::USER,
            p::SORT,
            p::SEARCH_LIMIT,
            p::SEARCH_OFFSET,
            p::CURSOR,
            p::COLUMNS,
            p::HIGHLIGHT,
            p::HIGHLIGHT_ENCODER,
            p::CONSISTENCY,
            p::MIN_SEQ,
            p::ENCODING,
            p::FORMAT,
            p::FIELDS,
            p::CROP,
            p::TYPOS,
            p::FACETS,
            p::FACET_LIMIT,
            p::COLLAPSE,
        ],
    ),
    route(
        "threads_get",
        Action::Search,
        "GET",
        "/tables/{table}/threads/{thread}",
        "/tables/mail/threads/0000000000000000",
        None,
        &[p::FIELDS, p::COLUMNS, p::ENCODING],
    ),
    route(
        "suggest",
        Action::Search,
        "GET",
        "/tables/{table}/suggest",
        "/tables/mail/suggest?q=enr",
        None,
        &[p::TYPED, p::USER, p::SUGGEST_LIMIT, p::ENCODING],
    ),
    route(
        "keywords",
        Action::Search,
        "GET",
        "/tables/{table}/keywords",
        "/tables/mail/keywords?user=cash-m&terms=gas",
        None,
        &[p::USER_REQUIRED, p::TERMS, p::KEYS_LIMIT, p::CURSOR, p::ENCODING],
    ),
    route(
        "reindex",
        Action::Admin,
        "POST",
        "/tables/{table}/reindex",
        "/tables/mail/reindex",
        None,
        &[p::MODE],
    ),
    route("keys_create", Action::Master, "POST", "/keys", "/keys", Some(r#"{"actions":["search"]}"#), &[]),
    route("keys_list", Action::Master, "GET", "/keys", "/keys", None, &[]),
    route("keys_delete", Action::Master, "DELETE", "/keys/{uid}", "/keys/none", None, &[]),
    route("jobs", Action::Admin, "GET", "/jobs/{id}", "/jobs/j1", None, &[]),
    route(
        "changes",
        Action::Changes,
        "GET",
        "/tables/{table}/changes",
        "/tables/mail/changes?limit=2",
        None,
        &[p::SINCE, p::CHANGES_LIMIT, p::WAIT_MS, p::CELLS, p::CONSUMER, p::ENCODING],
    ),
    route("consumers_list", Action::Changes, "GET", "/consumers", "/consumers", None, &[]),
    route("consumers_put", Action::Changes, "PUT", "/consumers/{name}", "/consumers/probe", Some("{}"), &[]),
    route("consumers_get", Action::Changes, "GET", "/consumers/{name}", "/consumers/probe", None, &[]),
    route("consumers_delete", Action::Changes, "DELETE", "/consumers/{name}", "/consumers/probe", None, &[]),
    route("backups_create", Action::Master, "POST", "/backups", "/backups", None, &[]).store_only(BACKUPS),
    route("backups_list", Action::Master, "GET", "/backups", "/backups", None, &[]).store_only(BACKUPS),
];

const fn route(
    name: &'static str,
    action: Action,
    method: &'static str,
    path: &'static str,
    example: &'static str,
    example_body: Option<&'static str>,
    params: &'static [Param],
) -> RouteSpec {
    let mutates = !matches!(method.as_bytes(), b"GET");
    RouteSpec { name, action, method, path, example, example_body, params, mutates, needs: Needs::Anywhere }
}

/// The parameters route `name` takes, from [`ROUTES`].
pub(super) fn known(name: &str) -> &'static [Param] {
    ROUTES.iter().find(|r| r.name == name).map_or(&[], |r| r.params)
}

/// The name of the route a request of `method` on `path` is for (its
/// path pattern matching with the most literal segments), as the log names
/// requests refused before their route ran (an unknown parameter).
pub fn route_name(method: &str, path: &str) -> Option<&'static str> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = if method == "HEAD" { "GET" } else { method };
    ROUTES
        .iter()
        .filter(|route| route.method == method)
        .filter_map(|route| {
            let pattern: Vec<&str> = route.path.trim_start_matches('/').split('/').collect();
            let fits = pattern.len() == segments.len()
                && pattern
                    .iter()
                    .zip(&segments)
                    .all(|(p, s)| (p.starts_with('{') && !s.is_empty()) || p == s);
            fits.then(|| (pattern.iter().filter(|p| !p.starts_with('{')).count(), route.name))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, name)| name)
}

/// The methods the route table has for `path` (for a 405's `Allow`).
pub fn allowed_methods(path: &str) -> Vec<&'static str> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut methods: Vec<&'static str> = ROUTES
        .iter()
        .filter(|route| {
            let pattern: Vec<&str> = route.path.trim_start_matches('/').split('/').collect();
            pattern.len() == segments.len()
                && pattern.iter().zip(&segments).all(|(p, s)| (p.starts_with('{') && !s.is_empty()) || p == s)
        })
        .map(|route| route.method)
        .collect();
    // HEAD is answered wherever GET is (`server.rs`).
    if methods.contains(&"GET") {
        methods.push("HEAD");
    }
    methods.sort_unstable();
    methods.dedup();
    methods
}

#[cfg(test)]
mod tests {
    use super::{Needs, ROUTES};

    /// The routes served by the embedded store only are the backups'
    /// (HBase's tables are backed up by HBase's snapshots), with their
    /// reason; every other route is served anywhere.
    #[test]
    fn only_what_the_store_alone_keeps_needs_it() {
        for route in ROUTES {
            let store_kept = route.name.starts_with("backups_");
            match route.needs {
                Needs::Store(why) => assert!(store_kept && !why.is_empty(), "{}", route.name),
                Needs::Anywhere => assert!(!store_kept, "{} is served anywhere", route.name),
                Needs::Cluster => assert!(route.name.starts_with("cluster_"), "{}", route.name),
            }
        }
    }
}
