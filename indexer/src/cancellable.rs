//! Searches that stop when their request is over ([`Cancel`]).
//!
//! A query parsed with a [`Cancel`] (`ParseOptions::cancel`) looks at it
//! before each segment it searches and before each expanding word
//! (prefix, fuzzy word, typo variants, phrase prefix) looks through a
//! segment's terms, and a phrase prefix between its completions; once it
//! has fired the search ends with `Cancelled` instead of finishing work
//! nobody will read. Within one segment a plain term query runs to its
//! end: the expansion and clause budgets (`crate::query`) keep that short.
//! Checking costs an atomic load per segment and expansion, so the
//! collectors' own fast paths (block-WAND) stay as they are.

use rowsearch_store::{Cancel, CancelReason};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SeekDangerResult, SegmentReader, TantivyError, Term};

const TIME_LIMIT: &str = "rowsearch: cancelled: the request's time limit passed";
const ABANDONED: &str = "rowsearch: cancelled: the client has gone";

/// `Err` once `cancel` has fired, as tantivy errors travel.
pub(crate) fn check(cancel: &Cancel) -> tantivy::Result<()> {
    match cancel.reason() {
        None => Ok(()),
        Some(CancelReason::TimeLimit) => Err(TantivyError::InternalError(TIME_LIMIT.to_owned())),
        Some(CancelReason::Abandoned) => Err(TantivyError::InternalError(ABANDONED.to_owned())),
    }
}

/// The reason, when `e` is a cancellation made by [`check`].
pub(crate) fn reason_of(e: &TantivyError) -> Option<CancelReason> {
    match e {
        TantivyError::InternalError(m) if m == TIME_LIMIT => Some(CancelReason::TimeLimit),
        TantivyError::InternalError(m) if m == ABANDONED => Some(CancelReason::Abandoned),
        _ => None,
    }
}

/// `query`, stopping at `cancel` before each segment.
pub(crate) fn query(query: Box<dyn Query>, cancel: &Cancel) -> Box<dyn Query> {
    if cancel.can_fire() { Box::new(Cancellable { inner: query, cancel: cancel.clone() }) } else { query }
}

/// `weight`, stopping at `cancel` before each segment.
pub(crate) fn weight(weight: Box<dyn Weight>, cancel: &Cancel) -> Box<dyn Weight> {
    if cancel.can_fire() {
        Box::new(CancellableWeight { inner: weight, cancel: cancel.clone() })
    } else {
        weight
    }
}

/// The query a cancellable one wraps (for code that looks inside parsed
/// queries, such as highlights' [`crate::expand::QueryWords`]).
pub(crate) fn inner(query: &dyn Query) -> Option<&dyn Query> {
    query.downcast_ref::<Cancellable>().map(|c| c.inner.as_ref())
}

#[derive(Debug)]
struct Cancellable {
    inner: Box<dyn Query>,
    cancel: Cancel,
}

impl Clone for Cancellable {
    fn clone(&self) -> Self {
        Cancellable { inner: self.inner.box_clone(), cancel: self.cancel.clone() }
    }
}

impl Query for Cancellable {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        check(&self.cancel)?;
        Ok(weight(self.inner.weight(scoring)?, &self.cancel))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct CancellableWeight {
    inner: Box<dyn Weight>,
    cancel: Cancel,
}

impl Weight for CancellableWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        check(&self.cancel)?;
        self.inner.scorer(reader, boost)
    }

    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: Score,
    ) -> tantivy::Result<(SeekDangerResult, Box<dyn Scorer>)> {
        check(&self.cancel)?;
        self.inner.scorer_danger(reader, target, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        check(&self.cancel)?;
        self.inner.count(reader)
    }

    fn for_each(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score),
    ) -> tantivy::Result<()> {
        check(&self.cancel)?;
        self.inner.for_each(reader, callback)
    }

    fn for_each_no_score(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(&[DocId]),
    ) -> tantivy::Result<()> {
        check(&self.cancel)?;
        self.inner.for_each_no_score(reader, callback)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        check(&self.cancel)?;
        self.inner.for_each_pruning(threshold, reader, callback)
    }
}
