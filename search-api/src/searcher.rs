//! The `Searcher`: a query on a table's index, resolved back against the
//! store.
//!
//! query → tantivy (the schema's field names, words ANDed, phrases, date
//! ranges) → optional partition scope → top hits by BM25 or by date → one
//! multi-get of their keys in one short store read transaction → rows, with
//! keys the store no longer has dropped and counted → column projection →
//! highlights from the stored values, analysed like the index was.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rowsearch_indexer::{Generation, Overlay, Refresher, SortBy, TableIndex};
use rowsearch_store::{Column, ErrorKind, ReadOptions, Row, RowKeySchema, Store};

use crate::document::{Document, DocumentShape};
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
const CURSOR_PREFIX: &str = "c1.";

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
    /// Most hits a page may hold (0: [`MAX_LIMIT`]).
    pub max_limit: usize,
    /// Most bytes of a field's text a highlight looks through (0:
    /// [`MAX_HIGHLIGHT_TEXT_BYTES`]).
    pub max_highlight_bytes: usize,
    /// The search stops with `Cancelled` once this fires (between
    /// segments, expanding words and rows); the default never fires.
    pub cancel: rowsearch_store::Cancel,
    /// Only these names in each [`SearchHit::document`] (search fields,
    /// the partition, `date`, `family:qualifier` columns), and only their
    /// columns read (with `columns` and what `highlight` needs); `None` for
    /// the whole document. `columns` then shape only [`SearchHit::row`].
    pub fields: Option<Vec<String>>,
    /// Leave [`SearchHit::document`] empty and read only `columns` (the
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
    /// [`DEFAULT_FACET_LIMIT`], at most [`MAX_FACET_LIMIT`]).
    pub facet_limit: Option<usize>,
    /// How long the search may wait for the index to reflect the writes
    /// it must (default [`DEFAULT_FRESHNESS_WAIT`] from its start).
    pub deadline: Option<Instant>,
}

/// Which writes a search reflects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Every write committed before the search began, from any process:
    /// when the index has not absorbed them yet, the search has the
    /// refresher (or, without one, an incremental reindex of its own)
    /// bring it current first.
    #[default]
    Snapshot,
    /// The index as it stands (possibly behind the store), for the lowest
    /// latency.
    Eventual,
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
    /// For a search without hits and without typo tolerance: the query
    /// with its words corrected, when that finds something.
    pub did_you_mean: Option<String>,
}

/// How far a table's index is behind the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// The store's last write (feed seq).
    pub store_seq: u64,
    /// The last write the index reflects.
    pub index_seq: u64,
    /// Rows of the table written since (what a snapshot search matches
    /// directly, or waits for).
    pub lag_rows: u64,
    /// How long ago the oldest of them was written (ms; 0 when none is,
    /// or the store kept no time for it).
    pub lag_ms: u64,
}

/// Values per facet when the request does not say.
pub const DEFAULT_FACET_LIMIT: usize = 10;
/// Most values per facet a request may ask for.
pub const MAX_FACET_LIMIT: usize = 1000;

/// Most changed rows a snapshot search matches directly (an overlay built
/// in memory for the search); past it, the search waits for the index to
/// absorb them (the refresher, or an incremental reindex of its own).
pub const DEFAULT_OVERLAY_MAX_ROWS: usize = 256;

/// Searches tables' indexes and resolves the hits in the store. Share it
/// between threads; it keeps each table's index open.
#[derive(Debug)]
pub struct Searcher {
    store: Arc<Store>,
    indexes: Mutex<HashMap<String, Arc<TableIndex>>>,
    dropped: AtomicU64,
    refresher: Option<Arc<Refresher>>,
    walks: Walks,
    /// Per table, the last overlay built (reused while the feed names no
    /// newer write of the table).
    overlays: Mutex<HashMap<String, Arc<Overlay>>>,
    overlay_max_rows: usize,
}

/// The index's generation a search answers from, the overlay laid on it
/// (if any), and the last write the answer reflects.
pub(crate) type Fresh = (Arc<Generation>, Option<Arc<Overlay>>, u64);

/// How long a cursor walk's snapshot is kept after its last page.
pub const WALK_KEEP: std::time::Duration = std::time::Duration::from_secs(300);
/// Most walk snapshots kept at once (the least recently used goes first).
const MAX_WALKS: usize = 64;

/// The snapshots cursor walks are on: per (table, generation, commit), the
/// generation as opened at that commit (its reader sees that commit and no
/// other) and the last write it reflects.
#[derive(Debug, Default)]
struct Walks(Mutex<Vec<Walk>>);

#[derive(Debug)]
struct Walk {
    table: String,
    commit: u64,
    generation: Arc<Generation>,
    overlay: Option<Arc<Overlay>>,
    seq: u64,
    used: Instant,
}

impl Walks {
    fn find(&self, table: &str, number: u64, commit: u64) -> Option<Fresh> {
        let mut walks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        walks.retain(|w| w.used.elapsed() < WALK_KEEP);
        let walk = walks
            .iter_mut()
            .find(|w| w.table == table && w.generation.number == number && w.commit == commit)?;
        walk.used = Instant::now();
        Some((Arc::clone(&walk.generation), walk.overlay.clone(), walk.seq))
    }

    fn keep(&self, table: &str, fresh: &Fresh, commit: u64) {
        let (generation, overlay, seq) = fresh;
        let mut walks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = walks
            .iter_mut()
            .find(|w| w.table == table && w.generation.number == generation.number && w.commit == commit)
        {
            w.used = Instant::now();
            return;
        }
        if walks.len() >= MAX_WALKS
            && let Some(oldest) = walks.iter().enumerate().min_by_key(|(_, w)| w.used).map(|(i, _)| i)
        {
            walks.swap_remove(oldest);
        }
        walks.push(Walk {
            table: table.to_owned(),
            commit,
            generation: Arc::clone(generation),
            overlay: overlay.clone(),
            seq: *seq,
            used: Instant::now(),
        });
    }
}

impl Searcher {
    /// A searcher over `store` (opened with the indexer's analyzer).
    pub fn new(store: Arc<Store>) -> Searcher {
        Searcher {
            store,
            indexes: Mutex::new(HashMap::new()),
            dropped: AtomicU64::new(0),
            refresher: None,
            walks: Walks::default(),
            overlays: Mutex::new(HashMap::new()),
            overlay_max_rows: DEFAULT_OVERLAY_MAX_ROWS,
        }
    }

    /// Sets the most changed rows a snapshot search matches directly
    /// (default [`DEFAULT_OVERLAY_MAX_ROWS`]; 0: every search after a write
    /// to its table waits for the index to absorb it).
    pub fn with_overlay_max_rows(mut self, rows: usize) -> Searcher {
        self.overlay_max_rows = rows;
        self
    }

    /// A searcher whose snapshot searches wait on `refresher` (which keeps
    /// the same store's indexes current) instead of reindexing themselves.
    pub fn with_refresher(store: Arc<Store>, refresher: Arc<Refresher>) -> Searcher {
        Searcher { refresher: Some(refresher), ..Searcher::new(store) }
    }

    /// The refresher, if it has one.
    pub fn refresher(&self) -> Option<&Arc<Refresher>> {
        self.refresher.as_ref()
    }

    /// The generation to answer from, brought current as `request` asks
    /// (an overlay of the rows it lacks, or a wait for it to absorb them),
    /// and the last write (feed seq) the answer reflects.
    pub(crate) fn fresh_generation(
        &self,
        index: &TableIndex,
        table: &str,
        request: &SearchRequest,
        started: Instant,
    ) -> Result<Fresh> {
        let deadline = request.deadline.unwrap_or(started + DEFAULT_FRESHNESS_WAIT);
        let wanted = request.min_seq.map_or(0, |s| s.saturating_add(1));
        // A write that has not happened yet is not waited for: a 400 at
        // once, not a worker held until the time limit.
        if let Some(seq) = request.min_seq {
            let next = self.store.next_seq()?;
            if seq >= next {
                return Err(Error::BadRequest(format!(
                    "min_seq {seq} is past the store's last write (seq {})",
                    next.saturating_sub(1)
                )));
            }
        }
        // Read before the generation is taken (see `reflected`).
        let mut reflected = self.reflected(table);
        let mut generation = match index.generation() {
            // A searchable table's first index is built on the way (by the
            // refresher, or here): no reindex command is needed.
            Err(rowsearch_indexer::Error::NoIndex { .. }) if request.consistency == Consistency::Snapshot => {
                self.catch_up(table, self.store.next_seq()?.max(wanted), 0, deadline)?;
                index.generation()?
            }
            generation => generation?,
        };
        loop {
            let from = reflected.max(generation.absorbed);
            // Without min_seq, an eventual search takes the index as it is.
            if request.consistency == Consistency::Eventual && wanted <= from {
                return Ok((generation, None, from.saturating_sub(1)));
            }
            // What the index lacks: the rows of this table the feed names
            // since it absorbed it. None (writes to other tables only):
            // the index reflects the store as of the feed's end. A few:
            // matched directly, in an overlay of this snapshot.
            let rtxn = self.store.begin_read()?;
            let changes = rowsearch_indexer::changes_in(&rtxn, table, from)?;
            let next = changes.next_seq;
            if next >= wanted {
                if changes.rows.is_empty() {
                    return Ok((generation, None, next.saturating_sub(1)));
                }
                if request.consistency == Consistency::Snapshot && changes.rows.len() <= self.overlay_max_rows
                {
                    let overlay = self.overlay(&rtxn, table, &generation, from, changes)?;
                    return Ok((generation, Some(overlay), next.saturating_sub(1)));
                }
            }
            drop(rtxn);
            self.catch_up(table, next.max(wanted), from, deadline)?;
            reflected = self.reflected(table);
            generation = index.generation()?;
        }
    }

    /// The overlay of `changes` (the rows of `table` written past `from`,
    /// read in `rtxn`): the one last built when it covers the same writes;
    /// that one with the rows written since added as a layer when it
    /// covers a start of them; else a new one from `rtxn`'s snapshot.
    fn overlay(
        &self,
        rtxn: &rowsearch_store::ReadTxn<'_>,
        table: &str,
        generation: &Generation,
        from: u64,
        changes: rowsearch_indexer::TableChanges,
    ) -> Result<Arc<Overlay>> {
        let cached = self.overlays.lock().unwrap_or_else(|e| e.into_inner()).get(table).cloned();
        let overlay = match cached {
            Some(o) if o.from_seq == from && o.last_seq == changes.last_seq => return Ok(o),
            Some(o)
                if o.from_seq == from && o.next_seq <= changes.next_seq && o.last_seq < changes.last_seq =>
            {
                let tail = rowsearch_indexer::changes_in(rtxn, table, o.next_seq)?;
                Arc::new(o.extend(rtxn, &generation.schema, tail)?)
            }
            _ => Arc::new(Overlay::build(rtxn, &generation.schema, from, changes)?),
        };
        self.overlays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(table.to_owned(), Arc::clone(&overlay));
        Ok(overlay)
    }

    /// What the refresher knows `table`'s index reflects (feed sequence,
    /// exclusive; 0 without a refresher): past the index's last commit
    /// when only other tables were written since. Ask before taking the
    /// generation, so the generation is at least that new.
    fn reflected(&self, table: &str) -> u64 {
        self.refresher.as_ref().and_then(|r| r.absorbed(table)).unwrap_or(0)
    }

    /// For a searchable table with an index: how far the index is behind
    /// the store.
    pub fn freshness(&self, table: &str) -> Option<Freshness> {
        self.store.schema(table).ok()?.search.as_ref()?;
        let reflected = self.reflected(table);
        let generation = self.index(table).ok()?.generation().ok()?;
        let known = reflected.max(generation.absorbed);
        let rtxn = self.store.begin_read().ok()?;
        let changes = rowsearch_indexer::changes_in(&rtxn, table, known).ok()?;
        let lag = changes.rows.len() as u64;
        let index_next = if lag == 0 { changes.next_seq } else { known };
        Some(Freshness {
            store_seq: changes.next_seq.saturating_sub(1),
            index_seq: index_next.saturating_sub(1),
            lag_rows: lag,
            lag_ms: changes.age_ms(&rtxn).ok()?.unwrap_or(0),
        })
    }

    /// Brings `table`'s index to the feed sequence `target` (exclusive):
    /// through the refresher, or on this thread without one; `NotFresh`
    /// (naming `reflects`, what the index had) past `deadline`.
    fn catch_up(&self, table: &str, target: u64, reflects: u64, deadline: Instant) -> Result<()> {
        let caught_up = match &self.refresher {
            Some(refresher) => refresher.wait_absorbed(table, target, deadline),
            None => self.reindex_inline(table, deadline)?,
        };
        if caught_up {
            return Ok(());
        }
        Err(Error::NotFresh {
            table: table.to_owned(),
            wanted: target.saturating_sub(1),
            reflects: reflects.saturating_sub(1),
        })
    }

    /// Brings `table`'s index current on this thread (a searcher without a
    /// refresher): incremental, or the first full build; false when another
    /// reindex held it past `deadline`.
    fn reindex_inline(&self, table: &str, deadline: Instant) -> Result<bool> {
        let options = rowsearch_indexer::ReindexOptions {
            mode: rowsearch_indexer::ReindexMode::Auto,
            threads: 1,
            memory_budget_bytes: 64 << 20,
            // Another reindex of the table (it brings the index current
            // too) is waited for within the search's own deadline.
            lock_wait: deadline.saturating_duration_since(Instant::now()),
            ..Default::default()
        };
        match rowsearch_indexer::reindex(&self.store, table, &options, &mut |_| {}) {
            Ok(_) => Ok(true),
            Err(rowsearch_indexer::Error::Busy { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Hits dropped so far because their row was gone.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The index of `table`, opened once.
    ///
    /// # Errors
    /// As [`TableIndex::open`].
    pub fn index(&self, table: &str) -> Result<Arc<TableIndex>> {
        let mut indexes = self.indexes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = indexes.get(table) {
            return Ok(Arc::clone(index));
        }
        let index = Arc::new(TableIndex::open(&self.store, table)?);
        indexes.insert(table.to_owned(), Arc::clone(&index));
        Ok(index)
    }

    /// Forgets a table's open index (after the table is dropped).
    pub fn forget(&self, table: &str) {
        self.indexes.lock().unwrap_or_else(|e| e.into_inner()).remove(table);
        self.overlays.lock().unwrap_or_else(|e| e.into_inner()).remove(table);
    }

    /// Runs one search (see the module docs).
    ///
    /// # Errors
    /// `Store` (unknown table), `Indexer` (`NoIndex` before the first
    /// reindex, `Query` for a query that does not parse, `Schema` for a
    /// table without a search section), `BadRequest` (a limit over 1000, a
    /// malformed cursor), `StaleCursor`.
    pub fn search(&self, table: &str, request: &SearchRequest) -> Result<SearchResults> {
        let started = Instant::now();
        let (schema, table_id) = {
            let rtxn = self.store.begin_read()?;
            (rtxn.schema(table)?, rtxn.table_id(table)?)
        };
        let search = schema
            .search
            .as_ref()
            .ok_or_else(|| Error::Store(ErrorKind::NotSearchable { table: table.to_owned() }.into()))?;
        let limit = request.limit.unwrap_or(DEFAULT_LIMIT);
        // limit 0: the total alone (and, with issue 23's facets, facets).
        let max_limit = if request.max_limit == 0 { MAX_LIMIT } else { request.max_limit };
        if limit > max_limit {
            return Err(Error::BadRequest(format!("limit must be 0..={max_limit}, got {limit}")));
        }
        let shape = DocumentShape {
            search,
            row_key: schema.row_key.as_ref(),
            columns: &request.columns,
            fields: request.fields.as_deref(),
        };
        shape.check_fields().map_err(Error::BadRequest)?;
        let index = self.index(table)?;
        // A cursor's page comes from the snapshot its walk began on (kept
        // here while the walk goes on), so refreshes in between neither
        // skip nor repeat a hit; a first page from a fresh snapshot.
        let (fresh, offset, cursor) = match &request.cursor {
            None => (self.fresh_generation(&index, table, request, started)?, request.offset, None),
            Some(cursor) => {
                let (cursor_generation, commit, offset) = parse_cursor(cursor)?;
                match self.walks.find(table, cursor_generation, commit) {
                    Some(fresh) => (fresh, offset, Some(commit)),
                    None => {
                        // Not kept here (another process, or expired): the
                        // serving snapshot if it is that very one.
                        let generation = index.generation()?;
                        if generation.number != cursor_generation || generation.commit() != commit {
                            return Err(Error::StaleCursor { cursor_generation, serving: generation.number });
                        }
                        let seq = generation.absorbed.saturating_sub(1);
                        ((generation, None, seq), offset, Some(commit))
                    }
                }
            }
        };
        let (generation, overlay, seq) = &fresh;
        let seq = *seq;
        if generation.table_id != table_id {
            // Built for an earlier table of this name, dropped since.
            return Err(Error::Indexer(rowsearch_indexer::Error::NoIndex { table: table.to_owned() }));
        }
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
        let parsed = generation.parse_with(&request.query, &partitions, &options)?;
        let facet_limit = request.facet_limit.unwrap_or(DEFAULT_FACET_LIMIT);
        if !(1..=MAX_FACET_LIMIT).contains(&facet_limit) {
            return Err(Error::BadRequest(format!(
                "facet_limit must be 1..={MAX_FACET_LIMIT}, got {facet_limit}"
            )));
        }
        let facets = rowsearch_indexer::facets::resolve(
            &generation.schema,
            search.partition.as_deref(),
            search.date_column.is_some(),
            &request.facets,
        )
        .map_err(Error::BadRequest)?;
        // A confined key's scores come from its partitions alone.
        let stats_partitions: &[&[u8]] = if request.scope.is_some() { &partitions } else { &[] };
        let mut found = generation.search_scoped(
            &request.query,
            &*parsed,
            overlay.as_deref(),
            &facets,
            stats_partitions,
            request.sort,
            offset,
            limit.max(1),
        )?;
        found.keys.truncate(limit);
        let did_you_mean = if found.total == 0 && !request.typos && cursor.is_none() {
            rowsearch_indexer::correct::did_you_mean(
                generation,
                overlay.as_deref(),
                &request.query,
                &partitions,
            )?
        } else {
            None
        };
        // An incremental reindex changes the hits under the same generation:
        // offsets would shift, so the walk restarts.
        if cursor.is_some_and(|c| c != found.commit) {
            return Err(Error::StaleCursor {
                cursor_generation: generation.number,
                serving: generation.number,
            });
        }

        let words = request.highlight.then(|| rowsearch_indexer::expand::QueryWords::of(&*parsed));
        let (hits, dropped) = self.hits(table, request, &shape, &found.keys, words.as_ref())?;
        self.dropped.fetch_add(dropped, Ordering::Relaxed);
        let next = offset.saturating_add(limit);
        let more = limit > 0 && next < found.total as usize;
        if more {
            self.walks.keep(table, &fresh, found.commit);
        }
        Ok(SearchResults {
            total: found.total,
            took_ms: started.elapsed().as_secs_f64() * 1e3,
            hits,
            next_cursor: more
                .then(|| format!("{CURSOR_PREFIX}{}.{:x}.{next}", generation.number, found.commit)),
            dropped,
            generation: generation.number,
            seq,
            row_key: schema.row_key.clone(),
            overlay_rows: overlay.as_ref().map_or(0, |o| o.rows().len() as u64),
            facets: facets
                .iter()
                .zip(&found.facets)
                .map(|(spec, counts)| {
                    (spec.name.clone(), rowsearch_indexer::facets::top(counts, facet_limit))
                })
                .collect(),
            did_you_mean,
        })
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
        words: Option<&rowsearch_indexer::expand::QueryWords>,
    ) -> Result<(Vec<SearchHit>, u64)> {
        let search = shape.search;
        // The columns documents are made of (search fields, date,
        // partition) are read too, and projected away from the row
        // afterwards; for rows alone, only when highlights need them.
        let mut read = ReadOptions { columns: request.columns.clone(), ..ReadOptions::default() };
        if request.fields.is_some() && !request.rows_only {
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
        let field_columns: Vec<(String, String, Vec<u8>)> = search
            .fields
            .iter()
            .filter_map(|f| match Column::parse(f.column.as_bytes()) {
                Column::Qualifier(family, qualifier) => Some((f.name.clone(), family, qualifier)),
                Column::Family(_) => None,
            })
            .collect();
        request.cancel.check()?;
        let keys: Vec<&[u8]> = keys_found.iter().map(|(k, _)| k.as_slice()).collect();
        let rtxn = self.store.begin_read()?;
        let rows = rtxn.multi_get(table, &keys, &read)?;
        // A row without any selected column still exists: only rows the
        // store lacks altogether are stale.
        let mut resolved = Vec::with_capacity(rows.len());
        for (row, (key, value)) in rows.into_iter().zip(keys_found) {
            match row {
                Some(row) => resolved.push(Some((row, *value))),
                None if rtxn.get(table, key, &ReadOptions::default())?.is_some() => {
                    resolved.push(Some((Row { key: key.clone(), cells: Vec::new() }, *value)));
                }
                None => resolved.push(None),
            }
        }
        drop(rtxn);

        let highlight_bytes = if request.max_highlight_bytes == 0 {
            MAX_HIGHLIGHT_TEXT_BYTES
        } else {
            request.max_highlight_bytes
        };
        let mut hits = Vec::with_capacity(resolved.len());
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
            if let Some(words) = words {
                for (name, family, qualifier) in &field_columns {
                    if let Some(text) = row.value(family, qualifier) {
                        let text = String::from_utf8_lossy(&text[..text.len().min(highlight_bytes)]);
                        if let Some(snippet) = rowsearch_indexer::analyzer::highlight(
                            &text,
                            &|w| words.matches(w),
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
                shape.document(&row, self.store.analyzer().map(|a| &**a))
            };
            if !request.columns.is_empty() {
                row.cells.retain(|c| {
                    request.columns.iter().any(|col| match col {
                        Column::Family(f) => *f == *c.family,
                        Column::Qualifier(f, q) => *f == *c.family && *q == c.qualifier,
                    })
                });
            }
            let (score, date_ms) = match request.sort {
                SortBy::Relevance => (Some(value), None),
                SortBy::Newest | SortBy::Oldest => (None, Some(value as u64)),
            };
            hits.push(SearchHit { row, document, score, date_ms, highlights });
        }
        Ok((hits, dropped))
    }
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

/// `c1.<generation>.<commit hex>.<offset>`.
fn parse_cursor(cursor: &str) -> Result<(u64, u64, usize)> {
    let bad = || Error::BadRequest(format!("bad cursor {cursor:?}"));
    let rest = cursor.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
    let mut parts = rest.split('.');
    let (Some(generation), Some(commit), Some(offset), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    Ok((
        generation.parse().map_err(|_| bad())?,
        u64::from_str_radix(commit, 16).map_err(|_| bad())?,
        offset.parse().map_err(|_| bad())?,
    ))
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
