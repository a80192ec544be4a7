//! Thread entries of formats up to 7 brought to format 8: a member entry
//! held only its partition, the row was read from the id entry; format 8
//! keeps the row in the member entry too ([`super::entries`]).

use heed::RwTxn;

use super::entries::{all_members_prefix, by_id_key, decode_by_id, member_id, member_value};
use super::handle::ThreadsHandle;
use crate::error::{Error, Result};

/// Every member entry of `threads` written again with its id entry's row
/// (a ghost's empty), telling `report` (done, in all) how it goes; how
/// many were written.
pub(crate) fn rows_into_members(
    wtxn: &mut RwTxn,
    threads: &ThreadsHandle,
    report: &dyn Fn(u64, u64),
) -> Result<u64> {
    let err = |what| move |e| Error::lmdb(what, e);
    let prefix = all_members_prefix();
    let mut members: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for item in threads.db.prefix_iter(wtxn, prefix).map_err(err("upgrade: read threads"))? {
        let (key, partition) = item.map_err(err("upgrade: read threads"))?;
        members.push((key.to_vec(), partition.to_vec()));
    }
    let total = members.len() as u64;
    report(0, total);
    for (done, (key, partition)) in members.iter().enumerate() {
        let id = member_id(key);
        let found = threads.db.get(wtxn, &by_id_key(partition, id)).map_err(err("upgrade: read threads"))?;
        let row = found.and_then(decode_by_id).map_or(&[][..], |(_, row)| row).to_vec();
        threads.db.put(wtxn, key, &member_value(partition, &row)).map_err(err("upgrade: write threads"))?;
        if (done + 1) % 10_000 == 0 {
            report(done as u64 + 1, total);
        }
    }
    report(total, total);
    Ok(total)
}
