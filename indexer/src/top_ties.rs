//! The best hits by score with the tie at their end, in one pass.
//!
//! A page's last hit may tie with hits past it, and which of them belong
//! on the page is decided by row key (`ties.rs`). tantivy's `TopDocs`
//! keeps the best `n` and drops the rest of such a tie, so the page was
//! gathered again with room for [`crate::ties::MAX_TIE_READ`] more: the
//! whole query evaluated twice. Phrase scores tie often (a count of one or
//! two, field lengths in BM25's buckets): three of the peer bench's eight
//! phrases (`"credit risk"`, `"press release"`, `"gas storage"`) ran twice.
//! [`TopWithTies`] keeps, besides the best `best` hits, every hit tied with
//! the `best`-th, by address, up to `cap` hits in all: what the second
//! pass kept of that tie (the best `cap` hits, address breaking ties), so
//! the page is the same, from one evaluation.
//!
//! Hits come to a segment in address order, so once `cap` is reached the
//! tie is closed: a later hit of the same score would be cut anyway.

use std::cmp::Ordering;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

/// Hits best first: score descending, then address (or document)
/// ascending.
fn best_first<T: Ord>(a: &(Score, T), b: &(Score, T)) -> Ordering {
    b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1))
}

/// The best `best` hits by score, then those tied with the `best`-th, by
/// address, at most `cap` hits in all (`cap` >= `best`); best first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TopWithTies {
    best: usize,
    cap: usize,
}

impl TopWithTies {
    pub(crate) fn new(best: usize, cap: usize) -> Self {
        let best = best.max(1);
        TopWithTies { best, cap: cap.max(best) }
    }

    /// `hits` (best first) cut as the collector cuts them.
    fn cut(&self, hits: &mut Vec<(Score, DocAddress)>) {
        if hits.len() > self.best {
            let kth = hits[self.best - 1].0;
            let keep = hits.iter().position(|h| h.0 < kth).unwrap_or(hits.len());
            hits.truncate(keep.min(self.cap));
        }
    }
}

impl Collector for TopWithTies {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = SegmentTop;

    fn for_segment(&self, segment: SegmentOrdinal, _reader: &SegmentReader) -> tantivy::Result<SegmentTop> {
        Ok(SegmentTop::new(segment, *self))
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut hits: Vec<_> = fruits.into_iter().flatten().collect();
        hits.sort_by(best_first);
        self.cut(&mut hits);
        Ok(hits)
    }
}

/// One segment's part of [`TopWithTies`].
pub(crate) struct SegmentTop {
    segment: SegmentOrdinal,
    want: TopWithTies,
    /// Hits that may still be kept (unordered between cuts).
    hits: Vec<(Score, DocId)>,
    /// The `best`-th score at the last cut (-inf before it): a hit below
    /// it is not kept.
    floor: Score,
    /// Whether the tie at `floor` is full (`cap` reached): a hit of that
    /// score, later in address order, is not kept either.
    closed: bool,
    /// How many hits make the next cut.
    cut_at: usize,
}

impl SegmentTop {
    fn new(segment: SegmentOrdinal, want: TopWithTies) -> Self {
        let cut_at = (2 * want.best).max(64);
        SegmentTop {
            segment,
            want,
            hits: Vec::with_capacity(cut_at),
            floor: Score::NEG_INFINITY,
            closed: false,
            cut_at,
        }
    }

    /// Drops what can no longer be kept: below the `best`-th score, and
    /// the tie past `cap`.
    fn cut(&mut self) {
        let best = self.want.best;
        if self.hits.len() > best {
            self.hits.select_nth_unstable_by(best - 1, best_first);
            let kth = self.hits[best - 1].0;
            self.hits.retain(|h| h.0 >= kth);
            if self.floor != kth {
                self.closed = false;
            }
            self.floor = kth;
            if self.hits.len() > self.want.cap {
                // Fewer than `best` hits score above the floor: what goes
                // is the tie's latest addresses.
                self.hits.sort_unstable_by(best_first);
                self.hits.truncate(self.want.cap);
                self.closed = true;
            }
        }
        self.cut_at = (2 * self.hits.len()).max(2 * best).max(64);
    }
}

impl SegmentCollector for SegmentTop {
    type Fruit = Vec<(Score, DocAddress)>;

    #[inline]
    fn collect(&mut self, doc: DocId, score: Score) {
        if score < self.floor || (score == self.floor && self.closed) {
            return;
        }
        self.hits.push((score, doc));
        if self.hits.len() >= self.cut_at {
            self.cut();
        }
    }

    fn harvest(mut self) -> Self::Fruit {
        self.cut();
        let segment = self.segment;
        let mut hits: Vec<_> =
            self.hits.into_iter().map(|(score, doc)| (score, DocAddress::new(segment, doc))).collect();
        hits.sort_by(best_first);
        hits
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the collector must give: every hit best first, the best
    /// `best`, then those tied with the `best`-th, `cap` in all.
    fn brute_force(hits: &[(Score, DocAddress)], best: usize, cap: usize) -> Vec<(Score, DocAddress)> {
        let mut all = hits.to_vec();
        all.sort_by(best_first);
        TopWithTies::new(best, cap).cut(&mut all);
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Against the full sort, over segments of many ties (scores from
        /// a few values), whatever `best` and `cap`.
        #[test]
        fn keeps_the_best_and_their_tie(
            segments in prop::collection::vec(prop::collection::vec(0..5u8, 0..300), 1..4),
            best in 1..40usize,
            extra in 0..200usize,
        ) {
            let cap = best + extra;
            let want = TopWithTies::new(best, cap);
            let mut all = Vec::new();
            let mut fruits = Vec::new();
            for (s, scores) in segments.iter().enumerate() {
                let mut child = SegmentTop::new(s as SegmentOrdinal, want);
                for (doc, &score) in scores.iter().enumerate() {
                    let score = Score::from(score);
                    child.collect(doc as DocId, score);
                    all.push((score, DocAddress::new(s as SegmentOrdinal, doc as DocId)));
                }
                fruits.push(child.harvest());
            }
            let got = want.merge_fruits(fruits).unwrap();
            prop_assert_eq!(got, brute_force(&all, best, cap));
        }
    }

    /// A tie past `cap` is cut by address, and closed: no later hit of
    /// the same score comes in, a better one does.
    #[test]
    fn a_full_tie_is_closed() {
        let want = TopWithTies::new(2, 5);
        let mut child = SegmentTop::new(0, want);
        for doc in 0..100 {
            child.collect(doc, 1.0);
        }
        child.collect(100, 2.0);
        let docs: Vec<DocId> = child.harvest().iter().map(|h| h.1.doc_id).collect();
        assert_eq!(docs, [100, 0, 1, 2, 3]);
    }
}
