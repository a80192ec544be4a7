//! Facets: per value, how many of a search's matches hold it, counted over
//! every match (not the page) from the index's fast columns.
//!
//! What can be counted ([`FacetSource`]): the partition (`_partition`),
//! a search field declared `facet` (its `_facet_<name>` column, see
//! [`crate::doc::CellDoc::facet_values`]), and the month or year of the
//! date (UTC). Each segment counts term ordinals in an array (one add per
//! match and value); only ordinals that were counted are turned back into
//! text, in one ordered pass over the column's dictionary, and segments
//! (and an overlay's layers) are summed by value.

use std::collections::HashMap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{BytesColumn, Column};
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use crate::doc::{DATE_FIELD, DocSchema, FACET_PREFIX, PARTITION_FIELD};

/// What a facet counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FacetSource {
    /// The partition (e.g. the mailbox).
    Partition,
    /// The values of the search field with this index (in the table's
    /// search fields).
    Field(usize),
    /// The date's month, `YYYY-MM` (UTC).
    Month,
    /// The date's year, `YYYY` (UTC).
    Year,
}

/// One facet asked for: its name (as asked) and what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetSpec {
    /// The name, as in `facets=`.
    pub name: String,
    /// What it counts.
    pub source: FacetSource,
}

/// Per facet asked for (in order), each value's number of matches.
pub type FacetCounts = Vec<HashMap<String, u64>>;

/// The facets `names` ask for on an index with `schema`: the partition by
/// its name (`partition`, e.g. `user`), a search field declared `facet`,
/// `month` and `year` of the date (when the table has a date column).
///
/// # Errors
/// The reason, naming the facets there are, for a name that is none of
/// them or a field without a facet column.
pub fn resolve(
    schema: &DocSchema,
    partition: Option<&str>,
    dated: bool,
    names: &[String],
) -> Result<Vec<FacetSpec>, String> {
    let mut available: Vec<&str> = partition.into_iter().collect();
    available.extend(
        schema.names.iter().zip(&schema.facets).filter(|(_, f)| f.is_some()).map(|(n, _)| n.as_str()),
    );
    if dated {
        available.extend(["month", "year"]);
    }
    let mut specs = Vec::with_capacity(names.len());
    for name in names {
        if specs.iter().any(|s: &FacetSpec| s.name == *name) {
            return Err(format!("facet {name:?} is asked for twice"));
        }
        let source = match schema.field_index(name) {
            Some(i) if schema.facets[i].is_some() => FacetSource::Field(i),
            Some(_) => {
                return Err(format!(
                    "field {name:?} has no facet column (declare it with \"facet\": true in the table's \
                     search fields and run a full reindex); facets: {}",
                    available.join(", ")
                ));
            }
            None if partition == Some(name.as_str()) => FacetSource::Partition,
            None if dated && name == "month" => FacetSource::Month,
            None if dated && name == "year" => FacetSource::Year,
            None => return Err(format!("no facet {name:?} (facets: {})", available.join(", "))),
        };
        specs.push(FacetSpec { name: name.clone(), source });
    }
    Ok(specs)
}

/// The `limit` values of `counts` with the most matches, most first (ties
/// by value).
pub fn top(counts: &HashMap<String, u64>, limit: usize) -> Vec<(String, u64)> {
    let mut values: Vec<(&String, &u64)> = counts.iter().collect();
    let order = |a: &(&String, &u64), b: &(&String, &u64)| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0));
    if values.len() > limit {
        values.select_nth_unstable_by(limit, order);
        values.truncate(limit);
    }
    values.sort_unstable_by(order);
    values.into_iter().map(|(v, n)| (v.clone(), *n)).collect()
}

/// Adds `more` into `into` (same facets, same order).
pub fn add(into: &mut FacetCounts, more: FacetCounts) {
    if into.is_empty() {
        *into = more;
        return;
    }
    for (mine, theirs) in into.iter_mut().zip(more) {
        for (value, n) in theirs {
            *mine.entry(value).or_default() += n;
        }
    }
}

/// Counts the facets of the documents it collects.
#[derive(Clone)]
pub(crate) struct FacetCollector {
    /// Per facet, the fast column it reads.
    columns: Vec<ColumnName>,
}

#[derive(Clone)]
enum ColumnName {
    Strings(String),
    Partition,
    Month,
    Year,
}

impl FacetCollector {
    /// A collector for `specs` over an index with `schema`.
    pub(crate) fn new(schema: &DocSchema, specs: &[FacetSpec]) -> FacetCollector {
        let columns = specs
            .iter()
            .map(|s| match s.source {
                FacetSource::Partition => ColumnName::Partition,
                FacetSource::Field(i) => ColumnName::Strings(format!("{FACET_PREFIX}{}", schema.names[i])),
                FacetSource::Month => ColumnName::Month,
                FacetSource::Year => ColumnName::Year,
            })
            .collect();
        FacetCollector { columns }
    }
}

/// One facet's counting in one segment.
enum Counter {
    /// Matches per term ordinal of a dictionary-encoded column.
    Ordinals { column: BytesColumn, counts: Vec<u32> },
    /// Matches per month (`year * 12 + month - 1`) or year.
    Dates { column: Column<tantivy::DateTime>, months: bool, counts: HashMap<i64, u32> },
    /// The segment has no such column (no document holds a value).
    Absent,
}

pub(crate) struct SegmentFacets {
    counters: Vec<Counter>,
}

impl Collector for FacetCollector {
    type Fruit = FacetCounts;
    type Child = SegmentFacets;

    fn for_segment(&self, _: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentFacets> {
        let fast = reader.fast_fields();
        let mut counters = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            let bytes = match column {
                ColumnName::Strings(name) => fast.str(name)?.map(BytesColumn::from),
                ColumnName::Partition => fast.bytes(PARTITION_FIELD)?,
                ColumnName::Month | ColumnName::Year => {
                    let months = matches!(column, ColumnName::Month);
                    let column = fast.date(DATE_FIELD)?;
                    counters.push(Counter::Dates { column, months, counts: HashMap::new() });
                    continue;
                }
            };
            counters.push(match bytes {
                Some(column) => {
                    let counts = vec![0; column.num_terms()];
                    Counter::Ordinals { column, counts }
                }
                None => Counter::Absent,
            });
        }
        Ok(SegmentFacets { counters })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<FacetCounts>) -> tantivy::Result<FacetCounts> {
        let mut total = FacetCounts::new();
        for fruit in fruits {
            add(&mut total, fruit);
        }
        if total.is_empty() {
            total = vec![HashMap::new(); self.columns.len()];
        }
        Ok(total)
    }
}

impl SegmentCollector for SegmentFacets {
    type Fruit = FacetCounts;

    fn collect(&mut self, doc: DocId, _: Score) {
        for counter in &mut self.counters {
            match counter {
                Counter::Ordinals { column, counts } => {
                    for ord in column.term_ords(doc) {
                        if let Some(n) = counts.get_mut(ord as usize) {
                            *n += 1;
                        }
                    }
                }
                Counter::Dates { column, months, counts } => {
                    if let Some(date) = column.first(doc) {
                        let (year, month) = year_month(date.into_timestamp_millis());
                        let bucket = if *months { year * 12 + i64::from(month) - 1 } else { year };
                        *counts.entry(bucket).or_default() += 1;
                    }
                }
                Counter::Absent => {}
            }
        }
    }

    fn harvest(self) -> FacetCounts {
        self.counters
            .into_iter()
            .map(|counter| match counter {
                Counter::Ordinals { column, counts } => {
                    let ords: Vec<u64> =
                        counts.iter().enumerate().filter(|(_, n)| **n > 0).map(|(o, _)| o as u64).collect();
                    let mut out = HashMap::with_capacity(ords.len());
                    let mut at = 0;
                    // An unreadable dictionary leaves the values it did not
                    // reach uncounted (the column was written by this build).
                    let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |term| {
                        if let Some(&ord) = ords.get(at) {
                            let value = String::from_utf8_lossy(term).into_owned();
                            *out.entry(value).or_default() += u64::from(counts[ord as usize]);
                        }
                        at += 1;
                    });
                    out
                }
                Counter::Dates { months, counts, .. } => counts
                    .into_iter()
                    .map(|(bucket, n)| {
                        let value = if months {
                            format!("{:04}-{:02}", bucket.div_euclid(12), bucket.rem_euclid(12) + 1)
                        } else {
                            format!("{bucket:04}")
                        };
                        (value, u64::from(n))
                    })
                    .collect(),
                Counter::Absent => HashMap::new(),
            })
            .collect()
    }
}

/// The UTC year and month (1-12) of a time in milliseconds since the epoch
/// (the proleptic Gregorian calendar; H. Hinnant's `civil_from_days`).
pub fn year_month(ms: i64) -> (i64, u32) {
    let days = ms.div_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The month arithmetic agrees with jiff's calendar.
        #[test]
        fn year_month_matches_jiff(ms in -5_000_000_000_000i64..20_000_000_000_000i64) {
            let date = jiff::Timestamp::from_millisecond(ms).unwrap().to_zoned(jiff::tz::TimeZone::UTC).date();
            proptest::prop_assert_eq!(year_month(ms), (i64::from(date.year()), date.month() as u32));
        }
    }

    #[test]
    fn top_orders_by_count_then_value_and_cuts() {
        let counts: HashMap<String, u64> =
            [("b", 3), ("a", 3), ("c", 9), ("d", 1)].iter().map(|(v, n)| (v.to_string(), *n)).collect();
        let names = |t: Vec<(String, u64)>| t.into_iter().map(|(v, n)| format!("{v}{n}")).collect::<Vec<_>>();
        assert_eq!(names(top(&counts, 3)), ["c9", "a3", "b3"]);
        assert_eq!(names(top(&counts, 10)), ["c9", "a3", "b3", "d1"]);
        assert!(top(&counts, 0).is_empty());
    }
}
