//! The cache of a prefix's most frequent completions, per reader state and
//! per segment of a generation (read by `suggest.rs`, held by each
//! `reader::Generation`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::index::SegmentId;
use tantivy::schema::Field;

/// Prefixes of at most this many characters are completed from the cache.
pub const CACHED_PREFIX_CHARS: usize = 3;
/// The completions of a prefix the cache keeps: the most frequent.
pub const CACHED_TERMS: usize = 512;
/// Prefixes the cache keeps at once (per generation, for reader states
/// and for segments each); it starts again when full.
const CACHED_PREFIXES: usize = 4096;

/// A prefix's most frequent completions in one reader state of a
/// generation (over all its segments).
#[derive(Debug)]
pub(crate) struct Cached {
    /// Up to [`CACHED_TERMS`] terms with their documents, most first.
    pub top: Vec<(String, u64)>,
    /// Whether `top` is every term with the prefix.
    pub complete: bool,
    /// The documents of the most frequent term left out (0 when none).
    pub cut: u64,
}

pub(crate) type SegmentKey = (SegmentId, Field, String);
/// A reader state by its segments (their dictionaries' counts include
/// deleted documents, so deletes do not change them).
pub(crate) type StateKey = (Vec<SegmentId>, Field, String);

/// Per (reader state, field, prefix), its [`Cached`] completions, and per
/// (segment, field, prefix) the segment's [`SegmentTerms`] they were made
/// from. A state is named by its segments, so its entry never outlives
/// the terms it counted; a segment's terms never change, so its entries
/// serve every state holding it: a commit reads only the segments it
/// added (`e` took 4-47 ms after each commit when every segment was read
/// again).
#[derive(Debug, Default)]
pub(crate) struct CompletionCache {
    states: Mutex<HashMap<StateKey, Arc<Cached>>>,
    segments: Mutex<HashMap<SegmentKey, Arc<SegmentTerms>>>,
}

impl CompletionCache {
    pub(crate) fn get(&self, key: &StateKey) -> Option<Arc<Cached>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    pub(crate) fn put(&self, key: StateKey, cached: Cached) -> Arc<Cached> {
        let cached = Arc::new(cached);
        let mut map = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        // Entries of an older reader state are never asked for again.
        map.retain(|(state, _, _), _| *state == key.0);
        if map.len() >= CACHED_PREFIXES {
            map.clear();
        }
        map.insert(key, Arc::clone(&cached));
        cached
    }

    pub(crate) fn segment(&self, key: &SegmentKey) -> Option<Arc<SegmentTerms>> {
        self.segments.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    /// Keeps `terms` for `key`, dropping the entries of segments no longer
    /// among `live` (merged away).
    pub(crate) fn put_segment(
        &self,
        key: SegmentKey,
        live: &[tantivy::SegmentReader],
        terms: SegmentTerms,
    ) -> Arc<SegmentTerms> {
        let terms = Arc::new(terms);
        let mut map = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|(segment, _, _), _| live.iter().any(|r| r.segment_id() == *segment));
        if map.len() >= CACHED_PREFIXES {
            map.clear();
        }
        map.insert(key, Arc::clone(&terms));
        terms
    }
}

/// A prefix's most frequent completions in one segment.
#[derive(Debug)]
pub(crate) struct SegmentTerms {
    /// Up to [`CACHED_TERMS`] terms with their documents in the segment.
    pub top: HashMap<String, u64>,
    /// Whether `top` is every term with the prefix in the segment.
    pub complete: bool,
    /// The documents of the most frequent term left out (0 when none).
    pub cut: u64,
}

impl SegmentTerms {
    /// From every completion in the segment, most first.
    pub(crate) fn of(all: Vec<(String, u64)>) -> SegmentTerms {
        let complete = all.len() <= CACHED_TERMS;
        let cut = all.get(CACHED_TERMS).map_or(0, |(_, n)| *n);
        SegmentTerms { top: all.into_iter().take(CACHED_TERMS).collect(), complete, cut }
    }
}
