//! Secondary indexes of tables that live in HBase, kept in HBase tables
//! and never wrong, with the scheme Apache Phoenix (5.1) uses for its
//! consistent global indexes without cross-row transactions.
//!
//! Index `I` of table `T` is the HBase table `T.idx.I`, family `e`: one row
//! per entry, its key the store's entry bytes (`EntryCodec`: values, then
//! the row key, so entries sort by values), one cell `e:s` whose value is a
//! status byte (1 verified, 2 unverified) and, for a table whose indexed
//! families have a TTL, the entry's expiry (u64 BE, ms). Row `FF` (after
//! every entry) holds `e:b` while the index is being built.
//!
//! Writes go in three phases, every index cell at the write's timestamp
//! `at` (this process's clock, strictly increasing; the write's own data
//! cells and deletes take it too, so one clock orders them):
//! 1. the new entries and the entries the write takes away are put
//!    *unverified*;
//! 2. the rows are written;
//! 3. the new entries are put *verified* (at `at`: the later put wins) and
//!    the entries taken away are deleted.
//!
//! A lookup returns a verified entry as it is. An unverified one it checks
//! against its row (one batched get): the row's entry equal, it is put
//! verified and returned; else it is skipped, and deleted once older than
//! [`WRITE_WINDOW_MS`] (a write that wrote it has finished or failed by
//! then: a write refuses to begin its phase 2 past half the window). So a
//! lookup never returns a row whose values do not match (an entry is
//! verified only after its row was written, and made unverified before the
//! row changes) and never misses one that does (an entry is written
//! before its row, and deleted only once the row no longer has it),
//! whatever crashes between the phases. `maintain.rs`: the phases;
//! `lookup.rs`: lookups, repairs, combinations and verify; `admin.rs`:
//! adding, building and dropping; `layout.rs`: the index table's bytes.
//!
//! Limits (HBase has no cross-row locks reachable from a client; Phoenix's
//! run in the region server): two processes writing the same row at the
//! same moment may leave a stale verified entry; writes of other HBase
//! clients (not through rowsearch) are not indexed.

mod admin;
mod layout;
mod lookup;
mod maintain;

pub(crate) use admin::{build, create_all, drop_all, drop_index, list, restart, start};
pub(crate) use layout::MARK;
pub(crate) use lookup::{combine, lookup, lookup_rows, verify};
pub(crate) use maintain::{IndexWrite, after_deletes, merged_at};
