//! What a [`Snapshot`] answers: a query parsed and run (keys, totals,
//! facets), its words corrected when it finds nothing, and a word's
//! completions. Each reads the generation and the overlay's layers
//! together, so a row written a moment ago is found, counted and
//! suggested; callers never handle the overlay themselves.

use tantivy::query::Query;

use crate::Result;
use crate::correct::OPENERS;
use crate::expand::QueryWords;
use crate::facets::FacetSpec;
use crate::live::Snapshot;
use crate::query::ParseOptions;
use crate::reader::{KeyHits, SortBy};

/// Candidates counted exactly when suggestions are confined to
/// partitions: every term with the prefix when there are at most this
/// many, else this many with the most documents overall (so a word
/// frequent in the partition but rare overall can be missed for a short
/// prefix; a longer one finds it).
pub const SCOPED_CANDIDATES: usize = 256;

/// A query parsed against one snapshot's schema, scoped to partitions.
pub struct ParsedQuery {
    text: String,
    query: Box<dyn Query>,
}

impl std::fmt::Debug for ParsedQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedQuery").field("text", &self.text).finish_non_exhaustive()
    }
}

impl ParsedQuery {
    /// The words a hit's highlights mark.
    pub fn words(&self) -> QueryWords {
        QueryWords::of(&*self.query)
    }
}

/// A word completed: what precedes it in the text, and the completions
/// with their documents, most first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completions {
    /// The text before the completed word (kept as typed).
    pub head: String,
    /// Terms and their documents (in the partitions asked for).
    pub terms: Vec<(String, u64)>,
}

impl Snapshot {
    /// Parses `text` (the query language, [`crate::query`]) scoped to
    /// `partitions` (any of them) unless that is empty.
    ///
    /// # Errors
    /// `Query` for a query that does not parse or passes a budget.
    pub fn parse(&self, text: &str, partitions: &[&[u8]], options: &ParseOptions) -> Result<ParsedQuery> {
        let query = self.generation.parse_with(text, partitions, options)?;
        Ok(ParsedQuery { text: text.to_owned(), query })
    }

    /// Runs `parsed`: the total, the keys `offset..offset + limit` in
    /// `sort` order, and `facets`' counts; scored with the statistics of
    /// `stats_partitions` alone when it is not empty (a confined caller).
    /// With `collapse`, one key per value of that facet field (the best
    /// matching document of each, with its matches), `total` the values.
    ///
    /// # Errors
    /// `Tantivy`, `Corrupted`, `Store` (`Cancelled`).
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        parsed: &ParsedQuery,
        facets: &[FacetSpec],
        stats_partitions: &[&[u8]],
        sort: SortBy,
        offset: usize,
        limit: usize,
        collapse: Option<&str>,
    ) -> Result<KeyHits> {
        self.generation.search_scoped(
            &parsed.text,
            &*parsed.query,
            self.overlay(),
            facets,
            stats_partitions,
            sort,
            offset,
            limit,
            collapse,
        )
    }

    /// `query` with its unknown words corrected, when that finds something
    /// in `partitions`: each plain word the index does not hold replaced by
    /// the nearest term it holds.
    ///
    /// # Errors
    /// As [`Self::search`].
    pub fn did_you_mean(&self, query: &str, partitions: &[&[u8]]) -> Result<Option<String>> {
        crate::correct::did_you_mean(&self.generation, self.overlay(), query, partitions)
    }

    /// Completes `text`'s last word (after what opens it and an optional
    /// `field:`) from the indexed terms: up to `limit` of them, most
    /// documents first. Within `partitions` each candidate is counted
    /// exactly there and a term none of them holds is left out; without,
    /// the counts are the dictionaries' (a deleted row counts until its
    /// segment merges).
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn complete(&self, text: &str, partitions: &[&[u8]], limit: usize) -> Result<Completions> {
        let generation = &*self.generation;
        let overlay = self.overlay();
        let start = text.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let mut word_at = start + text[start..].len() - text[start..].trim_start_matches(OPENERS).len();
        let mut field = generation.schema.all;
        if let Some((name, _)) = text[word_at..].split_once(':')
            && let Some(i) = generation.schema.field_index(name)
        {
            field = generation.schema.fields[i];
            word_at += name.len() + 1;
        }
        let head = text[..word_at].to_owned();
        let word = crate::analyzer::normalize(&text[word_at..]);
        if word.is_empty() || limit == 0 {
            return Ok(Completions { head, terms: Vec::new() });
        }
        let want = if partitions.is_empty() { limit } else { SCOPED_CANDIDATES };
        let mut terms = generation.top_completions(field, &word, overlay, want)?;
        if !partitions.is_empty() {
            // Most documents overall first. A term's documents in the
            // partitions are at most its documents overall, so once those
            // fall below the limit-th count so far, no later candidate can
            // rank among the first `limit`.
            let mut counted: Vec<(String, u64)> = Vec::with_capacity(limit + 1);
            for (term, overall) in terms {
                if counted.len() >= limit && counted.get(limit - 1).is_some_and(|(_, n)| overall < *n) {
                    break;
                }
                let docs = generation.count_term(field, &term, partitions, overlay)?;
                if docs > 0 {
                    counted.push((term, docs));
                    counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                }
            }
            terms = counted;
        }
        terms.truncate(limit);
        Ok(Completions { head, terms })
    }
}
