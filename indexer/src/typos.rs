//! The variants `typos=auto` lets a word match, by Meilisearch's rules: a
//! word of [`ONE_TYPO_CHARS`] characters or more may have one typo, of
//! [`TWO_TYPOS_CHARS`] or more two, and a typo on the first character
//! counts as two. With one typo allowed a variant keeps the first
//! character and is one edit away; with two, it keeps the first character
//! and is up to two edits away, or changes it and is one edit away.
//!
//! (Explicit `word~N` is Lucene's fuzzy term instead: any N edits.)
//!
//! One automaton walks the term dictionary with both Levenshtein automata
//! at once and follows the one the term's first character calls for, so
//! a term that changes the first character is dropped as soon as its
//! second edit would be needed. Keeping the first character also prunes
//! the walk: with one typo allowed only the word's first character's
//! branch of the dictionary is visited.

use tantivy::Term;
use tantivy::query::{DfaWrapper, FuzzyTermQuery};
use tantivy_fst::Automaton;

/// Shortest word `typos=auto` allows one typo in.
pub const ONE_TYPO_CHARS: usize = 5;
/// Shortest word `typos=auto` allows two typos in.
pub const TWO_TYPOS_CHARS: usize = 9;

/// How many typos `typos=auto` allows in a word of `chars` characters.
pub fn allowed(chars: usize) -> u8 {
    match chars {
        n if n >= TWO_TYPOS_CHARS => 2,
        n if n >= ONE_TYPO_CHARS => 1,
        _ => 0,
    }
}

/// The automaton accepting the terms within `typos` (1 or 2) typos of
/// `term`'s text, a typo on the first character counting as two.
///
/// # Errors
/// tantivy's, for a distance it has no automaton for.
pub(crate) fn automaton(term: &Term, typos: u8) -> tantivy::Result<FirstCharTypos> {
    let dfa = |edits: u8| FuzzyTermQuery::new(term.clone(), edits, true).automaton();
    let value = term.value();
    let first = value.as_str().and_then(|t| t.chars().next()).map(|c| c.to_string().into_bytes());
    Ok(FirstCharTypos {
        first: first.unwrap_or_default(),
        kept: dfa(typos)?,
        changed: if typos >= 2 { Some(dfa(typos - 1)?) } else { None },
    })
}

/// Terms within the `kept` automaton's edits that start with the word's
/// first character, or within the `changed` automaton's that do not.
pub(crate) struct FirstCharTypos {
    /// The word's first character, UTF-8.
    first: Vec<u8>,
    /// The word at the full number of typos.
    kept: DfaWrapper,
    /// The word at one edit fewer (two typos: the first character's
    /// change is the second), when two are allowed.
    changed: Option<DfaWrapper>,
}

/// Where the term stands against the word's first character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// This many of its bytes read, all equal so far.
    Reading(usize),
    /// The term starts with it.
    Kept,
    /// The term does not start with it.
    Changed,
}

#[derive(Debug, Clone)]
pub(crate) struct State {
    first: First,
    /// Each automaton's state; `None` once it no longer matters.
    kept: Option<u32>,
    changed: Option<u32>,
}

impl Automaton for FirstCharTypos {
    type State = State;

    fn start(&self) -> State {
        State {
            first: if self.first.is_empty() { First::Kept } else { First::Reading(0) },
            kept: Some(self.kept.start()),
            changed: self.changed.as_ref().map(DfaWrapper::start),
        }
    }

    fn is_match(&self, state: &State) -> bool {
        match state.first {
            First::Kept => state.kept.is_some_and(|s| self.kept.is_match(&s)),
            // A term shorter than the first character does not start with it.
            First::Changed | First::Reading(_) => {
                state.changed.zip(self.changed.as_ref()).is_some_and(|(s, dfa)| dfa.is_match(&s))
            }
        }
    }

    fn can_match(&self, state: &State) -> bool {
        let kept = state.first != First::Changed && state.kept.is_some_and(|s| self.kept.can_match(&s));
        let changed = state.first != First::Kept
            && state.changed.zip(self.changed.as_ref()).is_some_and(|(s, dfa)| dfa.can_match(&s));
        kept || changed
    }

    fn accept(&self, state: &State, byte: u8) -> State {
        let first = match state.first {
            First::Reading(i) if self.first.get(i) == Some(&byte) => {
                if i + 1 == self.first.len() {
                    First::Kept
                } else {
                    First::Reading(i + 1)
                }
            }
            First::Reading(_) => First::Changed,
            settled => settled,
        };
        let kept = state.kept.filter(|_| first != First::Changed).map(|s| self.kept.accept(&s, byte));
        let changed = match (state.changed, self.changed.as_ref()) {
            (Some(s), Some(dfa)) if first != First::Kept => Some(dfa.accept(&s, byte)),
            _ => None,
        };
        State { first, kept, changed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(word: &str, typos: u8, term: &str) -> bool {
        let mut schema = tantivy::schema::Schema::builder();
        let field = schema.add_text_field("f", tantivy::schema::TEXT);
        let automaton = automaton(&Term::from_field_text(field, word), typos).unwrap();
        crate::expand::accepts(&automaton, term)
    }

    #[test]
    fn a_typo_on_the_first_character_counts_as_two() {
        // One typo: the first character kept.
        assert!(matches("meeting", 1, "meting") && matches("meeting", 1, "meetign"));
        assert!(!matches("meeting", 1, "eeting") && !matches("meeting", 1, "neeting"));
        assert!(!matches("meeting", 1, "emeting"), "a swap of the first two is a first-character typo");
        // Two typos: two edits keeping it, or one changing it.
        assert!(matches("information", 2, "infromatoin") && matches("information", 2, "nformation"));
        assert!(matches("information", 2, "xnformation") && matches("information", 2, "niformation"));
        assert!(!matches("information", 2, "xnformatino") && !matches("information", 2, "nfromation"));
        // A multi-byte first character is read whole.
        assert!(matches("étudiant", 1, "étudiatn") && !matches("étudiant", 1, "etudiant"));
        assert!(!matches("étudiant", 1, "ètudiant") && matches("étudiants", 2, "ètudiants"));
    }
}
