//! A zstd family's dictionary: trained once from sample values, used for
//! every value written after (by this process and others), values written
//! before read as they were, gone with its table; a family without zstd
//! gets none. Against a model: every row reads back what was put.

use proptest::prelude::*;
use rowsearch_store::{Compression, FamilySchema, PutCell, Scan, Store, TableSchema};

fn schema() -> TableSchema {
    TableSchema::new([FamilySchema::new("z").compression(Compression::Zstd), FamilySchema::new("p")])
}

fn body(i: usize, salt: u64) -> String {
    format!(
        "Dear team,\nthe gas price report {i} for the California market is attached ({salt}).\n\
         Please call me tomorrow about the power plant.\nRegards,\nVince {}\n",
        i * 7
    )
}

/// A row as read: its key and its (column, value) cells.
type ReadRow = (Vec<u8>, Vec<(String, Vec<u8>)>);

fn rows(store: &Store) -> Vec<ReadRow> {
    let page = store.begin_read().unwrap().scan_page("t", &Scan::new()).unwrap();
    page.rows
        .into_iter()
        .map(|r| {
            let cells = r
                .cells
                .into_iter()
                .map(|c| (format!("{}:{}", c.family, String::from_utf8_lossy(&c.qualifier)), c.value))
                .collect();
            (r.key, cells)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn values_written_before_and_after_a_dictionary_read_back_as_put(
        before in 0usize..40,
        after in 1usize..40,
        salt in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut model = std::collections::BTreeMap::new();
        {
            let store = Store::open(dir.path()).unwrap();
            store.create_table("t", &schema()).unwrap();
            let put = |store: &Store, i: usize, model: &mut std::collections::BTreeMap<Vec<u8>, String>| {
                let key = format!("row{i:04}").into_bytes();
                let value = body(i, salt);
                store.put("t", &key, vec![PutCell::new("z", "b", value.clone()), PutCell::new("p", "b", value.clone())]).unwrap();
                model.insert(key, value);
            };
            for i in 0..before {
                put(&store, i, &mut model);
            }
            // Too few samples: none made.
            let few: Vec<String> = (0..3).map(|i| body(i, salt)).collect();
            let few: Vec<&[u8]> = few.iter().map(|s| s.as_bytes()).collect();
            prop_assert!(!store.train_dictionary("t", "z", &few).unwrap());
            let samples: Vec<String> = (1000..1400).map(|i| body(i, salt)).collect();
            let samples: Vec<&[u8]> = samples.iter().map(|s| s.as_bytes()).collect();
            // A family without compression takes none; the zstd one does, once.
            prop_assert!(!store.train_dictionary("t", "p", &samples).unwrap());
            prop_assert!(store.train_dictionary("t", "z", &samples).unwrap());
            prop_assert!(!store.train_dictionary("t", "z", &samples).unwrap());
            for i in before..before + after {
                put(&store, i, &mut model);
            }
            // Rewritten rows take the dictionary too.
            put(&store, 0, &mut model);
            let read = rows(&store);
            prop_assert_eq!(read.len(), model.len());
            for (key, cells) in &read {
                for (_, value) in cells {
                    prop_assert_eq!(value.as_slice(), model[key].as_bytes());
                }
            }
        }
        // Another opening (as another process would) reads them all.
        let store = Store::open(dir.path()).unwrap();
        let read = rows(&store);
        prop_assert_eq!(read.len(), model.len());
        for (key, cells) in &read {
            prop_assert_eq!(cells.len(), 2);
            for (_, value) in cells {
                prop_assert_eq!(value.as_slice(), model[key].as_bytes());
            }
        }
        // Dropped with its table: a new table of that name trains its own.
        store.drop_table("t").unwrap();
        store.create_table("t", &schema()).unwrap();
        let samples: Vec<String> = (0..400).map(|i| body(i, salt ^ 1)).collect();
        let samples: Vec<&[u8]> = samples.iter().map(|s| s.as_bytes()).collect();
        prop_assert!(store.train_dictionary("t", "z", &samples).unwrap());
    }
}

/// A prepared batch carries its values compressed as the table stood when
/// it was prepared; written after the table changed (given a dictionary,
/// or dropped and made again storing values as they are), every value
/// still reads back as put, now and after another opening.
#[test]
fn a_prepared_batch_written_after_its_table_changed_reads_back_as_put() {
    let plain = TableSchema::new([FamilySchema::new("z"), FamilySchema::new("p")]);
    let batch = || {
        let mut batch = rowsearch_store::Batch::new();
        for i in 0..50 {
            let value = body(i, 7);
            batch.put(
                "t",
                format!("row{i:04}"),
                vec![PutCell::new("z", "b", value.clone()), PutCell::new("p", "b", value)],
            );
        }
        batch
    };
    let check = |store: &Store| {
        let read = rows(store);
        assert_eq!(read.len(), 50);
        for (i, (key, cells)) in read.iter().enumerate() {
            assert_eq!(key, format!("row{i:04}").as_bytes());
            assert_eq!(cells.len(), 2);
            for (column, value) in cells {
                assert_eq!(String::from_utf8_lossy(value), body(i, 7), "{column} of row {i}");
            }
        }
    };
    for change in ["dictionary", "remade without compression", "unchanged"] {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.create_table("t", &schema()).unwrap();
            let prepared = store.prepare(batch());
            match change {
                "dictionary" => {
                    let samples: Vec<String> = (1000..1400).map(|i| body(i, 3)).collect();
                    let samples: Vec<&[u8]> = samples.iter().map(|s| s.as_bytes()).collect();
                    assert!(store.train_dictionary("t", "z", &samples).unwrap());
                }
                "remade without compression" => {
                    store.drop_table("t").unwrap();
                    store.create_table("t", &plain).unwrap();
                }
                _ => {}
            }
            store.apply_prepared(&prepared).unwrap();
            check(&store);
        }
        check(&Store::open(dir.path()).unwrap());
    }
}
