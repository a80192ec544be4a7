//! Words that stand for many terms (`word*`, `word~N`, `typos=auto`'s
//! variants, a phrase's last-word prefix), as queries that keep what they
//! stand for, and the matcher of a parsed query's words that highlights
//! use: a snippet marks `Enron` for `enro*` and `meeting` for `meetign~1`,
//! not only the words typed.

use std::collections::HashSet;

use tantivy::Term;
use tantivy::query::{BooleanQuery, DfaWrapper, EnableScoring, FuzzyTermQuery, Query, Weight};
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
    prefixes: Vec<String>,
    edits: Vec<DfaWrapper>,
    typos: Vec<FirstCharTypos>,
}

impl QueryWords {
    /// The words of `query` (as parsed by [`crate::query`]; other queries'
    /// plain terms only).
    pub fn of(query: &dyn Query) -> QueryWords {
        let mut words =
            QueryWords { exact: HashSet::new(), prefixes: Vec::new(), edits: Vec::new(), typos: Vec::new() };
        query.query_terms(&mut |term, _| {
            if let Some(text) = term.value().as_str() {
                words.exact.insert(text.to_owned());
            }
        });
        words.collect(query);
        words
    }

    fn collect(&mut self, query: &dyn Query) {
        if let Some(inner) = crate::cancellable::inner(query) {
            self.collect(inner);
        } else if let Some(boolean) = query.downcast_ref::<BooleanQuery>() {
            for (_, clause) in boolean.clauses() {
                self.collect(clause.as_ref());
            }
        } else if let Some(word) = query.downcast_ref::<WordQuery>() {
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

    /// Whether `word` (analysed: lowercased) is one the query looks for.
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
