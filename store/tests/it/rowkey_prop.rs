//! Typed row keys: encodings round-trip and sort exactly as tuples do.

use std::cmp::Ordering;

use proptest::prelude::*;
use rowsearch_store::{KeyField, KeyOrder, KeyType, KeyValue, RowKeySchema, compare_tuples};

const TYPES: [KeyType; 8] = [
    KeyType::U8,
    KeyType::U16,
    KeyType::U32,
    KeyType::U64,
    KeyType::I32,
    KeyType::I64,
    KeyType::String,
    KeyType::Bytes,
];

fn fields() -> impl Strategy<Value = Vec<KeyField>> {
    prop::collection::vec((0..TYPES.len(), any::<bool>()), 1..5).prop_map(|spec| {
        spec.into_iter()
            .enumerate()
            .map(|(i, (t, desc))| {
                KeyField::new(format!("f{i}"), TYPES[t], if desc { KeyOrder::Desc } else { KeyOrder::Asc })
            })
            .collect()
    })
}

/// Values biased towards the edges: 0, extremes, empty, 0x00, 0xFF, prefixes.
fn value(kind: KeyType) -> BoxedStrategy<KeyValue> {
    let small_bytes = prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, 0x61, 0xFE, 0xFF]), 0..4);
    match kind {
        KeyType::U8 => any::<u8>().prop_map(KeyValue::U8).boxed(),
        KeyType::U16 => prop_oneof![Just(0u16), Just(u16::MAX), any::<u16>()].prop_map(KeyValue::U16).boxed(),
        KeyType::U32 => prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()].prop_map(KeyValue::U32).boxed(),
        KeyType::U64 => prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()].prop_map(KeyValue::U64).boxed(),
        KeyType::I32 => prop_oneof![Just(0i32), Just(-1), Just(i32::MIN), Just(i32::MAX), any::<i32>()]
            .prop_map(KeyValue::I32)
            .boxed(),
        KeyType::I64 => prop_oneof![Just(0i64), Just(-1), Just(i64::MIN), Just(i64::MAX), any::<i64>()]
            .prop_map(KeyValue::I64)
            .boxed(),
        KeyType::String => {
            prop_oneof![Just(String::new()), "[a\\x00\\x01\u{7f}é]{0,4}".prop_map(String::from),]
                .prop_map(KeyValue::String)
                .boxed()
        }
        KeyType::Bytes => small_bytes.prop_map(KeyValue::Bytes).boxed(),
    }
}

fn tuple(fields: &[KeyField]) -> BoxedStrategy<Vec<KeyValue>> {
    fields.iter().map(|f| value(f.kind)).collect::<Vec<_>>().boxed()
}

fn schema_and_tuples(n: usize) -> impl Strategy<Value = (RowKeySchema, Vec<Vec<KeyValue>>)> {
    fields().prop_flat_map(move |fields| {
        let tuples = prop::collection::vec(tuple(&fields), n);
        (Just(RowKeySchema::new(fields)), tuples)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encoding_round_trips((schema, tuples) in schema_and_tuples(4)) {
        for t in &tuples {
            let key = schema.encode(t).unwrap();
            prop_assert_eq!(&schema.decode(&key).unwrap(), t);
        }
    }

    #[test]
    fn byte_order_is_tuple_order((schema, tuples) in schema_and_tuples(6)) {
        for a in &tuples {
            for b in &tuples {
                let ka = schema.encode(a).unwrap();
                let kb = schema.encode(b).unwrap();
                prop_assert_eq!(ka.cmp(&kb), compare_tuples(&schema.fields, a, b), "{:?} vs {:?}", a, b);
            }
        }
    }

    #[test]
    fn prefixes_of_leading_fields_select_exactly_their_tuples((schema, tuples) in schema_and_tuples(6), cut in 0usize..4) {
        let probe = &tuples[0];
        let cut = cut.min(probe.len());
        let prefix = schema.encode_prefix(&probe[..cut]).unwrap();
        for t in &tuples {
            let key = schema.encode(t).unwrap();
            prop_assert_eq!(key.starts_with(&prefix), t[..cut] == probe[..cut]);
        }
    }

    #[test]
    fn decoding_garbage_never_panics(fields in fields(), bytes in prop::collection::vec(any::<u8>(), 0..24)) {
        let _ = RowKeySchema::new(fields).decode(&bytes);
    }

    #[test]
    fn salt_bucket_is_stable_and_in_range(bytes in prop::collection::vec(any::<u8>(), 1..24), buckets in 2u16..=256) {
        let schema = RowKeySchema::new([]).salted(buckets);
        let salted = schema.salt(&bytes);
        prop_assert_eq!(&salted[1..], &bytes[..]);
        prop_assert!(u16::from(salted[0]) < buckets);
        prop_assert_eq!(salted[0], schema.bucket(&bytes));
    }
}

#[test]
fn reversed_timestamps_need_no_arithmetic() {
    let schema = RowKeySchema::new([
        KeyField::new("user", KeyType::String, KeyOrder::Asc),
        KeyField::new("date", KeyType::U64, KeyOrder::Desc),
    ]);
    let old = schema.encode(&[KeyValue::String("ann".into()), KeyValue::U64(1_000)]).unwrap();
    let new = schema.encode(&[KeyValue::String("ann".into()), KeyValue::U64(2_000)]).unwrap();
    assert_eq!(new.cmp(&old), Ordering::Less, "newer dates sort first");
}

#[test]
fn named_values_and_mistakes() {
    let schema = RowKeySchema::new([
        KeyField::new("user", KeyType::String, KeyOrder::Asc),
        KeyField::new("id", KeyType::I64, KeyOrder::Asc),
    ]);
    let key =
        schema.encode_named([("id", KeyValue::I64(-5)), ("user", KeyValue::String("b".into()))]).unwrap();
    assert_eq!(
        schema.decode_named(&key).unwrap(),
        vec![("user".to_owned(), KeyValue::String("b".into())), ("id".to_owned(), KeyValue::I64(-5))]
    );
    let msg = |r: rowsearch_store::Result<Vec<u8>>| r.unwrap_err().to_string();
    assert!(msg(schema.encode_named([("user", KeyValue::String("b".into()))])).contains("\"id\" is missing"));
    assert!(msg(schema.encode_named([("nope", KeyValue::U8(1))])).contains("no key field named \"nope\""));
    assert!(msg(schema.encode(&[KeyValue::U8(1), KeyValue::I64(1)])).contains("field \"user\" is string"));
    assert!(msg(schema.encode_prefix_named([("id", KeyValue::I64(1))])).contains("earlier field \"user\""));
    assert!(schema.decode(&key[..key.len() - 1]).is_err());
}
