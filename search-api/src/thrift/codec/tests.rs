//! The codec's tests: bytes written by hand, and property tests.

use super::*;

fn call(body: Value) -> Message {
    Message { name: "getRow".into(), kind: MessageType::Call, seq: 7, body }
}

/// A call as happybase's binary protocol writes it, byte for byte.
#[test]
fn a_binary_call_reads_as_written_by_hand() {
    let mut bytes = vec![0x80, 0x01, 0x00, 0x01, 0, 0, 0, 6];
    bytes.extend_from_slice(b"getRow");
    bytes.extend_from_slice(&[0, 0, 0, 7]);
    bytes.extend_from_slice(&[11, 0, 1, 0, 0, 0, 1, b't', 11, 0, 2, 0, 0, 0, 2, b'r', b'1', 0]);
    let (m, used) = decode(Protocol::Binary, &bytes, &Limits::default()).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(
        m,
        call(Value::Struct(vec![(1, Value::Binary(b"t".to_vec())), (2, Value::Binary(b"r1".to_vec()))]))
    );
    assert_eq!(encode(Protocol::Binary, &m), bytes);
    for cut in 0..bytes.len() {
        assert_eq!(decode(Protocol::Binary, &bytes[..cut], &Limits::default()), Err(DecodeError::Incomplete));
    }
}

#[test]
fn lengths_past_the_input_reserve_nothing_and_deep_nesting_is_refused() {
    // A list claiming 2^31-1 items in a 30-byte message.
    let mut bytes = vec![0x80, 0x01, 0x00, 0x01, 0, 0, 0, 1, b'x', 0, 0, 0, 1];
    bytes.extend_from_slice(&[15, 0, 1, 8, 0x7f, 0xff, 0xff, 0xff]);
    let small = Limits { max_depth: 8, max_message_bytes: 1 << 20 };
    assert!(matches!(decode(Protocol::Binary, &bytes, &small), Err(DecodeError::TooLarge(_))));
    let mut nested = Value::Struct(vec![]);
    for _ in 0..20 {
        nested = Value::Struct(vec![(1, nested)]);
    }
    let deep = encode(Protocol::Compact, &call(nested));
    assert!(matches!(decode(Protocol::Compact, &deep, &small), Err(DecodeError::TooLarge(_))));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<bool>().prop_map(Value::Bool),
            any::<i8>().prop_map(Value::Byte),
            any::<i16>().prop_map(Value::I16),
            any::<i32>().prop_map(Value::I32),
            any::<i64>().prop_map(Value::I64),
            (-1e12f64..1e12).prop_map(Value::Double),
            proptest::collection::vec(any::<u8>(), 0..24).prop_map(Value::Binary),
        ]
    }

    fn list_of(elem: TType, items: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
        proptest::collection::vec(items, 0..20).prop_map(move |items| Value::List { elem, items })
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec((any::<i16>(), inner.clone()), 0..6).prop_map(|fields| {
                    // Field ids are unique within a struct.
                    let mut seen = std::collections::HashSet::new();
                    Value::Struct(fields.into_iter().filter(|(id, _)| seen.insert(*id)).collect())
                }),
                list_of(TType::I64, any::<i64>().prop_map(Value::I64)),
                list_of(TType::Bool, any::<bool>().prop_map(Value::Bool)),
                proptest::collection::vec(any::<u8>(), 0..8).prop_flat_map(|_| list_of(
                    TType::Binary,
                    proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::Binary)
                )),
                proptest::collection::vec(
                    (
                        proptest::collection::vec(any::<u8>(), 0..8),
                        proptest::collection::vec(any::<u8>(), 0..8)
                    ),
                    0..5
                )
                .prop_map(|entries| Value::Map {
                    key: TType::Binary,
                    value: TType::Binary,
                    entries: entries.into_iter().map(|(k, v)| (Value::Binary(k), Value::Binary(v))).collect(),
                }),
                inner.prop_map(|v| Value::Struct(vec![(1, v)])),
            ]
        })
    }

    fn message() -> impl Strategy<Value = Message> {
        (
            "[a-zA-Z]{1,12}",
            prop_oneof![Just(MessageType::Call), Just(MessageType::Reply), Just(MessageType::Exception)],
            any::<i32>(),
            proptest::collection::vec((any::<i16>(), value()), 0..6),
        )
            .prop_map(|(name, kind, seq, fields)| {
                let mut seen = std::collections::HashSet::new();
                let body = Value::Struct(fields.into_iter().filter(|(id, _)| seen.insert(*id)).collect());
                Message { name, kind, seq, body }
            })
    }

    proptest! {
        /// Every message reads back as written, in both protocols, and
        /// every prefix of it is incomplete, never an error or a panic.
        #[test]
        fn messages_read_back_as_written(m in message()) {
            for protocol in [Protocol::Binary, Protocol::Compact] {
                let bytes = encode(protocol, &m);
                prop_assert_eq!(Protocol::detect(bytes[0]), Some(protocol));
                let (back, used) = decode(protocol, &bytes, &Limits::default()).unwrap();
                prop_assert_eq!(used, bytes.len());
                prop_assert_eq!(&back, &m);
                for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
                    prop_assert_eq!(
                        decode(protocol, &bytes[..cut], &Limits::default()),
                        Err(DecodeError::Incomplete)
                    );
                }
            }
        }

        /// Any bytes at all: an answer, never a panic, and nothing
        /// reserved past the input (a claimed length larger than the
        /// bytes is incomplete or too large).
        #[test]
        fn any_bytes_decode_or_fail_cleanly(
            head in prop_oneof![Just(vec![0x80u8, 1, 0, 1]), Just(vec![0x82u8, 0x21]), Just(vec![])],
            tail in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let bytes: Vec<u8> = head.into_iter().chain(tail).collect();
            let limits = Limits { max_depth: 8, max_message_bytes: 4096 };
            for protocol in [Protocol::Binary, Protocol::Compact] {
                if let Ok((_, used)) = decode(protocol, &bytes, &limits) {
                    prop_assert!(used <= bytes.len());
                }
            }
        }
    }
}
