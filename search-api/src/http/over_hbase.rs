//! Why a route is not served over HBase (`serve --hbase`): the reasons
//! the routes that need the embedded store give (`route_table`'s
//! `Needs::Store`), in a 501 `not_over_hbase`. A leaf.

/// Backups' routes.
pub const BACKUPS: &str = "HBase's tables are backed up by HBase: `snapshot 'TABLE', 'NAME'` in the hbase shell \
     (and `rowsearch backup` for the local index)";
