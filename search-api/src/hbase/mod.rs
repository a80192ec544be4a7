//! Tables that live in an Apache HBase cluster:
//! what rowsearch keeps there and how it reaches it.
//!
//! HBase holds the rows (each rowsearch table is an HBase table of the
//! same name and families, split at the schema's region boundaries) and
//! rowsearch's catalog: the HBase table `rowsearch_catalog`, one row per
//! rowsearch table, its schema as JSON in `c:schema`. Every rowsearch
//! process pointed at the cluster reads the same catalog, so several
//! searchers serve the same tables. Reached through HBase's Thrift2
//! gateway ([`crate::thrift::HbaseClient`]); rowsearch's own `--thrift2`
//! gateway can stand in for HBase. `tables.rs`: the catalog and the rows
//! ([`HbaseTables`]); `source.rs`: HBase as the indexer's row source
//! ([`HbaseSource`]: reindexes read HBase's rows, keyword cells made from
//! their text, changes found by time-range scans).

mod clock;
mod consumers;
mod indexes;
mod keywords;
mod scans;
mod source;
mod stream;
mod tables;
mod threads;

pub use keywords::companion;
pub use source::HbaseSource;
pub(crate) use tables::ensure;
pub use tables::{CATALOG, FEED_KEEPS_MS, HbaseError, HbaseTables};
