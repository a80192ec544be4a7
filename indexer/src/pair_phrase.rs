//! A bare two-word phrase answered from its word pair's postings
//! (`pairs.rs`): whether the index holds the pair ([`held`]), and the weight
//! and scorer reading it, scored as the positions path scores the phrase.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::SegmentPostings;
use tantivy::query::{Bm25Weight, EmptyScorer, Explanation, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, Term};

/// Whether some segment of `searcher` holds `pair` (a term of `_pairs`):
/// then every document where its words stand side by side holds it.
pub(crate) fn held(searcher: &Searcher, pair: &Term) -> tantivy::Result<bool> {
    for segment in searcher.segment_readers() {
        if segment.inverted_index(pair.field())?.get_term_info(pair)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A bare phrase of two words answered from its pair's postings, scored
/// as the phrase of `_all` (`field`).
pub(crate) struct PairWeight {
    pub(crate) pair: Term,
    pub(crate) field: Field,
    pub(crate) bm25: Option<Bm25Weight>,
    pub(crate) cancel: rowsearch_store::Cancel,
}

impl Weight for PairWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        crate::cancellable::check(&self.cancel)?;
        let bm25 = self.bm25.as_ref().map(|w| w.boost_by(boost));
        let fieldnorms = match &bm25 {
            Some(_) => reader.fieldnorms_readers().get_field(self.field)?,
            None => None,
        };
        let index = reader.inverted_index(self.pair.field())?;
        Ok(match index.read_postings(&self.pair, IndexRecordOption::WithFreqs)? {
            Some(postings) => Box::new(PairScorer { postings, bm25, fieldnorms }),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::phrase_prefix::explain_by_score(self, reader, doc, "phrase (word pair)")
    }
}

struct PairScorer {
    postings: SegmentPostings,
    bm25: Option<Bm25Weight>,
    fieldnorms: Option<FieldNormReader>,
}

impl DocSet for PairScorer {
    fn advance(&mut self) -> DocId {
        self.postings.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.postings.seek(target)
    }

    fn doc(&self) -> DocId {
        self.postings.doc()
    }

    fn size_hint(&self) -> u32 {
        self.postings.size_hint()
    }
}

impl Scorer for PairScorer {
    fn score(&mut self) -> Score {
        use tantivy::postings::Postings;
        let doc = self.postings.doc();
        crate::phrase_prefix::bm25_score(
            self.bm25.as_ref(),
            self.fieldnorms.as_ref(),
            doc,
            self.postings.term_freq(),
        )
    }
}
