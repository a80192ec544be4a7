//! `/tables` and `/tables/{t}`: list, create, describe, drop.

use rowsearch_store::{SearchSchema, TableSchema};
use serde_json::{Value, json};
use warp::Reply;
use warp::http::StatusCode;

use super::{Answer, confine, json_reply, ok};
use crate::http::error::{ApiError, Refusal};
use crate::http::params::{Params, parse_json};
use crate::http::state::State;
use crate::keys::Access;

/// `GET /tables`.
pub(crate) fn list(st: &State, access: &Access) -> Answer {
    let rows = st.searcher.rows();
    let tables: Vec<Value> = rows
        .tables()?
        .into_iter()
        .filter(|name| access.may_touch(name))
        .map(|name| {
            let search = rows.schema(&name).ok().and_then(|s| Some(search_summary(s.search.as_ref()?, &s)));
            let mut entry = json!({"name": name});
            if let Some(search) = search {
                // How current its index is, as GET /tables/{t} says it (a
                // table's figures: not for a key confined to partitions).
                if access.partitions().is_none()
                    && let Some(f) = st.freshness(&name)
                {
                    entry["freshness"] = json!({"store_seq": f.store_seq, "index_seq": f.index_seq,
                        "lag_rows": f.lag_rows, "lag_ms": f.lag_ms});
                }
                entry["search"] = search;
            }
            entry
        })
        .collect();
    ok(json!({"tables": tables}))
}

/// What a client (the search page) needs to search a table: its search
/// fields and their columns, the partition (`user=`), the names documents
/// carry by default (`display`, null: all), the facets it can count and
/// the field its hits collapse into conversations by (`threads`, null:
/// none).
fn search_summary(search: &SearchSchema, schema: &TableSchema) -> Value {
    let mut facets: Vec<&str> = search.partition.as_deref().into_iter().collect();
    facets.extend(search.fields.iter().filter(|f| f.facet).map(|f| f.name.as_str()));
    if search.date_column.is_some() {
        facets.extend(["month", "year"]);
    }
    let fields: Vec<&str> = search.fields.iter().map(|f| f.name.as_str()).collect();
    let columns: serde_json::Map<String, Value> =
        search.fields.iter().map(|f| (f.name.clone(), json!(f.column))).collect();
    json!({"partition": search.partition, "fields": fields, "columns": columns, "display": search.display,
           "facets": facets, "threads": crate::searcher::thread_field(schema).map(|f| &f.name)})
}

/// `GET /tables/{t}/regions`: the table's regions in key order, each its
/// stored-key range (salt byte included; `null` for the open ends), as
/// HBase lists a table's regions. Not for a key confined to partitions:
/// the bounds are other partitions' keys.
pub(crate) fn regions(st: &State, access: &Access, t: &str, p: &Params) -> Answer {
    if access.partitions().is_some() {
        return Err(Refusal::Forbidden(
            "a key confined to partitions may not list a table's regions (their bounds are other partitions' keys)"
                .into(),
        )
        .into());
    }
    let enc = p.encoding()?;
    let regions: Vec<Value> = st
        .tables()
        .regions(t)?
        .into_iter()
        .map(|r| {
            json!({"index": r.index, "start": r.start.map(|k| enc.encode(&k)), "end": r.end.map(|k| enc.encode(&k))})
        })
        .collect();
    ok(json!({"table": t, "regions": regions}))
}

/// `PUT /tables/{t}`: 201 when created, 200 when it exists alike.
pub(crate) fn put(st: &State, t: &str, body: &[u8]) -> Answer {
    let schema: TableSchema = parse_json(body)?;
    let created = st.tables().create_table(t, &schema)?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(json_reply(&json!({"table": t, "created": created}), status))
}

/// `GET /tables/{t}`: schema and figures, wherever the table lives. The
/// embedded store counts rows by a keys-only scan (exact, and linear in
/// the table), kept until a row of the store changes (`row_counts`); cells
/// and bytes from LMDB's counters; a disabled table's rows are not read,
/// so not counted; HBase keeps no counts without a
/// full scan, so none are given for a table there, and its guarantee and
/// the tailer's measured lag are said.
pub(crate) fn get(st: &State, access: &Access, t: &str) -> Answer {
    confine::whole_table(access, "a table's figures")?;
    let tables = st.tables();
    let schema = tables.schema(t)?;
    let regions = tables.regions(t)?.len();
    let enabled = tables.is_enabled(t)?;
    let index = st.index_figures(t).map(|(generation, bytes, when)| {
        json!({"generation": generation, "bytes": bytes, "updated_unix_seconds": when})
    });
    let freshness = st.freshness(t);
    let (stats, source, guarantee) = match tables.store() {
        Some(store) => {
            let figures = store.stats(t)?;
            let rows = match enabled {
                true => Some(st.row_counts.rows(store, t)?),
                false => None,
            };
            let stats = json!({"rows": rows, "cells": figures.cells, "bytes": figures.bytes});
            let guarantee = json!({"kind": "snapshot",
                "detail": "a search reflects every write committed before it began, from any process"});
            (stats, json!({"kind": "store"}), guarantee)
        }
        None => {
            let place = tables.place();
            let refresh_ms = st.searcher.refresher().and_then(|r| r.interval()).map(|i| i.as_millis() as u64);
            // Others' writes: through HBase's replication when it ships to
            // rowsearch (measured by probes, `hbase/stream.rs`), else the
            // tailer's time scans.
            let following = tables
                .following()
                .map(|f| json!({"by": f.by, "lag_ms": f.lag_ms, "detail": f.detail, "trouble": f.trouble}));
            let guarantee = json!({"kind": "read_your_writes",
                "detail": "writes made through this server are searchable at once; writes by other \
                           HBase clients once the feed names them (HBase's replication, `following.by` \
                           `replication`: every write, old timestamps and deletes included) or the \
                           tailer has read them (`tailer`: every refresh, each table's cells newer \
                           than its watermark less a 2 s margin for clock skew)",
                "refresh_ms": refresh_ms,
                "lag_ms": freshness.as_ref().map(|f| f.lag_ms),
                "following": following});
            let stats = json!({"rows": null, "cells": null, "bytes": null});
            (stats, json!({"kind": place.kind, "gateway": place.at}), guarantee)
        }
    };
    let mut stats = stats;
    stats["regions"] = json!(regions);
    stats["index"] = json!(index);
    ok(json!({
        "name": t,
        "enabled": enabled,
        "schema": schema,
        "source": source,
        "stats": stats,
        "freshness": freshness.map(|f| json!({"store_seq": f.store_seq, "index_seq": f.index_seq,
                                              "lag_rows": f.lag_rows, "lag_ms": f.lag_ms})),
        "guarantee": guarantee,
    }))
}

/// `PUT /tables/{t}/display` body `{"display": ["subject", ...]}`: the
/// names the table's search documents carry by default (`["*"]` every
/// one; see `Store::set_display`).
pub(crate) fn set_display(st: &State, t: &str, body: &[u8]) -> Answer {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Display {
        display: Vec<String>,
    }
    let Display { display } = parse_json(body)?;
    if display.is_empty() {
        return Err(ApiError::bad_request("display: name at least one field, or [\"*\"] for every one"));
    }
    let changed = st.tables().set_display(t, Some(display.clone()))?;
    ok(json!({"name": t, "display": display, "changed": changed}))
}

/// `POST /tables/{t}/disable` and `/enable`: HBase's disable and enable
/// (a disabled table refuses reads and writes of its rows, 409
/// `table_disabled`, until enabled).
pub(crate) fn set_enabled(st: &State, t: &str, enabled: bool) -> Answer {
    let changed = st.tables().set_table_enabled(t, enabled)?;
    ok(json!({"name": t, "enabled": enabled, "changed": changed}))
}

/// `DELETE /tables/{t}`: rows, keyword rows, indexes and generations.
pub(crate) fn delete(st: &State, t: &str) -> Answer {
    rowsearch_indexer::drop_table(st.searcher.live().home().place(), t)?;
    st.searcher.forget(t);
    Ok(StatusCode::NO_CONTENT.into_response())
}
