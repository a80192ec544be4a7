//! Reading a table's index: the serving generation, picked up again when
//! the pointer switches or the generation gets a new commit.
//!
//! [`TableIndex::generation`] checks the pointer file and the generation's
//! `meta.json` (one `stat` each) and reopens or reloads only when they
//! changed, so a reindex in this process or another is seen at the next
//! search without a restart. Each search holds an `Arc<Generation>`, so a
//! search in flight during a switch finishes on the generation it began on.

use std::sync::{Arc, Mutex};

use rowsearch_store::{Analyzer, Store};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, Order, ReloadPolicy, Term};

use crate::collapse::{CollapseCollector, GroupCache, GroupOrder};
use crate::doc::{DATE_FIELD, DocSchema, register_analyzer};
use crate::error::tantivy_err;
use crate::facets::{FacetCollector, FacetCounts, FacetSpec};
use crate::generation::IndexDir;
use crate::generation::{indexed_next_seq, indexed_table_id};
use crate::held::{Held, Stamp, stamp};
use crate::overlay::{Combined, Overlay};
use crate::scoped_stats::ScopedStats;
use crate::shard_stats::ShardStats;
use crate::top_ties::TopWithTies;
use crate::{Error, Result};

/// One open generation.
pub struct Generation {
    /// Its number.
    pub number: u64,
    /// The tantivy index (with the analyzer registered for queries).
    pub index: Index,
    /// Its reader.
    pub reader: IndexReader,
    /// Its segments' positions, opened once for the phrases' reads.
    positions: crate::word_cursor::PositionFiles,
    /// The field handles.
    pub schema: DocSchema,
    /// The id of the table it was built for (`Store::table_id`).
    pub table_id: u64,
    /// The analyzer queries' words go through.
    analyzer: Arc<dyn Analyzer>,
    /// The feed sequence it had absorbed up to (exclusive) when opened:
    /// its reader reflects at least the writes before it (read before the
    /// reader, so a commit in between can only make the reader newer).
    pub absorbed: u64,
    meta_stamp: Stamp,
    /// `meta.json`, held open when it was stamped.
    meta_held: Option<Held>,
    /// The most frequent completions of short prefixes, per set of
    /// segments and per segment (see `suggest.rs`); handed on when the
    /// generation is reopened after a commit, as its old segments stay.
    pub(crate) completion_cache: Arc<crate::completion_cache::CompletionCache>,
    /// Partitions' BM25 statistics counted for confined searches.
    scoped_cache: crate::scoped_stats::ScopedCache,
    /// The segments' groups collapsed searches read (see `collapse`);
    /// handed on when reopened, as the completion cache is.
    group_cache: Arc<GroupCache>,
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation").field("number", &self.number).finish_non_exhaustive()
    }
}

/// How a search orders its hits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortBy {
    /// BM25 score, best first.
    #[default]
    Relevance,
    /// Date, newest first.
    Newest,
    /// Date, oldest first.
    Oldest,
}

/// Keys found by a search.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyHits {
    /// Exact number of matching documents.
    pub total: u64,
    /// The first `limit` keys after `offset`, in the asked order, with their
    /// score (relevance) or date (ms).
    pub keys: Vec<(Vec<u8>, f64)>,
    /// The generation answering.
    pub generation: u64,
    /// Identifies the commit the search saw (a hash of its segments and
    /// their deletes): the same in every process, and different after any
    /// commit, incremental ones included.
    pub commit: u64,
    /// Per facet asked for, each value's number of matches (every match).
    pub facets: FacetCounts,
    /// Collapsed (`total` counts groups): per key, its group's value and
    /// how many of its documents match; empty otherwise.
    pub groups: Vec<(String, u64)>,
}

/// A table's index as readers see it.
pub struct TableIndex {
    dir: IndexDir,
    analyzer: Arc<dyn Analyzer>,
    state: Mutex<Option<Serving>>,
}

/// The generation a table's searches are served from, and the pointer
/// (held, with its stamp) when it was chosen.
struct Serving {
    pointer: Held,
    generation: Arc<Generation>,
}

impl Serving {
    /// Whether neither the pointer nor the generation's `meta.json` has
    /// changed, told by their handles alone; `false` when that needs the
    /// paths asked.
    fn held(&self) -> bool {
        self.pointer.unchanged() && self.generation.meta_held.as_ref().is_some_and(Held::unchanged)
    }
}

impl std::fmt::Debug for TableIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIndex").field("table", &self.dir.table()).finish_non_exhaustive()
    }
}

impl Generation {
    /// Opens generation `number`; `open` is the same generation as opened
    /// before a commit, whose tantivy index is reused (only its reader and
    /// commit are read anew) and whose segments' cached completions hold.
    fn open(
        dir: &IndexDir,
        number: u64,
        analyzer: Arc<dyn Analyzer>,
        open: Option<&Generation>,
    ) -> Result<Generation> {
        let table = dir.table();
        let path = dir.generation_path(number);
        // Before what it stamps is read: a commit after it only makes the
        // next look reopen again (stamped after, a commit in between would
        // have left the older reader serving until the next commit).
        // Its stamp is the handle's: a file replaced since only sends the
        // next search to the paths.
        let meta_held = Held::open(&path.join("meta.json"));
        let meta_stamp = meta_held.as_ref().map_or(Stamp { modified: None, len: 0, inode: 0 }, |h| h.stamp);
        let (index, completion_cache, group_cache) = match open {
            Some(open) => {
                (open.index.clone(), Arc::clone(&open.completion_cache), Arc::clone(&open.group_cache))
            }
            None => {
                let index = dir.open_index(number)?;
                register_analyzer(&index, Arc::clone(&analyzer));
                (index, Arc::default(), Arc::default())
            }
        };
        let schema = DocSchema::from_index(table, &index)?;
        let absorbed = indexed_next_seq(table, &index)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tantivy_err(table, "open reader"))?;
        let table_id = indexed_table_id(table, &index)?;
        let positions = crate::word_cursor::PositionFiles::open(&reader.searcher())
            .map_err(tantivy_err(table, "open positions"))?;
        Ok(Generation {
            number,
            index,
            reader,
            positions,
            schema,
            table_id,
            analyzer,
            absorbed,
            meta_stamp,
            meta_held,
            completion_cache,
            group_cache,
            scoped_cache: crate::scoped_stats::ScopedCache::default(),
        })
    }

    /// The feed sequence this generation has absorbed up to (exclusive).
    ///
    /// # Errors
    /// `Tantivy`, `Corrupted`.
    pub fn next_seq(&self) -> Result<u64> {
        indexed_next_seq(&self.schema.table, &self.index)
    }

    /// Parses `query` (rowsearch's query language, `crate::query`; bare terms
    /// match any field and are ANDed), scoped to `partitions` (any of
    /// them) unless that is empty.
    ///
    /// # Errors
    /// `Query` when it does not parse.
    pub fn parse(&self, query: &str, partitions: &[&[u8]]) -> Result<Box<dyn Query>> {
        self.parse_with(query, partitions, &crate::query::ParseOptions::default())
    }

    /// [`Self::parse`] with `options` (typo tolerance).
    ///
    /// # Errors
    /// `Query` when it does not parse.
    pub fn parse_with(
        &self,
        query: &str,
        partitions: &[&[u8]],
        options: &crate::query::ParseOptions,
    ) -> Result<Box<dyn Query>> {
        crate::query::check_shape(query)?;
        let parsed = crate::query::parse_over(query, &self.schema, &*self.analyzer, options, &self.positions)
            .map_err(|e| Error::Query {
                query: query.to_owned(),
                reason: e.reason,
                position: Some(e.position),
            })?;
        Ok(self.scoped(parsed, partitions))
    }

    /// `query` confined to `partitions` (any of them) unless that is empty.
    pub fn scoped(&self, query: Box<dyn Query>, partitions: &[&[u8]]) -> Box<dyn Query> {
        let term = |p: &[u8]| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_bytes(self.schema.partition, p),
                IndexRecordOption::Basic,
            ))
        };
        match partitions {
            [] => query,
            [p] => Box::new(BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, term(p))])),
            many => {
                let any = BooleanQuery::new(many.iter().map(|p| (Occur::Should, term(p))).collect());
                Box::new(BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, Box::new(any))]))
            }
        }
    }

    /// Identifies the commit this generation's reader sees (as
    /// [`KeyHits::commit`]): a generation is opened again after every
    /// commit, so one `Generation` is one point in time.
    pub fn commit(&self) -> u64 {
        commit_id(&self.reader.searcher())
    }

    /// Runs `query` and returns matching row keys.
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    pub fn search_keys(
        &self,
        query: &str,
        partition: Option<&[u8]>,
        sort: SortBy,
        offset: usize,
        limit: usize,
    ) -> Result<KeyHits> {
        let parsed = self.parse(query, partition.as_slice())?;
        self.search_parsed(query, &*parsed, sort, offset, limit)
    }

    /// Runs a query already [parsed](Generation::parse) from `query_text`
    /// (named in errors) and returns matching row keys.
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    pub fn search_parsed(
        &self,
        query_text: &str,
        query: &dyn Query,
        sort: SortBy,
        offset: usize,
        limit: usize,
    ) -> Result<KeyHits> {
        self.search_overlaid(query_text, query, None, &[], sort, offset, limit)
    }

    /// As [`Self::search_parsed`], over this generation with `overlay`
    /// laid on it (see [`crate::Overlay`]): the changed rows' indexed
    /// documents hidden, the overlay's documents matched instead, scored
    /// with the statistics of both, the two answers merged by score or
    /// date. [`KeyHits::commit`] then names the generation's commit and
    /// the overlay together. `facets` are counted over every match (see
    /// [`crate::facets`]), the overlay's included.
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    #[allow(clippy::too_many_arguments)]
    pub fn search_overlaid(
        &self,
        query_text: &str,
        query: &dyn Query,
        overlay: Option<&Overlay>,
        facets: &[FacetSpec],
        sort: SortBy,
        offset: usize,
        limit: usize,
    ) -> Result<KeyHits> {
        self.search_scoped(query_text, query, overlay, facets, &[], sort, offset, limit, None, None)
    }

    /// As [`Self::search_overlaid`], scoring with the BM25 statistics of
    /// `stats_partitions` only (all documents when empty): what a search
    /// by a key confined to them uses, so its scores do not depend on
    /// other partitions (`scoped_stats.rs`).
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_scoped(
        &self,
        query_text: &str,
        query: &dyn Query,
        overlay: Option<&Overlay>,
        facets: &[FacetSpec],
        stats_partitions: &[&[u8]],
        sort: SortBy,
        offset: usize,
        limit: usize,
        collapse: Option<&str>,
        global: Option<&ShardStats>,
    ) -> Result<KeyHits> {
        let searcher = self.reader.searcher();
        let scoped =
            global.is_none().then(|| self.scoped_stats(&searcher, overlay, stats_partitions)).flatten();
        let mut commit = commit_id(&searcher);
        let limit = limit.max(1);
        let counting = (!facets.is_empty()).then(|| FacetCollector::new(&self.schema, facets));
        let run = |on: &tantivy::Searcher, stats: &dyn Bm25StatisticsProvider, q: &dyn Query, ask| {
            top_docs(on, stats, q, counting.as_ref(), sort, ask)
                .map_err(|e| search_err(&self.schema.table, query_text, e))
        };
        if let Some(field) = collapse {
            let runs = match overlay {
                None => vec![(&searcher, query.box_clone())],
                Some(overlay) => {
                    commit = overlaid_commit(commit, overlay);
                    runs(&searcher, query, overlay)
                }
            };
            let combined = Combined { searchers: runs.iter().map(|(on, _)| *on).collect() };
            let local: &dyn Bm25StatisticsProvider = match &scoped {
                Some(s) => s,
                None if runs.len() == 1 => &searcher,
                None => &combined,
            };
            let summed = global.map(|g| g.over(local));
            let stats: &dyn Bm25StatisticsProvider = match &summed {
                Some(s) => s,
                None => local,
            };
            let order = GroupOrder { by_date: sort != SortBy::Relevance, descending: sort != SortBy::Oldest };
            let mut fruits = Vec::with_capacity(runs.len());
            let mut counts = FacetCounts::new();
            let searched: Vec<tantivy::index::SegmentId> =
                runs.iter().flat_map(|(on, _)| on.segment_readers().iter().map(|r| r.segment_id())).collect();
            for (i, (on, q)) in runs.iter().enumerate() {
                let window = offset.saturating_add(limit);
                let cache = Arc::clone(&self.group_cache);
                let collector =
                    CollapseCollector::new(field, order, (i, window), &**q, cache, searched.clone());
                // Alone, the collector prunes (it scores only what may
                // enter the page); with facets every match is visited.
                let (groups, facets) = match &counting {
                    None => (on.search_with_statistics_provider(&**q, &collector, stats), None),
                    Some(facets) => {
                        match on.search_with_statistics_provider(&**q, &(collector, facets.clone()), stats) {
                            Ok((groups, facets)) => (Ok(groups), Some(facets)),
                            Err(e) => (Err(e), None),
                        }
                    }
                };
                fruits.extend(groups.map_err(|e| search_err(&self.schema.table, query_text, e))?);
                crate::facets::add(&mut counts, facets.unwrap_or_default());
            }
            let (total, mut page) = crate::collapse::page(order, fruits, offset, limit);
            let searchers: Vec<&tantivy::Searcher> = runs.iter().map(|(on, _)| *on).collect();
            let key = |on: usize, addr| key_of(searchers.get(on).unwrap_or(&&searcher), &self.schema, addr);
            let err = |e| search_err(&self.schema.table, query_text, e);
            let cache = (&self.group_cache, &searched[..]);
            crate::collapse::settle(&mut page, field, order, &runs, stats, cache, key, err)?;
            let keys = self.keys(&searchers, page.iter().map(|g| (g.best, g.addr, g.run)))?;
            let groups = page.into_iter().map(|g| (g.value, g.matched)).collect();
            return Ok(KeyHits { total, keys, generation: self.number, commit, facets: counts, groups });
        }
        // Hits of equal score or date in key order (`ties.rs`).
        let before: fn(f64, f64) -> std::cmp::Ordering = match sort {
            SortBy::Relevance | SortBy::Newest => |a, b| b.total_cmp(&a),
            SortBy::Oldest => |a, b| a.total_cmp(&b),
        };
        let runs = match overlay {
            None => vec![(&searcher, query.box_clone())],
            // With every changed row gone (or without terms) the overlay
            // hides only: one run.
            Some(overlay) => {
                commit = overlaid_commit(commit, overlay);
                runs(&searcher, query, overlay)
            }
        };
        let combined = Combined { searchers: runs.iter().map(|(on, _)| *on).collect() };
        let local: &dyn Bm25StatisticsProvider = match &scoped {
            Some(s) => s,
            None if runs.len() == 1 => &searcher,
            None => &combined,
        };
        let summed = global.map(|g| g.over(local));
        let stats: &dyn Bm25StatisticsProvider = match &summed {
            Some(s) => s,
            None => local,
        };
        // By score each run's tie at the page's last hit comes in the same
        // pass (`top_ties.rs`); by date a tie past the page is gathered
        // again.
        let ties = sort == SortBy::Relevance;
        let gather = |ask: crate::ties::Ask| -> Result<crate::ties::Gathered<FacetCounts>> {
            let mut total = 0;
            let mut counts = FacetCounts::new();
            let mut hits = Vec::with_capacity(runs.len());
            for (on, q) in &runs {
                let (matched, best, facets) = run(on, stats, &**q, ask)?;
                total += matched;
                crate::facets::add(&mut counts, facets);
                hits.push(best);
            }
            Ok((total, hits, counts, ties))
        };
        let key = |on: usize, addr| key_of(runs.get(on).map_or(&searcher, |r| r.0), &self.schema, addr);
        let (total, keys, facets) = crate::ties::keyed_page(offset, limit, before, gather, key)?;
        Ok(KeyHits { total: total as u64, keys, generation: self.number, commit, facets, groups: Vec::new() })
    }

    /// What scoring `query` on this generation with `overlay` laid on it
    /// asks of BM25 statistics (of `stats_partitions` only, when not
    /// empty): one shard's part of a search over many
    /// ([`crate::ShardStats`]).
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    pub(crate) fn record_stats(
        &self,
        query_text: &str,
        query: &dyn Query,
        overlay: Option<&Overlay>,
        stats_partitions: &[&[u8]],
    ) -> Result<ShardStats> {
        let searcher = self.reader.searcher();
        let runs = match overlay {
            None => vec![(&searcher, query.box_clone())],
            Some(overlay) => runs(&searcher, query, overlay),
        };
        let combined = Combined { searchers: runs.iter().map(|(on, _)| *on).collect() };
        let scoped = self.scoped_stats(&searcher, overlay, stats_partitions);
        let stats: &dyn Bm25StatisticsProvider = match &scoped {
            Some(s) => s,
            None if runs.len() == 1 => &searcher,
            None => &combined,
        };
        crate::shard_stats::record(&runs, stats).map_err(|e| search_err(&self.schema.table, query_text, e))
    }

    /// The statistics of `stats_partitions`' documents on `searcher` with
    /// `overlay` laid on it (`scoped_stats.rs`); `None` for none named.
    fn scoped_stats<'s>(
        &'s self,
        searcher: &'s tantivy::Searcher,
        overlay: Option<&'s Overlay>,
        stats_partitions: &[&[u8]],
    ) -> Option<ScopedStats<'s>> {
        if stats_partitions.is_empty() {
            return None;
        }
        let filter = ScopedStats::filter(self.schema.partition, stats_partitions);
        let writes = overlay.map_or((0, 0), |o| (o.from_seq, o.last_seq));
        let counts = self.scoped_cache.counts(commit_id(searcher), writes, stats_partitions);
        Some(ScopedStats::new(
            match overlay {
                Some(overlay) => runs(searcher, &*filter, overlay),
                None => vec![(searcher, filter)],
            },
            counts,
        ))
    }

    /// The row keys of hits, each read from the searcher it names.
    fn keys(
        &self,
        searchers: &[&tantivy::Searcher],
        hits: impl Iterator<Item = (f64, tantivy::DocAddress, usize)>,
    ) -> Result<Vec<(Vec<u8>, f64)>> {
        let mut keys = Vec::new();
        for (value, addr, on) in hits {
            let Some(on) = searchers.get(on).or(searchers.first()) else { continue };
            keys.push((key_of(on, &self.schema, addr)?, value));
        }
        Ok(keys)
    }
}

/// Where a query runs when `overlay` is laid on a generation read by
/// `searcher`: the generation without the overlay's rows, then each layer
/// without the rows of the later ones.
pub(crate) fn runs<'s>(
    searcher: &'s tantivy::Searcher,
    query: &dyn Query,
    overlay: &'s Overlay,
) -> Vec<(&'s tantivy::Searcher, Box<dyn Query>)> {
    let hiding = |q: &dyn Query, hide: Option<&dyn Query>| -> Box<dyn Query> {
        match hide {
            None => q.box_clone(),
            Some(hide) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, q.box_clone()),
                (Occur::MustNot, hide.box_clone()),
            ])),
        }
    };
    let mut runs: Vec<(&tantivy::Searcher, Box<dyn Query>)> =
        vec![(searcher, hiding(query, Some(overlay.hide())))];
    runs.extend(overlay.segments().map(|(on, later)| (on, hiding(query, later))));
    runs
}

/// The number of matches, the page of hits (score or date, address) and
/// the facet counts.
type Ranked = (usize, Vec<(f64, tantivy::DocAddress)>, FacetCounts);

/// The best documents of `query` on `searcher` in `sort`'s order as `ask`
/// asks them, with their score or date (ms), the number of matches, and
/// the facets `facets` counts over them; BM25 from `stats`. By score the
/// best `ask.page` and the hits tied with the last of them, by address, up
/// to `ask.cap` in all ([`TopWithTies`]); by date the best `ask.best`.
fn top_docs(
    searcher: &tantivy::Searcher,
    stats: &dyn Bm25StatisticsProvider,
    query: &dyn Query,
    facets: Option<&FacetCollector>,
    sort: SortBy,
    ask: crate::ties::Ask,
) -> tantivy::Result<Ranked> {
    Ok(match sort {
        SortBy::Relevance => {
            let top = TopWithTies::new(ask.page, ask.cap);
            let (hits, total, facets) =
                searcher.search_with_statistics_provider(query, &(top, Count, facets.cloned()), stats)?;
            (total, hits.into_iter().map(|(s, a)| (f64::from(s), a)).collect(), facets.unwrap_or_default())
        }
        SortBy::Newest | SortBy::Oldest => {
            let order = if sort == SortBy::Newest { Order::Desc } else { Order::Asc };
            let top =
                TopDocs::with_limit(ask.best).order_by_fast_field::<tantivy::DateTime>(DATE_FIELD, order);
            let (hits, total, facets) = searcher.search(query, &(top, Count, facets.cloned()))?;
            (
                total,
                hits.into_iter()
                    .map(|(d, a)| (d.map_or(0.0, |d| d.into_timestamp_millis() as f64), a))
                    .collect(),
                facets.unwrap_or_default(),
            )
        }
    })
}

/// The commit a search over `commit`'s segments with `overlay` laid on
/// them saw.
fn overlaid_commit(commit: u64, overlay: &Overlay) -> u64 {
    xxhash_rust::xxh3::xxh3_64(format!("{commit:x}+{}:{}", overlay.from_seq, overlay.last_seq).as_bytes())
}

/// A hash of the segments (and their deletes) a searcher sees, and of the
/// order it reads them in: hits tie by address, and an address names a
/// segment by its place in that order, which two readers of the same
/// segments need not share (tantivy lists a commit's segments in no fixed
/// order), so a cursor walk must stay on readers of the same order.
fn commit_id(searcher: &tantivy::Searcher) -> u64 {
    let mut text = String::new();
    for (segment, deletes) in searcher.generation().segments() {
        text.push_str(&format!("{}:{deletes:?};", segment.uuid_string()));
    }
    text.push('|');
    for reader in searcher.segment_readers() {
        text.push_str(&reader.segment_id().uuid_string());
        text.push(';');
    }
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// A search failure: the query's fault (a field it cannot be used on, such
/// as `subject:*` on a field without a fast column) or the index's.
fn search_err(table: &str, query: &str, e: tantivy::TantivyError) -> Error {
    if let Some(reason) = crate::cancellable::reason_of(&e) {
        return Error::Store(rowsearch_store::ErrorKind::Cancelled { reason }.into());
    }
    match e {
        tantivy::TantivyError::SchemaError(reason) | tantivy::TantivyError::InvalidArgument(reason) => {
            Error::Query { query: query.to_owned(), reason, position: None }
        }
        tantivy::TantivyError::FieldNotFound(field) => {
            Error::Query { query: query.to_owned(), reason: format!("no field {field:?}"), position: None }
        }
        source => Error::Tantivy { table: table.to_owned(), op: "search", source },
    }
}

/// The row key of a document: the one stored value.
pub(crate) fn key_of(
    searcher: &tantivy::Searcher,
    schema: &DocSchema,
    addr: tantivy::DocAddress,
) -> Result<Vec<u8>> {
    let doc: KeyDoc = searcher.doc(addr).map_err(tantivy_err(&schema.table, "read key"))?;
    Ok(doc.0)
}

/// A stored document read for its row key alone: `_key` is the one
/// stored field (`DocSchema::for_search`), so its first value is the key,
/// taken without building a `TantivyDocument` around it.
struct KeyDoc(Vec<u8>);

impl tantivy::schema::document::DocumentDeserialize for KeyDoc {
    fn deserialize<'de, D>(
        mut deserializer: D,
    ) -> std::result::Result<Self, tantivy::schema::document::DeserializeError>
    where
        D: tantivy::schema::document::DocumentDeserializer<'de>,
    {
        let key = deserializer.next_field::<Vec<u8>>()?.map(|(_, key)| key);
        Ok(KeyDoc(key.unwrap_or_default()))
    }
}

impl TableIndex {
    /// The index of `table` in `store`, with the store's analyzer for
    /// queries. Nothing is opened until the first [`Self::generation`].
    ///
    /// # Errors
    /// `Store` (`NoAnalyzer` when the store has none).
    pub fn open(store: &Store, table: &str) -> Result<TableIndex> {
        let analyzer = store.analyzer().cloned().ok_or_else(|| Error::Schema {
            table: table.to_owned(),
            reason: "the store has no analyzer".into(),
        })?;
        Ok(TableIndex::open_in(store.path(), table, analyzer))
    }

    /// The index of `table` under the data directory `dir`, with
    /// `analyzer` for queries (rows that live outside the store).
    pub fn open_in(dir: &std::path::Path, table: &str, analyzer: Arc<dyn Analyzer>) -> TableIndex {
        TableIndex { dir: IndexDir::new(dir, table), analyzer, state: Mutex::new(None) }
    }

    /// The index directory.
    pub fn dir(&self) -> &IndexDir {
        &self.dir
    }

    /// The serving generation, reopened or reloaded if a reindex changed it.
    ///
    /// # Errors
    /// `NoIndex` before the first reindex; `Tantivy`, `Io`, `Corrupted`.
    pub fn generation(&self) -> Result<Arc<Generation>> {
        let pointer = self.dir.pointer_path();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(serving) = state.as_ref().filter(|s| s.held()) {
            return Ok(Arc::clone(&serving.generation));
        }
        // A generation can vanish between reading the pointer and opening
        // it (a newer reindex removed it): read the pointer again.
        let mut last_err = None;
        for _ in 0..5 {
            // Stamped through its handle: a pointer replaced after leaves
            // the handle unlinked, and the next search asks again.
            let Some(pointer_held) = Held::open(&pointer) else {
                return Err(Error::NoIndex { table: self.dir.table().to_owned() });
            };
            if let Some(serving) = state.as_mut()
                && serving.pointer.stamp == pointer_held.stamp
            {
                let generation = &serving.generation;
                let meta = stamp(&self.dir.generation_path(generation.number).join("meta.json"));
                if meta.is_none() || meta == Some(generation.meta_stamp) {
                    serving.pointer = pointer_held;
                    return Ok(Arc::clone(generation));
                }
            }
            let Some(number) = self.dir.current()? else {
                return Err(Error::NoIndex { table: self.dir.table().to_owned() });
            };
            // The same generation after a commit: its index is reused.
            let open = state.as_ref().map(|s| &*s.generation).filter(|open| open.number == number);
            match Generation::open(&self.dir, number, Arc::clone(&self.analyzer), open) {
                Ok(generation) => {
                    let generation = Arc::new(generation);
                    *state = Some(Serving { pointer: pointer_held, generation: Arc::clone(&generation) });
                    return Ok(generation);
                }
                Err(e) => last_err = Some(e),
            }
        }
        // A pointer to a generation that is not there is a damaged index,
        // not a failure of the moment.
        self.dir.check_pointer()?;
        Err(last_err.unwrap_or(Error::NoIndex { table: self.dir.table().to_owned() }))
    }
}
