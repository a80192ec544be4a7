//! Word pairs: a bare two-word phrase answered from one posting list.
//!
//! A bare phrase `"a b"` is matched in the positions of every field `_all`
//! holds (`sloppy_phrase.rs`): both words' postings are intersected and
//! each shared document's positions read, which for two frequent words is
//! most of a phrase query's time. A full build picks the pairs of words that
//! stand side by side often ([`MIN_DOCS`] documents or more, neither word
//! among the [`COMMON_WORDS`] most frequent, counted on a sample of
//! documents, the most frequent first within a share of the index's
//! postings: `build/direct_pairs.rs`), and indexes each as one term of `_pairs` (its text
//! [`text`]: the two words with [`SEPARATOR`] between), with the number of
//! times the two stand side by side in the document as the frequency.
//!
//! The pairs of a generation are the terms of its `_pairs` field: the
//! full build writes them for every document, and each later writer of the
//! generation (an incremental reindex) reads them back ([`PairList::of_index`])
//! and writes them for the documents it adds. So when any segment of an
//! index holds a pair, every document of the index where its two words
//! stand side by side holds it (`pair_phrase.rs`), and the phrase is
//! answered from the pair's postings; otherwise from positions, as before. A pair's
//! documents are scored as the positions path scores them: BM25 over `_all`'s
//! statistics of the two words and `_all`'s norms, the pair's frequency.
//! Indexes built before `_pairs` existed have no such field and answer
//! every phrase from positions.

use hashbrown::{HashMap, HashSet};

use tantivy::directory::CompositeFile;
use tantivy::index::SegmentComponent;
use tantivy::termdict::TermDictionary;

/// The pair field's name.
pub const PAIRS_FIELD: &str = "_pairs";
/// Between a pair's two words in its term.
pub const SEPARATOR: char = '\0';
/// A pair is kept when its words stand side by side in at least this many
/// documents (as a full build's sample estimates it).
pub const MIN_DOCS: u32 = 100;
/// Words among this many most frequent (by documents) form no pair: their
/// pairs are too many for the room (Lucene's CommonGrams keeps them).
pub const COMMON_WORDS: usize = 50;
/// Longest word (bytes) a pair takes.
const MAX_WORD: usize = 64;

/// Whether `word` may stand in a pair: not an email address (the
/// analyzer keeps one whole beside its parts, so an address and its own
/// parts would make pairs nobody searches for), nor too long.
pub fn usable(word: &str) -> bool {
    !word.is_empty() && word.len() <= MAX_WORD && !word.contains(SEPARATOR) && !word.contains('@')
}

/// The term text of the pair `a b`.
pub fn text(a: &str, b: &str) -> String {
    let mut out = String::with_capacity(a.len() + b.len() + 1);
    out.push_str(a);
    out.push(SEPARATOR);
    out.push_str(b);
    out
}

/// A pair's two words, from its term text.
pub fn split(text: &str) -> Option<(&str, &str)> {
    text.split_once(SEPARATOR)
}

/// A set of pairs: which ones a writer indexes.
#[derive(Debug, Clone, Default)]
pub struct PairList {
    /// The pairs' texts, sorted (the order of their terms).
    texts: Vec<String>,
    words: HashMap<String, u32>,
    pairs: HashSet<(u32, u32)>,
}

impl PairList {
    /// The pairs `texts` names ([`text`]); texts that are not pairs of two
    /// different usable words are left out.
    pub fn new<I: IntoIterator<Item = String>>(texts: I) -> PairList {
        let mut list = PairList::default();
        let mut texts: Vec<String> = texts
            .into_iter()
            .filter(|t| split(t).is_some_and(|(a, b)| a != b && usable(a) && usable(b)))
            .collect();
        // A segment's terms come sorted already.
        if !texts.is_sorted() {
            texts.sort_unstable();
        }
        texts.dedup();
        for t in &texts {
            let Some((a, b)) = split(t) else { continue };
            let (a, b) = (list.word(a), list.word(b));
            list.pairs.insert((a, b));
        }
        list.texts = texts;
        list
    }

    fn word(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.words.get(word) {
            return id;
        }
        let id = self.words.len() as u32;
        self.words.insert(word.to_owned(), id);
        id
    }

    /// The pairs every searchable segment of `index` holds (none when it
    /// has no `_pairs` field).
    ///
    /// # Errors
    /// When the index's segments do not open.
    pub fn of_index(index: &tantivy::Index) -> tantivy::Result<PairList> {
        let Ok(field) = index.schema().get_field(PAIRS_FIELD) else { return Ok(PairList::default()) };
        // The field's term dictionaries only (opening whole segment
        // readers costs a refresh round ~8 ms on the mail corpus).
        let mut texts = Vec::new();
        for segment in index.searchable_segments()? {
            let file = segment.open_read(SegmentComponent::Terms)?;
            let Some(slice) = CompositeFile::open(&file)?.open_read(field) else { continue };
            let dictionary = TermDictionary::open(slice)?;
            let mut stream = dictionary.stream()?;
            while stream.advance() {
                if let Ok(text) = std::str::from_utf8(stream.key()) {
                    texts.push(text.to_owned());
                }
            }
        }
        Ok(PairList::new(texts))
    }

    /// Whether it holds no pair.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// How many pairs it holds.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// The pairs' texts, sorted.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Appends to `out` the text of each pair of the list for every place
    /// where its words stand side by side in one field: `cells` are a
    /// row's (field index, term, positions).
    pub fn occurrences<'c>(
        &self,
        cells: impl Iterator<Item = (usize, &'c str, &'c [u32])>,
        out: &mut Vec<String>,
    ) {
        if self.pairs.is_empty() {
            return;
        }
        // (field, position, word)
        let mut at: Vec<(usize, u32, u32)> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (field, term, positions) in cells {
            let Some(&word) = self.words.get(term) else { continue };
            if names.len() <= word as usize {
                names.resize(word as usize + 1, "");
            }
            names[word as usize] = term;
            at.extend(positions.iter().map(|&p| (field, p, word)));
        }
        at.sort_unstable();
        // Words may share a position: each of one place pairs with each of
        // the next.
        let mut before: &[(usize, u32, u32)] = &[];
        for here in at.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
            if let (Some(&(f, p, _)), &(g, q, _)) = (before.first(), &here[0])
                && f == g
                && p.checked_add(1) == Some(q)
            {
                for &(_, _, a) in before {
                    for &(_, _, b) in here {
                        if self.pairs.contains(&(a, b)) {
                            out.push(text(names[a as usize], names[b as usize]));
                        }
                    }
                }
            }
            before = here;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_pairs_of_two_different_usable_words() {
        let list = PairList::new([
            text("board", "meeting"),
            text("gas", "gas"),
            "no separator".to_owned(),
            text("", "x"),
            text(&"w".repeat(MAX_WORD + 1), "x"),
            text("board", "meeting"),
            text("a", "b"),
        ]);
        assert_eq!(list.texts(), [text("a", "b"), text("board", "meeting")]);
    }

    #[test]
    fn occurrences_are_the_places_words_stand_side_by_side_in_one_field() {
        let list = PairList::new([text("board", "meeting"), text("meeting", "board")]);
        let (board, meeting) = ([0u32, 5, 9], [1u32, 4, 7]);
        let mut out = Vec::new();
        // Field 0: board meeting at 0-1, meeting board at 4-5 (with "x"
        // at 4 too); field 1: "meeting" at 1 with no "board" in that field.
        let cells = [
            (0, "board", &board[..]),
            (0, "meeting", &meeting[..]),
            (0, "x", &[4u32][..]),
            (1, "meeting", &[1u32][..]),
        ];
        list.occurrences(cells.into_iter(), &mut out);
        out.sort();
        assert_eq!(out, [text("board", "meeting"), text("meeting", "board")]);
        // "x" and "meeting" share 4: whichever sorts first, the pair stands.
        let list = PairList::new([text("meeting", "board"), text("x", "meeting")]);
        let mut out = Vec::new();
        list.occurrences(cells.into_iter(), &mut out);
        out.sort();
        assert_eq!(out, [text("meeting", "board")]);
    }
}
