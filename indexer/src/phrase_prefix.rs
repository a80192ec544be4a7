//! `"a b"*`: phrases whose last word is a prefix, matched completion by
//! completion.
//!
//! tantivy's `PhrasePrefixQuery` walks the documents of the fixed words and,
//! at each, visits every completion of the prefix: documents x completions
//! steps (`"natural ga"*`: ~8,000 x 1,000), which is why it caps the
//! completions (50 by default, in term order, so a common completion late in
//! the order is silently left out). Here the fixed words' phrase is found
//! once per segment (documents and the position the last word must take),
//! then each completion's postings are intersected with that list by
//! seeking, so a rare completion costs a few seeks and the cap can be far
//! higher ([`MAX_COMPLETIONS`]); a document one completion matched leaves
//! the list the others are intersected with. Matches score as tantivy's phrase queries do (BM25
//! over the phrase's words), with the occurrences of the first completion
//! found in the document as the frequency.

use std::fmt;

use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{Bm25Weight, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

/// Most completions of a phrase's last word tried per segment, in term
/// order (tantivy's own query tries 50 by default).
pub const MAX_COMPLETIONS: usize = 20_000;

/// Documents of a field holding `words` (position, term) in order
/// followed by a word starting with `prefix`.
#[derive(Clone)]
pub(crate) struct PhrasePrefix {
    field: Field,
    words: Vec<(usize, Term)>,
    prefix: (usize, Term),
    /// Looked at before each segment and between completions.
    cancel: rowsearch_store::Cancel,
}

impl fmt::Debug for PhrasePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhrasePrefix").field("words", &self.words).field("prefix", &self.prefix).finish()
    }
}

impl PhrasePrefix {
    /// `words` (position, term) in order, of `prefix`'s field, and the
    /// prefix after them. With no words it matches nothing (the parser
    /// makes a lone prefix a prefix query).
    pub(crate) fn new(
        words: Vec<(usize, Term)>,
        prefix: (usize, Term),
        cancel: &rowsearch_store::Cancel,
    ) -> Self {
        Self { field: prefix.1.field(), words, prefix, cancel: cancel.clone() }
    }

    /// The last word's prefix.
    pub(crate) fn prefix(&self) -> &Term {
        &self.prefix.1
    }

    /// Its words, the prefix included.
    pub(crate) fn words(&self) -> usize {
        self.words.len() + 1
    }
}

impl Query for PhrasePrefix {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        crate::cancellable::check(&self.cancel)?;
        let bm25 = phrase_scoring(&scoring, self.field, &self.words, "phrase prefix")?;
        Ok(Box::new(PhrasePrefixWeight { query: self.clone(), bm25 }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (_, term) in &self.words {
            visitor(term, true);
        }
    }
}

/// What a phrase's weight needs of the scoring: its field must keep
/// positions (else a schema error naming `what`), and with scoring on,
/// BM25 over `words` (none without words).
pub(crate) fn phrase_scoring(
    scoring: &EnableScoring<'_>,
    field: Field,
    words: &[(usize, Term)],
    what: &'static str,
) -> tantivy::Result<Option<Bm25Weight>> {
    let has_positions = scoring
        .schema()
        .get_field_entry(field)
        .field_type()
        .get_index_record_option()
        .is_some_and(IndexRecordOption::has_positions);
    if !has_positions {
        return Err(tantivy::TantivyError::SchemaError(format!(
            "{what} on {:?}, which has no positions",
            scoring.schema().get_field_name(field)
        )));
    }
    Ok(match scoring {
        EnableScoring::Enabled { statistics_provider, .. } if !words.is_empty() => {
            let terms: Vec<Term> = words.iter().map(|(_, t)| t.clone()).collect();
            Some(Bm25Weight::for_terms(*statistics_provider, &terms)?)
        }
        EnableScoring::Enabled { .. } | EnableScoring::Disabled { .. } => None,
    })
}

struct PhrasePrefixWeight {
    query: PhrasePrefix,
    bm25: Option<Bm25Weight>,
}

/// The fixed words' phrase in one segment: per document, the positions the
/// completion must take (sorted).
struct Anchors {
    docs: Vec<DocId>,
    /// `positions[starts[i]..starts[i + 1]]` for `docs[i]`.
    starts: Vec<usize>,
    positions: Vec<u32>,
}

impl PhrasePrefixWeight {
    /// Documents with their phrase counts, in document order.
    fn matches(&self, reader: &SegmentReader) -> tantivy::Result<Vec<(DocId, u32)>> {
        crate::cancellable::check(&self.query.cancel)?;
        let index = reader.inverted_index(self.query.field)?;
        let Some(anchors) = self.anchors(&index)? else { return Ok(Vec::new()) };
        if anchors.docs.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = self.query.prefix.1.serialized_value_bytes();
        let mut range = index.terms().range().ge(prefix);
        if let Some(end) = rowsearch_store::prefix_successor(prefix) {
            range = range.lt(end);
        }
        let mut stream = range.into_stream()?;
        // The completions (the first MAX_COMPLETIONS in term order), most
        // documents first: the common ones match most anchors, which then
        // leave the list before the long tail is intersected with it.
        let mut completions = Vec::new();
        while completions.len() < MAX_COMPLETIONS && stream.advance() {
            completions.push(stream.value().clone());
        }
        completions.sort_by_key(|info| std::cmp::Reverse(info.doc_freq));
        let mut counts = vec![0u32; anchors.docs.len()];
        // The anchors no completion has matched yet (their documents, and
        // their indexes in `anchors`): matched ones leave the list, so the
        // later completions, often frequent ones, seek through fewer.
        let mut open_docs = anchors.docs.clone();
        let mut open: Vec<usize> = (0..anchors.docs.len()).collect();
        let mut found = Vec::new();
        for info in &completions {
            if open.is_empty() {
                break;
            }
            crate::cancellable::check(&self.query.cancel)?;
            // Documents only: most completions share none with the open
            // anchors, and their positions are opened when one does.
            let mut postings = index.read_postings_from_terminfo(info, IndexRecordOption::Basic)?;
            let mut positioned: Option<SegmentPostings> = None;
            // Leapfrog: the completion's documents against the open anchors.
            let (mut k, mut matched) = (0, 0);
            let mut doc = postings.doc();
            while doc != TERMINATED && k < open_docs.len() {
                let want = open_docs[k];
                if doc < want {
                    doc = postings.seek(want);
                    continue;
                }
                if doc > want {
                    k = gallop(&open_docs, k, doc);
                    continue;
                }
                let i = open[k];
                if counts[i] == 0 {
                    let with_positions =
                        match &mut positioned {
                            Some(p) => p,
                            None => positioned.insert(index.read_postings_from_terminfo(
                                info,
                                IndexRecordOption::WithFreqsAndPositions,
                            )?),
                        };
                    with_positions.seek(doc);
                    found.clear();
                    with_positions.positions(&mut found);
                    let expected = &anchors.positions[anchors.starts[i]..anchors.starts[i + 1]];
                    counts[i] = sorted_intersection_count(expected, &found);
                    matched += usize::from(counts[i] > 0);
                }
                k += 1;
                doc = postings.advance();
            }
            // Shrinking costs a pass over the list: worth it once a good
            // share left.
            if matched > 0 && matched * 16 >= open.len() {
                open.retain(|&i| counts[i] == 0);
                open_docs.clear();
                open_docs.extend(open.iter().map(|&i| anchors.docs[i]));
            }
        }
        Ok(anchors.docs.iter().zip(counts).filter(|(_, c)| *c > 0).map(|(d, c)| (*d, c)).collect())
    }

    /// Where the completion must be, per document holding the fixed words
    /// in order; `None` when a fixed word is not in the segment.
    fn anchors(&self, index: &tantivy::InvertedIndexReader) -> tantivy::Result<Option<Anchors>> {
        if self.query.words.is_empty() {
            return Ok(None);
        }
        let mut postings: Vec<(u32, SegmentPostings)> = Vec::with_capacity(self.query.words.len());
        let target = self.query.prefix.0;
        for (offset, term) in &self.query.words {
            let Some(p) = index.read_postings(term, IndexRecordOption::WithFreqsAndPositions)? else {
                return Ok(None);
            };
            // A word at `offset` puts the completion `target - offset` further on.
            postings.push((u32::try_from(target.saturating_sub(*offset)).unwrap_or(u32::MAX), p));
        }
        // Rarest first: it drives the intersection.
        postings.sort_by_key(|(_, p)| p.doc_freq());
        let mut anchors = Anchors { docs: Vec::new(), starts: vec![0], positions: Vec::new() };
        let (mut here, mut other) = (Vec::new(), Vec::new());
        let mut doc = postings[0].1.doc();
        'docs: while doc != TERMINATED {
            for (_, p) in &mut postings[1..] {
                let d = p.seek(doc);
                if d != doc {
                    doc = postings[0].1.seek(d);
                    continue 'docs;
                }
            }
            let (shift, first) = &mut postings[0];
            first.positions_with_offset(*shift, &mut here);
            for (shift, p) in &mut postings[1..] {
                p.positions_with_offset(*shift, &mut other);
                here.retain(|pos| other.binary_search(pos).is_ok());
                if here.is_empty() {
                    break;
                }
            }
            if !here.is_empty() {
                anchors.docs.push(doc);
                anchors.positions.extend_from_slice(&here);
                anchors.starts.push(anchors.positions.len());
            }
            doc = postings[0].1.advance();
        }
        Ok(Some(anchors))
    }
}

impl Weight for PhrasePrefixWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let matches = self.matches(reader)?;
        if matches.is_empty() {
            return Ok(Box::new(EmptyScorer));
        }
        let fieldnorms = match &self.bm25 {
            Some(_) => reader.fieldnorms_readers().get_field(self.query.field)?,
            None => None,
        };
        let bm25 = self.bm25.as_ref().map(|w| w.boost_by(boost));
        let scores = matches
            .iter()
            .map(|&(doc, count)| match (&bm25, &fieldnorms) {
                (Some(w), Some(norms)) => w.score(norms.fieldnorm_id(doc), count),
                (Some(w), None) => w.score(0, count),
                (None, _) => 1.0,
            })
            .collect();
        Ok(Box::new(ListScorer { docs: matches.into_iter().map(|(d, _)| d).collect(), scores, at: 0 }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        explain_by_score(self, reader, doc, "phrase prefix")
    }
}

/// A phrase query's explanation: `doc`'s score from `weight`'s scorer,
/// named `what` (its BM25 parts are not broken down).
pub(crate) fn explain_by_score(
    weight: &dyn Weight,
    reader: &SegmentReader,
    doc: DocId,
    what: &'static str,
) -> tantivy::Result<Explanation> {
    let mut scorer = weight.scorer(reader, 1.0)?;
    if scorer.seek(doc) != doc {
        return Err(tantivy::TantivyError::InvalidArgument(format!("document {doc} does not match")));
    }
    Ok(Explanation::new(what, scorer.score()))
}

/// A sorted list of documents with their scores.
struct ListScorer {
    docs: Vec<DocId>,
    scores: Vec<Score>,
    at: usize,
}

impl DocSet for ListScorer {
    fn advance(&mut self) -> DocId {
        self.at += 1;
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() < target {
            self.at += self.docs[self.at..].partition_point(|&d| d < target);
        }
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        u32::try_from(self.docs.len() - self.at.min(self.docs.len())).unwrap_or(u32::MAX)
    }
}

impl Scorer for ListScorer {
    fn score(&mut self) -> Score {
        self.scores.get(self.at).copied().unwrap_or(0.0)
    }
}

/// The first index at or after `from` whose document is not below
/// `target` (`docs` sorted): galloping, as the next one is usually near.
fn gallop(docs: &[DocId], from: usize, target: DocId) -> usize {
    let mut step = 1;
    let mut low = from;
    while low + step < docs.len() && docs[low + step] < target {
        low += step;
        step *= 2;
    }
    let high = (low + step + 1).min(docs.len());
    low + docs[low..high].partition_point(|&d| d < target)
}

/// How many values two sorted lists share.
fn sorted_intersection_count(a: &[u32], b: &[u32]) -> u32 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_finds_the_first_document_not_below() {
        let docs: Vec<DocId> = (0..100).map(|d| d * 3).collect();
        for from in [0, 1, 7, 50, 99] {
            for target in 0..310 {
                let want = from + docs[from..].partition_point(|&d| d < target);
                assert_eq!(gallop(&docs, from, target), want, "from {from} target {target}");
            }
        }
    }

    #[test]
    fn intersection_counts_shared_values() {
        assert_eq!(sorted_intersection_count(&[1, 3, 5, 9], &[2, 3, 9, 10]), 2);
        assert_eq!(sorted_intersection_count(&[], &[1]), 0);
    }
}
