//! The `Searcher`: a query on a table's index, resolved back against the
//! store.
//!
//! query → tantivy (the schema's field names, words ANDed, phrases, date
//! ranges) → optional partition scope → top hits by BM25 or by date → one
//! multi-get of their keys in one short store read transaction → rows, with
//! keys the store no longer has dropped and counted → column projection →
//! highlights from the stored values, analysed like the index was.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub use rowsearch_indexer::{Consistency, DEFAULT_OVERLAY_MAX_ROWS, Freshness};
use rowsearch_indexer::{Home, LiveIndex, LiveIndexes, Refresher, Snapshot, SortBy, Want};
use rowsearch_store::{Column, ErrorKind, ReadOptions, Row, RowKeySchema, RowSource, TableStore};

use crate::document::{Document, DocumentShape};
pub use crate::request::SearchRequest;
use crate::{Error, Result};

/// Most hits one search returns.
pub const MAX_LIMIT: usize = 1000;
/// Hits returned when the request names no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Deepest a search may page: `offset + limit` at most this (Elasticsearch's
/// `max_result_window`). The index collects `offset + limit` hits to answer,
/// so the bound keeps a request's memory bounded.
pub const MAX_RESULT_WINDOW: usize = 10_000;
/// Bytes of context in a highlight snippet.
const SNIPPET_BYTES: usize = 160;
/// Most bytes of a field's text a highlight looks through (Elasticsearch's
/// `max_analyzed_offset`): a word only past it is not marked.
pub const MAX_HIGHLIGHT_TEXT_BYTES: usize = 1 << 20;

/// A search's `user` that holds no document, and the mailbox names nearest
/// it (API.md: `unknown_user`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnknownUser {
    /// The partition asked for.
    pub user: String,
    /// The nearest partitions the caller may see, closest first (at most 3).
    pub nearest: Vec<String>,
}

/// How long a search waits by default for its index to reflect the writes
/// it must.
pub const DEFAULT_FRESHNESS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// One hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The row (the columns asked for; every column when none was).
    pub row: Row,
    /// The row as a document: search fields by name, partition, date, and
    /// the other columns asked for (see [`crate::document`]).
    pub document: Document,
    /// BM25 score (relevance order).
    pub score: Option<f64>,
    /// The row's date, ms (date order).
    pub date_ms: Option<u64>,
    /// Per search field name, a snippet (with `highlight`).
    pub highlights: BTreeMap<String, String>,
    /// The hit's thread, when the search collapsed by thread.
    pub thread: Option<crate::threads::ThreadSummary>,
}

/// A page of hits.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// Exact number of documents matching in the index.
    pub total: u64,
    /// Wall time of the search, ms.
    pub took_ms: f64,
    /// The hits.
    pub hits: Vec<SearchHit>,
    /// Present when more hits follow.
    pub next_cursor: Option<String>,
    /// Hits dropped because the store no longer has their row.
    pub dropped: u64,
    /// The index generation that answered.
    pub generation: u64,
    /// The answer reflects every write (feed seq) up to this one.
    pub seq: u64,
    /// The table's typed row key, to show the hits' keys by field.
    pub row_key: Option<RowKeySchema>,
    /// Rows the index had not absorbed yet that this answer matched
    /// directly (the overlay: rows written since the index's last
    /// commit); 0 when the index was current.
    pub overlay_rows: u64,
    /// Per facet asked for (in the order asked), its values with the most
    /// matches and their counts, most first.
    pub facets: Vec<(String, Vec<(String, u64)>)>,
    /// For a search without hits: the query with its words corrected,
    /// when that finds something.
    pub did_you_mean: Option<String>,
    /// The search's `user` holds no document: the nearest mailbox names.
    pub unknown_user: Option<UnknownUser>,
    /// Where `took_ms` went (HTTP sends it as `Server-Timing`).
    pub steps: SearchSteps,
}

/// The steps of one search, ms each (what the search's fixed cost is made
/// of; HTTP answers carry them in a `Server-Timing` header).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchSteps {
    /// The table's schema, the snapshot chosen (with the freshness check:
    /// waiting for the index to absorb writes, or the overlay built).
    pub snapshot_ms: f64,
    /// Parsing the query and running it (with facets and "did you mean").
    pub query_ms: f64,
    /// Reading the hits' rows and shaping their documents.
    pub rows_ms: f64,
    /// Over HBase: the change feed read on a thread of its own while the
    /// page was answered from the snapshot it confirmed (`snapshot_ms`
    /// then is the snapshot taken without it); `None` when the feed was
    /// read first, as part of `snapshot_ms`.
    pub feed_ms: Option<f64>,
}

/// What a search's page needs besides its snapshot.
#[derive(Clone, Copy)]
struct Page<'a> {
    schema: &'a rowsearch_store::TableSchema,
    search: &'a rowsearch_store::SearchSchema,
    shape: &'a DocumentShape<'a>,
    limit: usize,
    started: Instant,
}

/// Values per facet when the request does not say.
pub const DEFAULT_FACET_LIMIT: usize = 10;
/// Most values per facet a request may ask for.
pub const MAX_FACET_LIMIT: usize = 1000;

/// Searches tables' indexes and resolves the hits in the store. Share it
/// between threads; each table's live index ([`LiveIndexes`]) decides
/// which snapshot a search reads.
#[derive(Debug)]
pub struct Searcher {
    /// Where the tables live: the embedded store, or an HBase cluster.
    tables: Arc<dyn TableStore>,
    live: Arc<LiveIndexes>,
    dropped: AtomicU64,
    refresher: Option<Arc<Refresher>>,
}

impl Searcher {
    /// A searcher over the tables of `home` (the embedded store, opened
    /// with the indexer's analyzer: an `Arc<Store>` converts; tables
    /// elsewhere: [`Home::new`] with the local data directory their
    /// indexes are under), whose snapshot searches bring an index current
    /// on their own thread.
    pub fn new(home: impl Into<Home>) -> Searcher {
        let home = home.into();
        let tables = Arc::clone(&home.tables);
        let live = Arc::new(LiveIndexes::new(home, DEFAULT_OVERLAY_MAX_ROWS));
        Searcher { tables, live, dropped: AtomicU64::new(0), refresher: None }
    }

    /// Sets the most changed rows a snapshot search matches directly
    /// (default [`DEFAULT_OVERLAY_MAX_ROWS`]; 0: every search after a write
    /// to its table waits for the index to absorb it). Before any search.
    pub fn with_overlay_max_rows(mut self, rows: usize) -> Searcher {
        self.live = Arc::new(LiveIndexes::new(self.live.home(), rows));
        self
    }

    /// A searcher on the live indexes `refresher` keeps current: its
    /// snapshot searches wait on it instead of reindexing themselves.
    pub fn with_refresher(refresher: Arc<Refresher>) -> Searcher {
        let live = Arc::clone(refresher.live());
        let tables = Arc::clone(live.tables());
        Searcher { tables, live, dropped: AtomicU64::new(0), refresher: Some(refresher) }
    }

    /// Where the tables' rows are read from.
    pub fn rows(&self) -> &dyn RowSource {
        &*self.tables
    }

    /// Where the tables live.
    pub fn tables(&self) -> &Arc<dyn TableStore> {
        &self.tables
    }

    /// The refresher, if it has one.
    pub fn refresher(&self) -> Option<&Arc<Refresher>> {
        self.refresher.as_ref()
    }

    /// The live indexes.
    pub fn live(&self) -> &Arc<LiveIndexes> {
        &self.live
    }

    /// For a searchable table with an index: how far the index is behind
    /// the store.
    pub fn freshness(&self, table: &str) -> Option<Freshness> {
        self.live.freshness(table)
    }

    /// Hits dropped so far because their row was gone.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Forgets a table's live index (after the table is dropped).
    pub fn forget(&self, table: &str) {
        self.live.forget(table);
    }

    /// `table`'s schema and store id, read in one snapshot, when it has a
    /// search section.
    pub(crate) fn searchable(&self, table: &str) -> Result<(Arc<rowsearch_store::TableSchema>, u64)> {
        let (schema, table_id, enabled) = self.tables.table_state(table)?;
        if schema.search.is_none() {
            return Err(not_searchable(table));
        }
        // A disabled table's rows are not read, by a search either (even
        // one whose hits would not be resolved).
        if !enabled {
            let disabled = rowsearch_store::ErrorKind::TableDisabled { table: table.to_owned() };
            return Err(rowsearch_store::Error::from(disabled).into());
        }
        Ok((schema, table_id))
    }

    /// The snapshot a search of `table` (whose store id is `table_id`)
    /// as `request` asks answers from: a fresh one, or the one its
    /// cursor's walk is on (with the offset and the commit the cursor
    /// names).
    pub(crate) fn snapshot(
        &self,
        table: &str,
        table_id: u64,
        request: &SearchRequest,
        started: Instant,
    ) -> Result<(Arc<LiveIndex>, Snapshot, usize, Option<u64>)> {
        let live = self.live.table(table, table_id)?;
        match &request.cursor {
            None => {
                let snapshot = self.live.snapshot(&live, &want(request, started))?;
                Ok((live, snapshot, request.offset, None))
            }
            Some(cursor) => {
                let (number, commit, offset, made_for) = crate::cursor::parse_cursor(cursor)?;
                check_made_for(made_for, request)?;
                let snapshot = self.live.resume(&live, number, commit)?;
                Ok((live, snapshot, offset, Some(commit)))
            }
        }
    }

    /// Runs one search (see the module docs).
    ///
    /// # Errors
    /// `Store` (unknown table), `Indexer` (`NoIndex` before the first
    /// reindex, `Query` for a query that does not parse, `Schema` for a
    /// table without a search section), `BadRequest` (a limit over 1000, a
    /// malformed cursor), `StaleCursor`.
    pub fn search(&self, table: &str, request: &SearchRequest) -> Result<SearchResults> {
        self.search_with(table, request, None)
    }

    /// As [`Self::search`], its keys found by `keys` when given (every
    /// shard of a cluster, `crate::cluster`) rather than by the snapshot's
    /// own index, which then parses the query for highlights and answers
    /// "did you mean". A cursor then resumes on fresh snapshots: its page
    /// is answered only if no shard changed since (else `StaleCursor`).
    ///
    /// # Errors
    /// As [`Self::search`]; what `keys` returns.
    pub fn search_with(
        &self,
        table: &str,
        request: &SearchRequest,
        keys: Option<&dyn FindKeys>,
    ) -> Result<SearchResults> {
        let started = Instant::now();
        let (schema, table_id) = self.searchable(table)?;
        let search = schema.search.as_ref().ok_or_else(|| not_searchable(table))?;
        let limit = request.limit.unwrap_or(DEFAULT_LIMIT);
        // limit 0: the total alone (and, with issue 23's facets, facets).
        let max_limit = if request.max_limit == 0 { MAX_LIMIT } else { request.max_limit };
        if limit > max_limit {
            return Err(Error::BadRequest(format!("limit must be 0..={max_limit}, got {limit}")));
        }
        // The names asked for; `*` every one; none: the table's display
        // (documents only: rows alone keep the columns asked for).
        let fields = match &request.fields {
            None if request.rows_only => None,
            asked => crate::document::shown_names(asked.as_deref(), search),
        };
        let shape = DocumentShape {
            search,
            row_key: schema.row_key.as_ref(),
            columns: &request.columns,
            fields: fields.as_deref(),
            crop: &request.crop,
            columns_too: request.fields.as_ref().is_none_or(|names| names.iter().any(|n| n == "*")),
        };
        shape.check_fields().map_err(Error::BadRequest)?;
        let page = Page { schema: &schema, search, shape: &shape, limit, started };
        // Over HBase, where the change feed is a round trip, a first page
        // is answered from the snapshot the feed will most likely confirm
        // while the feed is read on another thread; when writes came that
        // it lacks, it is answered again from a fresh snapshot.
        if let Some(keys) = keys {
            let live = self.live.table(table, table_id)?;
            let snapshot = self.live.snapshot(&live, &want(request, started))?;
            let (offset, cursor) = match &request.cursor {
                None => (request.offset, None),
                Some(cursor) => {
                    let (_, commit, offset, made_for) = crate::cursor::parse_cursor(cursor)?;
                    check_made_for(made_for, request)?;
                    (offset, Some(commit))
                }
            };
            return Ok(self.answer(table, request, &page, &snapshot, offset, cursor, Some(keys))?.0);
        }
        if request.cursor.is_none() {
            let live = self.live.table(table, table_id)?;
            if let Some(speculation) = self.live.speculate(&live, &want(request, started)) {
                let (confirmed, answered) = std::thread::scope(|scope| {
                    let check = scope.spawn(|| {
                        let read = Instant::now();
                        (self.live.confirm(&live, &speculation), read.elapsed().as_secs_f64() * 1e3)
                    });
                    let answered = self.answer(
                        table,
                        request,
                        &page,
                        speculation.snapshot(),
                        request.offset,
                        None,
                        None,
                    );
                    (check.join(), answered)
                });
                let (confirmed, feed_ms) = confirmed.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                if let Some(snapshot) = confirmed? {
                    let (mut results, walk) = answered?;
                    results.seq = snapshot.seq();
                    results.steps.feed_ms = Some(feed_ms);
                    if let Some(commit) = walk {
                        live.keep_walk(&snapshot, commit);
                    }
                    return Ok(results);
                }
            }
        }
        // A cursor's page comes from the snapshot its walk began on (kept
        // while the walk goes on), so refreshes in between neither skip nor
        // repeat a hit; a first page from a fresh snapshot.
        let (live, snapshot, offset, cursor) = self.snapshot(table, table_id, request, started)?;
        let (results, walk) = self.answer(table, request, &page, &snapshot, offset, cursor, None)?;
        if let Some(commit) = walk {
            live.keep_walk(&snapshot, commit);
        }
        Ok(results)
    }

    /// The page `request` asks for from `snapshot` (at `offset`, on the
    /// cursor walk that saw `cursor` if any; its keys from `keys` when
    /// given), with the commit to keep the snapshot for when the walk goes
    /// on.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &self,
        table: &str,
        request: &SearchRequest,
        page: &Page<'_>,
        snapshot: &Snapshot,
        offset: usize,
        cursor: Option<u64>,
        keys: Option<&dyn FindKeys>,
    ) -> Result<(SearchResults, Option<u64>)> {
        let Page { schema, search, shape, limit, started } = *page;
        let snapshot_done = Instant::now();
        if offset.checked_add(limit).is_none_or(|end| end > MAX_RESULT_WINDOW) {
            return Err(Error::BadRequest(format!(
                "offset {offset} + limit {limit} goes past the {MAX_RESULT_WINDOW} hits a search pages through; \
                 narrow the query or sort by date and filter on it"
            )));
        }
        // Parsed once: for the search and, when highlighting, for its terms.
        let partitions = partitions_of(&request.partition, &request.scope)?;
        let options = rowsearch_indexer::query::ParseOptions {
            typos: request.typos,
            max_expansions: request.max_expansions,
            max_clauses: request.max_clauses,
            cancel: request.cancel.clone(),
        };
        let parsed = snapshot.parse(&request.query, &partitions, &options)?;
        let facet_limit = request.facet_limit.unwrap_or(DEFAULT_FACET_LIMIT);
        if !(1..=MAX_FACET_LIMIT).contains(&facet_limit) {
            return Err(Error::BadRequest(format!(
                "facet_limit must be 1..={MAX_FACET_LIMIT}, got {facet_limit}"
            )));
        }
        let facets = rowsearch_indexer::facets::resolve(
            &snapshot.generation().schema,
            search.partition.as_deref(),
            search.date_column.is_some(),
            &request.facets,
        )
        .map_err(Error::BadRequest)?;
        // A confined key's scores come from its partitions alone.
        let stats_partitions: &[&[u8]] = if request.scope.is_some() { &partitions } else { &[] };
        let collapse = self.collapse_field(table, schema, request)?;
        let asked = Asked {
            facets: &facets,
            stats_partitions,
            offset,
            limit: limit.max(1),
            collapse: collapse.as_deref(),
        };
        let mut found = match keys {
            Some(keys) => keys.find(snapshot, &parsed, request, &asked)?,
            None => snapshot.search(
                &parsed,
                &facets,
                stats_partitions,
                request.sort,
                offset,
                limit.max(1),
                collapse.as_deref(),
            )?,
        };
        found.keys.truncate(limit);
        // Typo tolerance on, a query can still find nothing: the nearest
        // held terms are offered then too.
        let did_you_mean = if found.total == 0 && cursor.is_none() {
            snapshot.did_you_mean(&request.query, &partitions)?
        } else {
            None
        };
        // A mailbox that holds nothing (a misspelt `user`): said, with the
        // names nearest it among those the caller may see.
        let unknown_user = match &request.partition {
            Some(user) if found.total == 0 && cursor.is_none() => {
                self.empty_partition(snapshot, search, user, request.scope.as_deref())?
            }
            _ => None,
        };
        // An incremental reindex changes the hits under the same generation:
        // offsets would shift, so the walk restarts.
        if cursor.is_some_and(|c| c != found.commit) {
            let number = snapshot.number();
            return Err(
                rowsearch_indexer::Error::StaleCursor { cursor_generation: number, serving: number }.into()
            );
        }

        let words = (request.highlight || !request.crop.is_empty()).then(|| parsed.words());
        let query_done = Instant::now();
        // Collapsed, the hits' rows give their threads' summaries what
        // they need of them (no second read).
        let summary: Vec<Column> = if collapse.is_some() {
            let (from, date) = crate::threads::summary_columns(schema.search.as_ref());
            from.iter().chain(date.iter()).map(|c| Column::parse(c.as_bytes())).collect()
        } else {
            Vec::new()
        };
        let (mut hits, dropped, read) =
            self.hits(table, request, shape, &found.keys, words.as_ref(), &summary)?;
        if collapse.is_some() {
            self.attach_threads(table, &found, &mut hits, &read)?;
        }
        let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1e3;
        let steps = SearchSteps {
            snapshot_ms: ms(started, snapshot_done),
            query_ms: ms(snapshot_done, query_done),
            rows_ms: ms(query_done, Instant::now()),
            feed_ms: None,
        };
        self.dropped.fetch_add(dropped, Ordering::Relaxed);
        let next = offset.saturating_add(limit);
        let more = limit > 0 && next < found.total as usize;
        let results = SearchResults {
            total: found.total,
            took_ms: started.elapsed().as_secs_f64() * 1e3,
            hits,
            next_cursor: more
                .then(|| crate::cursor::cursor(snapshot.number(), found.commit, next, fingerprint(request))),
            dropped,
            generation: snapshot.number(),
            seq: snapshot.seq(),
            row_key: schema.row_key.clone(),
            overlay_rows: snapshot.overlay_rows(),
            facets: facets
                .iter()
                .zip(&found.facets)
                .map(|(spec, counts)| {
                    (spec.name.clone(), rowsearch_indexer::facets::top(counts, facet_limit))
                })
                .collect(),
            did_you_mean,
            unknown_user,
            steps,
        };
        Ok((results, more.then_some(found.commit)))
    }

    /// When partition `user` of `table` holds no document: it, with the
    /// partitions (of `scope`, when given) nearest its name; `None` when it
    /// holds some, or the table has no index to tell (what a keyword
    /// lookup or a suggestion that found nothing says beside its answer).
    ///
    /// # Errors
    /// `Store` (an unknown table), `Indexer`.
    pub fn unknown_user(
        &self,
        table: &str,
        user: &[u8],
        scope: Option<&[Vec<u8>]>,
    ) -> Result<Option<UnknownUser>> {
        let (schema, table_id) = self.searchable(table)?;
        let Some(search) = schema.search.as_ref() else { return Ok(None) };
        let request = SearchRequest { consistency: Consistency::Eventual, ..SearchRequest::default() };
        let snapshot = match self.snapshot(table, table_id, &request, Instant::now()) {
            Ok((_, snapshot, _, _)) => snapshot,
            Err(Error::Indexer(rowsearch_indexer::Error::NoIndex { .. })) => return Ok(None),
            Err(e) => return Err(e),
        };
        self.empty_partition(&snapshot, search, user, scope)
    }

    /// When partition `user` holds no document: the partitions (of `scope`,
    /// when given) nearest its name, at most 3, closest first.
    pub(crate) fn empty_partition(
        &self,
        snapshot: &rowsearch_indexer::Snapshot,
        search: &rowsearch_store::SearchSchema,
        user: &[u8],
        scope: Option<&[Vec<u8>]>,
    ) -> Result<Option<UnknownUser>> {
        let Some(name) = search.partition.as_deref() else { return Ok(None) };
        let options = rowsearch_indexer::query::ParseOptions::default();
        let all = snapshot.parse("*", &[user], &options)?;
        if snapshot.search(&all, &[], &[], SortBy::Newest, 0, 1, None)?.total > 0 {
            return Ok(None);
        }
        let spec = rowsearch_indexer::facets::resolve(
            &snapshot.generation().schema,
            Some(name),
            search.date_column.is_some(),
            &[name.to_owned()],
        )
        .map_err(Error::BadRequest)?;
        let visible: Vec<&[u8]> = scope.map(|s| s.iter().map(Vec::as_slice).collect()).unwrap_or_default();
        let everything = snapshot.parse("*", &visible, &options)?;
        let counted = snapshot.search(&everything, &spec, &[], SortBy::Newest, 0, 1, None)?;
        let wanted = String::from_utf8_lossy(user).to_lowercase();
        let mut names: Vec<(f64, String)> = counted
            .facets
            .first()
            .map(|counts| counts.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|n| (strsim::normalized_damerau_levenshtein(&wanted, &n.to_lowercase()), n))
            .collect();
        names.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(Some(UnknownUser {
            user: String::from_utf8_lossy(user).into_owned(),
            nearest: names.into_iter().take(3).map(|(_, n)| n).collect(),
        }))
    }

    /// The field `collapse` groups by (the table's thread field), checked.
    fn collapse_field(
        &self,
        table: &str,
        schema: &rowsearch_store::TableSchema,
        request: &SearchRequest,
    ) -> Result<Option<String>> {
        let Some(what) = request.collapse.as_deref() else { return Ok(None) };
        if what != "thread" {
            return Err(Error::BadRequest(format!("collapse: {what:?}; searches collapse by thread only")));
        }
        match thread_field(schema) {
            Some(field) => Ok(Some(field.name.clone())),
            None => Err(Error::BadRequest(format!(
                "collapse=thread: table {table:?} keeps no threads (its schema has no threads section with a facet field on its thread column)"
            ))),
        }
    }

    /// Each collapsed hit's thread: its id and matches from the index, its
    /// messages and participants from the store.
    fn attach_threads(
        &self,
        table: &str,
        found: &rowsearch_indexer::KeyHits,
        hits: &mut [SearchHit],
        read: &[Row],
    ) -> Result<()> {
        let by_key: std::collections::HashMap<&[u8], &(String, u64)> =
            found.keys.iter().map(|(k, _)| k.as_slice()).zip(&found.groups).collect();
        // A document without a thread value is a group of its own.
        let grouped = |h: &SearchHit| by_key.get(h.row.key.as_slice()).filter(|g| !g.0.is_empty()).copied();
        let wanted: Vec<(String, u64)> = hits.iter().filter_map(|h| grouped(h).cloned()).collect();
        let mut summaries = crate::threads::summaries_with(&*self.tables, table, &wanted, read)?.into_iter();
        for hit in hits.iter_mut() {
            if grouped(hit).is_some() {
                hit.thread = summaries.next();
            }
        }
        Ok(())
    }

    /// The hits of the keys a search found (with their scores or dates),
    /// their rows read in one snapshot: shaped as `shape` says, with
    /// highlights of `words` when given; a key whose row is gone is left out and
    /// counted (the second value).
    fn hits(
        &self,
        table: &str,
        request: &SearchRequest,
        shape: &DocumentShape<'_>,
        keys_found: &[(Vec<u8>, f64)],
        words: Option<&rowsearch_indexer::QueryWords>,
        summary: &[Column],
    ) -> Result<(Vec<SearchHit>, u64, Vec<Row>)> {
        let search = shape.search;
        // The columns documents are made of (search fields, date,
        // partition) are read too, and projected away from the row
        // afterwards; for rows alone, only when highlights need them.
        // The columns a hit's row keeps: those asked for, and with rows
        // alone (`format=cells`) the columns of the fields named.
        let mut keep = request.columns.clone();
        if request.rows_only && shape.fields.is_some() {
            keep.extend(shape.needed());
        }
        let mut read = ReadOptions { columns: keep.clone(), ..ReadOptions::default() };
        if shape.fields.is_some() && !request.rows_only {
            // Only what the named fields (and highlights) need; never
            // nothing, which would read every column.
            read.columns.extend(shape.needed());
            if request.highlight {
                read.columns.extend(search.fields.iter().map(|f| Column::parse(f.column.as_bytes())));
            }
            if read.columns.is_empty() {
                read.columns.extend(search.fields.first().map(|f| Column::parse(f.column.as_bytes())));
            }
        } else if !read.columns.is_empty() && (!request.rows_only || request.highlight) {
            read.columns.extend(DocumentShape { fields: None, ..shape.clone() }.needed());
        }
        if !read.columns.is_empty() {
            read.columns.extend(summary.iter().cloned());
        }
        // The fields' columns, for highlights only.
        let field_columns: Vec<(String, String, Vec<u8>)> = if request.highlight {
            search
                .fields
                .iter()
                .filter_map(|f| match Column::parse(f.column.as_bytes()) {
                    Column::Qualifier(family, qualifier) => Some((f.name.clone(), family, qualifier)),
                    Column::Family(_) => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        request.cancel.check()?;
        let keys: Vec<&[u8]> = keys_found.iter().map(|(k, _)| k.as_slice()).collect();
        // One read of the row source: a row without any selected column
        // still exists; only rows it lacks altogether are stale.
        let rows = self.tables.rows(table, &keys, &read)?;
        let resolved: Vec<Option<(Row, f64)>> =
            rows.into_iter().zip(keys_found).map(|(row, (_, value))| row.map(|row| (row, *value))).collect();

        let analyzer = self.tables.analyzer();
        let highlight_bytes = if request.max_highlight_bytes == 0 {
            MAX_HIGHLIGHT_TEXT_BYTES
        } else {
            request.max_highlight_bytes
        };
        let mut hits = Vec::with_capacity(resolved.len());
        let mut summary_rows = Vec::new();
        let mut dropped = 0;
        for (n, item) in resolved.into_iter().enumerate() {
            if n % 64 == 63 {
                request.cancel.check()?;
            }
            let Some((mut row, value)) = item else {
                dropped += 1;
                continue;
            };
            let mut highlights = BTreeMap::new();
            if let Some(words) = words.filter(|_| request.highlight) {
                for (name, family, qualifier) in &field_columns {
                    if let Some(text) = row.value(family, qualifier) {
                        let text = String::from_utf8_lossy(&text[..text.len().min(highlight_bytes)]);
                        if let Some(snippet) = rowsearch_indexer::highlight(
                            &text,
                            &|w| words.matches(w),
                            &words.phrase_spans(&text),
                            SNIPPET_BYTES,
                            !request.highlight_raw,
                        ) {
                            highlights.insert(name.clone(), snippet);
                        }
                    }
                }
            }
            let document = if request.rows_only {
                Document::default()
            } else {
                let mut document = shape.document(&row, analyzer.as_deref());
                shape.crop_document(&mut document, words);
                document
            };
            if !summary.is_empty() {
                let cells = row.cells.iter().filter(|c| summary.iter().any(|col| covers(col, c)));
                summary_rows.push(Row { key: row.key.clone(), cells: cells.cloned().collect() });
            }
            if !keep.is_empty() {
                row.cells.retain(|c| keep.iter().any(|col| covers(col, c)));
            }
            let (score, date_ms) = match request.sort {
                SortBy::Relevance => (Some(value), None),
                SortBy::Newest | SortBy::Oldest => (None, Some(value as u64)),
            };
            hits.push(SearchHit { row, document, score, date_ms, highlights, thread: None });
        }
        Ok((hits, dropped, summary_rows))
    }
}

/// Whether column `col` (a family, or one qualifier of it) holds `cell`.
fn covers(col: &Column, cell: &rowsearch_store::Cell) -> bool {
    match col {
        Column::Family(f) => *f == *cell.family,
        Column::Qualifier(f, q) => *f == *cell.family && *q == cell.qualifier,
    }
}

/// A cursor made for `request` (its fingerprint `made_for`), or
/// `InvalidCursor`.
fn check_made_for(made_for: u64, request: &SearchRequest) -> Result<()> {
    if made_for == fingerprint(request) {
        return Ok(());
    }
    Err(rowsearch_store::Error::from(rowsearch_store::ErrorKind::InvalidCursor {
        reason: "it was made for another search (its query, mailbox, sort, collapse or typos differ)",
    })
    .into())
}

/// What a search asks of the index besides its query: facets, the
/// partitions whose statistics score it (a confined key's; empty: all),
/// the hits `offset..offset + limit` and whether they collapse by a field.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The facets to count.
    pub facets: &'a [rowsearch_indexer::facets::FacetSpec],
    /// The partitions whose statistics score the hits (empty: all).
    pub stats_partitions: &'a [&'a [u8]],
    /// Hits to skip.
    pub offset: usize,
    /// Hits to return (at least 1).
    pub limit: usize,
    /// The field hits collapse by.
    pub collapse: Option<&'a str>,
}

/// Where a search's keys come from when not from its snapshot's own index
/// ([`Searcher::search_with`]): every shard of a cluster.
pub trait FindKeys: Sync {
    /// The keys `request` asks for (`asked`'s page, facets and collapse),
    /// `parsed` being its query parsed on `snapshot` (one of the shards).
    ///
    /// # Errors
    /// As [`Snapshot::search`]; a shard that cannot be reached.
    fn find(
        &self,
        snapshot: &Snapshot,
        parsed: &rowsearch_indexer::ParsedQuery,
        request: &SearchRequest,
        asked: &Asked<'_>,
    ) -> Result<rowsearch_indexer::KeyHits>;
}

/// What a fresh snapshot for `request` (begun at `started`) must reflect.
fn want(request: &SearchRequest, started: Instant) -> Want {
    Want {
        consistency: request.consistency,
        min_seq: request.min_seq,
        deadline: request.deadline.unwrap_or(started + DEFAULT_FRESHNESS_WAIT),
    }
}

fn not_searchable(table: &str) -> Error {
    Error::Store(ErrorKind::NotSearchable { table: table.to_owned() }.into())
}

/// The partitions a request covers: the one asked for (which a key's
/// confinement must include), else the confinement's, else all (empty).
pub(crate) fn partitions_of<'r>(
    partition: &'r Option<Vec<u8>>,
    scope: &'r Option<Vec<Vec<u8>>>,
) -> Result<Vec<&'r [u8]>> {
    Ok(match (partition, scope) {
        (Some(p), Some(scope)) if !scope.contains(p) => {
            return Err(Error::Forbidden(format!(
                "this key may not search partition {:?}",
                String::from_utf8_lossy(p)
            )));
        }
        (Some(p), _) => vec![p],
        (None, Some(scope)) => scope.iter().map(Vec::as_slice).collect(),
        (None, None) => Vec::new(),
    })
}

/// The search field a table's hits collapse by (`collapse=thread`): the
/// facet field on its threads section's thread column, if it has both.
pub(crate) fn thread_field(schema: &rowsearch_store::TableSchema) -> Option<&rowsearch_store::SearchField> {
    let threads = schema.threads.as_ref()?;
    schema.search.as_ref()?.fields.iter().find(|f| f.column == threads.thread_column && f.facet)
}

/// What a search's cursor is bound to: the parts of the request that say
/// which hits there are and in what order (a cursor resumes that walk,
/// not another search's).
fn fingerprint(request: &SearchRequest) -> u64 {
    let mut h = blake3::Hasher::new();
    let mut part = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(request.query.as_bytes());
    part(request.partition.as_deref().unwrap_or(b"\xff"));
    for p in request.scope.iter().flatten() {
        part(p);
    }
    part(format!("{:?}", request.sort).as_bytes());
    part(request.collapse.as_deref().unwrap_or("").as_bytes());
    part(&[u8::from(request.typos)]);
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use rowsearch_store::{FamilySchema, TableSchema};

    use super::*;

    /// A search of a table without a search section is the store's
    /// `NotSearchable`, as keyword lookups and reindexes answer.
    #[test]
    fn a_table_without_search_is_not_searchable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(rowsearch_indexer::open_store(dir.path()).unwrap());
        store.create_table("plain", &TableSchema::new([FamilySchema::new("f")])).unwrap();
        let searcher = Searcher::new(store);
        let request = SearchRequest { query: "gas".into(), ..SearchRequest::default() };
        match searcher.search("plain", &request) {
            Err(Error::Store(e)) => assert!(matches!(e.kind(), ErrorKind::NotSearchable { .. }), "{e}"),
            other => panic!("expected NotSearchable, got {other:?}"),
        }
    }
}
