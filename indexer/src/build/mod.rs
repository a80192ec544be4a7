//! Reindexing: full builds of a new generation from the keyword rows, and
//! incremental updates of the serving generation from the change feed.
//!
//! Full: the keyword rows are read in ranges of whole partitions cut where
//! the table's region splits cut its rows (for the mail table, whose
//! partition leads the row key, one range per region), by up to `threads`
//! readers at once, each in its own snapshot. Keyword cells come in key
//! order (partition, field, term, date, row), so each partition's cells are
//! grouped by row in memory and its documents handed to tantivy when the
//! partition ends; tantivy's indexing threads build segments meanwhile. A
//! partition larger than a reader's share of the grouping budget is re-read
//! in slices by a hash of the row key. The commit records the oldest
//! reader snapshot's feed sequence (the next incremental run re-applies
//! what later snapshots already held, which changes nothing); the
//! generation is checked (one document per row with cells) and only then
//! does the pointer switch.
//!
//! Incremental: the feed since the recorded sequence names the rows that
//! changed; each is deleted by key and, if it still has keyword cells,
//! added again, with its cells computed from its stored values (for a few
//! rows that is far cheaper than finding them among a partition's cells).
//! The new sequence is recorded in the same tantivy commit, so a crash
//! loses nothing and applying the same rows twice changes nothing.

use std::time::Instant;

use rowsearch_store::RowSource;

use crate::place::Place;

mod direct;
mod full;
mod incremental;
mod options;
mod writer;

pub(crate) use incremental::Changed;
pub use options::{
    BuildRead, DEFAULT_MEMORY_BUDGET_BYTES, RegionDone, ReindexMode, ReindexOptions, ReindexProgress,
    ReindexReport,
};

use crate::changes::trim_feed;
use crate::doc::DocSchema;
use crate::generation::{IndexDir, indexed_next_seq, indexed_table_id};
use crate::reader::Generation;
use crate::{Error, Result};

/// Reindexes `table` of `place` (the embedded store: `&store`; tables
/// elsewhere: [`Place::new`]) into the index generations under its data
/// directory (see the module docs), then trims the source's change feed up
/// to what every index there has absorbed (a source whose feed is not its
/// own keeps it).
///
/// # Errors
/// `Busy` when another reindex of the table runs past `options.lock_wait`; `NoIndex` for an
/// incremental reindex without a generation; `Schema`; `Store`;
/// `Tantivy`; `Check`; `Io`.
pub fn reindex<'a>(
    place: impl Into<Place<'a>>,
    table: &str,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let place = place.into();
    reindex_in(place.source(), place.data, table, options, progress)
}

/// [`reindex`] from a row source (the live indexes' and the refresher's:
/// they hold the read half only).
pub(crate) fn reindex_in(
    source: &dyn RowSource,
    dir: &std::path::Path,
    table: &str,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let mut report = build_from(source, dir, table, options, progress)?;
    // The generation serves already: a feed that cannot be trimmed now
    // (the place went away a moment) is trimmed by the next run, and does
    // not make this one fail.
    report.feed_trimmed = trim_feed(source, dir).unwrap_or_else(|e| {
        tracing::warn!(table, error = %e, "the change feed was not trimmed");
        0
    });
    Ok(report)
}

/// The build of [`reindex`], without the feed's trim.
///
/// # Errors
/// As [`reindex`].
fn build_from(
    store: &dyn RowSource,
    dir: &std::path::Path,
    table: &str,
    options: &ReindexOptions,
    progress: &mut dyn FnMut(&ReindexProgress),
) -> Result<ReindexReport> {
    let started = Instant::now();
    let schema = store.schema(table)?;
    let search = schema.search.as_ref().ok_or_else(|| Error::Schema {
        table: table.to_owned(),
        reason: "the table has no search section".into(),
    })?;
    let index_schema = DocSchema::for_search(table, search)?;
    let dir = IndexDir::new(dir, table);
    // Another reindex of the table (often a refresher's short incremental
    // one) is waited for, up to `lock_wait`.
    let give_up = Instant::now() + options.lock_wait;
    let lock = loop {
        match dir.lock() {
            Err(Error::Busy { .. }) if Instant::now() < give_up => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => break other?,
        }
    };
    // A damaged pointer, or one naming a generation that does not open:
    // a full reindex builds past it (what `/health` advises), anything
    // else says it.
    let full = options.mode == ReindexMode::Full;
    let current = match dir.current() {
        Err(Error::Corrupted { .. }) if full => None,
        other => other?,
    };
    let serving = match current {
        Some(n) => match dir.open_index(n) {
            Ok(index) => Some((n, index)),
            Err(_) if full => None,
            Err(e) => return Err(e),
        },
        None => None,
    };
    let current = serving.as_ref().map(|(n, _)| *n);
    let same_table = match &serving {
        Some((_, index)) => indexed_table_id(table, index)? == store.table_id(table)?,
        None => false,
    };
    let matches = same_table
        && match &serving {
            Some((_, index)) => DocSchema::serves(table, search, &index.schema())?,
            None => false,
        };
    let mut report = match (options.mode, serving) {
        (ReindexMode::Incremental, None) => return Err(Error::NoIndex { table: table.to_owned() }),
        (ReindexMode::Incremental, Some(_)) if !same_table => {
            return Err(Error::Schema {
                table: table.to_owned(),
                reason: "the index was built for an earlier table of this name (dropped since): \
                         run a full reindex"
                    .into(),
            });
        }
        (ReindexMode::Incremental, Some(_)) if !matches => {
            return Err(Error::Schema {
                table: table.to_owned(),
                reason: "the index was built for another search section: run a full reindex".into(),
            });
        }
        (ReindexMode::Incremental | ReindexMode::Auto, Some((n, index))) if matches => {
            // Leftovers of a killed or failed full build go here too.
            let removed = dir.remove_others(&lock, Some(n))?;
            let mut report =
                incremental::incremental(store, table, &index_schema, n, index, None, options, progress)?;
            report.removed_generations = removed;
            report
        }
        _ => full::full(store, table, &index_schema, &dir, &lock, current, options, started, progress)?,
    };
    report.index_bytes = dir.generation_bytes(report.generation)?;
    report.seconds = started.elapsed().as_secs_f64();
    if report.mode != ReindexMode::Full {
        report.serving_seconds = report.seconds;
    }
    Ok(report)
}

/// A refresh round's incremental reindex of `table`: the serving
/// `generation` as its live index holds it open, and the rows the round's
/// one read of the feed named past what it absorbed. No index is opened,
/// the feed is not read again and not trimmed (the round trims it once).
/// When the generation no longer serves as it was (another reindex
/// committed or switched meanwhile, or the search section changed), this
/// is an ordinary [`reindex`].
///
/// # Errors
/// As [`reindex`].
pub(crate) fn reindex_changed(
    store: &dyn RowSource,
    data: &std::path::Path,
    table: &str,
    options: &ReindexOptions,
    generation: &Generation,
    changed: Changed,
) -> Result<ReindexReport> {
    let started = Instant::now();
    let fallback = || {
        reindex_in(
            store,
            data,
            table,
            &ReindexOptions { mode: ReindexMode::Auto, ..options.clone() },
            &mut |_| {},
        )
    };
    let schema = store.schema(table)?;
    let Some(search) = schema.search.as_ref() else { return fallback() };
    let index_schema = DocSchema::for_search(table, search)?;
    if !DocSchema::serves(table, search, &generation.index.schema())?
        || generation.table_id != store.table_id(table)?
    {
        return fallback();
    }
    let dir = IndexDir::new(data, table);
    // Another reindex running (Busy): it brings the index current itself.
    let lock = dir.lock()?;
    let n = generation.number;
    if dir.current()? != Some(n) || indexed_next_seq(table, &generation.index)? != generation.absorbed {
        drop(lock);
        return fallback();
    }
    let removed = dir.remove_others(&lock, Some(n))?;
    let noop = &mut |_: &ReindexProgress| {};
    let mut report = incremental::incremental(
        store,
        table,
        &index_schema,
        n,
        generation.index.clone(),
        Some(changed),
        options,
        noop,
    )?;
    report.removed_generations = removed;
    report.index_bytes = dir.generation_bytes(report.generation)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
