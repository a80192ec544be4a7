//! Suggestions (`/tables/{t}/suggest`): the query's last word completed
//! from the indexed terms, and `did_you_mean`: a query that finds nothing,
//! its unknown words corrected.
//!
//! Both read the index's term dictionaries on the snapshot a search would
//! answer from (the generation and the overlay of the rows written since),
//! so a word written a moment ago is suggested. Without a partition or a
//! confinement the documents shown are dictionary counts (a deleted row
//! counts until its segment merges); within partitions each candidate is
//! counted exactly, and a term none of them holds is never shown, so a
//! confined key learns nothing of other partitions' words.

use std::time::Instant;

use rowsearch_store::ErrorKind;

use crate::searcher::{Fresh, partitions_of};
use crate::{Error, Result, SearchRequest, Searcher};
use rowsearch_indexer::correct::OPENERS;

/// Suggestions per request when it does not say.
pub const DEFAULT_SUGGEST_LIMIT: usize = 5;
/// Most suggestions a request may ask for.
pub const MAX_SUGGEST_LIMIT: usize = 50;
/// Candidates counted exactly when the suggestions are confined to
/// partitions: every term with the prefix when there are at most this
/// many, else this many with the most documents overall (so a word
/// frequent in the partition but rare overall can be missed for a short
/// prefix; a longer one finds it).
pub const SCOPED_CANDIDATES: usize = 256;

/// What to complete.
#[derive(Debug, Clone, Default)]
pub struct SuggestRequest {
    /// The text typed so far: its last word is completed.
    pub query: String,
    /// Only this partition's terms.
    pub partition: Option<Vec<u8>>,
    /// The partitions the caller may see (see [`SearchRequest::scope`]).
    pub scope: Option<Vec<Vec<u8>>>,
    /// Suggestions (default [`DEFAULT_SUGGEST_LIMIT`], at most
    /// [`MAX_SUGGEST_LIMIT`]).
    pub limit: Option<usize>,
}

/// One suggestion.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Suggestion {
    /// The query with its last word completed.
    pub text: String,
    /// Documents holding the completed word (in the partitions asked for).
    pub docs: u64,
}

/// Suggestions, most documents first.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Suggestions {
    /// The suggestions.
    pub suggestions: Vec<Suggestion>,
    /// Wall time, ms.
    pub took_ms: f64,
    /// The answer reflects every write (feed seq) up to this one.
    pub seq: u64,
}

impl Searcher {
    /// Completes `request.query`'s last word from `table`'s indexed terms
    /// (a `field:` before it completes from that field).
    ///
    /// # Errors
    /// As [`Searcher::search`]: `Store` (unknown or unsearchable table),
    /// `Indexer`, `BadRequest` (an empty query, a limit out of range),
    /// `Forbidden` (a partition outside the confinement).
    pub fn suggest(&self, table: &str, request: &SuggestRequest) -> Result<Suggestions> {
        let started = Instant::now();
        let limit = request.limit.unwrap_or(DEFAULT_SUGGEST_LIMIT);
        if !(1..=MAX_SUGGEST_LIMIT).contains(&limit) {
            return Err(Error::BadRequest(format!("limit must be 1..={MAX_SUGGEST_LIMIT}, got {limit}")));
        }
        if request.query.trim().is_empty() {
            return Err(Error::BadRequest("q is empty".into()));
        }
        let search = SearchRequest {
            partition: request.partition.clone(),
            scope: request.scope.clone(),
            ..SearchRequest::default()
        };
        let partitions = partitions_of(&request.partition, &request.scope)?;
        let (generation, overlay, seq) = self.snapshot(table, &search, started)?;
        let done =
            |suggestions| Suggestions { suggestions, took_ms: started.elapsed().as_secs_f64() * 1e3, seq };

        // The last word, after what opens it and an optional `field:`.
        let query = request.query.as_str();
        let start = query.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let mut word_at = start + query[start..].len() - query[start..].trim_start_matches(OPENERS).len();
        let mut field = generation.schema.all;
        if let Some((name, _)) = query[word_at..].split_once(':')
            && let Some(i) = generation.schema.field_index(name)
        {
            field = generation.schema.fields[i];
            word_at += name.len() + 1;
        }
        let word: String = query[word_at..].chars().flat_map(char::to_lowercase).collect();
        if word.is_empty() {
            return Ok(done(Vec::new()));
        }
        let want = if partitions.is_empty() { limit } else { SCOPED_CANDIDATES };
        let mut candidates = generation.top_completions(field, &word, overlay.as_deref(), want)?;
        if !partitions.is_empty() {
            // Most documents overall first. A term's documents in the
            // partitions are at most its documents overall, so once those
            // fall below the limit-th count so far, no later candidate can
            // rank among the first `limit`.
            let mut counted: Vec<(String, u64)> = Vec::with_capacity(limit + 1);
            for (term, overall) in candidates {
                if counted.len() >= limit && counted.get(limit - 1).is_some_and(|(_, n)| overall < *n) {
                    break;
                }
                let docs = generation.count_term(field, &term, &partitions, overlay.as_deref())?;
                if docs > 0 {
                    counted.push((term, docs));
                    counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                }
            }
            candidates = counted;
        }
        candidates.truncate(limit);
        let head = &query[..word_at];
        Ok(done(
            candidates
                .into_iter()
                .map(|(term, docs)| Suggestion { text: format!("{head}{term}"), docs })
                .collect(),
        ))
    }

    /// The snapshot a search of `table` as `request` would answer from.
    fn snapshot(&self, table: &str, request: &SearchRequest, started: Instant) -> Result<Fresh> {
        let (schema, table_id) = {
            let rtxn = self.store().begin_read()?;
            (rtxn.schema(table)?, rtxn.table_id(table)?)
        };
        if schema.search.is_none() {
            return Err(Error::Store(ErrorKind::NotSearchable { table: table.to_owned() }.into()));
        }
        let index = self.index(table)?;
        let fresh = self.fresh_generation(&index, table, request, started)?;
        if fresh.0.table_id != table_id {
            return Err(Error::Indexer(rowsearch_indexer::Error::NoIndex { table: table.to_owned() }));
        }
        Ok(fresh)
    }
}
