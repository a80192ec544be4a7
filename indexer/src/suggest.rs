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
use tantivy::query::{FuzzyTermQuery, Query};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

use crate::Result;
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
        let table = &self.schema.table;
        let searcher = self.reader.searcher();
        let mut searchers = vec![&searcher];
        if let Some(overlay) = overlay {
            searchers.extend(overlay.segments().map(|(on, _)| on));
        }
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
                let terms = index.terms();
                let read_err = |e: std::io::Error| tantivy_err(table, "read terms")(e.into());
                let mut add = |key: &[u8], n: u32| {
                    if let Ok(term) = std::str::from_utf8(key) {
                        *docs.entry(term.to_owned()).or_default() += u64::from(n);
                    }
                };
                match (pick, &automaton) {
                    (Pick::Prefix(prefix), _) => {
                        let mut range = terms.range().ge(prefix.as_bytes());
                        if let Some(end) = successor(prefix.as_bytes()) {
                            range = range.lt(end);
                        }
                        let mut stream = range.into_stream().map_err(read_err)?;
                        while stream.advance() {
                            add(stream.key(), stream.value().doc_freq);
                        }
                    }
                    (Pick::Near(..), Some(automaton)) => {
                        let mut stream = terms.search(automaton).into_stream().map_err(read_err)?;
                        while stream.advance() {
                            add(stream.key(), stream.value().doc_freq);
                        }
                    }
                    (Pick::Near(..), None) => {}
                }
            }
        }
        let mut out: Vec<(String, u64)> = docs.into_iter().collect();
        out.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }
}

/// The smallest byte string after every string starting with `prefix`;
/// `None` when there is none (all `0xff`).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_bounds_every_extension() {
        assert_eq!(successor(b"enr"), Some(b"ens".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
        assert_eq!(successor(b""), None);
    }
}
