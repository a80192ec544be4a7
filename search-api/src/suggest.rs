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

use crate::searcher::partitions_of;
use crate::{Error, Result, SearchRequest, Searcher};
pub use rowsearch_indexer::SCOPED_CANDIDATES;

/// Suggestions per request when it does not say.
pub const DEFAULT_SUGGEST_LIMIT: usize = 5;
/// Most suggestions a request may ask for.
pub const MAX_SUGGEST_LIMIT: usize = 50;

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
    /// A `user` that holds no document, with the names nearest it (as a
    /// search says it); only when nothing was suggested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_user: Option<crate::UnknownUser>,
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
        let (schema, table_id) = self.searchable(table)?;
        let (_, snapshot, _, _) = self.snapshot(table, table_id, &search, started)?;
        let words: Vec<&str> = request.query.split_whitespace().collect();
        // After plain words, a completion is offered as the phrase it makes,
        // only where that phrase occurs, counted as a phrase: `natural ga`
        // suggests "natural gas" with the documents holding "natural gas".
        let phrase = words.len() > 1
            && words.iter().all(|w| w.chars().all(char::is_alphanumeric))
            && !request.query.ends_with(char::is_whitespace);
        let completed = if phrase {
            snapshot.complete_phrase(&request.query, &partitions, limit)?
        } else {
            snapshot.complete(&request.query, &partitions, limit)?
        };
        let terms = completed.terms;
        let unknown_user = match (&request.partition, schema.search.as_ref()) {
            (Some(user), Some(search)) if terms.is_empty() => {
                self.empty_partition(&snapshot, search, user, request.scope.as_deref())?
            }
            _ => None,
        };
        Ok(Suggestions {
            suggestions: terms
                .into_iter()
                .map(|(term, docs)| Suggestion { text: format!("{}{term}", completed.head), docs })
                .collect(),
            took_ms: started.elapsed().as_secs_f64() * 1e3,
            seq: snapshot.seq(),
            unknown_user,
        })
    }
}
