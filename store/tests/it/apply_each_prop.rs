//! [`Store::apply_each`] against [`Store::apply`]: the same mutations
//! written as one batch, or handed over in chunks within one transaction,
//! leave the same rows, versions, index entries and feed rows; a failure
//! in any chunk writes nothing. A tiny initial map makes the transaction
//! run again on a grown map, so the producer is called more than once.

use std::sync::Arc;

use proptest::prelude::*;
use rowsearch_store::{
    ALL_VERSIONS, Batch, Delete, Error, FamilySchema, IndexQuery, IndexSchema, ManualClock, Mutation,
    PutCell, ReadOptions, Scan, Store, TableSchema,
};

fn open(dir: &std::path::Path) -> Store {
    let store = Store::builder()
        .map_size_bytes(64 * 1024)
        .clock(Arc::new(ManualClock::new(1_000_000)))
        .open(dir)
        .expect("open store");
    let schema = TableSchema::new([FamilySchema::new("a").max_versions(2), FamilySchema::new("b")])
        .index(IndexSchema::new("by_a", ["a:q"]));
    store.create_table("t", &schema).unwrap();
    store
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let row = prop::sample::select(vec!["r1", "r2", "r3", "r4", "r5"]).prop_map(str::to_owned);
    let put =
        (row.clone(), prop::sample::select(vec!["a", "b"]), 0u8..4, 1u64..6).prop_map(|(r, f, v, ts)| {
            Mutation::Put {
                table: "t".into(),
                row: r.into_bytes(),
                cells: vec![PutCell::new(f, "q", format!("v{v}")).at(ts * 10)],
            }
        });
    let delete = (row, 0u8..3).prop_map(|(r, kind)| Mutation::Delete {
        table: "t".into(),
        row: r.into_bytes(),
        what: match kind {
            0 => Delete::Row { up_to: None },
            1 => Delete::Column { family: "a".into(), qualifier: b"q".to_vec(), up_to: Some(30) },
            _ => Delete::Family { family: "b".into(), up_to: None },
        },
    });
    prop_oneof![3 => put, 1 => delete]
}

/// Every version of every cell (as text), the index's row keys for each
/// value, and the feed's rows in order.
type Seen = (String, Vec<Vec<Vec<u8>>>, Vec<Vec<u8>>);

/// Everything a reader sees of table `t`.
fn seen(store: &Store) -> Seen {
    let scan = Scan::new().read(ReadOptions { versions: ALL_VERSIONS, ..ReadOptions::default() });
    let rows = format!("{:?}", store.scan("t", &scan).unwrap().rows);
    let index = (0..4)
        .map(|v| {
            let query = IndexQuery { eq: vec![format!("v{v}").into_bytes()], ..IndexQuery::default() };
            store.index_lookup("t", "by_a", &query).unwrap().hits.into_iter().map(|h| h.key).collect()
        })
        .collect();
    let feed = store.feed_since(0, usize::MAX).unwrap().into_iter().map(|e| e.row).collect();
    (rows, index, feed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn chunks_in_one_transaction_write_what_one_batch_writes(
        mutations in prop::collection::vec(mutation(), 0..40),
        chunk in 1usize..8,
    ) {
        let (one_dir, each_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (one, each) = (open(one_dir.path()), open(each_dir.path()));
        one.apply(&Batch { mutations: mutations.clone() }).unwrap();
        let mut calls = 0;
        let info = each
            .apply_each(&mut |sink| {
                calls += 1;
                for part in mutations.chunks(chunk) {
                    sink(Batch { mutations: part.to_vec() })?;
                }
                Ok(())
            })
            .unwrap();
        let (rows, index, _) = seen(&one);
        let (each_rows, each_index, each_feed) = seen(&each);
        prop_assert_eq!(rows, each_rows);
        prop_assert_eq!(index, each_index);
        // The feed: each chunk's distinct rows, in order of first mutation.
        let mut expected = Vec::new();
        for part in mutations.chunks(chunk) {
            let mut firsts: Vec<Vec<u8>> = Vec::new();
            for m in part {
                if !firsts.iter().any(|r| r.as_slice() == m.row()) {
                    firsts.push(m.row().to_vec());
                }
            }
            expected.extend(firsts);
        }
        prop_assert_eq!(info.rows, expected.len());
        prop_assert_eq!(each_feed, expected);
        prop_assert!(calls >= 1);

        // A failure in the last chunk writes nothing of the others.
        let before = seen(&each);
        let failed = each.apply_each(&mut |sink| {
            for part in mutations.chunks(chunk) {
                sink(Batch { mutations: part.to_vec() })?;
            }
            Err(Error::callback("refused at the end"))
        });
        prop_assert!(failed.is_err());
        prop_assert_eq!(seen(&each), before);
    }
}
