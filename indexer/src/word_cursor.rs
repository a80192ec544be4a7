//! A word's postings with its positions, walked forward for phrase
//! matching at a cost per document that does not depend on where in its
//! block the document stands.
//!
//! tantivy's `SegmentPostings` finds a document's first position by
//! summing the frequencies of the documents before it in its block of 128
//! on every call (its position offset is kept per block only): a phrase
//! reading the positions of thousands of documents spends a third of its
//! time in that sum (`perf`, `"natural gas"`). Here the offset is carried
//! along as the cursor moves (each frequency added once), and the
//! positions are read from the same `.pos` bytes with tantivy's own
//! [`PositionReader`]. The price: moving past a block reads it (tantivy's
//! skip list, which knows a skipped block's frequency total, is not
//! public), so a walk decodes every block up to its last document; the
//! phrase scorer drives with the rarest word, and a list much longer than
//! the driver's is read through tantivy's postings instead ([`Word`]).

use std::collections::HashMap;
use std::sync::Arc;

use tantivy::directory::{CompositeFile, FileSlice};

use tantivy::index::{SegmentComponent, SegmentId};
use tantivy::positions::PositionReader;
use tantivy::postings::{BlockSegmentPostings, Postings, SegmentPostings, TermInfo};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, InvertedIndexReader, SegmentReader, TERMINATED};

/// Documents per block of a postings list (tantivy's compression block).
const BLOCK: usize = 128;

/// The positions bytes of one field of a segment (`.pos`, the field's part
/// of the composite file); `None` when the segment has none for it.
pub(crate) fn positions_file(reader: &SegmentReader, field: Field) -> tantivy::Result<Option<FileSlice>> {
    let file = reader.open_read(SegmentComponent::Positions)?;
    let composite = CompositeFile::open(&file)?;
    Ok(composite.open_read(field))
}

/// The positions bytes of each field of a generation's segments, opened
/// once when the generation is (a phrase otherwise opens the segment's
/// positions file and reads its table of fields for every field it looks
/// in: ~1 us each, 7% of a rare phrase's search). A segment it does not
/// hold (an overlay's) is opened as every one was before.
#[derive(Clone, Default)]
pub struct PositionFiles(Arc<HashMap<SegmentId, HashMap<Field, FileSlice>>>);

impl PositionFiles {
    /// The positions of every positioned field of `searcher`'s segments.
    ///
    /// # Errors
    /// When a segment's positions file cannot be opened.
    pub fn open(searcher: &tantivy::Searcher) -> tantivy::Result<PositionFiles> {
        let schema = searcher.schema();
        let fields: Vec<Field> = schema
            .fields()
            .filter(|(_, entry)| {
                entry.field_type().get_index_record_option().is_some_and(|o| o.has_positions())
            })
            .map(|(field, _)| field)
            .collect();
        let mut segments = HashMap::new();
        for reader in searcher.segment_readers() {
            let file = reader.open_read(SegmentComponent::Positions)?;
            let composite = CompositeFile::open(&file)?;
            let slices = fields.iter().filter_map(|&f| composite.open_read(f).map(|s| (f, s))).collect();
            segments.insert(reader.segment_id(), slices);
        }
        Ok(PositionFiles(Arc::new(segments)))
    }

    /// `field`'s positions in the segment of `reader`; `None` when it has
    /// none.
    pub(crate) fn get(&self, reader: &SegmentReader, field: Field) -> tantivy::Result<Option<FileSlice>> {
        match self.0.get(&reader.segment_id()) {
            Some(slices) => Ok(slices.get(&field).cloned()),
            None => positions_file(reader, field),
        }
    }
}

impl std::fmt::Debug for PositionFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PositionFiles").field("segments", &self.0.len()).finish()
    }
}

/// How much longer than the rarest word's a word's list must be for
/// tantivy's postings, which skip blocks unread, to read it instead.
const SKIP_RATIO: u32 = 16;

/// A word of a phrase in one field of one segment: carried offsets
/// ([`WordCursor`]), or tantivy's postings when its list is over
/// [`SKIP_RATIO`] times the rarest word's (most of its blocks are then
/// skipped, not walked).
pub(crate) enum Word {
    Walk(WordCursor),
    Skip(SegmentPostings),
}

impl Word {
    /// The words of `infos` in one field, in their order, each read as
    /// the rarest of them makes worth it.
    pub(crate) fn open_all<'a>(
        index: &InvertedIndexReader,
        infos: impl Iterator<Item = &'a TermInfo> + Clone,
        positions: &FileSlice,
    ) -> std::io::Result<Vec<Word>> {
        let rarest = infos.clone().map(|i| i.doc_freq).min().unwrap_or(0);
        infos.map(|info| Word::open(index, info, positions, rarest)).collect()
    }

    /// The word of `info`, in a phrase whose rarest word is in
    /// `rarest` documents.
    pub(crate) fn open(
        index: &InvertedIndexReader,
        info: &TermInfo,
        positions: &FileSlice,
        rarest: u32,
    ) -> std::io::Result<Word> {
        if info.doc_freq / SKIP_RATIO > rarest {
            let postings =
                index.read_postings_from_terminfo(info, IndexRecordOption::WithFreqsAndPositions)?;
            return Ok(Word::Skip(postings));
        }
        Ok(Word::Walk(WordCursor::open(index, info, positions)?))
    }

    #[inline]
    pub(crate) fn doc(&self) -> DocId {
        match self {
            Word::Walk(w) => w.doc(),
            Word::Skip(p) => p.doc(),
        }
    }

    pub(crate) fn doc_freq(&self) -> u32 {
        match self {
            Word::Walk(w) => w.doc_freq(),
            Word::Skip(p) => p.doc_freq(),
        }
    }

    #[inline]
    pub(crate) fn term_freq(&self) -> u32 {
        match self {
            Word::Walk(w) => w.term_freq(),
            Word::Skip(p) => p.term_freq(),
        }
    }

    #[inline]
    pub(crate) fn advance(&mut self) -> DocId {
        match self {
            Word::Walk(w) => w.advance(),
            Word::Skip(p) => p.advance(),
        }
    }

    #[inline]
    pub(crate) fn seek(&mut self, target: DocId) -> DocId {
        match self {
            Word::Walk(w) => w.seek(target),
            Word::Skip(p) => p.seek(target),
        }
    }

    /// The current document's positions, each plus `shift`, into `out`
    /// (cleared first).
    pub(crate) fn positions_with_offset(&mut self, shift: u32, out: &mut Vec<u32>) {
        match self {
            Word::Walk(w) => w.positions_with_offset(shift, out),
            Word::Skip(p) => {
                out.clear();
                p.positions_with_offset(shift, out);
            }
        }
    }

    pub(crate) fn positions(&mut self, out: &mut Vec<u32>) {
        self.positions_with_offset(0, out)
    }
}

/// One word's documents, frequencies and positions in one field of one
/// segment, moved forward only.
pub(crate) struct WordCursor {
    block: BlockSegmentPostings,
    /// The current document's index in the block.
    at: usize,
    /// The current document's first position's index among the word's
    /// positions (the frequencies of every document before it, summed).
    offset: u64,
    positions: PositionReader,
    doc_freq: u32,
}

impl WordCursor {
    /// Opens the word of `info` in the field whose inverted index is
    /// `index` and whose positions are `positions`; stands on its first
    /// document.
    pub(crate) fn open(
        index: &InvertedIndexReader,
        info: &TermInfo,
        positions: &FileSlice,
    ) -> std::io::Result<WordCursor> {
        let block = index.read_block_postings_from_terminfo(info, IndexRecordOption::WithFreqs)?;
        let bytes = positions.read_bytes_slice(info.positions_range.clone())?;
        Ok(WordCursor {
            block,
            at: 0,
            offset: 0,
            positions: PositionReader::open(bytes)?,
            doc_freq: info.doc_freq,
        })
    }

    pub(crate) fn doc(&self) -> DocId {
        self.block.doc(self.at)
    }

    pub(crate) fn doc_freq(&self) -> u32 {
        self.doc_freq
    }

    /// The current document's frequency.
    pub(crate) fn term_freq(&self) -> u32 {
        self.block.freq(self.at)
    }

    pub(crate) fn advance(&mut self) -> DocId {
        if self.doc() == TERMINATED {
            return TERMINATED;
        }
        self.offset += u64::from(self.term_freq());
        self.at += 1;
        if self.at == BLOCK {
            self.block.advance();
            self.at = 0;
        }
        self.doc()
    }

    /// Moves to the first document at or after `target`.
    pub(crate) fn seek(&mut self, target: DocId) -> DocId {
        // Whole blocks first: a full block's last document is its 128th
        // (the last block, shorter, ends in TERMINATED padding).
        while self.block.block_len() == BLOCK && self.block.doc(BLOCK - 1) < target {
            let rest: u32 = self.block.freqs()[self.at..].iter().sum();
            self.offset += u64::from(rest);
            self.block.advance();
            self.at = 0;
        }
        // Within the block: eight documents at a time while the eighth is
        // before the target, then one at a time (targets are mostly a few
        // documents on: a branch-free count over the rest of the block,
        // or a binary search, measured slower).
        let (docs, freqs) = (self.block.docs(), self.block.freqs());
        let (mut at, mut passed) = (self.at, 0u32);
        while at + 8 <= docs.len() && docs[at + 7] < target {
            passed += freqs[at..at + 8].iter().sum::<u32>();
            at += 8;
        }
        while at < docs.len() && docs[at] < target {
            passed += freqs[at];
            at += 1;
        }
        self.offset += u64::from(passed);
        self.at = at;
        self.doc()
    }

    /// The current document's positions, each plus `shift`, into `out`
    /// (cleared first).
    pub(crate) fn positions_with_offset(&mut self, shift: u32, out: &mut Vec<u32>) {
        let n = self.term_freq() as usize;
        out.clear();
        out.resize(n, 0);
        self.positions.read(self.offset, out);
        // Stored as deltas from the document's start.
        let mut at = shift;
        for p in out.iter_mut() {
            at = at.wrapping_add(*p);
            *p = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{Index, IndexWriter, TantivyDocument, Term};

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// A word (either way it is read) finds the documents, frequencies
        /// and positions tantivy's postings find, for any mix of seeks and
        /// advances, over lists of several blocks.
        #[test]
        fn the_cursor_reads_what_tantivys_postings_read(
            // Per document: how many times the word stands (0: not at
            // all), and how many other words stand before each.
            docs in prop::collection::vec((0usize..4, 0usize..3), 100..700),
            steps in prop::collection::vec((any::<bool>(), 0u32..40), 1..80),
            // A phrase whose rarest word is in no document (its other
            // words go through tantivy's postings) or in every one.
            skip in any::<bool>(),
        ) {
            let mut schema = Schema::builder();
            let field = schema.add_text_field("t", TEXT);
            let index = Index::create_in_ram(schema.build());
            let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
            for &(times, gap) in &docs {
                let mut words = Vec::new();
                for _ in 0..times {
                    words.extend(std::iter::repeat_n("other", gap));
                    words.push("word");
                }
                words.push("end");
                let mut doc = TantivyDocument::new();
                doc.add_text(field, words.join(" "));
                writer.add_document(doc).unwrap();
            }
            writer.commit().unwrap();
            let searcher = index.reader().unwrap().searcher();
            let reader = searcher.segment_reader(0);
            let inverted = reader.inverted_index(field).unwrap();
            let term = Term::from_field_text(field, "word");
            let Some(info) = inverted.get_term_info(&term).unwrap() else {
                prop_assert!(docs.iter().all(|(times, _)| *times == 0));
                return Ok(());
            };
            let file = positions_file(reader, field).unwrap().unwrap();
            let mut cursor = Word::open(&inverted, &info, &file, if skip { 0 } else { u32::MAX }).unwrap();
            prop_assert_eq!(matches!(cursor, Word::Skip(_)), skip && info.doc_freq >= SKIP_RATIO);
            let mut theirs = inverted.read_postings(&term, IndexRecordOption::WithFreqsAndPositions).unwrap().unwrap();
            prop_assert_eq!(cursor.doc_freq(), theirs.doc_freq());
            let (mut mine, mut want) = (Vec::new(), Vec::new());
            for (seek, by) in steps {
                let (a, b) = if seek {
                    let target = theirs.doc().saturating_add(by);
                    (cursor.seek(target), theirs.seek(target))
                } else {
                    (cursor.advance(), theirs.advance())
                };
                prop_assert_eq!(a, b);
                if a == TERMINATED {
                    break;
                }
                prop_assert_eq!(cursor.term_freq(), theirs.term_freq());
                cursor.positions_with_offset(by, &mut mine);
                want.clear();
                theirs.positions_with_offset(by, &mut want);
                prop_assert_eq!(&mine, &want);
            }
        }
    }

    #[test]
    fn a_list_of_whole_blocks_ends_after_its_last_document() {
        for n in [128u32, 256] {
            let mut schema = Schema::builder();
            let field = schema.add_text_field("t", TEXT);
            let index = Index::create_in_ram(schema.build());
            let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
            for _ in 0..n {
                let mut doc = TantivyDocument::new();
                doc.add_text(field, "word word");
                writer.add_document(doc).unwrap();
            }
            writer.commit().unwrap();
            let searcher = index.reader().unwrap().searcher();
            let reader = searcher.segment_reader(0);
            let inverted = reader.inverted_index(field).unwrap();
            let info = inverted.get_term_info(&Term::from_field_text(field, "word")).unwrap().unwrap();
            let file = positions_file(reader, field).unwrap().unwrap();
            let mut walk = WordCursor::open(&inverted, &info, &file).unwrap();
            assert_eq!(walk.seek(n - 1), n - 1);
            let mut positions = Vec::new();
            walk.positions_with_offset(0, &mut positions);
            assert_eq!(positions, [0, 1]);
            assert_eq!(walk.advance(), TERMINATED);
            assert_eq!(walk.advance(), TERMINATED);
            let mut walk = WordCursor::open(&inverted, &info, &file).unwrap();
            assert_eq!(walk.seek(n), TERMINATED, "{n}");
            assert_eq!(walk.seek(n + 5), TERMINATED, "{n}");
        }
    }
}
