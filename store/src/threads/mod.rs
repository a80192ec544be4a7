//! Threads: rows linked into conversations by the ids they carry and the
//! ids they name (mail's Message-ID, In-Reply-To and References), kept in
//! `t/<table>/th` ([`entries`]) and in each row's thread column, in the
//! same write transaction as the rows ([`assign`]).
//!
//! A thread is a connected component: a row joins the thread of every id
//! it carries or names (an id named but never seen is a ghost that holds
//! its place, so two replies to a missing message share a thread), as
//! notmuch groups messages; where the table asks, a reply without
//! references (`Re:` and the like) also joins the messages of the same
//! subject within a window of its date, and any message joins such
//! replies. A thread's id is the smallest hash of the ids it holds, so it
//! does not depend on the order rows arrive in, and a row joining two
//! threads makes them one (the rows of the one whose id goes are written
//! again). Threads live within one partition (a mailbox).

pub(crate) mod assign;
pub(crate) mod entries;
mod handle;
mod ids;
mod link;
mod plain;
mod read;
pub(crate) mod upgrade;

pub use entries::partition_prefixes as thread_partition_prefixes;
pub(crate) use handle::ThreadsHandle;
pub use ids::normalize_subject;
pub use link::ThreadEntries;
pub use plain::{MovedRow, ghost_row, thread_members_in, thread_rows};
pub(crate) use read::members as members_of;
pub use read::{ThreadMember, parse_thread_id, thread_id_text};
