//! What opening a store written by an older format does to each table, in
//! the transaction that writes the new format marker (so a store is
//! upgraded whole or not at all). The marker itself and the list of
//! formats this build reads are `db/meta.rs`'s.

use std::sync::Arc;

use heed::RwTxn;

use crate::db::env::Environment;
use crate::error::{Error, ErrorKind, Result};
use crate::keyword::{KeywordCells, SearchHandle};
use crate::schema::Analyzer;
use crate::table::TableHandle;

/// What an upgrade step counts in its progress reports.
pub(crate) const CELLS: &str = "keyword cells";
/// What the analysis of every row counts.
pub(crate) const ROWS: &str = "rows analysed";
/// What the rewrite of format 9 keyword blocks counts.
pub(crate) const BLOCKS: &str = "keyword blocks";
/// What the copy of rows into thread member entries counts.
pub(crate) const MEMBERS: &str = "thread members";

/// The number of format `format` (`rowsearch-store/N`); 0 for a name
/// that is not one.
fn number(format: &str) -> u32 {
    format.strip_prefix("rowsearch-store/").and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Brings `table`'s stored layout from format `from` to this build's,
/// telling `report` (what it counts, done, in all) how a keyword
/// conversion goes. `true` when the table's keyword terms changed (the
/// analysis of format 7 folds accents), so its search indexes, which hold
/// the old terms, must be built again.
pub(crate) fn table(
    env: &Environment,
    wtxn: &mut RwTxn,
    table: &TableHandle,
    from: &str,
    analyzer: Option<&dyn Analyzer>,
    report: impl Fn(&str, u64, u64),
) -> Result<bool> {
    // Versions 1 and 2 kept pending index entries without a run id;
    // version 3's runs are already in this build's layout.
    if matches!(from, "rowsearch-store/1" | "rowsearch-store/2") {
        for index in &table.indexes {
            index.absorb_unprefixed_pending(wtxn)?;
        }
    }
    // Formats up to 7 kept a thread member's row in its id entry alone.
    if let Some(threads) = &table.threads
        && number(from) <= 7
    {
        crate::threads::upgrade::rows_into_members(wtxn, threads, &|done, total| {
            report(MEMBERS, done, total)
        })?;
    }
    // Formats 5 to 9 kept a block's Δdates in milliseconds: the blocks
    // become format 10 blocks before anything below reads them.
    if let Some(search) = &table.search
        && (5..=9).contains(&number(from))
    {
        crate::keyword::blocks_to_format_10(wtxn, search, |done, total| report(BLOCKS, done, total))?;
    }
    // Format 7 is format 8 but for the thread entries.
    if number(from) >= 7 {
        return Ok(false);
    }
    // Format 3 kept one keyword cell per entry, format 4 blocks with row
    // keys: the cells become format 4 blocks, the blocks format 5 blocks.
    if let Some(search) = &table.search {
        let open = |wtxn: &mut RwTxn, name: String| -> Result<Option<crate::db::BytesDb>> {
            env.raw().open_database(wtxn, Some(&name)).map_err(|e| Error::lmdb("open keyword cells", e))
        };
        let cells = open(wtxn, crate::db::keyword_cells_db_v3(&table.name))?;
        let mut blocks = open(wtxn, crate::db::keyword_blocks_db_v4(&table.name))?;
        let cells_report = |done, total| report(CELLS, done, total);
        if let Some(cells) = cells {
            let v4 = env.create_db(wtxn, &crate::db::keyword_blocks_db_v4(&table.name), 0, "upgrade")?;
            crate::keyword::convert_cells(wtxn, search, &cells, &v4, cells_report)?;
            blocks = Some(v4);
        }
        if let Some(blocks) = blocks {
            crate::keyword::number_rows(wtxn, search, &blocks, cells_report)?;
        }
        // Formats up to 6 kept terms unfolded (`crème`), and a keyword
        // value of several lines as one term.
        let analyzer = analyzer.ok_or_else(|| ErrorKind::NoAnalyzer { table: table.name.clone() })?;
        return reanalyze(wtxn, table, search, analyzer, &|done, total| report(ROWS, done, total));
    }
    Ok(false)
}

/// Every keyword cell of `table` written again from its rows with
/// `analyzer` (the blocks, row numbers and pending runs emptied first, the
/// rows numbered again in key order); whether the cells differ from those
/// before, compared as an order-free sum of their hashes.
fn reanalyze(
    wtxn: &mut RwTxn,
    table: &TableHandle,
    search: &SearchHandle,
    analyzer: &dyn Analyzer,
    report: &dyn Fn(u64, u64),
) -> Result<bool> {
    let before = cells_digest(wtxn, search)?;
    let lmdb = |e| Error::lmdb("upgrade: empty the keyword rows", e);
    search.db.clear(wtxn).map_err(lmdb)?;
    search.rows.clear(wtxn).map_err(lmdb)?;
    search.pending.clear(wtxn).map_err(lmdb)?;
    let rows = crate::write::extend::search_rows(wtxn, table, search)?;
    let total = rows.len() as u64;
    report(0, total);
    let none = KeywordCells::default();
    let mut done = 0;
    for chunk in rows.chunks(crate::write::extend::CHUNK_ROWS) {
        let mut cells = Vec::with_capacity(chunk.len());
        for stored in chunk {
            let row = if table.is_salted() { crate::key::salt::unsalted(stored) } else { &stored[..] };
            let values = search.values(wtxn, stored)?;
            let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
            cells.push(search.entries(analyzer, row, &values)?);
        }
        crate::keyword::update(
            wtxn,
            cells.iter().map(|after| (search, (&none).into(), after.into(), false)),
            0,
        )?;
        done += chunk.len() as u64;
        report(done, total);
    }
    Ok(cells_digest(wtxn, search)? != before)
}

/// The keyword cells of a table as one hash, whatever their order or
/// blocks: the wrapping sum of each cell's.
fn cells_digest(txn: &heed::RoTxn<'_>, search: &SearchHandle) -> Result<u64> {
    let mut sum = 0u64;
    let mut bytes = Vec::new();
    crate::keyword::for_each_cell(txn, search, None, &mut |cell| {
        bytes.clear();
        for part in [cell.partition, cell.field.as_bytes(), cell.term.as_bytes(), cell.key] {
            bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
            bytes.extend_from_slice(part);
        }
        bytes.extend_from_slice(&cell.date_ms.to_be_bytes());
        bytes.extend_from_slice(cell.encoded_positions());
        sum = sum.wrapping_add(xxhash_rust::xxh3::xxh3_64(&bytes));
        Ok(())
    })?;
    Ok(sum)
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
    /// What this step counts: `"keyword cells"` (a conversion of the
    /// keyword rows' layout) or `"rows analysed"` (the keyword cells of
    /// every row written again with this build's analyzer).
    pub unit: &'a str,
    /// Done so far (of `unit`).
    pub cells_done: u64,
    /// In all (of `unit`).
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
