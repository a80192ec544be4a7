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

/// Candidates read first when suggestions are confined to partitions (the
/// most documents overall first); more are read, up to 4,096, until no
/// candidate left could rank among the suggestions.
pub const SCOPED_CANDIDATES: usize = 256;

/// Most candidates a completion counts (a prefix whose first thousands of
/// terms all tie would otherwise count them all).
const MAX_CANDIDATES: usize = 4096;

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
            None,
        )
    }

    /// As [`Self::search`] scored with `stats`, the sums over every shard
    /// of what [`Self::bm25_stats`] says on each (a search over many
    /// shards; `shard_stats.rs`).
    ///
    /// # Errors
    /// As [`Self::search`].
    #[allow(clippy::too_many_arguments)]
    pub fn search_with_stats(
        &self,
        parsed: &ParsedQuery,
        facets: &[FacetSpec],
        stats_partitions: &[&[u8]],
        sort: SortBy,
        offset: usize,
        limit: usize,
        collapse: Option<&str>,
        stats: &crate::ShardStats,
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
            Some(stats),
        )
    }

    /// What scoring `parsed` here asks of BM25 statistics (those of
    /// `stats_partitions` only, when not empty), to be summed with the
    /// other shards' for [`Self::search_with_stats`].
    ///
    /// # Errors
    /// `Query`, `Tantivy`.
    pub fn bm25_stats(&self, parsed: &ParsedQuery, stats_partitions: &[&[u8]]) -> Result<crate::ShardStats> {
        self.generation.record_stats(&parsed.text, &*parsed.query, self.overlay(), stats_partitions)
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
    /// documents first, each counted exactly: its live documents (within
    /// `partitions` when given); a term no live document holds is left
    /// out. Candidates come most documents first from the dictionaries
    /// (which count a deleted row until its segment merges: an upper
    /// bound), until none left could rank among the first `limit`.
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
        // Each candidate counted exactly: its live documents (a deleted or
        // rewritten row's terms stay in the dictionaries until a merge),
        // within the partitions; the dictionaries' counts bound them.
        let first = if partitions.is_empty() { limit * 2 + 8 } else { SCOPED_CANDIDATES.max(limit) };
        let terms = exact_top(
            limit,
            first,
            &mut |want| generation.top_completions(field, &word, overlay, want),
            &mut |term| generation.count_term(field, term, partitions, overlay),
        )?;
        Ok(Completions { head, terms })
    }

    /// Completes the last word of `text`, whose words before it are plain
    /// words, as the phrase they make: up to `limit` completions, each
    /// with the live documents (within `partitions`) where the phrase
    /// stands, most first. Candidates come most documents first from the
    /// dictionaries (a phrase stands in at most its last word's
    /// documents), until none left could rank among the first `limit`
    /// (at most 4,096 are counted).
    ///
    /// # Errors
    /// `Tantivy`, `Query`.
    pub fn complete_phrase(&self, text: &str, partitions: &[&[u8]], limit: usize) -> Result<Completions> {
        let generation = &*self.generation;
        let overlay = self.overlay();
        let start = text.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let head = text[..start].to_owned();
        let word = crate::analyzer::normalize(&text[start..]);
        if word.is_empty() || limit == 0 || head.trim().is_empty() {
            return Ok(Completions { head, terms: Vec::new() });
        }
        let field = generation.schema.all;
        let options = ParseOptions::default();
        // A phrase stands in at most its last word's documents.
        let phrase_head = head.trim_end();
        let terms = exact_top(
            limit,
            limit * 4 + 16,
            &mut |want| generation.top_completions(field, &word, overlay, want),
            &mut |term| {
                let parsed = self.parse(&format!("\"{phrase_head} {term}\""), partitions, &options)?;
                Ok(self.search(&parsed, &[], &[], SortBy::Newest, 0, 1, None)?.total)
            },
        )?;
        Ok(Completions { head, terms })
    }
}

/// The `limit` candidates with the most `count`, most first (ties by
/// term), none with 0. `candidates(want)` lists the first `want`
/// candidates, each with an upper bound of its count, highest first; they
/// are counted in that order until no candidate left could rank among the
/// first `limit` (its bound below the limit-th count so far), reading more
/// (four times as many, up to [`MAX_CANDIDATES`]) when they run out first.
fn exact_top(
    limit: usize,
    first: usize,
    candidates: &mut dyn FnMut(usize) -> Result<Vec<(String, u64)>>,
    count: &mut dyn FnMut(&str) -> Result<u64>,
) -> Result<Vec<(String, u64)>> {
    let mut want = first;
    let mut counted: Vec<(String, u64)> = Vec::with_capacity(limit + 1);
    let mut seen = std::collections::HashSet::new();
    loop {
        let terms = candidates(want)?;
        let exhausted = terms.len() < want;
        let mut settled = false;
        for (term, bound) in terms {
            if counted.len() >= limit && counted.get(limit - 1).is_some_and(|(_, n)| bound < *n) {
                settled = true;
                break;
            }
            if !seen.insert(term.clone()) {
                continue;
            }
            let n = count(&term)?;
            if n > 0 {
                counted.push((term, n));
                counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            }
        }
        if settled || exhausted || want >= MAX_CANDIDATES {
            break;
        }
        want = (want * 4).min(MAX_CANDIDATES);
    }
    counted.truncate(limit);
    Ok(counted)
}
