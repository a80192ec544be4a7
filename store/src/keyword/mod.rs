//! Keyword rows: the inbox-search layout, kept beside a table's rows.
//!
//! For a table whose schema has a [`SearchSchema`], every write also
//! maintains its keyword rows, in the same transaction: one row per
//! partition (the mailbox), one column per (search field, term), one version
//! per row of the table (the message), the term's positions in that field as
//! the value. Versions sort newest first by the row's date, then by row key,
//! so "the newest messages of this mailbox holding these words" is a merge of
//! version lists read straight from the store.
//!
//! Terms come from an [`Analyzer`] given to the store when it is opened
//! ([`crate::StoreBuilder::analyzer`]); the indexer's analyzer is the one
//! used for ingest, index building and query parsing, so all of them agree.
//!
//! The database `t/<table>/kb` holds the cells in blocks, one LMDB entry
//! per run of a column's versions, each version a date and a row number
//! (`t/<table>/kr` numbers the rows that have cells): the cell's layout is
//! owned by [`codec`], the block's by [`block`], the numbers' by [`rows`].
//! Files: `handle` (open keyword rows, a row's cells from its values),
//! `codec` (cell bytes), `block` (block bytes), `rows` (row numbers),
//! `cursor` (sorted versions of a term, with seeking), `lookup` (lookups
//! and cell reads), `write` (merging a batch's changes into blocks),
//! `upgrade` and `block_v4` (earlier formats' keyword rows rewritten).

mod block;
mod block_v4;
mod codec;
mod cursor;
mod handle;
mod lookup;
mod rows;
mod runs;
mod upgrade;
mod write;

pub use codec::{KeywordCell, KeywordCellRef, Positions, position_gaps};
pub(crate) use handle::{CellParts, KeywordCells, SearchHandle, place_of};
pub use handle::{
    for_each_kept_keyword_cell_of, for_each_keyword_cell_of, key_partition_of, keyword_cells_of,
};
pub use lookup::{KeywordHit, KeywordPage, KeywordQuery, required_terms};
pub(crate) use lookup::{decode_cell, for_each_cell, for_each_cell_between, lookup, partition_splits};
pub(crate) use runs::PENDING_RUNS;
pub(crate) use upgrade::{
    blocks_to_format_9, blocks_to_format_10, convert_cells, number_rows, write_format_4,
};
pub(crate) use write::{merge_runs, read_counter, update};

/// How many blocks the pending runs hold.
pub(crate) fn pending_block_count(txn: &heed::RoTxn<'_>, search: &SearchHandle) -> crate::error::Result<u64> {
    runs::block_count(txn, search)
}

/// How many rows have keyword cells (and so a row number).
pub(crate) fn numbered_rows(txn: &heed::RoTxn<'_>, search: &SearchHandle) -> crate::error::Result<u64> {
    rows::count(txn, &search.rows)
}

/// What does not hold in the table's row numbers (see `rows::check`):
/// (the key concerned, or empty; what is wrong).
pub(crate) fn check_numbers(
    txn: &heed::RoTxn<'_>,
    search: &SearchHandle,
) -> crate::error::Result<Vec<(Vec<u8>, String)>> {
    let mut referenced = std::collections::HashSet::new();
    let range = (std::ops::Bound::Included(block::FIRST_BLOCK_KEY), std::ops::Bound::Unbounded);
    let (mut partition, mut term) = (Vec::new(), Vec::new());
    for item in runs::MergedBlocks::new(txn, search, range.0, range.1)? {
        let (place, k, v) = item?;
        let column = codec::decode_column(place.name, &search.schema.fields, k, &mut partition, &mut term)?;
        let mut reader = block::BlockReader::new(place.name, k, column.prefix_len, v)?;
        while let Some((version, _)) = reader.next()? {
            referenced.insert(version.row);
        }
    }
    rows::check(txn, &search.rows, &referenced)
}
