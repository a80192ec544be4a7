//! What opening a store written by an older format does to each table, in
//! the transaction that writes the new format marker (so a store is
//! upgraded whole or not at all). The marker itself and the list of
//! formats this build reads are `db/meta.rs`'s.

use heed::RwTxn;

use crate::db::env::Environment;
use crate::error::{Error, Result};
use crate::table::TableHandle;

/// Brings `table`'s stored layout from format `from` to this build's,
/// telling `report` (cells done, cells in all) how a keyword conversion
/// goes.
pub(crate) fn table(
    env: &Environment,
    wtxn: &mut RwTxn,
    table: &TableHandle,
    from: &str,
    report: impl Fn(u64, u64),
) -> Result<()> {
    // Versions 1 and 2 kept pending index entries without a run id;
    // version 3's runs are already in this build's layout.
    if matches!(from, "rowsearch-store/1" | "rowsearch-store/2") {
        for index in &table.indexes {
            index.absorb_unprefixed_pending(wtxn)?;
        }
    }
    // Format 3 and before kept one keyword cell per entry.
    if let Some(search) = &table.search {
        let old: Option<crate::db::BytesDb> = env
            .raw()
            .open_database(wtxn, Some(&crate::db::keyword_cells_db_v3(&table.name)))
            .map_err(|e| Error::lmdb("open keyword cells", e))?;
        if let Some(old) = old {
            crate::keyword::convert_cells(wtxn, search, &old, &report)?;
        }
        // Format 4 and before kept each version's row key in the blocks
        // (format 3's cells are format 4 blocks by now).
        crate::keyword::number_rows(wtxn, search, &report)?;
    }
    Ok(())
}
