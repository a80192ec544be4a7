//! The overlay at sizes the search-level property test does not reach:
//! more changed rows than the term-query hide takes (a term set hides
//! them), and many layers (rebuilt as one past the most kept).

use rowsearch_indexer::store::{Batch, Delete, PutCell, Store};
use rowsearch_indexer::{
    Overlay, ReindexOptions, SortBy, TableIndex, changes_in, mail_schema, open_store, reindex,
};

fn key(store: &Store, id: u64) -> Vec<u8> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    rk.encode_json(&serde_json::json!({"user": "ann", "date": 990_000_000_000u64 + id, "id": id})).unwrap()
}

/// Writes rows `ids` with `subject`, in one batch.
fn write(store: &Store, ids: std::ops::Range<u64>, subject: &str) {
    let mut batch = Batch::new();
    for id in ids {
        batch.put(
            "mail",
            key(store, id),
            vec![
                PutCell::new("m", "subject", subject),
                PutCell::new("m", "date", (990_000_000_000u64 + id).to_string()),
            ],
        );
    }
    store.apply(&batch).unwrap();
}

/// (total, keys) of `query` on the serving generation with `overlay`.
fn search(index: &TableIndex, overlay: Option<&Overlay>, query: &str) -> (u64, Vec<Vec<u8>>) {
    let generation = index.generation().unwrap();
    let parsed = generation.parse(query, &[]).unwrap();
    let found = generation.search_overlaid(query, &*parsed, overlay, &[], SortBy::Oldest, 0, 1000).unwrap();
    (found.total, found.keys.into_iter().map(|(k, _)| k).collect())
}

#[test]
fn an_overlay_of_many_rows_and_many_layers_answers_as_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    store.create_table("mail", &mail_schema()).unwrap();
    write(&store, 0..200, "alpha");
    reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {}).unwrap();
    let index = TableIndex::open(&store, "mail").unwrap();
    let from = index.generation().unwrap().absorbed;
    let schema = index.generation().unwrap().schema.clone();
    assert_eq!(search(&index, None, "alpha").0, 200);

    // 150 rows rewritten (past the 64 a term-query hide takes), 10 deleted.
    write(&store, 0..150, "beta");
    for id in 150..160 {
        store.delete("mail", &key(&store, id), Delete::Row { up_to: None }).unwrap();
    }
    let rtxn = store.begin_read().unwrap();
    let overlay = Overlay::build(&rtxn, &schema, from, changes_in(&rtxn, "mail", from).unwrap()).unwrap();
    drop(rtxn);
    assert_eq!(overlay.rows().len(), 160);
    let (alpha, keys) = search(&index, Some(&overlay), "alpha");
    assert_eq!(alpha, 40, "the rewritten and deleted rows no longer match their old words");
    assert_eq!(keys, (160..200).map(|id| key(&store, id)).collect::<Vec<_>>());
    assert_eq!(search(&index, Some(&overlay), "beta").0, 150);

    // Layers: each write extends the overlay; a row rewritten in a later
    // layer matches only its newest words; past 8 layers it is one again.
    let mut overlay = overlay;
    for round in 0..12u64 {
        let word = format!("gamma{round}");
        write(&store, round * 10..round * 10 + 20, &word);
        let rtxn = store.begin_read().unwrap();
        let tail = changes_in(&rtxn, "mail", overlay.next_seq).unwrap();
        overlay = overlay.extend(&rtxn, &schema, tail).unwrap();
        drop(rtxn);
        assert!(overlay.layers() <= 8, "{overlay:?}");
        assert_eq!(search(&index, Some(&overlay), &word).0, 20, "round {round}");
        if round > 0 {
            // The previous round's rows 10 ahead were rewritten now.
            assert_eq!(search(&index, Some(&overlay), &format!("gamma{}", round - 1)).0, 10, "round {round}");
        }
        let alpha = (160..200).filter(|&id| id >= round * 10 + 20).count() as u64;
        assert_eq!(search(&index, Some(&overlay), "alpha").0, alpha, "round {round}");
    }
    assert!(overlay.layers() < 12, "rebuilt as one along the way: {overlay:?}");
}
