//! `/tables/{t}/scan` (GET and POST) and `/tables/{t}/count`.

use rowsearch_store::{Cancel, Filter, Scan, ScanCursor};
use serde_json::{Value, json};

use super::{Answer, confine, ok};
use crate::http::error::ApiError;
use crate::http::params::{Params, read_options};
use crate::http::state::State;
use crate::json::row_json_in;
use crate::keys::Access;

/// A scan page, or with `count` the number of rows the scan selects.
pub(crate) fn scan(
    st: &State,
    access: &Access,
    table: &str,
    p: &Params,
    count: bool,
    cancel: &Cancel,
) -> Answer {
    let schema = st.tables().schema(table)?;
    let prefix = match p.get("prefix_fields") {
        Some(json) => {
            let value: Value = serde_json::from_str(json)
                .map_err(|e| ApiError::bad_request(format!("prefix_fields: {e}")))?;
            // JSON that cannot fit this table's key: 422 `invalid_key`.
            let rk = schema.row_key.as_ref().filter(|rk| !rk.fields.is_empty()).ok_or_else(|| {
                let detail = format!("prefix_fields: table {table:?} has no typed row key");
                ApiError::from(rowsearch_store::Error::from(rowsearch_store::ErrorKind::InvalidRowKey {
                    detail,
                }))
            })?;
            Some(rk.encode_json(&value)?)
        }
        None => p.bytes("prefix")?,
    };
    let prefix = confine::scan_prefix(access, &schema, table, prefix)?;
    let filter = match p.get("filter") {
        Some(f) if f.len() > st.limits.max_filter_bytes => {
            return Err(ApiError::bad_request(format!(
                "filter is {} bytes, the limit is {}",
                f.len(),
                st.limits.max_filter_bytes
            )));
        }
        Some(f) => Some(Filter::parse(f)?),
        None => None,
    };
    let limit = p.number::<usize>("limit")?;
    if limit.is_some_and(|l| l > st.limits.max_scan_limit) {
        return Err(ApiError::bad_request(format!(
            "limit is at most {} (serve --max-scan-limit)",
            st.limits.max_scan_limit
        )));
    }
    let scan = Scan {
        start: p.bytes("start")?,
        stop: p.bytes("stop")?,
        prefix,
        reverse: p.flag("reverse")?,
        read: read_options(p)?,
        offset: p.number("offset")?.unwrap_or(0),
        limit: if count { limit } else { Some(limit.unwrap_or(100)) },
        cursor: p.get("cursor").map(ScanCursor::from_token).transpose()?,
        keys_only: p.flag("keys_only")?,
        filter,
        region: p.number("region")?,
    };
    if count {
        return ok(json!({"count": st.tables().count(table, &scan, cancel)?}));
    }
    let page = st.tables().scan_page(table, &scan, cancel)?;
    let enc = p.encoding()?;
    let rows: Vec<Value> = page.rows.iter().map(|r| row_json_in(r, schema.row_key.as_ref(), enc)).collect();
    ok(json!({"rows": rows, "next_cursor": page.next_cursor.map(|c| c.to_token())}))
}
