//! Reading: what a read asks for ([`options`]), read transactions over a
//! snapshot of every table ([`txn`]), and the scan engine ([`scan`]).

mod options;
mod scan;
mod txn;

pub use options::{ALL_VERSIONS, ReadOptions, Scan, ScanCursor};
pub(crate) use scan::get_row;
pub use scan::{ScanIter, ScanPage};
pub use txn::ReadTxn;
