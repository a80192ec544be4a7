//! HBase's serialized filters: the protobuf `Filter` message its Java
//! client sends (`filterBytes` of Thrift2's `TGet` and `TScan`, written by
//! `ProtobufUtil.toFilter`), read into a [`Filter`].
//!
//! The messages are those of HBase 2.6's `Filter.proto`, `Comparator.proto`
//! and `HBase.proto` (package `hbase.pb`), written here as prost structs:
//! a `Filter` is a Java class name and that filter's own message, a
//! `Comparator` the same for comparators. Every field is read as optional
//! (proto2's `required` is the same on the wire) and a missing one is an
//! error naming it. A filter or comparator rowsearch does not run is an
//! error naming its class, never ignored.

use prost::Message;

use super::{Comparator, CompareOp, Filter, FuzzyKey, ListOp, MultiRowRange, RegexComparator};
use crate::error::{ErrorKind, Result};

/// How deep filters may nest (lists, `SkipFilter`, `WhileMatchFilter`).
const MAX_DEPTH: usize = 32;

const FILTERS: &str = "org.apache.hadoop.hbase.filter.";

#[derive(Clone, PartialEq, Message)]
struct PbFilter {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    serialized_filter: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct PbComparator {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    serialized_comparator: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ByteArrayComparable {
    #[prost(bytes = "vec", optional, tag = "1")]
    value: Option<Vec<u8>>,
}

/// `BinaryComparator`, `BinaryPrefixComparator` (and the other
/// `ByteArrayComparable` wrappers).
#[derive(Clone, PartialEq, Message)]
struct WrappedComparable {
    #[prost(message, optional, tag = "1")]
    comparable: Option<ByteArrayComparable>,
}

#[derive(Clone, PartialEq, Message)]
struct RegexStringComparator {
    #[prost(string, optional, tag = "1")]
    pattern: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pattern_flags: Option<i32>,
    #[prost(string, optional, tag = "3")]
    charset: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct SubstringComparator {
    #[prost(string, optional, tag = "1")]
    substr: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct CompareFilter {
    #[prost(int32, optional, tag = "1")]
    compare_op: Option<i32>,
    #[prost(message, optional, tag = "2")]
    comparator: Option<PbComparator>,
}

/// `RowFilter`, `FamilyFilter`, `QualifierFilter`, `ValueFilter`.
#[derive(Clone, PartialEq, Message)]
struct ComparingFilter {
    #[prost(message, optional, tag = "1")]
    compare_filter: Option<CompareFilter>,
}

#[derive(Clone, PartialEq, Message)]
struct DependentColumnFilter {
    #[prost(message, optional, tag = "1")]
    compare_filter: Option<CompareFilter>,
    #[prost(bytes = "vec", optional, tag = "2")]
    column_family: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "3")]
    column_qualifier: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    drop_dependent_column: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct ColumnCountGetFilter {
    #[prost(int32, optional, tag = "1")]
    limit: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct ColumnPaginationFilter {
    #[prost(int32, optional, tag = "1")]
    limit: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    offset: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    column_offset: Option<Vec<u8>>,
}

/// `ColumnPrefixFilter`, `PrefixFilter` and `InclusiveStopFilter`: one
/// bytes field.
#[derive(Clone, PartialEq, Message)]
struct BytesFilter {
    #[prost(bytes = "vec", optional, tag = "1")]
    bytes: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ColumnRangeFilter {
    #[prost(bytes = "vec", optional, tag = "1")]
    min_column: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "2")]
    min_column_inclusive: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "3")]
    max_column: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    max_column_inclusive: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct FilterList {
    #[prost(int32, optional, tag = "1")]
    operator: Option<i32>,
    #[prost(message, repeated, tag = "2")]
    filters: Vec<PbFilter>,
}

/// `SkipFilter`, `WhileMatchFilter`: one filter.
#[derive(Clone, PartialEq, Message)]
struct WrappingFilter {
    #[prost(message, optional, tag = "1")]
    filter: Option<PbFilter>,
}

#[derive(Clone, PartialEq, Message)]
struct BytesBytesPair {
    #[prost(bytes = "vec", optional, tag = "1")]
    first: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    second: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct FuzzyRowFilter {
    #[prost(message, repeated, tag = "1")]
    fuzzy_keys_data: Vec<BytesBytesPair>,
    #[prost(bool, optional, tag = "2")]
    is_mask_v2: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct KeyOnlyFilter {
    #[prost(bool, optional, tag = "1")]
    len_as_val: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct MultipleColumnPrefixFilter {
    #[prost(bytes = "vec", repeated, tag = "1")]
    sorted_prefixes: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct PageFilter {
    #[prost(int64, optional, tag = "1")]
    page_size: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct RandomRowFilter {
    #[prost(float, optional, tag = "1")]
    chance: Option<f32>,
}

#[derive(Clone, PartialEq, Message)]
struct SingleColumnValueFilter {
    #[prost(bytes = "vec", optional, tag = "1")]
    column_family: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    column_qualifier: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "3")]
    compare_op: Option<i32>,
    #[prost(message, optional, tag = "4")]
    comparator: Option<PbComparator>,
    #[prost(bool, optional, tag = "5")]
    filter_if_missing: Option<bool>,
    #[prost(bool, optional, tag = "6")]
    latest_version_only: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct SingleColumnValueExcludeFilter {
    #[prost(message, optional, tag = "1")]
    single_column_value_filter: Option<SingleColumnValueFilter>,
}

#[derive(Clone, PartialEq, Message)]
struct TimestampsFilter {
    #[prost(int64, repeated, packed = "true", tag = "1")]
    timestamps: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct RowRange {
    #[prost(bytes = "vec", optional, tag = "1")]
    start_row: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "2")]
    start_row_inclusive: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "3")]
    stop_row: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    stop_row_inclusive: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct MultiRowRangeFilter {
    #[prost(message, repeated, tag = "1")]
    row_range_list: Vec<RowRange>,
}

#[derive(Clone, PartialEq, Message)]
struct ColumnValueFilter {
    #[prost(bytes = "vec", optional, tag = "1")]
    family: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    qualifier: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "3")]
    compare_op: Option<i32>,
    #[prost(message, optional, tag = "4")]
    comparator: Option<PbComparator>,
}

fn bad(message: impl Into<String>) -> crate::Error {
    ErrorKind::FilterBytes { message: message.into() }.into()
}

fn decode<M: Message + Default>(class: &str, bytes: Option<&[u8]>) -> Result<M> {
    M::decode(bytes.unwrap_or_default()).map_err(|e| bad(format!("{class}: {e}")))
}

fn need<T>(value: Option<T>, class: &str, field: &str) -> Result<T> {
    value.ok_or_else(|| bad(format!("{class} without its {field}")))
}

/// HBase's `CompareType` (`HBase.proto`).
fn compare_op(n: Option<i32>, class: &str) -> Result<CompareOp> {
    Ok(match need(n, class, "compare_op")? {
        0 => CompareOp::Less,
        1 => CompareOp::LessOrEqual,
        2 => CompareOp::Equal,
        3 => CompareOp::NotEqual,
        4 => CompareOp::GreaterOrEqual,
        5 => CompareOp::Greater,
        6 => return Err(bad(format!("{class} with compare op NO_OP is not served by rowsearch"))),
        other => return Err(bad(format!("{class}: no compare op {other}"))),
    })
}

/// Java's `java.util.regex.Pattern` flags rowsearch's regex takes.
const CASE_INSENSITIVE: i32 = 0x02;
const MULTILINE: i32 = 0x08;
const DOTALL: i32 = 0x20;

fn comparator(c: Option<PbComparator>, class: &str) -> Result<Comparator> {
    let c = need(c, class, "comparator")?;
    let name = need(c.name, class, "comparator's name")?;
    let short = name.strip_prefix(FILTERS).unwrap_or(&name);
    let bytes = c.serialized_comparator.as_deref();
    let value = |w: WrappedComparable| w.comparable.and_then(|c| c.value).unwrap_or_default();
    Ok(match short {
        "BinaryComparator" => Comparator::Binary(value(decode(short, bytes)?)),
        "BinaryPrefixComparator" => Comparator::BinaryPrefix(value(decode(short, bytes)?)),
        "SubstringComparator" => {
            let s: SubstringComparator = decode(short, bytes)?;
            Comparator::substring(&need(s.substr, short, "substr")?)
        }
        "RegexStringComparator" => {
            let r: RegexStringComparator = decode(short, bytes)?;
            let pattern = need(r.pattern, short, "pattern")?;
            let flags = r.pattern_flags.unwrap_or(DOTALL);
            let mut inline = String::new();
            if flags & CASE_INSENSITIVE != 0 {
                inline.push('i');
            }
            if flags & MULTILINE != 0 {
                inline.push('m');
            }
            // Rowsearch's regex comparator lets `.` match a newline, as
            // Java's DOTALL (the comparator's default); without it, not.
            let source = match (inline.is_empty(), flags & DOTALL != 0) {
                (true, true) => pattern,
                (false, true) => format!("(?{inline}){pattern}"),
                (_, false) => format!("(?{inline}-s){pattern}"),
            };
            Comparator::Regex(RegexComparator::new(&source).map_err(|e| bad(format!("{short}: {e}")))?)
        }
        _ => return Err(bad(format!("comparator {name} is not served by rowsearch"))),
    })
}

fn compare_filter(f: Option<CompareFilter>, class: &str) -> Result<(CompareOp, Comparator)> {
    let f = need(f, class, "compare_filter")?;
    Ok((compare_op(f.compare_op, class)?, comparator(f.comparator, class)?))
}

fn family(bytes: Option<Vec<u8>>, class: &str) -> Result<String> {
    String::from_utf8(need(bytes, class, "column family")?)
        .map_err(|_| bad(format!("{class}: the column family is not UTF-8")))
}

fn count(n: Option<i32>, class: &str, field: &str) -> Result<u32> {
    let n = need(n, class, field)?;
    u32::try_from(n).map_err(|_| bad(format!("{class}: {field} {n} is negative")))
}

fn non_empty(b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    b.filter(|b| !b.is_empty())
}

/// A fuzzy key's mask as HBase serializes it, into rowsearch's (0 fixed, 1
/// any). The Java filter keeps its mask "preprocessed" (fixed bytes -1, free
/// ones 2, or 0 before HBASE-15676 when `is_mask_v2` is unset) when its
/// JVM allows unaligned access, and as given (0 fixed, 1 free) otherwise.
fn fuzzy_mask(mask: &[u8], v2: bool) -> Vec<u8> {
    let processed_free = if v2 { 2 } else { 0 };
    let processed = mask.iter().all(|&m| m == 0xff || m == processed_free);
    mask.iter()
        .map(|&m| {
            let free = if processed { m != 0xff } else { m != 0 };
            u8::from(free)
        })
        .collect()
}

impl Filter {
    /// Reads HBase's serialized filter: a protobuf `hbase.pb.Filter` as
    /// HBase's Java client writes it (`ProtobufUtil.toFilter(filter)
    /// .toByteArray()`, sent by `ThriftConnection` as `filterBytes`).
    ///
    /// # Errors
    /// `FilterBytes` for bytes that are no such message, and for a filter or
    /// comparator rowsearch does not run (named), never ignored.
    pub fn from_protobuf(bytes: &[u8]) -> Result<Filter> {
        let pb = PbFilter::decode(bytes).map_err(|e| bad(format!("not a serialized HBase filter: {e}")))?;
        from_pb(pb, 0)
    }
}

fn from_pb(pb: PbFilter, depth: usize) -> Result<Filter> {
    if depth > MAX_DEPTH {
        return Err(bad(format!("filters nested deeper than {MAX_DEPTH}")));
    }
    let name = need(pb.name, "a filter", "class name")?;
    let class = name.strip_prefix(FILTERS).unwrap_or(&name);
    let bytes = pb.serialized_filter.as_deref();
    Ok(match class {
        "RowFilter" | "FamilyFilter" | "QualifierFilter" | "ValueFilter" => {
            let f: ComparingFilter = decode(class, bytes)?;
            let (op, c) = compare_filter(f.compare_filter, class)?;
            match class {
                "RowFilter" => Filter::Row(op, c),
                "FamilyFilter" => Filter::Family(op, c),
                "QualifierFilter" => Filter::Qualifier(op, c),
                _ => Filter::Value(op, c),
            }
        }
        "PrefixFilter" => Filter::Prefix(decode::<BytesFilter>(class, bytes)?.bytes.unwrap_or_default()),
        "ColumnPrefixFilter" => {
            Filter::ColumnPrefix(need(decode::<BytesFilter>(class, bytes)?.bytes, class, "prefix")?)
        }
        "InclusiveStopFilter" => {
            Filter::InclusiveStop(decode::<BytesFilter>(class, bytes)?.bytes.unwrap_or_default())
        }
        "KeyOnlyFilter" => Filter::KeyOnly {
            len_as_value: need(decode::<KeyOnlyFilter>(class, bytes)?.len_as_val, class, "len_as_val")?,
        },
        "FirstKeyOnlyFilter" => Filter::FirstKeyOnly,
        "RandomRowFilter" => Filter::RandomRow {
            chance: need(decode::<RandomRowFilter>(class, bytes)?.chance, class, "chance")?,
        },
        "SingleColumnValueFilter" => single_column_value(decode(class, bytes)?, false)?,
        "SingleColumnValueExcludeFilter" => {
            let f: SingleColumnValueExcludeFilter = decode(class, bytes)?;
            single_column_value(
                need(f.single_column_value_filter, class, "single_column_value_filter")?,
                true,
            )?
        }
        "ColumnCountGetFilter" => Filter::ColumnCountGet {
            limit: count(decode::<ColumnCountGetFilter>(class, bytes)?.limit, class, "limit")?,
        },
        "ColumnPaginationFilter" => {
            let f: ColumnPaginationFilter = decode(class, bytes)?;
            if f.column_offset.is_some() {
                return Err(bad("ColumnPaginationFilter with a column offset is not served by rowsearch"));
            }
            Filter::ColumnPagination {
                limit: count(f.limit, class, "limit")?,
                offset: count(Some(f.offset.unwrap_or(0)), class, "offset")?,
            }
        }
        "MultipleColumnPrefixFilter" => {
            Filter::MultipleColumnPrefix(decode::<MultipleColumnPrefixFilter>(class, bytes)?.sorted_prefixes)
        }
        "ColumnRangeFilter" => {
            let f: ColumnRangeFilter = decode(class, bytes)?;
            Filter::ColumnRange {
                min: non_empty(f.min_column),
                min_inclusive: f.min_column_inclusive.unwrap_or(false),
                max: non_empty(f.max_column),
                max_inclusive: f.max_column_inclusive.unwrap_or(false),
            }
        }
        "TimestampsFilter" => {
            let f: TimestampsFilter = decode(class, bytes)?;
            let stamps = f
                .timestamps
                .into_iter()
                .map(|t| u64::try_from(t).map_err(|_| bad(format!("{class}: timestamp {t} is negative"))))
                .collect::<Result<Vec<u64>>>()?;
            Filter::Timestamps(stamps)
        }
        "PageFilter" => {
            let n = need(decode::<PageFilter>(class, bytes)?.page_size, class, "page_size")?;
            Filter::Page(u64::try_from(n).map_err(|_| bad(format!("{class}: page size {n} is negative")))?)
        }
        "DependentColumnFilter" => {
            let f: DependentColumnFilter = decode(class, bytes)?;
            // HBase's two-argument constructor compares with NO_OP: no
            // value condition.
            let value = match &f.compare_filter {
                Some(CompareFilter { compare_op: Some(6), .. }) => None,
                _ => Some(compare_filter(f.compare_filter, class)?),
            };
            Filter::DependentColumn {
                family: family(f.column_family, class)?,
                qualifier: f.column_qualifier.unwrap_or_default(),
                drop_dependent_column: f.drop_dependent_column.unwrap_or(false),
                value,
            }
        }
        "ColumnValueFilter" => {
            let f: ColumnValueFilter = decode(class, bytes)?;
            Filter::ColumnValue {
                family: family(f.family, class)?,
                qualifier: need(f.qualifier, class, "qualifier")?,
                op: compare_op(f.compare_op, class)?,
                comparator: comparator(f.comparator, class)?,
            }
        }
        "MultiRowRangeFilter" => {
            let f: MultiRowRangeFilter = decode(class, bytes)?;
            Filter::MultiRowRange(
                f.row_range_list
                    .into_iter()
                    .map(|r| MultiRowRange {
                        start: non_empty(r.start_row),
                        start_inclusive: r.start_row_inclusive.unwrap_or(true),
                        stop: non_empty(r.stop_row),
                        stop_inclusive: r.stop_row_inclusive.unwrap_or(false),
                    })
                    .collect(),
            )
        }
        "FuzzyRowFilter" => {
            let f: FuzzyRowFilter = decode(class, bytes)?;
            let v2 = f.is_mask_v2.unwrap_or(false);
            let keys = f
                .fuzzy_keys_data
                .into_iter()
                .map(|pair| {
                    let key = need(pair.first, class, "fuzzy key")?;
                    let mask = need(pair.second, class, "fuzzy mask")?;
                    if key.len() != mask.len() {
                        return Err(bad(format!("{class}: a fuzzy key and its mask differ in length")));
                    }
                    Ok(FuzzyKey { key, mask: fuzzy_mask(&mask, v2) })
                })
                .collect::<Result<Vec<FuzzyKey>>>()?;
            Filter::FuzzyRow(keys)
        }
        "FilterList" => {
            let f: FilterList = decode(class, bytes)?;
            let op = match need(f.operator, class, "operator")? {
                1 => ListOp::All,
                2 => ListOp::One,
                other => return Err(bad(format!("{class}: no operator {other}"))),
            };
            let filters =
                f.filters.into_iter().map(|c| from_pb(c, depth + 1)).collect::<Result<Vec<Filter>>>()?;
            Filter::List(op, filters)
        }
        "SkipFilter" | "WhileMatchFilter" => {
            let f: WrappingFilter = decode(class, bytes)?;
            let inner = Box::new(from_pb(need(f.filter, class, "filter")?, depth + 1)?);
            if class == "SkipFilter" { Filter::Skip(inner) } else { Filter::WhileMatch(inner) }
        }
        _ => return Err(bad(format!("filter {name} is not served by rowsearch"))),
    })
}

fn single_column_value(f: SingleColumnValueFilter, exclude: bool) -> Result<Filter> {
    let class = if exclude { "SingleColumnValueExcludeFilter" } else { "SingleColumnValueFilter" };
    Ok(Filter::SingleColumnValue {
        family: family(f.column_family, class)?,
        qualifier: f.column_qualifier.unwrap_or_default(),
        op: compare_op(f.compare_op, class)?,
        comparator: comparator(f.comparator, class)?,
        filter_if_missing: f.filter_if_missing.unwrap_or(false),
        latest_version_only: f.latest_version_only.unwrap_or(true),
        exclude,
    })
}

#[cfg(test)]
#[path = "proto_tests.rs"]
mod tests;
