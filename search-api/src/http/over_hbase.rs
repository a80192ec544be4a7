//! Why a route is not served over HBase (`serve --hbase`): the reasons
//! the routes that need the embedded store give (`route_table`'s
//! `Needs::Store`), in a 501 `not_over_hbase`. A leaf.

/// The change feed's and its consumers' routes.
pub const FEED: &str = "the change feed is the embedded store's; over HBase, writes are found by time-range scans, \
     which other clients' deletes do not show (following HBase's replication is planned)";
/// Backups' routes.
pub const BACKUPS: &str = "HBase's tables are backed up by HBase: `snapshot 'TABLE', 'NAME'` in the hbase shell \
     (and `rowsearch backup` for the local index)";
