//! Index entries for values of any length: values too long for LMDB's
//! 511-byte keys are kept cut (their first bytes and a hash), and lookups
//! (equality, prefixes, ranges, with cursors) answer exactly what a brute
//! force over the rows answers. Also through `verify` and a row key of the
//! longest length (whose entry leaves the values the least room).

use proptest::prelude::*;
use rowsearch_store::{FamilySchema, IndexQuery, IndexSchema, PutCell, Store, TableSchema};

/// A value: short, or long (up to 2 KB) from one of three long stems, with
/// 0x00 bytes (which escape to two bytes) and shared first bytes, so cut
/// values meet, tie on their first bytes and straddle query bounds.
fn value() -> impl Strategy<Value = Vec<u8>> {
    let tail = prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]), 0..6);
    let stem = prop::sample::select(vec![0usize, 60, 70, 88, 95, 150, 165, 181, 186, 200, 400, 2000]);
    let fill = prop::sample::select(vec![b'x', 0x00, b'y']);
    prop_oneof![
        1 => prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0x00]), 0..3),
        3 => (stem, fill, tail).prop_map(|(n, f, t)| {
            let mut v = vec![f; n];
            v.extend(t);
            v
        }),
    ]
}

/// A row key: short, or the longest allowed.
fn row_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => (0u8..12).prop_map(|i| vec![b'r', i]),
        1 => (0u8..3).prop_map(|i| { let mut k = vec![0u8; 159]; k.push(i); k }),
    ]
}

fn query(columns: usize) -> impl Strategy<Value = IndexQuery> {
    (prop::collection::vec(value(), 0..=columns), 0u8..4, value(), value(), 1usize..5).prop_map(
        move |(mut eq, kind, a, b, limit)| {
            let ranged = kind > 0;
            eq.truncate(if ranged { columns - 1 } else { columns });
            let mut q = IndexQuery { eq, limit: Some(limit), ..IndexQuery::default() };
            match kind {
                0 => {}
                1 => q.prefix = Some(a),
                2 => q.start = Some(a),
                _ => {
                    q.start = Some(a.clone().min(b.clone()));
                    q.stop = Some(a.max(b));
                }
            }
            q
        },
    )
}

/// The rows a lookup must find: (values, key), sorted.
fn brute_force(
    rows: &[(Vec<u8>, Vec<Vec<u8>>)],
    q: &IndexQuery,
    columns: usize,
) -> Vec<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut out: Vec<_> = rows
        .iter()
        .filter(|(_, values)| {
            let values = &values[..columns];
            q.eq.iter().zip(values).all(|(e, v)| e == v)
                && values.get(q.eq.len()).is_none_or(|v| {
                    q.prefix.as_ref().is_none_or(|p| v.starts_with(p))
                        && q.start.as_ref().is_none_or(|s| v >= s)
                        && q.stop.as_ref().is_none_or(|s| v < s)
                })
        })
        .map(|(k, values)| (values[..columns].to_vec(), k.clone()))
        .collect();
    out.sort();
    out
}

/// Walks a lookup page by page with its cursors; returns every hit, sorted.
fn walk(store: &Store, index: &str, q: &IndexQuery) -> Vec<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut q = q.clone();
    let mut got = Vec::new();
    for _ in 0..1000 {
        let page = store.index_lookup("t", index, &q).expect("lookup");
        assert!(page.hits.len() <= q.limit.unwrap_or(usize::MAX));
        got.extend(page.hits.into_iter().map(|h| (h.values, h.key)));
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    let n = got.len();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), n, "no hit twice across pages");
    got
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn lookups_of_values_of_any_length_equal_a_brute_force(
        puts in prop::collection::vec((row_key(), value(), value()), 1..24),
        queries in prop::collection::vec((0usize..2, query(1), query(2)), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::builder().index_pending_runs(2).open(dir.path()).unwrap();
        let schema = TableSchema::new([FamilySchema::new("m")])
            .splits([vec![b'r', 6]])
            .index(IndexSchema::new("one", ["m:a"]))
            .index(IndexSchema::new("two", ["m:a", "m:b"]));
        store.create_table("t", &schema).unwrap();
        let mut rows: std::collections::BTreeMap<Vec<u8>, Vec<Vec<u8>>> = Default::default();
        for (k, a, b) in puts {
            store.put("t", &k, vec![PutCell::new("m", "a", a.clone()), PutCell::new("m", "b", b.clone())]).unwrap();
            rows.insert(k, vec![a, b]);
        }
        for index in ["one", "two"] {
            let report = store.verify_index("t", index).unwrap();
            prop_assert!(report.is_clean(), "{index}: {report:?}");
        }
        let rows: Vec<_> = rows.into_iter().collect();
        for (which, q1, q2) in queries {
            let (index, q, columns) = if which == 0 { ("one", q1, 1) } else { ("two", q2, 2) };
            prop_assert_eq!(walk(&store, index, &q), brute_force(&rows, &q, columns), "{} {:?}", index, q);
        }
    }
}

#[test]
fn a_mail_sized_from_of_any_length_is_indexed_and_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let schema = TableSchema::new([FamilySchema::new("m")])
        .index(IndexSchema::new("by_from", ["m:from"]))
        .index(IndexSchema::new("by_from_date", ["m:from", "m:date"]));
    store.create_table("t", &schema).unwrap();
    for len in [10usize, 480, 570, 4096, 100_000] {
        let from = format!("{}@example.com", "a".repeat(len));
        let key = format!("row{len}");
        store
            .put(
                "t",
                key.as_bytes(),
                vec![PutCell::new("m", "from", from.clone()), PutCell::new("m", "date", "2001")],
            )
            .unwrap();
        for index in ["by_from", "by_from_date"] {
            let q = IndexQuery { eq: vec![from.clone().into_bytes()], ..IndexQuery::default() };
            let page = store.index_lookup("t", index, &q).unwrap();
            assert_eq!(page.hits.len(), 1, "{index} {len}");
            assert_eq!(page.hits[0].key, key.as_bytes());
            assert_eq!(page.hits[0].values[0], from.as_bytes(), "the full value comes back");
        }
    }
    // The longest row key, all zero bytes (escaped to twice its length),
    // in a pending run (whose id comes first): the entry still fits.
    let longest = vec![0u8; rowsearch_store::MAX_ROW_KEY_BYTES];
    let from = "z".repeat(600);
    store
        .put(
            "t",
            &longest,
            vec![PutCell::new("m", "from", from.clone()), PutCell::new("m", "date", "\0".repeat(90))],
        )
        .unwrap();
    let q = IndexQuery { eq: vec![from.into_bytes()], ..IndexQuery::default() };
    assert_eq!(store.index_lookup("t", "by_from_date", &q).unwrap().hits[0].key, longest);
    let q = IndexQuery { prefix: Some("a".repeat(470).into_bytes()), ..IndexQuery::default() };
    assert_eq!(store.index_lookup("t", "by_from", &q).unwrap().hits.len(), 4);
    assert!(store.verify_index("t", "by_from").unwrap().is_clean());
    assert!(store.verify_index("t", "by_from_date").unwrap().is_clean());
}
