//! A segment's groups as collapsing reads them: each document's group as a
//! slot number in a plain array, slots numbered in the order documents
//! first name them. Built once per segment from its facet column (a
//! millisecond per 60k documents) and kept while the segment is searched
//! ([`GroupCache`]).
//!
//! Why: a match's group then costs one array read instead of decoding the
//! column, and slots follow document order (a mailbox's messages sit
//! together), so the counts of consecutive matches sit in nearby bytes,
//! where term ordinals follow the values' text (a thread id is a hash).
//! Each slot's thread id is decoded once too (8 bytes a slot), so a page's
//! groups are named without reading the column's dictionary; a segment
//! whose values are not all thread ids reads the dictionary for a page's
//! groups instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::columnar::BytesColumn;
use tantivy::index::SegmentId;
use tantivy::{DocId, SegmentReader};

/// A group's value: a thread id (16 lowercase hex digits, what the store
/// writes) as its number; any other text as it is; none (a document
/// without a value, a group of its own).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Id(u64),
    Text(Box<[u8]>),
    None,
}

impl Key {
    pub(crate) fn of(term: &[u8]) -> Key {
        let id = (term.len() == 16)
            .then(|| {
                term.iter().try_fold(0u64, |id, &b| {
                    let nibble = match b {
                        b'0'..=b'9' => b - b'0',
                        b'a'..=b'f' => b - b'a' + 10,
                        _ => return None,
                    };
                    Some(id << 4 | u64::from(nibble))
                })
            })
            .flatten();
        match id {
            Some(id) => Key::Id(id),
            None => Key::Text(term.into()),
        }
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        match self {
            Key::Id(id) => format!("{id:016x}").into_bytes(),
            Key::Text(text) => text.to_vec(),
            Key::None => Vec::new(),
        }
    }
}

/// Values in the order of their bytes (a segment's term ordinals'
/// order), none last: the order groups of equal best value go in.
impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        match (self, other) {
            (Key::None, Key::None) => std::cmp::Ordering::Equal,
            (Key::None, _) => std::cmp::Ordering::Greater,
            (_, Key::None) => std::cmp::Ordering::Less,
            (Key::Id(a), Key::Id(b)) => a.cmp(b),
            (a, b) => a.bytes().cmp(&b.bytes()),
        }
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A document without a value.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// One segment's groups.
#[derive(Debug)]
pub(crate) struct GroupColumn {
    /// The field's column (its dictionary gives a value's text).
    values: BytesColumn,
    /// Each document's slot ([`NO_SLOT`]: no value), deleted ones too.
    slots: Vec<u32>,
    /// Each slot's term ordinal in `values`.
    ords: Vec<u64>,
    /// Each term ordinal's slot ([`NO_SLOT`] for one no document names).
    slot_of_ord: Vec<u32>,
    /// Each slot's value as a thread id, when every value the segment's
    /// documents name is one (what the store writes): a page's groups
    /// then come without reading the dictionary.
    ids: Option<Vec<u64>>,
}

/// Documents whose ordinals are read together while building.
const BUILD_BLOCK: usize = 1024;

impl GroupColumn {
    /// From a segment's column of the field (a document's first value is
    /// its group).
    fn build(values: BytesColumn, max_doc: DocId) -> GroupColumn {
        let mut slot_of_ord = vec![NO_SLOT; values.num_terms()];
        let mut ords: Vec<u64> = Vec::new();
        let mut slots = Vec::with_capacity(max_doc as usize);
        let mut docs = Vec::with_capacity(BUILD_BLOCK);
        let mut firsts = vec![None; BUILD_BLOCK];
        for start in (0..max_doc).step_by(BUILD_BLOCK) {
            docs.clear();
            docs.extend(start..max_doc.min(start.saturating_add(BUILD_BLOCK as u32)));
            let firsts = &mut firsts[..docs.len()];
            values.ords().first_vals(&docs, firsts);
            for first in firsts.iter() {
                let slot = match first.and_then(|o| slot_of_ord.get_mut(o as usize).map(|s| (o, s))) {
                    None => NO_SLOT,
                    Some((ord, slot)) => {
                        if *slot == NO_SLOT {
                            *slot = ords.len() as u32;
                            ords.push(ord);
                        }
                        *slot
                    }
                };
                slots.push(slot);
            }
        }
        let ids = slot_ids(&values, &slot_of_ord, ords.len());
        GroupColumn { values, slots, ords, slot_of_ord, ids }
    }

    /// A slot's term ordinal: its value's place in the values' byte order.
    pub(crate) fn term_ord(&self, slot: u32) -> u64 {
        self.ords.get(slot as usize).copied().unwrap_or(u64::MAX)
    }

    /// How many slots (values) the segment has.
    pub(crate) fn len(&self) -> usize {
        self.ords.len()
    }

    /// `doc`'s slot, or [`NO_SLOT`].
    #[inline]
    pub(crate) fn slot(&self, doc: DocId) -> u32 {
        self.slots.get(doc as usize).copied().unwrap_or(NO_SLOT)
    }

    /// The slot of the value whose text is `term`.
    pub(crate) fn slot_of(&self, term: &[u8]) -> Option<u32> {
        let ord = self.values.dictionary().term_ord(term).ok().flatten()?;
        self.slot_of_ord.get(ord as usize).copied().filter(|&s| s != NO_SLOT)
    }

    /// The value of each of `slots`: each slot's thread id where the
    /// segment's values are all ids, else its text read from the
    /// dictionary in one pass (`each` called in the dictionary's order;
    /// slots it cannot read are skipped).
    pub(crate) fn keys(&self, slots: &[u32], mut each: impl FnMut(u32, Key)) {
        if let Some(ids) = &self.ids {
            for &slot in slots {
                if let Some(&id) = ids.get(slot as usize) {
                    each(slot, Key::Id(id));
                }
            }
            return;
        }
        let mut by_ord: Vec<(u64, u32)> =
            slots.iter().filter_map(|&s| self.ords.get(s as usize).map(|&o| (o, s))).collect();
        by_ord.sort_unstable();
        let ords: Vec<u64> = by_ord.iter().map(|(o, _)| *o).collect();
        let mut at = 0;
        let _ = self.values.dictionary().sorted_ords_to_term_cb(&ords, |term| {
            if let Some(&(_, slot)) = by_ord.get(at) {
                each(slot, Key::of(term));
            }
            at += 1;
        });
    }
}

/// Each of a segment's `slots` slots' value as a thread id (`slot_of_ord`:
/// each term ordinal's slot), read in one pass over the dictionary; `None`
/// when a value named by a document is not one.
fn slot_ids(values: &BytesColumn, slot_of_ord: &[u32], slots: usize) -> Option<Vec<u64>> {
    let mut ids = vec![0; slots];
    let mut terms = values.dictionary().stream().ok()?;
    let mut ord = 0usize;
    while terms.advance() {
        if let Some(&slot) = slot_of_ord.get(ord).filter(|&&s| s != NO_SLOT) {
            match Key::of(terms.key()) {
                Key::Id(id) => *ids.get_mut(slot as usize)? = id,
                _ => return None,
            }
        }
        ord += 1;
    }
    Some(ids)
}

/// The [`GroupColumn`]s of a table's segments, per (segment, column): a
/// segment never changes, so its column is built once and serves every
/// search reading it; dropped once a search that builds a column no longer
/// reads its segment (merged away, or a live index's older segment), so a
/// merged segment's array does not outlive it.
#[derive(Debug, Default)]
pub(crate) struct GroupCache {
    columns: Mutex<HashMap<(SegmentId, String), Arc<GroupColumn>>>,
}

impl GroupCache {
    /// The groups of `reader`'s segment by facet column `column` (`None`
    /// when the segment has no such column); built when not kept yet,
    /// dropping then the columns of segments not among `searched` (every
    /// segment the search reads: the generation's are in every search's).
    pub(crate) fn column(
        &self,
        reader: &SegmentReader,
        column: &str,
        searched: &[SegmentId],
    ) -> tantivy::Result<Option<Arc<GroupColumn>>> {
        let key = (reader.segment_id(), column.to_string());
        if let Some(found) = self.columns.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(Some(Arc::clone(found)));
        }
        let Some(values) = reader.fast_fields().str(column)?.map(BytesColumn::from) else { return Ok(None) };
        let built = Arc::new(GroupColumn::build(values, reader.max_doc()));
        let mut map = self.columns.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|(segment, _), _| searched.contains(segment));
        map.insert(key, Arc::clone(&built));
        Ok(Some(built))
    }
}

#[cfg(test)]
mod tests {
    use tantivy::schema::{FAST, STRING, Schema};
    use tantivy::{Index, TantivyDocument};

    use super::*;

    /// The groups of a one-segment index whose documents hold `values`
    /// (`None`: no value) in a string fast field.
    fn column_of(values: &[Option<&str>]) -> Arc<GroupColumn> {
        let mut schema = Schema::builder();
        let field = schema.add_text_field("g", STRING | FAST);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for value in values {
            let mut doc = TantivyDocument::default();
            if let Some(value) = value {
                doc.add_text(field, value);
            }
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let reader = searcher.segment_reader(0);
        let cache = GroupCache::default();
        cache.column(reader, "g", &[reader.segment_id()]).unwrap().unwrap()
    }

    /// Each slot's value as `keys` gives it, in slot order.
    fn slot_keys(column: &GroupColumn) -> Vec<Key> {
        let slots: Vec<u32> = (0..column.len() as u32).collect();
        let mut out = vec![Key::None; slots.len()];
        column.keys(&slots, |slot, key| out[slot as usize] = key);
        out
    }

    #[test]
    fn slots_follow_document_order_and_give_their_values() {
        let (a, b) = ("00000000000000ff", "0000000000000001");
        let ids = column_of(&[Some(a), Some(b), None, Some(a)]);
        assert!(ids.ids.is_some(), "a segment of thread ids keeps them per slot");
        assert_eq!((0..4).map(|d| ids.slot(d)).collect::<Vec<_>>(), vec![0, 1, NO_SLOT, 0]);
        assert_eq!(slot_keys(&ids), vec![Key::Id(0xff), Key::Id(1)]);
        assert_eq!(ids.slot_of(b.as_bytes()), Some(1));
        // One value that is not an id: every value is read from the
        // dictionary, ids still as numbers.
        let mixed = column_of(&[Some("inbox"), Some(a), Some("inbox"), Some(b)]);
        assert!(mixed.ids.is_none());
        assert_eq!(slot_keys(&mixed), vec![Key::Text(b"inbox".to_vec().into()), Key::Id(0xff), Key::Id(1)]);
        assert_eq!(mixed.slot_of(b"inbox"), Some(0));
        assert_eq!(mixed.slot_of(b"absent"), None);
    }

    #[test]
    fn keys_read_thread_ids_as_numbers_and_other_text_as_it_is() {
        assert_eq!(Key::of(b"00000000000000ff"), Key::Id(255));
        assert_eq!(Key::of(b"00000000000000ff").bytes(), b"00000000000000ff");
        // Upper case is not what the store writes: kept as text, so it
        // comes back as it was.
        assert_eq!(Key::of(b"00000000000000FF"), Key::Text(b"00000000000000FF".to_vec().into()));
        assert_eq!(Key::of(b"inbox").bytes(), b"inbox");
        assert_eq!(Key::None.bytes(), b"");
    }
}
