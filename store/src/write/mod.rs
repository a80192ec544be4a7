//! Writing: batches of mutations ([`batch`]), applying them with their
//! derived data and feed entries in one transaction ([`apply`]), the cells
//! of one row ([`row`]), derived data kept in step ([`derived`]), and
//! schema changes and compaction ([`admin`]).

mod admin;
mod apply;
pub(crate) mod batch;
mod derived;
pub(crate) mod extend;
pub(crate) mod group;
mod repair;
mod row;

pub use admin::{CompactReport, IndexBuildStep};
pub use apply::{CellReader, Decide, PreparedBatch, Produce};
pub(crate) use apply::{PendingRuns, Writer};
pub use batch::{Batch, Delete, Mutation};
pub use repair::RepairedIndex;
pub(crate) use repair::repair_moved_runs;
