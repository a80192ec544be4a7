//! Terms from the index's dictionaries: completions of a word's start
//! (for `/suggest`), corrections of a word that finds nothing (for
//! `did_you_mean`), and exact counts of a query's matches.
//!
//! Dictionaries are read from every segment of the generation and of the
//! overlay's layers, so a row written a moment ago has its terms found.
//! A term's documents there are tantivy's document frequencies (a deleted
//! or rewritten row's terms count until its segment is merged); where the
//! count must be exact, or confined to partitions, [`Generation::count`]
//! runs the term as a query instead.

use std::collections::HashMap;

use tantivy::collector::Count;
use tantivy::index::SegmentId;
use tantivy::query::{FuzzyTermQuery, Query};
use tantivy::schema::Field;
use tantivy::termdict::TermDictionary;
use tantivy::{Searcher, Term};

use crate::Result;
use crate::completion_cache::{CACHED_PREFIX_CHARS, CACHED_TERMS, Cached, SegmentTerms};
use crate::error::tantivy_err;
use crate::overlay::Overlay;
use crate::reader::{Generation, runs};

/// Which terms of a field's dictionaries to read.
enum Pick<'a> {
    /// Every term starting with this.
    Prefix(&'a str),
    /// Every term within this many edits (insert, delete, substitute,
    /// adjacent swap) of this.
    Near(&'a str, u8),
}

impl Generation {
    /// The terms of `field` starting with `prefix`, with the documents
    /// holding each (dictionary counts, summed over the generation and
    /// the overlay's layers), most first, ties by term.
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn completions(
        &self,
        field: Field,
        prefix: &str,
        overlay: Option<&Overlay>,
    ) -> Result<Vec<(String, u64)>> {
        self.dictionary(field, &Pick::Prefix(prefix), overlay)
    }

    /// The first `want` of [`Self::completions`], the same terms with the
    /// same documents in the same order, for a short prefix (the first
    /// keystrokes, where a prefix has tens of thousands of terms) from the
    /// generation's [`CACHED_TERMS`] most frequent completions, kept per
    /// reader state (made from those kept per segment, so a commit reads
    /// only the segments it added), with the overlay's layers added; read
    /// in full when those cannot settle the answer.
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn top_completions(
        &self,
        field: Field,
        prefix: &str,
        overlay: Option<&Overlay>,
        want: usize,
    ) -> Result<Vec<(String, u64)>> {
        if prefix.chars().count() <= CACHED_PREFIX_CHARS
            && let Some(top) = self.cached_completions(field, prefix, overlay, want)?
        {
            return Ok(top);
        }
        let mut all = self.completions(field, prefix, overlay)?;
        all.truncate(want);
        Ok(all)
    }

    /// [`Self::top_completions`] from the cache, or `None` when the terms
    /// it does not hold could rank among the first `want`.
    fn cached_completions(
        &self,
        field: Field,
        prefix: &str,
        overlay: Option<&Overlay>,
        want: usize,
    ) -> Result<Option<Vec<(String, u64)>>> {
        let searcher = self.reader.searcher();
        let mut segments: Vec<SegmentId> =
            searcher.segment_readers().iter().map(|s| s.segment_id()).collect();
        segments.sort_unstable();
        let key = (segments, field, prefix.to_owned());
        let cached = self.completion_cache.get(&key);
        let cached = match cached {
            Some(c) => c,
            None => {
                let state = self.state_completions(&searcher, field, prefix)?;
                self.completion_cache.put(key, state)
            }
        };
        // The overlay's layers: few rows, read each time.
        let layers: Vec<&Searcher> =
            overlay.map(|o| o.segments().map(|(on, _)| on).collect()).unwrap_or_default();
        let mut recent = if layers.is_empty() {
            HashMap::new()
        } else {
            self.dictionary_of(&layers, field, &Pick::Prefix(prefix))?.into_iter().collect()
        };
        let mut merged: Vec<(String, u64)> =
            cached.top.iter().map(|(term, n)| (term.clone(), n + recent.remove(term).unwrap_or(0))).collect();
        // A term of the overlay outside the cached ones: exact when the
        // cache holds every term (none in the generation), else it holds
        // at most `cut` in the generation besides.
        let mut unknown = 0;
        if cached.complete {
            merged.extend(recent);
        } else {
            unknown = recent.values().copied().max().unwrap_or(0);
        }
        most_first(&mut merged);
        merged.truncate(want);
        let settled = cached.complete
            || merged.len() == want && merged.last().is_some_and(|(_, n)| *n > cached.cut + unknown);
        Ok(settled.then_some(merged))
    }

    /// A reader state's [`Cached`] completions of `prefix`, from each
    /// segment's (kept per segment, so a commit reads only the segments it
    /// added): every term some segment ranks among its most frequent, or
    /// holds at all when it has few, counted exactly over all segments (a
    /// dictionary lookup where a segment did not keep it).
    fn state_completions(&self, searcher: &Searcher, field: Field, prefix: &str) -> Result<Cached> {
        let table = &self.schema.table;
        let read_err = |e: std::io::Error| tantivy_err(table, "read terms")(e.into());
        let segments = searcher.segment_readers();
        let mut parts = Vec::with_capacity(segments.len());
        for segment in segments {
            let key = (segment.segment_id(), field, prefix.to_owned());
            let part = match self.completion_cache.segment(&key) {
                Some(part) => part,
                None => {
                    let all = self.dictionary_of_segment(segment, field, prefix)?;
                    self.completion_cache.put_segment(key, segments, SegmentTerms::of(all))
                }
            };
            parts.push(part);
        }
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for part in &parts {
            for term in part.top.keys() {
                counts.entry(term.as_str()).or_insert(0);
            }
        }
        for (segment, part) in segments.iter().zip(&parts) {
            let index = segment.inverted_index(field).map_err(tantivy_err(table, "read terms"))?;
            for (term, n) in counts.iter_mut() {
                *n += match part.top.get(*term) {
                    Some(held) => *held,
                    None if part.complete => 0,
                    None => index
                        .terms()
                        .get(term.as_bytes())
                        .map_err(read_err)?
                        .map_or(0, |i| u64::from(i.doc_freq)),
                };
            }
        }
        let mut all: Vec<(String, u64)> = counts.into_iter().map(|(t, n)| (t.to_owned(), n)).collect();
        most_first(&mut all);
        // A term no segment kept has at most the sum of their cuts.
        let unkept: u64 = parts.iter().filter(|p| !p.complete).map(|p| p.cut).sum();
        let dropped = all.get(CACHED_TERMS).map(|(_, n)| *n);
        all.truncate(CACHED_TERMS);
        Ok(Cached {
            top: all,
            complete: dropped.is_none() && parts.iter().all(|p| p.complete),
            cut: unkept.max(dropped.unwrap_or(0)),
        })
    }

    /// The terms of `field` starting with `prefix` in one segment, with
    /// their documents, most first, ties by term.
    fn dictionary_of_segment(
        &self,
        segment: &tantivy::SegmentReader,
        field: Field,
        prefix: &str,
    ) -> Result<Vec<(String, u64)>> {
        let table = &self.schema.table;
        let index = segment.inverted_index(field).map_err(tantivy_err(table, "read terms"))?;
        let mut out = Vec::new();
        prefix_terms(index.terms(), prefix, &mut |term, n| out.push((term.to_owned(), u64::from(n))))
            .map_err(|e| tantivy_err(table, "read terms")(e.into()))?;
        most_first(&mut out);
        Ok(out)
    }

    /// The terms of `field` within `edits` edits of `word` (not `word`
    /// itself), with their documents as [`Self::completions`] counts them,
    /// most first.
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn near_terms(
        &self,
        field: Field,
        word: &str,
        edits: u8,
        overlay: Option<&Overlay>,
    ) -> Result<Vec<(String, u64)>> {
        let mut near = self.dictionary(field, &Pick::Near(word, edits), overlay)?;
        near.retain(|(t, _)| t != word);
        Ok(near)
    }

    /// How many documents match `query` (parsed for this generation),
    /// with `overlay` laid on it: exact, deletes and rewrites included.
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn count(&self, query: &dyn Query, overlay: Option<&Overlay>) -> Result<u64> {
        let searcher = self.reader.searcher();
        let table = &self.schema.table;
        let count = |on: &Searcher, q: &dyn Query| on.search(q, &Count).map_err(tantivy_err(table, "count"));
        let Some(overlay) = overlay else { return Ok(count(&searcher, query)? as u64) };
        let mut total = 0;
        for (on, q) in runs(&searcher, query, overlay) {
            total += count(on, &*q)? as u64;
        }
        Ok(total)
    }

    fn dictionary(
        &self,
        field: Field,
        pick: &Pick<'_>,
        overlay: Option<&Overlay>,
    ) -> Result<Vec<(String, u64)>> {
        let searcher = self.reader.searcher();
        let mut searchers = vec![&searcher];
        if let Some(overlay) = overlay {
            searchers.extend(overlay.segments().map(|(on, _)| on));
        }
        self.dictionary_of(&searchers, field, pick)
    }

    /// The terms `pick` selects in the segments of `searchers`, with their
    /// documents summed, most first, ties by term.
    fn dictionary_of(
        &self,
        searchers: &[&Searcher],
        field: Field,
        pick: &Pick<'_>,
    ) -> Result<Vec<(String, u64)>> {
        let table = &self.schema.table;
        let automaton = match pick {
            Pick::Near(word, edits) => Some(
                FuzzyTermQuery::new(Term::from_field_text(field, word), *edits, true)
                    .automaton()
                    .map_err(tantivy_err(table, "term automaton"))?,
            ),
            Pick::Prefix(_) => None,
        };
        let mut docs: HashMap<String, u64> = HashMap::new();
        for on in searchers {
            for segment in on.segment_readers() {
                let index = segment.inverted_index(field).map_err(tantivy_err(table, "read terms"))?;
                let mut add = |term: &str, n: u32| *docs.entry(term.to_owned()).or_default() += u64::from(n);
                match (pick, &automaton) {
                    (Pick::Prefix(prefix), _) => prefix_terms(index.terms(), prefix, &mut add)
                        .map_err(|e| tantivy_err(table, "read terms")(e.into()))?,
                    (Pick::Near(..), Some(automaton)) => {
                        crate::term_walk::accepted_terms(
                            Some(on.index()),
                            segment,
                            field,
                            automaton,
                            &mut |key, info| {
                                if let Ok(term) = std::str::from_utf8(key) {
                                    add(term, info.doc_freq);
                                }
                                Ok(())
                            },
                        )
                        .map_err(tantivy_err(table, "read terms"))?;
                    }
                    (Pick::Near(..), None) => {}
                }
            }
        }
        let mut out: Vec<(String, u64)> = docs.into_iter().collect();
        most_first(&mut out);
        Ok(out)
    }
}

/// Calls `found` with each term of `terms` starting with `prefix` (text
/// only) and its documents, in term order.
fn prefix_terms(
    terms: &TermDictionary,
    prefix: &str,
    found: &mut dyn FnMut(&str, u32),
) -> std::io::Result<()> {
    let mut range = terms.range().ge(prefix.as_bytes());
    if let Some(end) = rowsearch_store::prefix_successor(prefix.as_bytes()) {
        range = range.lt(end);
    }
    let mut stream = range.into_stream()?;
    while stream.advance() {
        if let Ok(term) = std::str::from_utf8(stream.key()) {
            found(term, stream.value().doc_freq);
        }
    }
    Ok(())
}

/// Most documents first, ties by term.
fn most_first(terms: &mut [(String, u64)]) {
    terms.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}
