//! Generators of filters for property tests and the fuzzer.

use proptest::prelude::*;
use rowsearch_store::{Comparator, CompareOp, Filter, FuzzyKey, ListOp, MultiRowRange, RegexComparator};

pub fn bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'\'', b'a', b'b', 0xFF]), min..=max)
}

fn op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(vec![
        CompareOp::Less,
        CompareOp::LessOrEqual,
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::GreaterOrEqual,
        CompareOp::Greater,
    ])
}

pub fn comparison() -> impl Strategy<Value = (CompareOp, Comparator)> {
    prop_oneof![
        (op(), bytes(0, 2)).prop_map(|(o, b)| (o, Comparator::Binary(b))),
        (op(), bytes(0, 2)).prop_map(|(o, b)| (o, Comparator::BinaryPrefix(b))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["a", "^b", "a$", "\\x00", "."])
        )
            .prop_map(|(o, r)| (o, Comparator::Regex(RegexComparator::new(r).unwrap()))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["A", "b", ""])
        )
            .prop_map(|(o, s)| (o, Comparator::substring(s))),
    ]
}

fn leaf(stateful: bool) -> BoxedStrategy<Filter> {
    let family = prop::sample::select(vec!["a", "b"]).prop_map(str::to_owned);
    let stateless = prop_oneof![
        comparison().prop_map(|(o, c)| Filter::Row(o, c)),
        comparison().prop_map(|(o, c)| Filter::Family(o, c)),
        comparison().prop_map(|(o, c)| Filter::Qualifier(o, c)),
        comparison().prop_map(|(o, c)| Filter::Value(o, c)),
        bytes(0, 2).prop_map(Filter::Prefix),
        any::<bool>().prop_map(|len_as_value| Filter::KeyOnly { len_as_value }),
        Just(Filter::FirstKeyOnly),
        prop::sample::select(vec![0.0f32, 1.0]).prop_map(|chance| Filter::RandomRow { chance }),
        (family.clone(), bytes(0, 1), comparison(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(family, qualifier, (op, comparator), filter_if_missing, latest_version_only, exclude)| {
                Filter::SingleColumnValue {
                    family,
                    qualifier,
                    op,
                    comparator,
                    filter_if_missing,
                    latest_version_only,
                    exclude,
                }
            }
        ),
        (0u32..3, 0u32..3).prop_map(|(limit, offset)| Filter::ColumnPagination { limit, offset }),
        bytes(0, 1).prop_map(Filter::ColumnPrefix),
        prop::collection::vec(bytes(0, 1), 1..3).prop_map(Filter::MultipleColumnPrefix),
        (prop::option::of(bytes(1, 1)), any::<bool>(), prop::option::of(bytes(1, 2)), any::<bool>())
            .prop_map(|(min, min_inclusive, max, max_inclusive)| Filter::ColumnRange {
                min,
                min_inclusive,
                max,
                max_inclusive
            }),
        prop::collection::vec(1u64..5, 0..3).prop_map(Filter::Timestamps),
        bytes(1, 2).prop_map(Filter::InclusiveStop),
        (family.clone(), bytes(0, 1), comparison()).prop_map(|(family, qualifier, (op, comparator))| {
            Filter::ColumnValue { family, qualifier, op, comparator }
        }),
        prop::collection::vec(
            (prop::option::of(bytes(1, 2)), any::<bool>(), prop::option::of(bytes(1, 2)), any::<bool>()),
            1..3
        )
        .prop_map(|ranges| Filter::MultiRowRange(
            ranges
                .into_iter()
                .map(|(start, start_inclusive, stop, stop_inclusive)| MultiRowRange {
                    start,
                    start_inclusive,
                    stop,
                    stop_inclusive
                })
                .collect()
        )),
        prop::collection::vec(
            prop::collection::vec((prop::sample::select(vec![b'a', b'b', 0x00, 0xFF]), 0u8..2), 1..4),
            1..3
        )
        .prop_map(|keys| Filter::FuzzyRow(
            keys.into_iter()
                .map(|pairs| {
                    let (key, mask) = pairs.into_iter().unzip();
                    FuzzyKey { key, mask }
                })
                .collect()
        )),
        (family, bytes(0, 1), any::<bool>(), prop::option::of(comparison())).prop_map(
            |(family, qualifier, drop_dependent_column, value)| Filter::DependentColumn {
                family,
                qualifier,
                drop_dependent_column,
                value
            }
        ),
    ];
    if stateful {
        prop_oneof![
            8 => stateless,
            1 => (0u64..4).prop_map(Filter::Page),
            1 => (0u32..3).prop_map(|limit| Filter::ColumnCountGet { limit }),
        ]
        .boxed()
    } else {
        stateless.boxed()
    }
}

/// Filter trees up to three levels deep. Stateful filters (PageFilter,
/// WhileMatchFilter, ColumnCountGetFilter) restart on every page of a cursor
/// walk, so walks use stateless trees only.
pub fn filter(stateful: bool) -> BoxedStrategy<Filter> {
    let tree = leaf(stateful).prop_recursive(3, 12, 3, move |inner| {
        let mut options = vec![
            (
                prop::sample::select(vec![ListOp::All, ListOp::One]),
                prop::collection::vec(inner.clone(), 0..3),
            )
                .prop_map(|(op, fs)| Filter::List(op, fs))
                .boxed(),
            inner.clone().prop_map(|f| Filter::Skip(Box::new(f))).boxed(),
        ];
        if stateful {
            options.push(inner.prop_map(|f| Filter::WhileMatch(Box::new(f))).boxed());
        }
        prop::strategy::Union::new(options)
    });
    // Single filters at the top often, so range-bounding ones meet the rows
    // they bound.
    if stateful {
        prop_oneof![
            2 => leaf(true),
            1 => leaf(true).prop_map(|f| Filter::WhileMatch(Box::new(f))),
            3 => tree,
        ]
        .boxed()
    } else {
        prop_oneof![2 => leaf(false), 3 => tree].boxed()
    }
}
