//! One search as asked ([`SearchRequest`]): what the HTTP route, the
//! library and a cluster's shards all hand the searcher.

use std::time::Instant;

use rowsearch_indexer::{Consistency, SortBy};
use rowsearch_store::Column;

/// One search.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The query, in rowsearch's query language (API.md; `rowsearch_indexer::query`).
    pub query: String,
    /// Only this partition (mailbox).
    pub partition: Option<Vec<u8>>,
    /// The partitions the caller may see (an access key's confinement);
    /// `None` for all. A `partition` outside them is `Forbidden`; without
    /// one, the search covers exactly these.
    pub scope: Option<Vec<Vec<u8>>>,
    /// Order of the hits.
    pub sort: SortBy,
    /// Hits per page (default 10, at most 1000).
    pub limit: Option<usize>,
    /// Hits to skip (ignored with a cursor).
    pub offset: usize,
    /// Resume after the page that returned this cursor.
    pub cursor: Option<String>,
    /// Columns of the returned rows; empty for all.
    pub columns: Vec<Column>,
    /// Add snippets of the search fields with the matching words marked.
    pub highlight: bool,
    /// Highlights' text as stored; `false` (the default) escapes `<`, `>`
    /// and `&` in it, so only the `<em>` markers are markup (text from
    /// incoming mail is not to be trusted as HTML).
    pub highlight_raw: bool,
    /// The query's expansion budget (0: the default;
    /// [`rowsearch_indexer::query::ParseOptions::max_expansions`]).
    pub max_expansions: usize,
    /// The query's clause budget (0: the default).
    pub max_clauses: usize,
    /// Most hits a page may hold (0: [`MAX_LIMIT`](crate::searcher::MAX_LIMIT)).
    pub max_limit: usize,
    /// Most bytes of a field's text a highlight looks through (0:
    /// [`MAX_HIGHLIGHT_TEXT_BYTES`](crate::searcher::MAX_HIGHLIGHT_TEXT_BYTES)).
    pub max_highlight_bytes: usize,
    /// The search stops with `Cancelled` once this fires (between
    /// segments, expanding words and rows); the default never fires.
    pub cancel: rowsearch_store::Cancel,
    /// Only these names in each [`SearchHit::document`](crate::SearchHit::document) (search fields,
    /// the partition, `date`, `family:qualifier` columns), and only their
    /// columns read (with `columns` and what `highlight` needs); `None` for
    /// the whole document. `columns` then shape only [`SearchHit::row`](crate::SearchHit::row).
    pub fields: Option<Vec<String>>,
    /// Fields cropped in each document to a number of words around the
    /// first matched word (`crop=body:30`, Meilisearch's
    /// `attributesToCrop`): each named search field is in the document
    /// (besides `fields` or the table's display), cropped.
    pub crop: Vec<(String, usize)>,
    /// Leave [`SearchHit::document`](crate::SearchHit::document) empty and read only `columns` (the
    /// HBase-shaped answer, `format=cells`): the search fields a document
    /// holds (mail bodies) are then not read unless `highlight` needs them.
    pub rows_only: bool,
    /// Tolerate typos in plain words (`typos=auto`; see
    /// [`rowsearch_indexer::query::ParseOptions`]).
    pub typos: bool,
    /// Which writes the answer reflects (default: every write committed
    /// before the search began).
    pub consistency: Consistency,
    /// Answer only once the index reflects this write (a feed `seq`).
    pub min_seq: Option<u64>,
    /// Facets to count over every match: the partition's name, search
    /// fields declared `facet`, `month`, `year` (see
    /// [`rowsearch_indexer::facets`]).
    pub facets: Vec<String>,
    /// Values per facet, most matches first (default
    /// [`DEFAULT_FACET_LIMIT`](crate::searcher::DEFAULT_FACET_LIMIT), at most [`MAX_FACET_LIMIT`](crate::searcher::MAX_FACET_LIMIT)).
    pub facet_limit: Option<usize>,
    /// How long the search may wait for the index to reflect the writes
    /// it must (default [`DEFAULT_FRESHNESS_WAIT`](crate::searcher::DEFAULT_FRESHNESS_WAIT) from its start).
    pub deadline: Option<Instant>,
    /// `Some("thread")`: one hit per thread (its best matching message,
    /// with [`SearchHit::thread`](crate::SearchHit::thread)); `total` counts threads.
    pub collapse: Option<String>,
}
