//! Collapsing hits by a field (search's `collapse=thread`): one hit per
//! value, the best matching document of each (by score, or by date), with
//! how many documents of it match; the groups in the asked order. Read per
//! segment from the field's facet column (term ordinals, resolved to text
//! once per segment), merged across segments and an overlay's layers by
//! the text.

use std::collections::HashMap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{BytesColumn, Column};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::doc::{DATE_FIELD, FACET_PREFIX};

/// One group: its value, its best document (score or date, where) and how
/// many of its documents match.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The field's value (a thread id).
    pub value: String,
    /// The best document's score or date (ms).
    pub best: f64,
    /// The best document.
    pub addr: DocAddress,
    /// Which searcher of a search's runs found it (0: the generation).
    pub run: usize,
    /// Matching documents of the group.
    pub matched: u64,
}

/// The order groups go in: by score or by date, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupOrder {
    /// By the date field (else by score).
    pub by_date: bool,
    /// Highest first (scores, newest first).
    pub descending: bool,
}

/// Groups matches by the facet column of field `field`.
pub(crate) struct CollapseCollector {
    column: String,
    sort: GroupOrder,
    run: usize,
}

impl CollapseCollector {
    pub(crate) fn new(field: &str, sort: GroupOrder, run: usize) -> CollapseCollector {
        CollapseCollector { column: format!("{FACET_PREFIX}{field}"), sort, run }
    }
}

/// Whether `a` goes before `b` in `sort`'s order.
fn better(sort: GroupOrder, a: f64, b: f64) -> bool {
    if sort.descending { a > b } else { a < b }
}

pub(crate) struct SegmentGroups {
    segment: SegmentOrdinal,
    values: Option<BytesColumn>,
    dates: Option<Column<tantivy::DateTime>>,
    sort: GroupOrder,
    run: usize,
    /// Per ordinal of the column: best value, its doc, matches (0: none).
    groups: Vec<(f64, DocId, u64)>,
    /// Matches without a value: each its own group, keyed by its doc.
    loose: Vec<(f64, DocId)>,
}

impl Collector for CollapseCollector {
    type Fruit = Vec<Group>;
    type Child = SegmentGroups;

    fn for_segment(&self, segment: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentGroups> {
        let fast = reader.fast_fields();
        let values = fast.str(&self.column)?.map(BytesColumn::from);
        let terms = values.as_ref().map_or(0, |c| c.num_terms());
        let dates = if self.sort.by_date { Some(fast.date(DATE_FIELD)?) } else { None };
        Ok(SegmentGroups {
            segment,
            values,
            dates,
            sort: self.sort,
            run: self.run,
            groups: vec![(0.0, 0, 0); terms],
            loose: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        !self.sort.by_date
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Group>>) -> tantivy::Result<Vec<Group>> {
        Ok(merge(self.sort, fruits))
    }
}

/// Groups of several segments or searches as one: by value, the best
/// document kept and the matches added.
pub(crate) fn merge(sort: GroupOrder, fruits: Vec<Vec<Group>>) -> Vec<Group> {
    let mut by_value: HashMap<String, Group> = HashMap::new();
    let mut loose = Vec::new();
    for group in fruits.into_iter().flatten() {
        if group.value.is_empty() {
            loose.push(group);
            continue;
        }
        match by_value.get_mut(&group.value) {
            Some(kept) => {
                kept.matched += group.matched;
                if better(sort, group.best, kept.best) {
                    kept.best = group.best;
                    kept.addr = group.addr;
                    kept.run = group.run;
                }
            }
            None => {
                by_value.insert(group.value.clone(), group);
            }
        }
    }
    let mut out: Vec<Group> = by_value.into_values().chain(loose).collect();
    // The asked order; ties by value then address, so pages are stable.
    out.sort_by(|a, b| {
        let order = if sort.descending { b.best.total_cmp(&a.best) } else { a.best.total_cmp(&b.best) };
        order.then_with(|| a.value.cmp(&b.value)).then_with(|| (a.run, a.addr).cmp(&(b.run, b.addr)))
    });
    out
}

impl SegmentCollector for SegmentGroups {
    type Fruit = Vec<Group>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let value = match &self.dates {
            Some(dates) => dates.first(doc).map_or(0.0, |d| d.into_timestamp_millis() as f64),
            None => f64::from(score),
        };
        let ord = self.values.as_ref().and_then(|c| c.term_ords(doc).next());
        let Some(ord) = ord else {
            self.loose.push((value, doc));
            return;
        };
        let Some((best, at, n)) = self.groups.get_mut(ord as usize) else {
            self.loose.push((value, doc));
            return;
        };
        if *n == 0 || better(self.sort, value, *best) {
            *best = value;
            *at = doc;
        }
        *n += 1;
    }

    fn harvest(self) -> Vec<Group> {
        let mut out = Vec::with_capacity(self.groups.len() + self.loose.len());
        if let Some(column) = &self.values {
            let ords: Vec<u64> =
                self.groups.iter().enumerate().filter(|(_, g)| g.2 > 0).map(|(o, _)| o as u64).collect();
            let mut at = 0;
            // An unreadable dictionary leaves those groups out (the column
            // was written by this build).
            let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |term| {
                if let Some(&ord) = ords.get(at)
                    && let Some(&(best, doc, matched)) = self.groups.get(ord as usize)
                {
                    out.push(Group {
                        value: String::from_utf8_lossy(term).into_owned(),
                        best,
                        addr: DocAddress::new(self.segment, doc),
                        run: self.run,
                        matched,
                    });
                }
                at += 1;
            });
        }
        out.extend(self.loose.into_iter().map(|(best, doc)| Group {
            value: String::new(),
            best,
            addr: DocAddress::new(self.segment, doc),
            run: self.run,
            matched: 1,
        }));
        out
    }
}
