//! BM25 statistics of some partitions only, for searches by a key confined
//! to them: documents, a term's documents and a field's tokens counted
//! over the live documents of those partitions (with an overlay, as the
//! search sees them: the generation's rewritten rows hidden, the layers'
//! documents added). So a confined key's scores do not move when another
//! partition gains, loses or rewrites documents, and do not tell it how
//! often a word is used elsewhere.
//!
//! Tokens are summed from the field norms tantivy keeps per document
//! (exact up to 40 tokens, then rounded as BM25 itself rounds them).

use std::collections::HashMap;
use std::sync::Mutex;

use tantivy::collector::Count;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, Searcher, TERMINATED, Term};

/// Statistics over the documents `runs` select: each run a searcher and
/// the query picking the partitions' visible documents on it.
pub(crate) struct ScopedStats<'a> {
    runs: Vec<(&'a Searcher, Box<dyn Query>)>,
    tokens: Mutex<HashMap<Field, u64>>,
    docs: Mutex<Option<u64>>,
}

impl<'a> ScopedStats<'a> {
    /// Over `runs` (from `reader::runs` of the partitions' filter, or the
    /// generation's searcher with that filter alone).
    pub fn new(runs: Vec<(&'a Searcher, Box<dyn Query>)>) -> ScopedStats<'a> {
        ScopedStats { runs, tokens: Mutex::default(), docs: Mutex::default() }
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
        if let Some(n) = self.tokens.lock().unwrap_or_else(|e| e.into_inner()).get(&field) {
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
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).insert(field, total);
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        let mut docs = self.docs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = *docs {
            return Ok(n);
        }
        let n = self.count(None)?;
        *docs = Some(n);
        Ok(n)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.count(Some(&TermQuery::new(term.clone(), IndexRecordOption::Basic)))
    }
}
