//! Why a route is not served over HBase (`serve --hbase`): the reason a
//! 501 `not_over_hbase` gives. A leaf: the error mapping and the route
//! table's test read it.

/// The routes `serve --hbase` does not serve, each with why (the 501
/// `not_over_hbase` says it). Every route is in this list or in
/// `route_table::OVER_HBASE`, never both (tested).
pub const NOT_OVER_HBASE: &[(&str, &str)] = &[
    ("indexes_list", INDEX_REASON),
    ("index_put", INDEX_REASON),
    ("index_rebuild", INDEX_REASON),
    ("index_verify", INDEX_REASON),
    ("index_delete", INDEX_REASON),
    ("index_lookup", INDEX_REASON),
    ("index_intersect", INDEX_REASON),
    ("changes", FEED_REASON),
    ("consumers_list", FEED_REASON),
    ("consumers_put", FEED_REASON),
    ("consumers_get", FEED_REASON),
    ("consumers_delete", FEED_REASON),
    ("backups_create", BACKUP_REASON),
    ("backups_list", BACKUP_REASON),
];

const INDEX_REASON: &str = "secondary indexes live in the embedded store; over HBase they need index tables kept \
     consistent without cross-row transactions (planned)";
const FEED_REASON: &str = "the change feed is the embedded store's; over HBase, writes are found by time-range scans, \
     which other clients' deletes do not show";
const BACKUP_REASON: &str = "HBase's tables are backed up by HBase: `snapshot 'TABLE', 'NAME'` in the hbase shell \
     (and `rowsearch backup` for the local index)";

/// Why the route called `name` is not served over HBase.
pub fn not_over_hbase_reason(name: &str) -> &'static str {
    NOT_OVER_HBASE.iter().find(|(n, _)| *n == name).map_or("not served over HBase", |(_, why)| why)
}
