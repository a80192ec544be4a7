//! What opening a store written by an older format does to each table, in
//! the transaction that writes the new format marker (so a store is
//! upgraded whole or not at all). The marker itself and the list of
//! formats this build reads are `db/meta.rs`'s.

use std::sync::Arc;

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
    // Format 3 kept one keyword cell per entry, format 4 blocks with row
    // keys: the cells become format 4 blocks, the blocks format 5 blocks.
    if let Some(search) = &table.search {
        let open = |wtxn: &mut RwTxn, name: String| -> Result<Option<crate::db::BytesDb>> {
            env.raw().open_database(wtxn, Some(&name)).map_err(|e| Error::lmdb("open keyword cells", e))
        };
        let cells = open(wtxn, crate::db::keyword_cells_db_v3(&table.name))?;
        let mut blocks = open(wtxn, crate::db::keyword_blocks_db_v4(&table.name))?;
        if let Some(cells) = cells {
            let v4 = env.create_db(wtxn, &crate::db::keyword_blocks_db_v4(&table.name), 0, "upgrade")?;
            crate::keyword::convert_cells(wtxn, search, &cells, &v4, &report)?;
            blocks = Some(v4);
        }
        if let Some(blocks) = blocks {
            crate::keyword::number_rows(wtxn, search, &blocks, &report)?;
        }
    }
    Ok(())
}

/// Where an upgrade of the on-disk format is ([`crate::StoreBuilder::on_upgrade`]).
#[derive(Debug, Clone, Copy)]
pub struct UpgradeProgress<'a> {
    /// The format the store had.
    pub from: &'a str,
    /// The format it gets (this build's).
    pub to: &'a str,
    /// The table being converted.
    pub table: &'a str,
    /// Its keyword cells rewritten so far.
    pub cells_done: u64,
    /// Its keyword cells in all.
    pub cells_total: u64,
}

pub(crate) type UpgradeCallback = Arc<dyn Fn(&UpgradeProgress<'_>) + Send + Sync>;

#[derive(Clone)]
pub(crate) struct UpgradeObserver(pub Option<UpgradeCallback>);

impl std::fmt::Debug for UpgradeObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
