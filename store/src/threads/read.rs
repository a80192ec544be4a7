//! Reading threads: a thread's members, and thread ids as text.

use heed::RoTxn;

use super::entries::{decode_member, member_id, members_prefix};
use super::handle::ThreadsHandle;
use crate::error::{Error, Result};

/// One id of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMember {
    /// The id as kept (an id past 250 bytes is `00` and its hash).
    pub id: Vec<u8>,
    /// The partition (mailbox) the thread lives in.
    pub partition: Vec<u8>,
    /// The row carrying the id; `None` for an id only referred to.
    pub row: Option<Vec<u8>>,
}

/// A thread id as text: 16 lowercase hex digits (what the thread column
/// holds and `thread:` queries name).
pub fn thread_id_text(thread: u64) -> String {
    format!("{thread:016x}")
}

/// A thread id from its text; `None` unless it is 16 hex digits.
pub fn parse_thread_id(text: &str) -> Option<u64> {
    (text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// The members of thread `thread`, in id order (read off their member
/// entries alone).
pub(crate) fn members(txn: &RoTxn<'_>, threads: &ThreadsHandle, thread: u64) -> Result<Vec<ThreadMember>> {
    let err = |e| Error::lmdb("read threads", e);
    let mut out = Vec::new();
    for item in threads.db.prefix_iter(txn, &members_prefix(thread)).map_err(err)? {
        let (key, value) = item.map_err(err)?;
        let (partition, row) = decode_member(value).ok_or_else(|| {
            Error::corrupted("threads", key, "a thread member entry shorter than its partition")
        })?;
        out.push(ThreadMember {
            id: member_id(key).to_vec(),
            partition: partition.to_vec(),
            row: (!row.is_empty()).then(|| row.to_vec()),
        });
    }
    Ok(out)
}
