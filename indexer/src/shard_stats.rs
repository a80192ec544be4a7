//! The BM25 statistics of a search over many shards (Elasticsearch's
//! `dfs_query_then_fetch`): each shard says what its search would ask of
//! its own statistics (documents, a field's tokens, a term's documents;
//! [`ShardStats`], recorded by running the query's weight on it), the
//! answers are summed over every shard, and each shard then scores with
//! the sums, so scores and order equal those of one index of every shard's
//! documents.
//!
//! Summed counts are tantivy's: documents and tokens include deleted
//! documents not yet merged away, as one index's do; shards merge apart,
//! so after deletes the sums may differ from one index's until both merge.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tantivy::Term;
use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query};
use tantivy::schema::Field;

/// What one shard's search asks of BM25 statistics, or the sums over
/// shards (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardStats {
    /// Documents.
    pub docs: u64,
    /// Tokens per field (tantivy's field number).
    pub tokens: BTreeMap<u32, u64>,
    /// Documents per term (its field number, `:`, its typed value in hex).
    pub doc_freqs: BTreeMap<String, u64>,
}

impl ShardStats {
    /// Adds another shard's figures.
    pub fn add(&mut self, other: &ShardStats) {
        self.docs += other.docs;
        for (field, n) in &other.tokens {
            *self.tokens.entry(*field).or_default() += n;
        }
        for (term, n) in &other.doc_freqs {
            *self.doc_freqs.entry(term.clone()).or_default() += n;
        }
    }

    /// Scoring with these figures, each one they lack taken from `local`
    /// (a term only this shard's parse found).
    pub(crate) fn over<'a>(&'a self, local: &'a dyn Bm25StatisticsProvider) -> Summed<'a> {
        Summed { sums: self, local }
    }
}

fn term_key(term: &Term) -> String {
    use std::fmt::Write;
    let mut key = format!("{}:", term.field().field_id());
    for b in term.value().as_serialized() {
        let _ = write!(key, "{b:02x}");
    }
    key
}

/// [`ShardStats`] as BM25's statistics (see [`ShardStats::over`]).
pub(crate) struct Summed<'a> {
    sums: &'a ShardStats,
    local: &'a dyn Bm25StatisticsProvider,
}

impl Bm25StatisticsProvider for Summed<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        match self.sums.tokens.get(&field.field_id()) {
            Some(n) => Ok(*n),
            None => self.local.total_num_tokens(field),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.sums.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        match self.sums.doc_freqs.get(&term_key(term)) {
            Some(n) => Ok(*n),
            None => self.local.doc_freq(term),
        }
    }
}

/// Answers from `inner`, noting every answer.
struct Recorder<'a> {
    inner: &'a dyn Bm25StatisticsProvider,
    seen: RefCell<ShardStats>,
}

impl Bm25StatisticsProvider for Recorder<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let n = self.inner.total_num_tokens(field)?;
        self.seen.borrow_mut().tokens.insert(field.field_id(), n);
        Ok(n)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.inner.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let n = self.inner.doc_freq(term)?;
        self.seen.borrow_mut().doc_freqs.insert(term_key(term), n);
        Ok(n)
    }
}

/// What scoring `runs` (each a searcher and its query) asks of `stats`:
/// the weights are built as a search builds them, and every figure asked
/// noted, with the document count.
pub(crate) fn record(
    runs: &[(&tantivy::Searcher, Box<dyn Query>)],
    stats: &dyn Bm25StatisticsProvider,
) -> tantivy::Result<ShardStats> {
    let recorder = Recorder { inner: stats, seen: RefCell::new(ShardStats::default()) };
    for (on, query) in runs {
        query.weight(EnableScoring::enabled_from_statistics_provider(&recorder, on))?;
    }
    let mut seen = recorder.seen.into_inner();
    seen.docs = stats.total_num_docs()?;
    Ok(seen)
}
