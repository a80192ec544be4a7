//! [`Rowsearch`]: the store, the indexer and the searcher behind one handle.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rowsearch_indexer::{IngestOptions, IngestReport, ReindexMode, ReindexOptions, ReindexReport};
use rowsearch_store::Store;

use crate::{Result, SearchRequest, SearchResults, Searcher};

/// An open rowsearch data directory: its store (opened with the analyzer,
/// so searchable tables keep their keyword rows), reindexing, and search.
/// Cheap to share: clone the `Arc` it hands out, or wrap it in one.
///
/// ```
/// use rowsearch::Rowsearch;
/// use rowsearch::store::{FamilySchema, PutCell, SearchField, SearchSchema, TableSchema};
///
/// let dir = tempfile::tempdir()?;
/// let rs = Rowsearch::open(dir.path())?;
/// let schema = TableSchema::new([FamilySchema::new("n")])
///     .search(SearchSchema::new([SearchField::text("text", "n:text")]));
/// rs.store().create_table("notes", &schema)?;
/// rs.store().put("notes", b"n1", vec![PutCell::new("n", "text", "gas prices are up")])?;
/// rs.store().put("notes", b"n2", vec![PutCell::new("n", "text", "power prices")])?;
/// rs.reindex("notes")?;
/// let found = rs.search("notes", "prices -gas")?;
/// assert_eq!(found.total, 1);
/// assert_eq!(found.hits[0].row.key, b"n2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Rowsearch {
    store: Arc<Store>,
    searcher: Searcher,
}

impl Rowsearch {
    /// Opens (or creates) the data directory `dir`.
    ///
    /// # Errors
    /// As [`rowsearch_store::StoreBuilder::open`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Rowsearch> {
        let store = Arc::new(rowsearch_indexer::open_store(dir)?);
        Ok(Rowsearch { searcher: Searcher::new(Arc::clone(&store)), store })
    }

    /// The store: tables, rows, scans, secondary indexes, keyword lookups.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The searcher, for requests with every option ([`SearchRequest`]).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// Ingests mail (Maildir trees, mbox, .eml, JSON lines) into the `mail`
    /// table with the default options.
    ///
    /// # Errors
    /// As [`rowsearch_indexer::ingest`].
    pub fn ingest(&self, paths: &[PathBuf]) -> Result<IngestReport> {
        Ok(rowsearch_indexer::ingest(&**self.store(), paths, &IngestOptions::default(), &mut |_| {})?)
    }

    /// Brings `table`'s search index up to date: a full build the first
    /// time, the changes since the last run afterwards.
    ///
    /// # Errors
    /// As [`rowsearch_indexer::reindex`].
    pub fn reindex(&self, table: &str) -> Result<ReindexReport> {
        let options = ReindexOptions { mode: ReindexMode::Auto, ..ReindexOptions::default() };
        Ok(rowsearch_indexer::reindex(self.store(), table, &options, &mut |_| {})?)
    }

    /// The 10 best hits of `query` in `table`, rows included.
    ///
    /// # Errors
    /// As [`Searcher::search`].
    pub fn search(&self, table: &str, query: &str) -> Result<SearchResults> {
        self.searcher.search(table, &SearchRequest { query: query.to_owned(), ..SearchRequest::default() })
    }
}
