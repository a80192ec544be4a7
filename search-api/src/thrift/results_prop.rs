//! `TResult`s written straight from rows ([`thbase_types::results`]) are
//! byte for byte the tree of values they stand for, in both protocols:
//! absent rows, rows without cells, lists past the compact protocol's
//! short header (15 items), any bytes and timestamps.

use proptest::prelude::*;
use rowsearch_store::{Cell, Row};

use super::codec::{Message, MessageType, Protocol, TType, Value, encode};
use super::thbase_types::{result, result_tree, results};

fn row() -> impl Strategy<Value = Option<Row>> {
    let cell = (
        "[a-z]{1,3}",
        proptest::collection::vec(any::<u8>(), 0..6),
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(family, qualifier, timestamp, value)| Cell {
            family: family.as_str().into(),
            qualifier,
            timestamp,
            value,
        });
    proptest::option::of(
        (proptest::collection::vec(any::<u8>(), 0..8), proptest::collection::vec(cell, 0..20))
            .prop_map(|(key, cells)| Row { key, cells }),
    )
}

fn bytes(protocol: Protocol, body: Value) -> Vec<u8> {
    encode(protocol, &Message { name: "scan".into(), kind: MessageType::Reply, seq: 7, body })
}

proptest! {
    #[test]
    fn written_results_equal_the_tree(rows in proptest::collection::vec(row(), 0..20)) {
        for protocol in [Protocol::Binary, Protocol::Compact] {
            let tree = Value::List { elem: TType::Struct, items: rows.iter().map(|r| result_tree(r.as_ref())).collect() };
            // Inside a struct, as a reply's field 0: the compact protocol's
            // field deltas around it.
            let wrap = |v: Value| Value::Struct(vec![(0, v), (2, Value::Bool(true))]);
            prop_assert_eq!(bytes(protocol, wrap(results(rows.clone().into_iter()))), bytes(protocol, wrap(tree)));
            let first = rows.first().cloned().flatten();
            prop_assert_eq!(
                bytes(protocol, wrap(result(first.clone()))),
                bytes(protocol, wrap(result_tree(first.as_ref())))
            );
        }
    }
}
