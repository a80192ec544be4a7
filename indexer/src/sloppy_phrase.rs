//! `"a b c"~N`: phrases whose words may stand up to N moves apart, in
//! bounded time and memory.
//!
//! tantivy's sloppy phrase scorer carries, from one word to the next, every
//! position of the left side that some right position lies within the slop
//! of, without merging repeats: each word can multiply the carried list by
//! the number of positions within the slop, so `"enron enron enron enron
//! enron enron"~1000` grows it as the sixth power of a document's
//! occurrences (gigabytes, minutes; issue 59). Here a document is matched
//! by one sweep over its words' positions (the smallest window holding one
//! position per word, as in the "smallest range of k lists" problem):
//! every step moves one word's cursor forward, so a document costs at most
//! (words x positions) steps and its positions' memory, whatever the slop.
//!
//! A match is a choice of one position per word of the phrase (a word the
//! phrase repeats takes distinct positions, in order) whose positions,
//! each less the word's place in the phrase, lie within `slop` of each
//! other: Lucene's sloppy distance, so words may also swap. The frequency
//! BM25 scores with is the number of windows the sweep finds. The search
//! looks at its [`rowsearch_store::Cancel`] before each segment and every
//! [`CHECK_EVERY`] documents it matches positions in.
//!
//! A phrase of the catch-all `_all`, which keeps no positions, is matched
//! in each field `_all` holds on its own ([`SloppyPhrase::across`]) and
//! scored as a phrase of `_all`: BM25 over `_all`'s statistics and norms,
//! the frequency summed over the fields. With slop 0 this is an exact
//! phrase, with the documents and scores tantivy's phrase query gives over
//! an `_all` that keeps positions (where values of fields stand apart:
//! tantivy leaves a gap between them), so bare phrases answer as they did
//! when `_all` kept positions, from an index a quarter smaller.

use std::fmt;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25Weight, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::Field;
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

use crate::word_cursor::{PositionFiles, Word};

/// Documents whose positions are matched between two looks at the cancel.
const CHECK_EVERY: u32 = 256;

/// Documents of a field holding `words` (place in the phrase, term) within
/// `slop` moves, or of the catch-all `_all` matched field by field
/// ([`SloppyPhrase::across`]).
#[derive(Clone)]
pub(crate) struct SloppyPhrase {
    /// The words' field: its statistics and norms score.
    field: Field,
    /// Where positions are read: the words' field, or the fields `_all`
    /// holds.
    fields: Vec<Field>,
    words: Vec<(usize, Term)>,
    slop: u32,
    cancel: rowsearch_store::Cancel,
    /// The generation's opened positions files.
    positions: PositionFiles,
    /// A bare two-word exact phrase's term of `_pairs` (`pairs.rs`): its
    /// postings answer when the index holds the pair.
    pair: Option<Term>,
}

impl fmt::Debug for SloppyPhrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SloppyPhrase").field("words", &self.words).field("slop", &self.slop).finish()
    }
}

impl SloppyPhrase {
    /// `words` (place, term; two or more, of one field) within `slop`.
    pub(crate) fn new(words: Vec<(usize, Term)>, slop: u32, cancel: &rowsearch_store::Cancel) -> Self {
        let field = words[0].1.field();
        Self {
            field,
            fields: vec![field],
            words,
            slop,
            cancel: cancel.clone(),
            positions: PositionFiles::default(),
            pair: None,
        }
    }

    /// `words` (place, term; two or more) of `_all`, which keeps no
    /// positions, within `slop`, matched in each of `fields` (the fields
    /// `_all` holds) on its own and scored as a phrase of `_all`.
    pub(crate) fn across(
        words: Vec<(usize, Term)>,
        fields: Vec<Field>,
        slop: u32,
        cancel: &rowsearch_store::Cancel,
    ) -> Self {
        let field = words[0].1.field();
        Self {
            field,
            fields,
            words,
            slop,
            cancel: cancel.clone(),
            positions: PositionFiles::default(),
            pair: None,
        }
    }

    /// Answers from the term `pair` of `_pairs` where the index holds it
    /// (a bare exact phrase of two words, `pairs.rs`).
    pub(crate) fn with_pair(mut self, pair: Term) -> Self {
        self.pair = Some(pair);
        self
    }

    /// Reads positions from `positions` (a generation's, opened once).
    pub(crate) fn reading(mut self, positions: &PositionFiles) -> Self {
        self.positions = positions.clone();
        self
    }

    /// An exact phrase's words (slop 0), for highlights; `None` for a
    /// sloppy one.
    pub(crate) fn exact_words(&self) -> Option<Vec<String>> {
        if self.slop > 0 {
            return None;
        }
        self.words.iter().map(|(_, t)| t.value().as_str().map(str::to_owned)).collect()
    }
}

impl Query for SloppyPhrase {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        crate::cancellable::check(&self.cancel)?;
        let bm25 = crate::phrase_prefix::phrase_scoring(&scoring, &self.fields, &self.words, "phrase")?;
        if let (Some(pair), Some(searcher)) = (&self.pair, scoring.searcher())
            && crate::pair_phrase::held(searcher, pair)?
        {
            return Ok(Box::new(crate::pair_phrase::PairWeight {
                pair: pair.clone(),
                field: self.field,
                bm25,
                cancel: self.cancel.clone(),
            }));
        }
        Ok(Box::new(SloppyWeight { query: self.clone(), bm25 }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (_, term) in &self.words {
            visitor(term, true);
        }
    }
}

struct SloppyWeight {
    query: SloppyPhrase,
    bm25: Option<Bm25Weight>,
}

impl SloppyWeight {
    /// The documents of `field` holding the words within the slop, with
    /// their windows (not scored); `None` when a word is not in the
    /// segment's `field`.
    fn counter(&self, reader: &SegmentReader, field: Field) -> tantivy::Result<Option<SloppyScorer>> {
        let index = reader.inverted_index(field)?;
        // One postings list per distinct word; each place of the phrase
        // names its word's list.
        let mut distinct: Vec<&Term> = Vec::new();
        let mut slots = Vec::with_capacity(self.query.words.len());
        for (place, term) in &self.query.words {
            let word = match distinct.iter().position(|t| *t == term) {
                Some(i) => i,
                None => {
                    distinct.push(term);
                    distinct.len() - 1
                }
            };
            slots.push(Slot { word, place: u32::try_from(*place).unwrap_or(u32::MAX) });
        }
        let mut infos = Vec::with_capacity(distinct.len());
        for term in &distinct {
            // The same word in one of the fields `_all` holds, or itself.
            let Some(term) = crate::phrase_prefix::in_field(term, field) else { return Ok(None) };
            match index.get_term_info(&term)? {
                Some(info) => infos.push(info),
                None => return Ok(None),
            }
        }
        let Some(file) = self.query.positions.get(reader, field)? else { return Ok(None) };
        let postings = Word::open_all(&index, infos.iter(), &file)?;
        // Rarest first: it drives the intersection.
        let mut order: Vec<usize> = (0..postings.len()).collect();
        order.sort_by_key(|&i| postings[i].doc_freq());
        let mut scorer = SloppyScorer {
            postings,
            order,
            matcher: Matcher::new(slots, self.query.slop),
            cancel: self.query.cancel.clone(),
            since_check: 0,
            doc: 0,
            count: 0,
            bm25: None,
            fieldnorms: None,
            failed: None,
        };
        scorer.find(scorer.postings[scorer.order[0]].doc());
        match scorer.failed.take() {
            Some(e) => Err(e),
            None => Ok(Some(scorer)),
        }
    }
}

impl Weight for SloppyWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        crate::cancellable::check(&self.query.cancel)?;
        let bm25 = self.bm25.as_ref().map(|w| w.boost_by(boost));
        let fieldnorms = match &bm25 {
            Some(_) => reader.fieldnorms_readers().get_field(self.query.field)?,
            None => None,
        };
        if self.query.fields == [self.query.field] {
            let Some(mut scorer) = self.counter(reader, self.query.field)? else {
                return Ok(Box::new(EmptyScorer));
            };
            scorer.bm25 = bm25;
            scorer.fieldnorms = fieldnorms;
            return Ok(Box::new(scorer));
        }
        let mut parts = Vec::with_capacity(self.query.fields.len());
        for &field in &self.query.fields {
            parts.extend(self.counter(reader, field)?);
        }
        if parts.len() > 1 {
            return Ok(Box::new(FieldsScorer::new(parts, bm25, fieldnorms)));
        }
        // One field holds every word: its matches, scored over `_all`.
        let Some(mut scorer) = parts.pop() else { return Ok(Box::new(EmptyScorer)) };
        scorer.bm25 = bm25;
        scorer.fieldnorms = fieldnorms;
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        crate::phrase_prefix::explain_by_score(self, reader, doc, "sloppy phrase")
    }
}

struct SloppyScorer {
    /// One per distinct word.
    postings: Vec<Word>,
    /// The words' postings, rarest first.
    order: Vec<usize>,
    matcher: Matcher,
    cancel: rowsearch_store::Cancel,
    since_check: u32,
    doc: DocId,
    /// The current document's windows.
    count: u32,
    bm25: Option<Bm25Weight>,
    fieldnorms: Option<FieldNormReader>,
    /// A cancellation met while the first document was found (the
    /// `DocSet` methods cannot fail: later ones end the scorer, and the
    /// search learns why from its next check).
    failed: Option<tantivy::TantivyError>,
}

impl SloppyScorer {
    /// Moves to the first document at or after `target` (the driver's
    /// current or later document) holding the phrase.
    fn find(&mut self, target: DocId) -> DocId {
        let mut doc = target;
        'docs: while doc != TERMINATED {
            let lead = self.order[0];
            if self.postings[lead].doc() < doc {
                doc = self.postings[lead].seek(doc);
                continue;
            }
            for k in 1..self.order.len() {
                let p = &mut self.postings[self.order[k]];
                let d = if p.doc() < doc { p.seek(doc) } else { p.doc() };
                if d != doc {
                    doc = d;
                    continue 'docs;
                }
            }
            self.since_check += 1;
            if self.since_check >= CHECK_EVERY {
                self.since_check = 0;
                if let Err(e) = crate::cancellable::check(&self.cancel) {
                    self.failed = Some(e);
                    break;
                }
            }
            let count = self.matcher.count(&mut self.postings);
            if count > 0 {
                self.doc = doc;
                self.count = count;
                return doc;
            }
            doc = self.postings[lead].advance();
        }
        self.doc = TERMINATED;
        self.count = 0;
        TERMINATED
    }
}

impl DocSet for SloppyScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let next = self.postings[self.order[0]].advance();
        self.find(next)
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        self.find(target)
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.postings[self.order[0]].doc_freq()
    }
}

impl Scorer for SloppyScorer {
    fn score(&mut self) -> Score {
        crate::phrase_prefix::bm25_score(self.bm25.as_ref(), self.fieldnorms.as_ref(), self.doc, self.count)
    }
}

/// A phrase of `_all` matched field by field: each part is one field's
/// matches (unscored), a document's frequency is the sum of its parts'.
struct FieldsScorer {
    parts: Vec<SloppyScorer>,
    doc: DocId,
    count: u32,
    /// `_all`'s.
    bm25: Option<Bm25Weight>,
    fieldnorms: Option<FieldNormReader>,
}

impl FieldsScorer {
    fn new(parts: Vec<SloppyScorer>, bm25: Option<Bm25Weight>, fieldnorms: Option<FieldNormReader>) -> Self {
        let mut scorer = FieldsScorer { parts, doc: 0, count: 0, bm25, fieldnorms };
        scorer.settle();
        scorer
    }

    /// Stands on the least document of the parts, with its frequency.
    fn settle(&mut self) -> DocId {
        self.doc = self.parts.iter().map(DocSet::doc).min().unwrap_or(TERMINATED);
        self.count = 0;
        if self.doc != TERMINATED {
            for part in self.parts.iter().filter(|p| p.doc == self.doc) {
                self.count = self.count.saturating_add(part.count);
            }
        }
        self.doc
    }
}

impl DocSet for FieldsScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        for part in &mut self.parts {
            if part.doc == self.doc {
                part.advance();
            }
        }
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        for part in &mut self.parts {
            if part.doc < target {
                part.seek(target);
            }
        }
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.parts.iter().map(DocSet::size_hint).fold(0, u32::saturating_add)
    }
}

impl Scorer for FieldsScorer {
    fn score(&mut self) -> Score {
        crate::phrase_prefix::bm25_score(self.bm25.as_ref(), self.fieldnorms.as_ref(), self.doc, self.count)
    }
}

/// A place of the phrase: which distinct word, and where in the phrase.
#[derive(Debug, Clone, Copy)]
struct Slot {
    word: usize,
    place: u32,
}

/// Counts a document's windows: the sweep's state, kept between documents
/// so its buffers are reused.
struct Matcher {
    slots: Vec<Slot>,
    slop: u32,
    /// Each distinct word's positions in the current document.
    positions: Vec<Vec<u32>>,
    /// Each slot's cursor into its word's positions.
    at: Vec<usize>,
    /// An exact phrase's starts still standing (shifted by its last
    /// place), its slots' order, the positions of the slot being
    /// matched, and which words' positions are read.
    starts: Vec<u32>,
    order: Vec<usize>,
    scratch: Vec<u32>,
    read: Vec<bool>,
    /// Whether a word stands at two places of the phrase.
    repeats: bool,
    last_place: u32,
}

impl Matcher {
    fn new(slots: Vec<Slot>, slop: u32) -> Self {
        let words = slots.iter().map(|s| s.word).max().map_or(0, |w| w + 1);
        Matcher {
            at: vec![0; slots.len()],
            order: (0..slots.len()).collect(),
            scratch: Vec::new(),
            repeats: slots.len() > words,
            last_place: slots.iter().map(|s| s.place).max().unwrap_or(0),
            slots,
            slop,
            positions: vec![Vec::new(); words],
            starts: Vec::new(),
            read: vec![false; words],
        }
    }

    /// The windows of the document every postings list stands on.
    fn count(&mut self, postings: &mut [Word]) -> u32 {
        if self.slop == 0 {
            return self.exact(postings);
        }
        for (word, p) in postings.iter_mut().enumerate() {
            p.positions(&mut self.positions[word]);
        }
        windows(&self.slots, &self.positions, self.slop, &mut self.at)
    }

    /// An exact phrase's occurrences (slop 0): the starts `s` where each
    /// slot's word stands at `s + place`, as tantivy's phrase scorer counts
    /// them. The slots are taken rarest word in the document first, and
    /// the count ends at the first slot that leaves no start (the sweep's
    /// windows are the same count, at the cost of every word's positions
    /// and a step per one). Each slot's positions are read shifted by the
    /// last place less its own (as tantivy does), so the starts are
    /// intersected as they are; a word standing twice is read once.
    fn exact(&mut self, postings: &mut [Word]) -> u32 {
        let slots = &self.slots;
        if slots.len() == 2 {
            let (a, b) = (slots[0].word, slots[1].word);
            self.order.clear();
            self.order.extend(if postings[b].term_freq() < postings[a].term_freq() {
                [1, 0]
            } else {
                [0, 1]
            });
        } else {
            self.order.sort_by_key(|&i| postings[slots[i].word].term_freq());
        }
        self.read.fill(false);
        for (n, &i) in self.order.iter().enumerate() {
            let Slot { word, place } = slots[i];
            let shift = self.last_place - place;
            let into = if n == 0 { &mut self.starts } else { &mut self.scratch };
            if !self.repeats {
                postings[word].positions_with_offset(shift, into);
            } else {
                if !self.read[word] {
                    self.read[word] = true;
                    postings[word].positions(&mut self.positions[word]);
                }
                into.clear();
                into.extend(self.positions[word].iter().map(|p| p.wrapping_add(shift)));
            }
            if n > 0 {
                let theirs = &self.scratch;
                let mut j = 0;
                self.starts.retain(|&start| {
                    while j < theirs.len() && theirs[j] < start {
                        j += 1;
                    }
                    j < theirs.len() && theirs[j] == start
                });
            }
            if self.starts.is_empty() {
                return 0;
            }
        }
        u32::try_from(self.starts.len()).unwrap_or(u32::MAX)
    }
}

/// How many windows of `slop` the sweep finds: at each step the slot whose
/// position less its place is least either closes a window with the others
/// (their spread within `slop`) or not, and moves on. Slots of one word
/// keep distinct positions in phrase order (a slot reaching the next one's
/// position pushes it on). `at` is scratch space, one cursor per slot.
fn windows(slots: &[Slot], positions: &[Vec<u32>], slop: u32, at: &mut [usize]) -> u32 {
    // Each word's slots take its first positions, in order.
    let mut taken = vec![0usize; positions.len()];
    for (i, slot) in slots.iter().enumerate() {
        at[i] = taken[slot.word];
        taken[slot.word] += 1;
        if at[i] >= positions[slot.word].len() {
            return 0;
        }
    }
    let value =
        |i: usize, at: &[usize]| i64::from(positions[slots[i].word][at[i]]) - i64::from(slots[i].place);
    let mut count = 0u32;
    loop {
        let (mut low, mut high) = (0, value(0, at));
        let mut low_value = high;
        for i in 1..slots.len() {
            let v = value(i, at);
            if v < low_value {
                low = i;
                low_value = v;
            }
            high = high.max(v);
        }
        if high - low_value <= i64::from(slop) {
            count = count.saturating_add(1);
        }
        // The least slot moves on; later slots of its word that it reaches
        // move on past it.
        at[low] += 1;
        let word = slots[low].word;
        let mut floor = at[low];
        if floor >= positions[word].len() {
            return count;
        }
        for j in low + 1..slots.len() {
            if slots[j].word != word {
                continue;
            }
            if at[j] <= floor {
                at[j] = floor + 1;
                if at[j] >= positions[word].len() {
                    return count;
                }
            }
            floor = at[j];
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Whether some choice of distinct positions, one per slot, lies
    /// within `slop` (every assignment tried).
    fn brute_force(slots: &[Slot], positions: &[Vec<u32>], slop: u32) -> bool {
        fn go(
            i: usize,
            slots: &[Slot],
            positions: &[Vec<u32>],
            slop: u32,
            chosen: &mut Vec<(usize, u32)>,
        ) -> bool {
            if i == slots.len() {
                let values: Vec<i64> =
                    chosen.iter().zip(slots).map(|((_, p), s)| i64::from(*p) - i64::from(s.place)).collect();
                let (lo, hi) = (values.iter().min().unwrap(), values.iter().max().unwrap());
                return hi - lo <= i64::from(slop);
            }
            for &p in &positions[slots[i].word] {
                if chosen.iter().any(|&(w, q)| w == slots[i].word && q == p) {
                    continue;
                }
                chosen.push((slots[i].word, p));
                if go(i + 1, slots, positions, slop, chosen) {
                    return true;
                }
                chosen.pop();
            }
            false
        }
        go(0, slots, positions, slop, &mut Vec::new())
    }

    fn case() -> impl Strategy<Value = (Vec<usize>, Vec<u32>, u32)> {
        // A phrase of 2-4 places over 3 words (repeats likely), a document
        // of up to 14 positions over the same 3 words, a slop of 0-6.
        (prop::collection::vec(0usize..3, 2..5), prop::collection::vec(0u32..3, 0..14), 0u32..7)
    }

    proptest! {
        #[test]
        fn the_sweep_finds_a_window_exactly_when_one_exists((phrase, document, slop) in case()) {
            let slots: Vec<Slot> =
                phrase.iter().enumerate().map(|(place, &word)| Slot { word, place: place as u32 }).collect();
            let words = 3;
            let mut positions = vec![Vec::new(); words];
            for (position, &word) in document.iter().enumerate() {
                positions[word as usize].push(position as u32);
            }
            let mut at = vec![0; slots.len()];
            let found = windows(&slots, &positions, slop, &mut at) > 0;
            prop_assert_eq!(found, brute_force(&slots, &positions, slop), "{:?} in {:?} ~{}", phrase, document, slop);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Through an index: the documents the query finds are those whose
        /// words hold a window (brute force), over several segments, and
        /// each found document's score is positive.
        #[test]
        fn the_query_finds_the_documents_brute_force_finds(
            docs in prop::collection::vec(prop::collection::vec(0usize..4, 0..12), 1..30),
            phrase in prop::collection::vec(0usize..4, 2..4),
            slop in 0u32..5,
        ) {
            use tantivy::collector::TopDocs;
            use tantivy::schema::{Schema, TEXT};
            use tantivy::{Index, IndexWriter, TantivyDocument};
            const WORDS: [&str; 4] = ["ab", "cd", "ef", "gh"];
            let mut schema = Schema::builder();
            let field = schema.add_text_field("t", TEXT);
            let index = Index::create_in_ram(schema.build());
            let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
            for (n, words) in docs.iter().enumerate() {
                let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                let mut doc = TantivyDocument::new();
                doc.add_text(field, text.join(" "));
                writer.add_document(doc).unwrap();
                if n % 7 == 6 {
                    writer.commit().unwrap();
                }
            }
            writer.commit().unwrap();
            let searcher = index.reader().unwrap().searcher();
            let query = SloppyPhrase::new(
                phrase.iter().enumerate().map(|(place, &w)| (place, Term::from_field_text(field, WORDS[w]))).collect(),
                slop,
                &rowsearch_store::Cancel::default(),
            );
            let top = searcher.search(&query, &TopDocs::with_limit(100).order_by_score()).unwrap();
            let found: usize = top.len();
            prop_assert!(top.iter().all(|(score, _)| *score > 0.0));
            // The words of the phrase as slots over the distinct words.
            let mut distinct: Vec<usize> = Vec::new();
            let slots: Vec<Slot> = phrase
                .iter()
                .enumerate()
                .map(|(place, w)| {
                    let word = distinct.iter().position(|d| d == w).unwrap_or_else(|| {
                        distinct.push(*w);
                        distinct.len() - 1
                    });
                    Slot { word, place: place as u32 }
                })
                .collect();
            let want = docs
                .iter()
                .filter(|words| {
                    let positions: Vec<Vec<u32>> = distinct
                        .iter()
                        .map(|d| words.iter().enumerate().filter(|(_, w)| *w == d).map(|(p, _)| p as u32).collect())
                        .collect();
                    brute_force(&slots, &positions, slop)
                })
                .count();
            prop_assert_eq!(found, want);
        }
    }

    #[test]
    fn many_repeats_cost_steps_not_combinations() {
        // Six places of one word over 5,000 occurrences, any slop: one
        // sweep (words x positions steps), not 5,000^6.
        let slots: Vec<Slot> = (0..6).map(|place| Slot { word: 0, place }).collect();
        let positions = vec![(0..5000).map(|p| p * 2).collect::<Vec<u32>>()];
        let mut at = vec![0; 6];
        let n = windows(&slots, &positions, 1000, &mut at);
        assert!(n > 0 && n <= 6 * 5000, "{n}");
    }
}
