//! BM25 statistics of some partitions only, for searches by a key confined
//! to them: documents, a term's documents and a field's tokens counted
//! over the live documents of those partitions (with an overlay, as the
//! search sees them: the generation's rewritten rows hidden, the layers'
//! documents added). So a confined key's scores do not move when another
//! partition gains, loses or rewrites documents, and do not tell it how
//! often a word is used elsewhere.
//!
//! Tokens are summed from the field norms tantivy keeps per document
//! (exact up to 40 tokens, then rounded as BM25 itself rounds them). What
//! is counted is kept per generation ([`ScopedCache`]) for the reader state,
//! overlay and partitions it was counted on, so the searches after the
//! first on the same state count nothing again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tantivy::collector::Count;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, Searcher, TERMINATED, Term};

/// The figures counted for one set of partitions on one point in time
/// (a reader state and an overlay), kept for the searches that follow:
/// they change only when the index or the overlay does.
#[derive(Debug, Default)]
pub(crate) struct ScopedCounts {
    tokens: Mutex<HashMap<Field, u64>>,
    docs: Mutex<Option<u64>>,
    doc_freqs: Mutex<HashMap<Term, u64>>,
}

/// Terms whose document counts a [`ScopedCounts`] keeps at most.
const CACHED_DOC_FREQS: usize = 4096;

/// The [`ScopedCounts`] of a generation's reader states, by (commit, the
/// overlay's writes, partitions); it starts again when full.
#[derive(Debug, Default)]
pub(crate) struct ScopedCache {
    counts: Mutex<HashMap<ScopeKey, Arc<ScopedCounts>>>,
}

/// A reader state's commit id, the overlay's first and last writes (0, 0
/// without one) and the partitions, sorted.
type ScopeKey = (u64, u64, u64, Vec<Vec<u8>>);

/// States and partition sets kept at once.
const CACHED_SCOPES: usize = 256;

impl ScopedCache {
    pub fn counts(&self, commit: u64, overlay: (u64, u64), partitions: &[&[u8]]) -> Arc<ScopedCounts> {
        let mut parts: Vec<Vec<u8>> = partitions.iter().map(|p| p.to_vec()).collect();
        parts.sort();
        let key = (commit, overlay.0, overlay.1, parts);
        let mut map = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= CACHED_SCOPES && !map.contains_key(&key) {
            map.clear();
        }
        Arc::clone(map.entry(key).or_default())
    }
}

/// Statistics over the documents `runs` select: each run a searcher and
/// the query picking the partitions' visible documents on it.
pub(crate) struct ScopedStats<'a> {
    runs: Vec<(&'a Searcher, Box<dyn Query>)>,
    counts: Arc<ScopedCounts>,
}

impl<'a> ScopedStats<'a> {
    /// Over `runs` (from `reader::runs` of the partitions' filter, or the
    /// generation's searcher with that filter alone), remembering what it
    /// counts in `counts` (from [`ScopedCache::counts`] for the same runs).
    pub fn new(runs: Vec<(&'a Searcher, Box<dyn Query>)>, counts: Arc<ScopedCounts>) -> ScopedStats<'a> {
        ScopedStats { runs, counts }
    }

    /// The partitions' filter: any of their `_partition` terms.
    pub fn filter(partition: Field, partitions: &[&[u8]]) -> Box<dyn Query> {
        let terms = partitions
            .iter()
            .map(|p| -> (Occur, Box<dyn Query>) {
                let term = Term::from_field_bytes(partition, p);
                (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)))
            })
            .collect();
        Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
            (Occur::Must, Box::new(BooleanQuery::new(terms))),
        ]))
    }

    fn count(&self, with: Option<&dyn Query>) -> tantivy::Result<u64> {
        let mut total = 0;
        for (on, q) in &self.runs {
            let n = match with {
                None => on.search(&**q, &Count)?,
                Some(w) => {
                    let both =
                        BooleanQuery::new(vec![(Occur::Must, q.box_clone()), (Occur::Must, w.box_clone())]);
                    on.search(&both, &Count)?
                }
            };
            total += n as u64;
        }
        Ok(total)
    }
}

impl Bm25StatisticsProvider for ScopedStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        if let Some(n) = self.counts.tokens.lock().unwrap_or_else(|e| e.into_inner()).get(&field) {
            return Ok(*n);
        }
        let mut total = 0u64;
        for (on, q) in &self.runs {
            let weight = q.weight(EnableScoring::disabled_from_searcher(on))?;
            for segment in on.segment_readers() {
                let Ok(norms) = segment.get_fieldnorms_reader(field) else { continue };
                let alive = segment.alive_bitset();
                let mut docs = weight.scorer(segment, 1.0)?;
                let mut doc = docs.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        total += u64::from(norms.fieldnorm(doc));
                    }
                    doc = docs.advance();
                }
            }
        }
        self.counts.tokens.lock().unwrap_or_else(|e| e.into_inner()).insert(field, total);
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        let mut docs = self.counts.docs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = *docs {
            return Ok(n);
        }
        let n = self.count(None)?;
        *docs = Some(n);
        Ok(n)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if let Some(n) = self.counts.doc_freqs.lock().unwrap_or_else(|e| e.into_inner()).get(term) {
            return Ok(*n);
        }
        let n = self.count(Some(&TermQuery::new(term.clone(), IndexRecordOption::Basic)))?;
        let mut freqs = self.counts.doc_freqs.lock().unwrap_or_else(|e| e.into_inner());
        if freqs.len() >= CACHED_DOC_FREQS {
            freqs.clear();
        }
        freqs.insert(term.clone(), n);
        Ok(n)
    }
}
