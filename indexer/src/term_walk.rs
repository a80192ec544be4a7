//! The terms of a field an automaton accepts (`word~N`, `typos=auto`),
//! walked over the segment's term dictionary FST directly.
//!
//! tantivy's own walk (`TermDictionary::search`, through `tantivy-fst`'s
//! stream) decodes every child node of a live node before it asks the
//! automaton whether the child can still match; for a fuzzy word nearly
//! every child of the dictionary's short prefixes is dead, so most of its
//! time goes to decoding nodes it throws away. This walk asks the automaton
//! first and decodes only the children it will enter. Over the full
//! corpus's 204,268 body terms, counting and ranking `body:powr~2` takes
//! 1.21 ms p50 against 1.98 ms for tantivy's `FuzzyTermQuery` on the same
//! searcher (`benches/fuzzy.rs`; `indexer/BENCHMARKS.md`, "Fuzzy words").
//!
//! The FST is found in the segment's `.term` file, whose layout tantivy
//! owns: its per-field slice is `fst | term infos | u64 term infos length |
//! u32 FST version | u32 dictionary type`. This module is the only reader
//! of it. Anything unexpected there (another version or dictionary type, a
//! segment without the file) falls back to tantivy's walk, which finds the
//! same terms ([`accepted_terms`] chooses); `tests::the_walk_reads_the_dictionary_of_this_tantivy` fails
//! when an upgrade of tantivy changes the layout.

use std::path::PathBuf;

use tantivy::directory::{CompositeFile, Directory, OwnedBytes};
use tantivy::postings::TermInfo;
use tantivy::query::{BitSetDocSet, ConstScorer, EnableScoring, Explanation, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, HasLen, Index, Score, SegmentReader, TERMINATED, TantivyError};
use tantivy_fst::Automaton;
use tantivy_fst::raw::{Fst, Node};

/// The dictionary type tantivy writes for FST term dictionaries.
const FST_DICTIONARY: u32 = 1;
/// The version of tantivy's FST term dictionary layout read here.
const FST_LAYOUT_VERSION: u32 = 1;
/// `u64` term infos length, `u32` version, `u32` dictionary type.
const FOOTER_BYTES: usize = 16;

/// A weight matching the documents holding any term of `field` that
/// `automaton` accepts, each scoring the boost (as tantivy's
/// `AutomatonWeight`).
pub(crate) fn weight<A>(field: Field, automaton: A, scoring: EnableScoring<'_>) -> Box<dyn Weight>
where
    A: Automaton + Send + Sync + 'static,
    A::State: Clone,
{
    Box::new(WalkWeight { index: scoring.searcher().map(|s| s.index().clone()), field, automaton })
}

/// Calls `found` with every term of `field` in `segment` that `automaton`
/// accepts, and its term info, in term order: by [`walk`] when the
/// segment's FST can be read from `index`'s files, else by tantivy's own
/// walk (the same terms).
///
/// # Errors
/// tantivy's, reading the dictionary.
pub(crate) fn accepted_terms<A>(
    index: Option<&Index>,
    segment: &SegmentReader,
    field: Field,
    automaton: &A,
    found: &mut dyn FnMut(&[u8], &TermInfo) -> tantivy::Result<()>,
) -> tantivy::Result<()>
where
    A: Automaton,
    A::State: Clone,
{
    let inverted_index = segment.inverted_index(field)?;
    let terms = inverted_index.terms();
    let Some(fst) = index.and_then(|index| term_fst(index, segment, field)) else {
        let mut stream = terms.search(automaton).into_stream()?;
        while stream.advance() {
            found(stream.key(), stream.value())?;
        }
        return Ok(());
    };
    let mut outcome = Ok(());
    walk(&fst, automaton, &mut |key| {
        if outcome.is_ok() {
            outcome = match terms.get(key) {
                Ok(Some(info)) => found(key, &info),
                Ok(None) => Err(TantivyError::InternalError("a term of the FST has no term info".into())),
                Err(e) => Err(e.into()),
            };
        }
    });
    outcome
}

struct WalkWeight<A> {
    /// Where the segments' files are; `None` when the search has no
    /// searcher (tantivy's walk then).
    index: Option<Index>,
    field: Field,
    automaton: A,
}

impl<A> Weight for WalkWeight<A>
where
    A: Automaton + Send + Sync + 'static,
    A::State: Clone,
{
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let inverted_index = reader.inverted_index(self.field)?;
        let mut docs = BitSet::with_max_value(reader.max_doc());
        accepted_terms(self.index.as_ref(), reader, self.field, &self.automaton, &mut |_, info| {
            let mut postings =
                inverted_index.read_block_postings_from_terminfo(info, IndexRecordOption::Basic)?;
            loop {
                let block = postings.docs();
                if block.is_empty() {
                    return Ok(());
                }
                for &doc in block {
                    docs.insert(doc);
                }
                postings.advance();
            }
        })?;
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.doc() != TERMINATED && scorer.seek(doc) == doc {
            Ok(Explanation::new("AutomatonScorer", 1.0))
        } else {
            Err(TantivyError::InvalidArgument("Document does not exist".to_string()))
        }
    }
}

/// The FST of `field`'s term dictionary in `reader`'s segment (its keys are
/// the terms); `None` when the file is not laid out as expected.
fn term_fst(index: &Index, reader: &SegmentReader, field: Field) -> Option<Fst<OwnedBytes>> {
    let path = PathBuf::from(format!("{}.term", reader.segment_id().uuid_string()));
    let file = index.directory().open_read(&path).ok()?;
    let slice = CompositeFile::open(&file).ok()?.open_read(field)?;
    if slice.len() < FOOTER_BYTES {
        return None;
    }
    let (main, footer) = slice.split_from_end(FOOTER_BYTES);
    let footer = footer.read_bytes().ok()?;
    let footer = footer.as_slice();
    let infos_len = u64::from_le_bytes(footer[0..8].try_into().ok()?);
    let version = u32::from_le_bytes(footer[8..12].try_into().ok()?);
    let kind = u32::from_le_bytes(footer[12..16].try_into().ok()?);
    if version != FST_LAYOUT_VERSION || kind != FST_DICTIONARY {
        return None;
    }
    let infos_len = usize::try_from(infos_len).ok().filter(|&n| n <= main.len())?;
    let (fst, _) = main.split_from_end(infos_len);
    Fst::new(fst.read_bytes().ok()?).ok()
}

/// Calls `found` with every key of `fst` that `automaton` accepts, in key
/// order; a child node is decoded only when the automaton can still match
/// past the byte leading to it.
pub(crate) fn walk<A: Automaton>(fst: &Fst<OwnedBytes>, automaton: &A, found: &mut dyn FnMut(&[u8])) {
    let root = fst.root();
    let start = automaton.start();
    if root.is_final() && automaton.is_match(&start) {
        found(&[]);
    }
    if !automaton.can_match(&start) {
        return;
    }
    // The key so far; each entered node, the next of its transitions to
    // try, and the automaton's state there (the key is one byte longer per
    // node below the root).
    let mut key = Vec::new();
    let mut stack: Vec<(Node<'_>, usize, A::State)> = vec![(root, 0, start)];
    while let Some((node, next, state)) = stack.last_mut() {
        if *next >= node.len() {
            stack.pop();
            key.pop();
            continue;
        }
        let transition = node.transition(*next);
        *next += 1;
        let child_state = automaton.accept(state, transition.inp);
        if !automaton.can_match(&child_state) {
            continue;
        }
        let child = fst.node(transition.addr);
        key.push(transition.inp);
        if child.is_final() && automaton.is_match(&child_state) {
            found(&key);
        }
        if child.is_empty() {
            key.pop();
        } else {
            stack.push((child, 0, child_state));
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tantivy::collector::Count;
    use tantivy::query::FuzzyTermQuery;
    use tantivy::schema::{STRING, Schema};
    use tantivy::{IndexWriter, TantivyDocument, Term};

    use super::*;

    /// An index of `words` in one field, one document each.
    fn index_of(words: &[String]) -> (Index, Field) {
        let mut schema = Schema::builder();
        let field = schema.add_text_field("w", STRING);
        let index = Index::create_in_ram(schema.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for word in words {
            let mut doc = TantivyDocument::new();
            doc.add_text(field, word);
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        (index, field)
    }

    /// The terms tantivy's own walk finds.
    fn tantivy_terms<A: Automaton>(index: &Index, field: Field, automaton: &A) -> Vec<Vec<u8>>
    where
        A::State: Clone,
    {
        let searcher = index.reader().unwrap().searcher();
        let mut terms = Vec::new();
        for reader in searcher.segment_readers() {
            let inverted = reader.inverted_index(field).unwrap();
            let mut stream = inverted.terms().search(automaton).into_stream().unwrap();
            while stream.advance() {
                terms.push(stream.key().to_vec());
            }
        }
        terms
    }

    fn walk_terms<A: Automaton>(index: &Index, field: Field, automaton: &A) -> Vec<Vec<u8>> {
        let searcher = index.reader().unwrap().searcher();
        let mut terms = Vec::new();
        for reader in searcher.segment_readers() {
            let fst = term_fst(index, reader, field).expect("the term dictionary's FST");
            walk(&fst, automaton, &mut |key| terms.push(key.to_vec()));
        }
        terms
    }

    #[test]
    fn the_walk_reads_the_dictionary_of_this_tantivy() {
        let words: Vec<String> =
            ["power", "powr", "pow", "tower", "apple", "p"].iter().map(|s| s.to_string()).collect();
        let (index, field) = index_of(&words);
        let automaton =
            FuzzyTermQuery::new(Term::from_field_text(field, "powr"), 1, true).automaton().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let reader = &searcher.segment_readers()[0];
        assert!(term_fst(&index, reader, field).is_some(), "the .term layout changed: update term_walk.rs");
        let terms = walk_terms(&index, field, &automaton);
        // `tower` is two edits away.
        assert_eq!(terms, [&b"pow"[..], b"power", b"powr"]);
    }

    #[test]
    fn a_weight_counts_the_documents_of_every_accepted_term() {
        let words: Vec<String> =
            ["gas", "gaz", "gas", "glass", "was", "gs"].iter().map(|s| s.to_string()).collect();
        let (index, field) = index_of(&words);
        let searcher = index.reader().unwrap().searcher();
        let fuzzy = FuzzyTermQuery::new(Term::from_field_text(field, "gas"), 1, true);
        let automaton = fuzzy.automaton().unwrap();
        let ours = weight(field, automaton, EnableScoring::disabled_from_searcher(&searcher));
        let count: u32 = searcher.segment_readers().iter().map(|r| ours.count(r).unwrap()).sum();
        assert_eq!(count, 5, "gas, gaz, gas, was, gs");
        assert_eq!(searcher.search(&fuzzy, &Count).unwrap() as u32, count);
        // Without a searcher to find the files by: tantivy's walk, the same.
        let schema = index.schema();
        let theirs = weight(field, fuzzy.automaton().unwrap(), EnableScoring::disabled_from_schema(&schema));
        let fallback: u32 = searcher.segment_readers().iter().map(|r| theirs.count(r).unwrap()).sum();
        assert_eq!(fallback, count);
        assert!(ours.explain(&searcher.segment_readers()[0], 0).is_ok());
        assert!(ours.explain(&searcher.segment_readers()[0], 3).is_err(), "glass is two edits away");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The walk finds exactly the terms tantivy's walk finds, for fuzzy
        /// words of one and two edits and `typos=auto`'s automaton, over
        /// dictionaries of short words from a small alphabet (so that many
        /// are near each other) with a few non-ASCII letters.
        #[test]
        fn the_walk_finds_what_tantivys_walk_finds(
            words in proptest::collection::vec("[abcé]{1,6}", 1..60),
            word in "[abcé]{1,6}",
            edits in 0u8..3,
        ) {
            let (index, field) = index_of(&words);
            let term = Term::from_field_text(field, &word);
            let fuzzy = FuzzyTermQuery::new(term.clone(), edits, true).automaton().unwrap();
            prop_assert_eq!(walk_terms(&index, field, &fuzzy), tantivy_terms(&index, field, &fuzzy));
            let typos = crate::typos::automaton(&term, edits).unwrap();
            prop_assert_eq!(walk_terms(&index, field, &typos), tantivy_terms(&index, field, &typos));
        }
    }
}
