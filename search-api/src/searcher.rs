//! The `Searcher`: a query on a table's index, resolved back against the
//! store.
//!
//! query → tantivy (the schema's field names, words ANDed, phrases, date
//! ranges) → optional partition scope → top hits by BM25 or by date → one
//! multi-get of their keys in one short store read transaction → rows, with
//! keys the store no longer has dropped and counted → column projection →
//! highlights from the stored values, analysed like the index was.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rowsearch_indexer::{SortBy, TableIndex};
use rowsearch_store::{Column, ErrorKind, ReadOptions, Row, RowKeySchema, Store};

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
const CURSOR_PREFIX: &str = "c1.";

/// One search.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// tantivy's query syntax over the search field names.
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
}

/// One hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The row.
    pub row: Row,
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
    /// The table's typed row key, to show the hits' keys by field.
    pub row_key: Option<RowKeySchema>,
}

/// Searches tables' indexes and resolves the hits in the store. Share it
/// between threads; it keeps each table's index open.
#[derive(Debug)]
pub struct Searcher {
    store: Arc<Store>,
    indexes: Mutex<HashMap<String, Arc<TableIndex>>>,
    dropped: AtomicU64,
}

impl Searcher {
    /// A searcher over `store` (opened with the indexer's analyzer).
    pub fn new(store: Arc<Store>) -> Searcher {
        Searcher { store, indexes: Mutex::new(HashMap::new()), dropped: AtomicU64::new(0) }
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
        if limit == 0 || limit > MAX_LIMIT {
            return Err(Error::BadRequest(format!("limit must be 1..={MAX_LIMIT}, got {limit}")));
        }
        let generation = self.index(table)?.generation()?;
        if generation.table_id != table_id {
            // Built for an earlier table of this name, dropped since.
            return Err(Error::Indexer(rowsearch_indexer::Error::NoIndex { table: table.to_owned() }));
        }
        let (offset, cursor) = match &request.cursor {
            None => (request.offset, None),
            Some(cursor) => {
                let (cursor_generation, commit, offset) = parse_cursor(cursor)?;
                if cursor_generation != generation.number {
                    return Err(Error::StaleCursor { cursor_generation, serving: generation.number });
                }
                (offset, Some(commit))
            }
        };
        if offset.checked_add(limit).is_none_or(|end| end > MAX_RESULT_WINDOW) {
            return Err(Error::BadRequest(format!(
                "offset {offset} + limit {limit} goes past the {MAX_RESULT_WINDOW} hits a search pages through; \
                 narrow the query or sort by date and filter on it"
            )));
        }
        // Parsed once: for the search and, when highlighting, for its terms.
        let partitions: Vec<&[u8]> = match (&request.partition, &request.scope) {
            (Some(p), Some(scope)) if !scope.contains(p) => {
                return Err(Error::Forbidden(format!(
                    "this key may not search partition {:?}",
                    String::from_utf8_lossy(p)
                )));
            }
            (Some(p), _) => vec![p],
            (None, Some(scope)) => scope.iter().map(Vec::as_slice).collect(),
            (None, None) => Vec::new(),
        };
        let parsed = generation.parse(&request.query, &partitions)?;
        let found = generation.search_parsed(&request.query, &*parsed, request.sort, offset, limit)?;
        // An incremental reindex changes the hits under the same generation:
        // offsets would shift, so the walk restarts.
        if cursor.is_some_and(|c| c != found.commit) {
            return Err(Error::StaleCursor {
                cursor_generation: generation.number,
                serving: generation.number,
            });
        }

        // The search fields' columns are read too when highlighting, and
        // projected away afterwards.
        let mut read = ReadOptions { columns: request.columns.clone(), ..ReadOptions::default() };
        let field_columns: Vec<(String, String, Vec<u8>)> = search
            .fields
            .iter()
            .filter_map(|f| match Column::parse(f.column.as_bytes()) {
                Column::Qualifier(family, qualifier) => Some((f.name.clone(), family, qualifier)),
                Column::Family(_) => None,
            })
            .collect();
        if request.highlight && !read.columns.is_empty() {
            for (_, family, qualifier) in &field_columns {
                read.columns.push(Column::Qualifier(family.clone(), qualifier.clone()));
            }
        }
        let keys: Vec<&[u8]> = found.keys.iter().map(|(k, _)| k.as_slice()).collect();
        let rtxn = self.store.begin_read()?;
        let rows = rtxn.multi_get(table, &keys, &read)?;
        // A row without any selected column still exists: only rows the
        // store lacks altogether are stale.
        let mut resolved = Vec::with_capacity(rows.len());
        for (row, (key, value)) in rows.into_iter().zip(&found.keys) {
            match row {
                Some(row) => resolved.push(Some((row, *value))),
                None if rtxn.get(table, key, &ReadOptions::default())?.is_some() => {
                    resolved.push(Some((Row { key: key.clone(), cells: Vec::new() }, *value)));
                }
                None => resolved.push(None),
            }
        }
        drop(rtxn);

        let terms = if request.highlight { query_terms(&*parsed) } else { HashSet::new() };
        let mut hits = Vec::with_capacity(resolved.len());
        let mut dropped = 0;
        for item in resolved {
            let Some((mut row, value)) = item else {
                dropped += 1;
                continue;
            };
            let mut highlights = BTreeMap::new();
            if request.highlight {
                for (name, family, qualifier) in &field_columns {
                    if let Some(text) = row.value(family, qualifier) {
                        let text = String::from_utf8_lossy(text);
                        if let Some(snippet) =
                            rowsearch_indexer::analyzer::highlight(&text, &terms, SNIPPET_BYTES)
                        {
                            highlights.insert(name.clone(), snippet);
                        }
                    }
                }
                if !request.columns.is_empty() {
                    row.cells.retain(|c| {
                        request.columns.iter().any(|col| match col {
                            Column::Family(f) => *f == *c.family,
                            Column::Qualifier(f, q) => *f == *c.family && *q == c.qualifier,
                        })
                    });
                }
            }
            let (score, date_ms) = match request.sort {
                SortBy::Relevance => (Some(value), None),
                SortBy::Newest | SortBy::Oldest => (None, Some(value as u64)),
            };
            hits.push(SearchHit { row, score, date_ms, highlights });
        }
        self.dropped.fetch_add(dropped, Ordering::Relaxed);
        let next = offset.saturating_add(limit);
        Ok(SearchResults {
            total: found.total,
            took_ms: started.elapsed().as_secs_f64() * 1e3,
            hits,
            next_cursor: (next < found.total as usize)
                .then(|| format!("{CURSOR_PREFIX}{}.{:x}.{next}", generation.number, found.commit)),
            dropped,
            generation: generation.number,
            row_key: schema.row_key.clone(),
        })
    }
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

/// The text terms a query looks for (for highlights).
fn query_terms(parsed: &dyn rowsearch_indexer::tantivy::query::Query) -> HashSet<String> {
    let mut terms = HashSet::new();
    parsed.query_terms(&mut |term, _| {
        if let Some(text) = term.value().as_str() {
            terms.insert(text.to_owned());
        }
    });
    terms
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
