//! Threads for rows that live elsewhere (`thread_rows` over a place's own
//! thread entries, here a map) against the store's: the same messages, in
//! any order and batches, some put again, get the same thread ids as the
//! store gives them put one by one, the rows outside a batch whose thread
//! changed are named (written here as a place's caller writes them), the
//! members listed equal the store's, and a deleted row's ids become
//! ghosts as in the store.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rowsearch_store::{PutCell, ThreadEntries, parse_thread_id, thread_members_in, thread_rows};

use crate::threads_prop::{Msg, Words, key, messages, open, schema, shuffled, threads_of};

/// Thread entries in a map: what an HBase table holds.
#[derive(Default)]
struct MapEntries(BTreeMap<Vec<u8>, Vec<u8>>);

impl ThreadEntries for MapEntries {
    fn get(&mut self, key: &[u8]) -> rowsearch_store::Result<Option<Vec<u8>>> {
        Ok(self.0.get(key).cloned())
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> rowsearch_store::Result<()> {
        self.0.insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> rowsearch_store::Result<()> {
        self.0.remove(key);
        Ok(())
    }

    fn range(&mut self, from: &[u8], to: &[u8]) -> rowsearch_store::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self.0.range(from.to_vec()..=to.to_vec()).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn prefix(&mut self, prefix: &[u8]) -> rowsearch_store::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self
            .0
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}

/// A table elsewhere: each row's thread column.
type Place = BTreeMap<Vec<u8>, String>;

/// Puts `msgs` in `order`, in batches of `cuts`, as a place's writer does:
/// threads computed over `entries`, the rows written with their thread
/// column, then the moved rows' thread column.
fn put_elsewhere(entries: &mut MapEntries, place: &mut Place, msgs: &[Msg], order: &[usize], cuts: &[usize]) {
    let mut at = 0;
    let mut cuts = cuts.iter().copied().peekable();
    while at < order.len() {
        let size = cuts.next().unwrap_or(order.len()).clamp(1, order.len() - at);
        let mut rows: Vec<(Vec<u8>, Vec<PutCell>)> =
            order[at..at + size].iter().map(|&i| (key(msgs[i].user, i as u16), msgs[i].cells())).collect();
        let moved = thread_rows("t", &schema(), &Words, entries, &mut rows).unwrap();
        for (row, cells) in &rows {
            let thread = cells.iter().rfind(|c| c.family == "m" && c.qualifier == b"thread").unwrap();
            place.insert(row.clone(), String::from_utf8(thread.value.clone()).unwrap());
        }
        for m in moved {
            assert!(place.contains_key(&m.row), "a moved row is one written before");
            place.insert(m.row, m.thread);
        }
        at += size;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn threads_elsewhere_equal_the_stores(
        msgs in messages(),
        seed in any::<u64>(),
        cuts in prop::collection::vec(1..8usize, 0..12),
        again in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let in_order: Vec<usize> = (0..msgs.len()).collect();
        crate::threads_prop::put_in(&store, &msgs, &in_order, &[1; 64], false, false);
        let expected = threads_of(&store, &msgs);

        let mut entries = MapEntries::default();
        let mut place = Place::new();
        put_elsewhere(&mut entries, &mut place, &msgs, &shuffled(msgs.len(), seed), &cuts);
        for index in &again {
            let i = index.index(msgs.len());
            put_elsewhere(&mut entries, &mut place, &msgs, &[i], &[]);
        }
        let got: Vec<String> =
            msgs.iter().enumerate().map(|(i, m)| place[&key(m.user, i as u16)].clone()).collect();
        prop_assert_eq!(&got, &expected);

        // Every thread's members equal the store's.
        let rtxn = store.begin_read().unwrap();
        for thread in got.iter().collect::<BTreeSet<_>>() {
            let id = parse_thread_id(thread).unwrap();
            let ours = thread_members_in(&mut entries, id).unwrap();
            prop_assert_eq!(ours, rtxn.thread_members("t", id).unwrap());
        }
        drop(rtxn);

        // A deleted row's ids become ghosts, as in the store.
        let victim = seed as usize % msgs.len();
        let (row, m) = (key(msgs[victim].user, victim as u16), &msgs[victim]);
        let ids = m.cells().into_iter().find(|c| c.qualifier == b"message_id").unwrap().value;
        let partition = crate::threads_prop::USERS[m.user].as_bytes();
        rowsearch_store::ghost_row("t", &schema(), &mut entries, (partition, &row), &ids).unwrap();
        let mut batch = rowsearch_store::Batch::new();
        batch.delete("t", row, rowsearch_store::Delete::Row { up_to: None });
        store.apply(&batch).unwrap();
        let id = parse_thread_id(&expected[victim]).unwrap();
        let rtxn = store.begin_read().unwrap();
        prop_assert_eq!(thread_members_in(&mut entries, id).unwrap(), rtxn.thread_members("t", id).unwrap());
    }
}
