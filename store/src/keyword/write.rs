//! Writing keyword rows: the difference between rows' keyword cells
//! before and after a batch, applied in key order.

use super::handle::{KeywordCells, SearchHandle};
use crate::db::sorted::SortedPuts;
use crate::error::{Error, Result};

/// Applies the difference between rows' keyword cells before and after a
/// batch, in key order.
pub(crate) fn update<'h>(
    wtxn: &mut heed::RwTxn,
    changes: impl IntoIterator<Item = (&'h SearchHandle, &'h KeywordCells, &'h KeywordCells)>,
) -> Result<()> {
    // (keyword rows, key, new value or None to delete)
    type Write<'h> = (&'h SearchHandle, &'h [u8], Option<&'h [u8]>);
    let changes: Vec<_> = changes.into_iter().collect();
    // At most one write per entry before and after: no regrowing (a batch
    // of mail writes hundreds of thousands).
    let mut writes: Vec<Write<'h>> =
        Vec::with_capacity(changes.iter().map(|(_, b, a)| b.len() + a.len()).sum());
    for (search, before, after) in changes {
        let (mut b, mut a) = (0, 0);
        loop {
            match (before.get(b), after.get(a)) {
                (Some(old), Some(new)) if old.0 == new.0 => {
                    if old.1 != new.1 {
                        writes.push((search, new.0, Some(new.1)));
                    }
                    b += 1;
                    a += 1;
                }
                (Some(old), Some(new)) if old.0 < new.0 => {
                    writes.push((search, old.0, None));
                    b += 1;
                }
                (Some(old), None) => {
                    writes.push((search, old.0, None));
                    b += 1;
                }
                (_, Some(new)) => {
                    writes.push((search, new.0, Some(new.1)));
                    a += 1;
                }
                (None, None) => break,
            }
        }
    }
    // In key order per database (handles compared by address: one per table).
    writes.sort_unstable_by(|a, b| {
        (std::ptr::from_ref(a.0) as usize, a.1).cmp(&(std::ptr::from_ref(b.0) as usize, b.1))
    });
    // Deletes one by one; each run of puts into one database through one
    // cursor (a new mail's cells are mostly runs of puts).
    let mut at = 0;
    while let Some(&(search, k, v)) = writes.get(at) {
        let Some(_) = v else {
            search.db.delete(wtxn, k).map_err(|e| Error::lmdb("keyword delete", e))?;
            at += 1;
            continue;
        };
        let mut puts = SortedPuts::new(wtxn, &search.db, "keyword put")?;
        while let Some(&(s, k, Some(v))) = writes.get(at) {
            if !std::ptr::eq(s, search) {
                break;
            }
            puts.put(k, v)?;
            at += 1;
        }
    }
    Ok(())
}
