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
//!
//! A phrase of the catch-all `_all`, which keeps no positions, is matched
//! in each field `_all` holds ([`PhrasePrefix::across`]): the completions
//! are `_all`'s, in the same order, each matched in every field that holds
//! it, a document's frequency summed over its fields, scored over `_all`:
//! the documents and scores a phrase prefix over an `_all` with positions
//! gives.

use std::fmt;

use tantivy::directory::FileSlice;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::TermInfo;
use tantivy::query::{Bm25Weight, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, InvertedIndexReader, Score, SegmentReader, TERMINATED, Term};

use crate::word_cursor::{PositionFiles, Word};

/// Most completions of a phrase's last word tried per segment, in term
/// order (tantivy's own query tries 50 by default).
pub const MAX_COMPLETIONS: usize = 20_000;

/// Documents of a field holding `words` (position, term) in order
/// followed by a word starting with `prefix`.
#[derive(Clone)]
pub(crate) struct PhrasePrefix {
    /// The words' field: its statistics and norms score, its dictionary
    /// lists the completions.
    field: Field,
    /// Where positions are read: the words' field, or the fields `_all`
    /// holds.
    fields: Vec<Field>,
    words: Vec<(usize, Term)>,
    prefix: (usize, Term),
    /// Looked at before each segment and between completions.
    cancel: rowsearch_store::Cancel,
    /// The generation's opened positions files.
    positions: PositionFiles,
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
        let field = prefix.1.field();
        Self {
            field,
            fields: vec![field],
            words,
            prefix,
            cancel: cancel.clone(),
            positions: PositionFiles::default(),
        }
    }

    /// As [`Self::new`], of `_all`'s words (which keeps no positions),
    /// matched in each of `fields` (the fields `_all` holds).
    pub(crate) fn across(
        words: Vec<(usize, Term)>,
        prefix: (usize, Term),
        fields: Vec<Field>,
        cancel: &rowsearch_store::Cancel,
    ) -> Self {
        Self {
            field: prefix.1.field(),
            fields,
            words,
            prefix,
            cancel: cancel.clone(),
            positions: PositionFiles::default(),
        }
    }

    /// Reads positions from `positions` (a generation's, opened once).
    pub(crate) fn reading(mut self, positions: &PositionFiles) -> Self {
        self.positions = positions.clone();
        self
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
        let bm25 = phrase_scoring(&scoring, &self.fields, &self.words, "phrase prefix")?;
        Ok(Box::new(PhrasePrefixWeight { query: self.clone(), bm25 }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (_, term) in &self.words {
            visitor(term, true);
        }
    }
}

/// What a phrase's weight needs of the scoring: the fields it reads
/// positions of must keep them (else a schema error naming `what`), and
/// with scoring on, BM25 over `words` (none without words).
pub(crate) fn phrase_scoring(
    scoring: &EnableScoring<'_>,
    positions: &[Field],
    words: &[(usize, Term)],
    what: &'static str,
) -> tantivy::Result<Option<Bm25Weight>> {
    if let Some(&without) = positions.iter().find(|&&f| !crate::doc::has_positions(scoring.schema(), f)) {
        return Err(tantivy::TantivyError::SchemaError(format!(
            "{what} on {:?}, which has no positions",
            scoring.schema().get_field_name(without)
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

/// A phrase's BM25 score at `doc` with `count` occurrences (1 with
/// scoring off).
pub(crate) fn bm25_score(
    bm25: Option<&Bm25Weight>,
    fieldnorms: Option<&FieldNormReader>,
    doc: DocId,
    count: u32,
) -> Score {
    match (bm25, fieldnorms) {
        (Some(w), Some(norms)) => w.score(norms.fieldnorm_id(doc), count),
        (Some(w), None) => w.score(0, count),
        (None, _) => 1.0,
    }
}

/// `term`'s word as a term of `field` (itself when of `field`); `None` for
/// a term that is not text.
pub(crate) fn in_field(term: &Term, field: Field) -> Option<Term> {
    if term.field() == field {
        return Some(term.clone());
    }
    term.value().as_str().map(|text| Term::from_field_text(field, text))
}

struct PhrasePrefixWeight {
    query: PhrasePrefix,
    bm25: Option<Bm25Weight>,
}

/// One field the phrase is matched in: its anchors, and its open ones.
struct Side {
    index: std::sync::Arc<InvertedIndexReader>,
    /// The field's positions (`.pos`).
    positions: FileSlice,
    anchors: Anchors,
    /// Each anchor's place in the union of the sides' documents.
    union_at: Vec<usize>,
    /// The anchors no completion has matched yet (their documents, and
    /// their indexes in `anchors`): matched ones leave the list, so the
    /// later completions, often frequent ones, seek through fewer.
    open_docs: Vec<DocId>,
    open: Vec<usize>,
    /// Documents closed (by any side) when the list was last shrunk.
    closed_then: usize,
    /// Per completion (in term order), its term in this field.
    infos: Vec<Option<TermInfo>>,
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
        let mut sides = Vec::with_capacity(self.query.fields.len());
        let mut side_fields = Vec::with_capacity(self.query.fields.len());
        for &field in &self.query.fields {
            let index = reader.inverted_index(field)?;
            let Some((anchors, positions)) = self.anchors(reader, &index, field)? else { continue };
            if !anchors.docs.is_empty() {
                side_fields.push(field);
                sides.push(Side {
                    index,
                    positions,
                    anchors,
                    union_at: Vec::new(),
                    open_docs: Vec::new(),
                    open: Vec::new(),
                    closed_then: 0,
                    infos: Vec::new(),
                });
            }
        }
        if sides.is_empty() {
            return Ok(Vec::new());
        }
        // The completions (the first MAX_COMPLETIONS of the words' field
        // in term order), then each side's term for each.
        let prefix = self.query.prefix.1.serialized_value_bytes();
        let dictionary = reader.inverted_index(self.query.field)?;
        let mut terms: Vec<TermInfo> = Vec::new();
        // Their bytes, one after another (`ends[i]` closes the i-th), kept
        // only to find them in the other fields.
        let other_fields = side_fields.iter().any(|&f| f != self.query.field);
        let (mut bytes, mut ends) = (Vec::new(), Vec::new());
        let mut stream = prefix_range(&dictionary, prefix, None)?;
        while terms.len() < MAX_COMPLETIONS && stream.advance() {
            terms.push(stream.value().clone());
            if other_fields {
                bytes.extend_from_slice(stream.key());
                ends.push(bytes.len());
            }
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let key = |i: usize| &bytes[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        for (side, &field) in sides.iter_mut().zip(&side_fields) {
            if field == self.query.field {
                side.infos = terms.iter().map(|info| Some(info.clone())).collect();
                continue;
            }
            side.infos = vec![None; terms.len()];
            let mut stream = prefix_range(&side.index, prefix, Some(key(terms.len() - 1)))?;
            // Both in term order, the field's terms among `_all`'s: a walk.
            let mut at = 0;
            while stream.advance() {
                while at < terms.len() && key(at) < stream.key() {
                    at += 1;
                }
                if at < terms.len() && key(at) == stream.key() {
                    side.infos[at] = Some(stream.value().clone());
                }
            }
        }
        // Most documents first: the common ones match most anchors, which
        // then leave the lists before the long tail is intersected with them.
        let mut order: Vec<usize> = (0..terms.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(terms[i].doc_freq));
        // The sides' documents, each once, in order.
        let mut docs: Vec<DocId> = sides.iter().flat_map(|s| s.anchors.docs.iter().copied()).collect();
        docs.sort_unstable();
        docs.dedup();
        for side in &mut sides {
            side.union_at = side.anchors.docs.iter().map(|d| docs.partition_point(|u| u < d)).collect();
            side.open_docs = side.anchors.docs.clone();
            side.open = (0..side.anchors.docs.len()).collect();
        }
        let mut counts = vec![0u32; docs.len()];
        // Per document, the completion (its rank, from 1) that matched it:
        // it counts that one's occurrences in every field, no later one's.
        let mut matched_by = vec![0usize; docs.len()];
        let mut closed = 0;
        let mut found = Vec::new();
        for (rank, &completion) in order.iter().enumerate().map(|(r, c)| (r + 1, c)) {
            if sides.iter().all(|s| s.open.is_empty()) {
                break;
            }
            crate::cancellable::check(&self.query.cancel)?;
            for side in &mut sides {
                let Some(info) = &side.infos[completion] else { continue };
                if side.open.is_empty() {
                    continue;
                }
                // Documents only: most completions share none with the open
                // anchors, and their positions are opened when one does.
                let mut postings = side.index.read_postings_from_terminfo(info, IndexRecordOption::Basic)?;
                let mut positioned: Option<Word> = None;
                // Leapfrog: the completion's documents against the open anchors.
                let mut k = 0;
                let mut doc = postings.doc();
                while doc != TERMINATED && k < side.open_docs.len() {
                    let want = side.open_docs[k];
                    if doc < want {
                        doc = postings.seek(want);
                        continue;
                    }
                    if doc > want {
                        k = gallop(&side.open_docs, k, doc);
                        continue;
                    }
                    let i = side.open[k];
                    let u = side.union_at[i];
                    if matched_by[u] == 0 || matched_by[u] == rank {
                        let with_positions = match &mut positioned {
                            Some(p) => p,
                            None => positioned.insert(Word::open(
                                &side.index,
                                info,
                                &side.positions,
                                u32::try_from(side.open.len()).unwrap_or(u32::MAX),
                            )?),
                        };
                        with_positions.seek(doc);
                        found.clear();
                        with_positions.positions(&mut found);
                        let expected =
                            &side.anchors.positions[side.anchors.starts[i]..side.anchors.starts[i + 1]];
                        let n = sorted_intersection_count(expected, &found);
                        if n > 0 {
                            closed += usize::from(matched_by[u] == 0);
                            matched_by[u] = rank;
                            counts[u] = counts[u].saturating_add(n);
                        }
                    }
                    k += 1;
                    doc = postings.advance();
                }
            }
            // Shrinking costs a pass over a list: worth it once a good
            // share of it closed.
            for side in &mut sides {
                if closed > side.closed_then && (closed - side.closed_then) * 16 >= side.open.len() {
                    side.closed_then = closed;
                    side.open.retain(|&i| matched_by[side.union_at[i]] == 0);
                    side.open_docs.clear();
                    side.open_docs.extend(side.open.iter().map(|&i| side.anchors.docs[i]));
                }
            }
        }
        Ok(docs.into_iter().zip(counts).filter(|(_, c)| *c > 0).collect())
    }

    /// Where the completion must be, per document holding the fixed words
    /// in order, and the field's positions; `None` when a fixed word is
    /// not in the segment's field.
    fn anchors(
        &self,
        reader: &SegmentReader,
        index: &InvertedIndexReader,
        field: Field,
    ) -> tantivy::Result<Option<(Anchors, FileSlice)>> {
        if self.query.words.is_empty() {
            return Ok(None);
        }
        let mut infos = Vec::with_capacity(self.query.words.len());
        let target = self.query.prefix.0;
        for (offset, term) in &self.query.words {
            let Some(term) = in_field(term, field) else { return Ok(None) };
            let Some(info) = index.get_term_info(&term)? else { return Ok(None) };
            // A word at `offset` puts the completion `target - offset` further on.
            infos.push((u32::try_from(target.saturating_sub(*offset)).unwrap_or(u32::MAX), info));
        }
        let Some(positions) = self.query.positions.get(reader, field)? else { return Ok(None) };
        let words = Word::open_all(index, infos.iter().map(|(_, info)| info), &positions)?;
        let mut postings: Vec<(u32, Word)> = infos.iter().map(|(shift, _)| *shift).zip(words).collect();
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
        Ok(Some((anchors, positions)))
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
            .map(|&(doc, count)| bm25_score(bm25.as_ref(), fieldnorms.as_ref(), doc, count))
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

/// The terms of `index` starting with `prefix` (up to `last` when given),
/// in term order.
fn prefix_range<'a>(
    index: &'a InvertedIndexReader,
    prefix: &[u8],
    last: Option<&[u8]>,
) -> tantivy::Result<tantivy::termdict::TermStreamer<'a>> {
    let mut range = index.terms().range().ge(prefix);
    if let Some(end) = rowsearch_store::prefix_successor(prefix) {
        range = range.lt(end);
    }
    if let Some(last) = last {
        range = range.le(last);
    }
    Ok(range.into_stream()?)
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
