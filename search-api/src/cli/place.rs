//! Where a command's tables live: the embedded store of `--data`, or an
//! Apache HBase cluster with `--hbase HOST:PORT` (its Thrift2 gateway;
//! the index generations then in `--data`). `--hbase` is read here and
//! nowhere else: every command takes its tables from [`tables`] or
//! [`home`], and what only the embedded store keeps from [`store_only`],
//! which says so over HBase.

use std::sync::Arc;

use anyhow::Result;
use rowsearch::hbase::HbaseSource;
use rowsearch::indexer::Home;
use rowsearch::store::{Store, TableStore};

use super::args::{Args, UsageError};

/// The tables behind HBase's Thrift2 gateway at `addr`, with the
/// indexer's analyzer.
pub(super) fn hbase(addr: &str) -> HbaseSource {
    HbaseSource::new(addr, Arc::new(rowsearch::indexer::TextAnalyzer))
}

/// Where the tables live: HBase's with `--hbase`, else the store of
/// `--data` (created when missing if `create`: a command that writes).
pub(super) fn tables(args: &Args, create: bool) -> Result<Arc<dyn TableStore>> {
    Ok(match &args.hbase {
        Some(addr) => Arc::new(hbase(addr)),
        None if create => Arc::new(super::common::create(args)?),
        None => Arc::new(super::common::open(args)?),
    })
}

/// The tables when they live elsewhere than the store of `--data` (with
/// `--hbase`, HBase's); `None`: the store's own.
pub(super) fn elsewhere(args: &Args) -> Option<Arc<dyn TableStore>> {
    args.hbase.as_deref().map(|addr| Arc::new(hbase(addr)) as Arc<dyn TableStore>)
}

/// [`tables`] with the data directory their indexes go to.
pub(super) fn home(args: &Args, create: bool) -> Result<Home> {
    let tables = tables(args, create)?;
    if tables.store().is_none() {
        // The local directory keeps rowsearch's own beside the index
        // generations (access keys): a store, made when missing.
        drop(super::common::create(args)?);
    }
    Ok(Home::new(tables, args.data.clone()))
}

/// A searcher over [`home`]'s tables.
pub(super) fn searcher(args: &Args) -> Result<rowsearch::Searcher> {
    Ok(rowsearch::Searcher::new(home(args, false)?))
}

/// The embedded store of `--data` for `what`, which only it does: a usage
/// error with `--hbase`, saying where HBase does it.
pub(super) fn store_only(args: &Args, what: &str, create: bool) -> Result<Store> {
    refuse_elsewhere(args, what)?;
    if create { super::common::create(args) } else { super::common::open(args) }
}

/// A usage error for `what`, which only the embedded store does, when the
/// tables live elsewhere (see [`store_only`]).
pub(super) fn refuse_elsewhere(args: &Args, what: &str) -> Result<()> {
    if args.hbase.is_some() {
        return Err(UsageError(format!(
            "{what} is the embedded store's: with --hbase, the commands are tables, create-table, drop-table, \
             put, get, delete, display, ingest, keywords, reindex, verify, search, changes, export, import, index, \
             upgrade and serve; HBase's own shell and clients do the rest there"
        ))
        .into());
    }
    Ok(())
}
