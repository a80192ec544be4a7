//! The embedded store as a [`RowSource`] against a model: rows by key in
//! the order asked, `None` exactly for rows the table lacks, a row none of
//! whose cells the read selects present with no cells, the selected cells
//! otherwise; the change feed read through the seam names every write in
//! order; regions cover the table.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rowsearch_store::{Column, FamilySchema, PutCell, ReadOptions, RowSource, Store, TableSchema};

const KEYS: [&str; 6] = ["k0", "k1", "k2", "k3", "k4", "k5"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn rows_by_key_match_the_model(
        writes in prop::collection::vec((0..KEYS.len(), prop::sample::select(vec!["a", "b"]), 0u8..9), 0..16),
        asked in prop::collection::vec(0..KEYS.len() + 2, 0..10),
        only_b in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let schema = TableSchema::new([FamilySchema::new("a"), FamilySchema::new("b")]).splits(vec![b"k3".to_vec()]);
        store.create_table("t", &schema).unwrap();
        // The model: per row, per family, the value last written.
        let mut model: BTreeMap<&str, BTreeMap<&str, String>> = BTreeMap::new();
        let first_seq = store.next_seq().unwrap();
        for (k, family, v) in &writes {
            store.put("t", KEYS[*k].as_bytes(), vec![PutCell::new(*family, "q", format!("v{v}"))]).unwrap();
            model.entry(KEYS[*k]).or_default().insert(family, format!("v{v}"));
        }
        let names: Vec<String> = asked.iter().map(|&i| KEYS.get(i).map_or(format!("missing{i}"), |k| (*k).to_owned())).collect();
        let keys: Vec<&[u8]> = names.iter().map(|k| k.as_bytes()).collect();
        let read = ReadOptions {
            columns: if only_b { vec![Column::Family("b".into())] } else { Vec::new() },
            ..ReadOptions::default()
        };
        let source: &dyn RowSource = &store;
        let rows = source.rows("t", &keys, &read).unwrap();
        prop_assert_eq!(rows.len(), names.len());
        for (name, row) in names.iter().zip(&rows) {
            match model.get(name.as_str()) {
                None => prop_assert!(row.is_none(), "{name}: {row:?}"),
                Some(families) => {
                    let row = row.as_ref().unwrap();
                    prop_assert_eq!(&row.key, name.as_bytes());
                    let got: BTreeMap<String, String> = row
                        .cells
                        .iter()
                        .map(|c| (c.family.to_string(), String::from_utf8_lossy(&c.value).into_owned()))
                        .collect();
                    let want: BTreeMap<String, String> = families
                        .iter()
                        .filter(|(f, _)| !only_b || **f == "b")
                        .map(|(f, v)| ((*f).to_owned(), v.clone()))
                        .collect();
                    prop_assert_eq!(got, want, "{}", name);
                }
            }
        }
        // The feed through the seam: one entry per write, in order.
        let feed = source.changes_since(first_seq, 1000).unwrap();
        let named: Vec<&[u8]> = feed.iter().map(|e| e.row.as_slice()).collect();
        let written: Vec<&[u8]> = writes.iter().map(|(k, _, _)| KEYS[*k].as_bytes()).collect();
        prop_assert_eq!(named, written);
        prop_assert_eq!(source.next_seq().unwrap(), first_seq + writes.len() as u64);
        prop_assert_eq!(source.regions("t").unwrap().len(), 2);
        prop_assert_eq!(source.table_id("t").unwrap(), store.table_id("t").unwrap());
    }
}
