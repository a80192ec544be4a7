//! A segment's groups as collapsing reads them: each document's group as a
//! slot number, slots numbered in the order documents first name them, and
//! each slot's value. Built once per segment from its facet column and
//! kept while the segment lives ([`GroupCache`]).
//!
//! Why slots and not the column's term ordinals: ordinals follow the
//! values' text, and a thread id is a hash, so the matches of a search
//! (in document order, a mailbox's messages together) touch their counts
//! all over the array; slots follow document order, so consecutive
//! matches count into nearby bytes (`enron`'s 57k matches spent 13% of a
//! collapsed search waiting on those loads). And a slot's value is read
//! here, not from the column's dictionary on every search.

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

/// A document without a value.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// One segment's groups.
#[derive(Debug, Default)]
pub(crate) struct GroupColumn {
    /// Each document's slot ([`NO_SLOT`]: no value), deleted ones too.
    slots: Vec<u32>,
    /// Each slot's value.
    keys: Vec<Key>,
    /// Each value's slot.
    by_key: hashbrown::HashMap<Key, u32>,
}

/// Documents whose ordinals are read together while building.
const BUILD_BLOCK: usize = 1024;

impl GroupColumn {
    /// From a segment's column of the field (a document's first value is
    /// its group).
    fn build(column: &BytesColumn, max_doc: DocId) -> std::io::Result<GroupColumn> {
        let mut slot_of_ord = vec![NO_SLOT; column.num_terms()];
        let mut ord_of_slot: Vec<u64> = Vec::new();
        let mut slots = Vec::with_capacity(max_doc as usize);
        let mut docs = Vec::with_capacity(BUILD_BLOCK);
        let mut ords = vec![None; BUILD_BLOCK];
        for start in (0..max_doc).step_by(BUILD_BLOCK) {
            docs.clear();
            docs.extend(start..max_doc.min(start.saturating_add(BUILD_BLOCK as u32)));
            let ords = &mut ords[..docs.len()];
            column.ords().first_vals(&docs, ords);
            for ord in ords.iter() {
                let slot = match ord.and_then(|o| slot_of_ord.get_mut(o as usize).map(|s| (o, s))) {
                    None => NO_SLOT,
                    Some((ord, slot)) => {
                        if *slot == NO_SLOT {
                            *slot = ord_of_slot.len() as u32;
                            ord_of_slot.push(ord);
                        }
                        *slot
                    }
                };
                slots.push(slot);
            }
        }
        let mut keys = vec![Key::None; ord_of_slot.len()];
        let mut terms = column.dictionary().stream()?;
        while terms.advance() {
            if let Some(&slot) = slot_of_ord.get(terms.term_ord() as usize)
                && slot != NO_SLOT
            {
                keys[slot as usize] = Key::of(terms.key());
            }
        }
        let by_key = keys.iter().enumerate().map(|(slot, key)| (key.clone(), slot as u32)).collect();
        Ok(GroupColumn { slots, keys, by_key })
    }

    /// How many slots (values) the segment has.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// `doc`'s slot, or [`NO_SLOT`].
    #[inline]
    pub(crate) fn slot(&self, doc: DocId) -> u32 {
        self.slots.get(doc as usize).copied().unwrap_or(NO_SLOT)
    }

    /// A slot's value ([`Key::None`] for [`NO_SLOT`]).
    pub(crate) fn key(&self, slot: u32) -> &Key {
        self.keys.get(slot as usize).unwrap_or(&Key::None)
    }

    /// A value's slot here.
    pub(crate) fn slot_of(&self, key: &Key) -> Option<u32> {
        self.by_key.get(key).copied()
    }
}

/// Segments whose columns a cache keeps at once beyond those a search is
/// reading (live indexes make new small segments as writes come).
const CACHED_SEGMENTS: usize = 64;

/// The [`GroupColumn`]s of a table's segments, per (segment, column): a
/// segment never changes, so its column is built once and serves every
/// search reading it; dropped once the segment is no longer searched.
#[derive(Debug, Default)]
pub(crate) struct GroupCache {
    columns: Mutex<HashMap<(SegmentId, String), Arc<GroupColumn>>>,
}

impl GroupCache {
    /// The groups of `reader`'s segment by facet column `column` (`None`
    /// when the segment has no such column); built when not kept yet,
    /// dropping the columns of segments not among `searched` when the
    /// cache is full.
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
        let built = Arc::new(GroupColumn::build(&values, reader.max_doc())?);
        let mut map = self.columns.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= CACHED_SEGMENTS {
            map.retain(|(segment, _), _| searched.contains(segment));
        }
        map.insert(key, Arc::clone(&built));
        Ok(Some(built))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
