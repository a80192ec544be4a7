//! Words that stand for many terms (`word*`, `word~N`, `typos=auto`'s
//! variants, a phrase's last-word prefix), as queries that keep what they
//! stand for, and the matcher of a parsed query's words that highlights
//! use: a snippet marks `Enron` for `enro*` and `meeting` for `meetign~1`,
//! not only the words typed.

use std::collections::HashSet;

use tantivy::Term;
use tantivy::query::{BooleanQuery, DfaWrapper, EnableScoring, FuzzyTermQuery, PhraseQuery, Query, Weight};
use tantivy_fst::Automaton;

use crate::phrase_prefix::PhrasePrefix;
use crate::typos::FirstCharTypos;

/// What a [`WordQuery`]'s word stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expansion {
    /// Every term starting with it.
    Prefix,
    /// Every term within this many edits (`word~N`).
    Edits(u8),
    /// `typos=auto`'s variants at this many typos (`crate::typos`).
    Typos(u8),
}

/// The terms of `term`'s field that `term`'s text stands for; every match
/// scores the same.
#[derive(Debug, Clone)]
pub(crate) struct WordQuery {
    term: Term,
    expansion: Expansion,
    /// Looked at before each segment's walk of the terms.
    cancel: rowsearch_store::Cancel,
}

impl WordQuery {
    pub(crate) fn new(term: Term, expansion: Expansion, cancel: &rowsearch_store::Cancel) -> WordQuery {
        WordQuery { term, expansion, cancel: cancel.clone() }
    }
}

impl Query for WordQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        // Building an automaton (distance 2 above all) is work too.
        crate::cancellable::check(&self.cancel)?;
        let field = self.term.field();
        let weight = match self.expansion {
            Expansion::Prefix => FuzzyTermQuery::new_prefix(self.term.clone(), 0, false).weight(scoring)?,
            Expansion::Edits(n) => {
                let automaton = FuzzyTermQuery::new(self.term.clone(), n, true).automaton()?;
                crate::term_walk::weight(field, automaton, scoring)
            }
            Expansion::Typos(n) => {
                let automaton = crate::typos::automaton(&self.term, n)?;
                crate::term_walk::weight(field, automaton, scoring)
            }
        };
        Ok(crate::cancellable::weight(weight, &self.cancel))
    }
}

/// Which analysed words a parsed query looks for, in any field: its plain
/// terms, and what its expanding words stand for.
pub struct QueryWords {
    exact: HashSet<String>,
    /// The words of each exact phrase (`"natural gas"`), which are marked
    /// where the phrase stands, not alone.
    phrases: Vec<Vec<String>>,
    prefixes: Vec<String>,
    edits: Vec<DfaWrapper>,
    typos: Vec<FirstCharTypos>,
}

impl QueryWords {
    /// The words of `query` (as parsed by [`crate::query`]; other queries'
    /// plain terms only).
    pub fn of(query: &dyn Query) -> QueryWords {
        let mut words = QueryWords {
            exact: HashSet::new(),
            phrases: Vec::new(),
            prefixes: Vec::new(),
            edits: Vec::new(),
            typos: Vec::new(),
        };
        words.collect(query);
        words
    }

    fn collect(&mut self, query: &dyn Query) {
        if let Some(inner) = crate::cancellable::inner(query) {
            return self.collect(inner);
        }
        if let Some(boolean) = query.downcast_ref::<BooleanQuery>() {
            for (_, clause) in boolean.clauses() {
                self.collect(clause.as_ref());
            }
            return;
        }
        if let Some(phrase) = query.downcast_ref::<PhraseQuery>() {
            // The analyzer keeps every word (no stop words), so a phrase's
            // words stand next to each other, as highlights read them.
            let terms = phrase.phrase_terms();
            let words: Vec<String> =
                terms.iter().filter_map(|t| t.value().as_str().map(str::to_owned)).collect();
            if words.len() == terms.len() {
                self.phrases.push(words);
            } else {
                self.exact.extend(words);
            }
            return;
        }
        if let Some(phrase) = query.downcast_ref::<crate::sloppy_phrase::SloppyPhrase>()
            && let Some(words) = phrase.exact_words()
        {
            // An exact phrase of `_all` matched field by field.
            self.phrases.push(words);
            return;
        }
        query.query_terms(&mut |term, _| {
            if let Some(text) = term.value().as_str() {
                self.exact.insert(text.to_owned());
            }
        });
        if let Some(word) = query.downcast_ref::<WordQuery>() {
            let text = word.term.value().as_str().unwrap_or_default().to_owned();
            // An automaton that cannot be built (a distance tantivy refuses)
            // highlights nothing more; the search itself reports it.
            match word.expansion {
                Expansion::Prefix => self.prefixes.push(text),
                Expansion::Edits(n) => {
                    self.edits.extend(FuzzyTermQuery::new(word.term.clone(), n, true).automaton().ok());
                }
                Expansion::Typos(n) => self.typos.extend(crate::typos::automaton(&word.term, n).ok()),
            }
        } else if let Some(phrase) = query.downcast_ref::<PhrasePrefix>() {
            self.prefixes.extend(phrase.prefix().value().as_str().map(str::to_owned));
        }
    }

    /// Where in `text` the query's exact phrases stand (byte ranges, in
    /// order), its words read as highlights read them (alphanumeric runs,
    /// normalized).
    pub fn phrase_spans(&self, text: &str) -> Vec<(usize, usize)> {
        if self.phrases.is_empty() {
            return Vec::new();
        }
        let mut tokens: Vec<(usize, usize, String)> = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (c.is_alphanumeric() && i < text.len(), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    tokens.push((s, i, crate::normalize(&text[s..i])));
                    start = None;
                }
                _ => {}
            }
        }
        let mut spans = Vec::new();
        for i in 0..tokens.len() {
            for phrase in &self.phrases {
                let n = phrase.len();
                if n > 0
                    && i + n <= tokens.len()
                    && tokens[i..i + n].iter().zip(phrase).all(|(t, w)| t.2 == *w)
                {
                    spans.push((tokens[i].0, tokens[i + n - 1].1));
                }
            }
        }
        spans
    }

    /// Whether `word` (analysed: lowercased) is one the query looks for
    /// alone (a phrase's words are found by [`Self::phrase_spans`]).
    pub fn matches(&self, word: &str) -> bool {
        self.exact.contains(word)
            || self.prefixes.iter().any(|p| word.starts_with(p.as_str()))
            || self.edits.iter().any(|a| accepts(a, word))
            || self.typos.iter().any(|a| accepts(a, word))
    }
}

/// Whether `automaton` accepts `word`'s bytes.
pub(crate) fn accepts<A: Automaton>(automaton: &A, word: &str) -> bool {
    let mut state = automaton.start();
    for &b in word.as_bytes() {
        if !automaton.can_match(&state) {
            return false;
        }
        state = automaton.accept(&state, b);
    }
    automaton.is_match(&state)
}
