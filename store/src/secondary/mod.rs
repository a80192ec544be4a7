//! Secondary indexes: declared per table over one or more columns, kept in
//! the same write transaction as the rows they index.
//!
//! An index is two LMDB databases: the merged entries, `t/<table>/i/<index>`,
//! and sorted runs of recent ones, `t/<table>/p/<index>` (see "Pending
//! runs" below). An entry is
//!
//! ```text
//! region (u16, BE) | esc(value 1) 00 01 | ... | esc(value n) 00 01 | esc(row key) 00 01
//! ```
//!
//! with the values of the newest live version of each indexed column and the
//! (unsalted) row key, escaped as in cell keys so entries sort by values, then
//! row key. Its value is the entry's expiry (u64 BE, ms; `u64::MAX` without
//! TTL, stored as an empty value): the earliest time one of its cells passes
//! its family's TTL. A row that lacks one of the columns has no entry. The
//! region prefix keeps a region's entries with the region; a lookup merges
//! the regions.
//!
//! # Pending runs
//!
//! Entries sort by value, so the rows of one write batch land all over a
//! large index: a batch of 10,000 rows dirties ~10,000 of its B-tree pages,
//! and LMDB copies and writes back every page a transaction touches. A
//! write therefore appends its new entries, sorted, as one *run* of the
//! pending database, keyed `run id (u32 BE) | entry`: a new run's keys sort
//! after every key there, so LMDB appends them (`MDB_APPEND`) and fills each
//! page once. A directory under run id 0 (`00 00 00 00 | run id` -> entries
//! written, u64 BE) lists the runs. When a write leaves more than
//! [`PENDING_RUNS`] runs (configurable), it moves every run into the main
//! database in one ascending pass (a k-way merge, the newest run winning a
//! key found in several) and empties the pending one: a merge touches each
//! main page once for many entries.
//!
//! Lookups read the main database and every run (a sorted merge), in the
//! same transaction as the data, so an index never disagrees with the data.
//! A live entry is in exactly one place; a removal or new expiry goes to the
//! newest run holding the key, else to the main database. Only expired
//! entries (left until compaction or the next merge overwrites them) can
//! share a key with a live one in a newer run, and lookups skip expired
//! entries.

//!
//! Files: `handle` (an open index), `entry` (the entry's bytes, the one
//! owner of that layout), `runs` (pending runs and the merge), `query`
//! (the public query and answer types), `lookup` (queries and key streams).

mod entry;
mod handle;
mod lookup;
mod outside;
mod query;
mod runs;

pub(crate) use entry::{Entry, entry_row};
pub(crate) use handle::IndexHandle;
pub(crate) use lookup::{key_stream, lookup};
pub use outside::{EntryCodec, EntryParts};
pub use query::{IndexHit, IndexPage, IndexQuery, IndexState, IndexTerm, IndexVerifyReport};
pub(crate) use runs::PENDING_RUNS;
