//! A group's best document when others of the group match with the same
//! score or date: the one of smallest row key, as plain hits of equal
//! value go (`ties.rs`), so the hit that stands for a thread is the same
//! whichever segments and runs hold its documents (the embedded store's
//! index and one read from HBase region by region, a generation and its
//! overlay). The collectors keep the first of a tie by address and flag
//! it; only a page with a flagged group pays for this: one more pass of
//! the query over the runs, gathering the flagged groups' documents of
//! their best value, and their keys read.

use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::query::{Bm25StatisticsProvider, Query};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use super::column::{GroupCache, GroupColumn, NO_SLOT};
use crate::doc::DATE_FIELD;
use crate::ties::MAX_TIE_READ;

/// For each wanted group (`(i, value bytes, best value)`), its document
/// of that value with the smallest key: `runs` (each searcher with its
/// query) searched again with `stats`, the documents of the groups in facet
/// column `column` with their best value (a date when `by_date`, else a
/// score) gathered, `key(run, address)` read for each; per `i` below
/// `groups`, the run and address of the smallest (`None`: none found).
///
/// # Errors
/// A search's error as `err` makes it; what `key` returns.
#[allow(clippy::too_many_arguments)]
pub(super) fn smallest_keys<E>(
    groups: usize,
    wanted: &[(usize, Vec<u8>, f64)],
    (column, by_date): (&str, bool),
    runs: &[(&tantivy::Searcher, Box<dyn Query>)],
    stats: &dyn Bm25StatisticsProvider,
    (cache, searched): (&Arc<GroupCache>, &[SegmentId]),
    key: impl Fn(usize, DocAddress) -> Result<Vec<u8>, E>,
    err: impl Fn(tantivy::TantivyError) -> E,
) -> Result<Vec<Option<(usize, DocAddress)>>, E> {
    let mut found: Vec<Vec<(usize, DocAddress)>> = vec![Vec::new(); groups];
    for (run, (on, query)) in runs.iter().enumerate() {
        let collector = TiedCollector {
            column: column.to_owned(),
            by_date,
            wanted: wanted.to_vec(),
            cache: Arc::clone(cache),
            searched: searched.to_vec(),
        };
        for (i, addr) in on.search_with_statistics_provider(&**query, &collector, stats).map_err(&err)? {
            if let Some(docs) = found.get_mut(i).filter(|d| d.len() < MAX_TIE_READ) {
                docs.push((run, addr));
            }
        }
    }
    let mut out = Vec::with_capacity(groups);
    for docs in found {
        let mut smallest: Option<(Vec<u8>, usize, DocAddress)> = None;
        for (run, addr) in docs {
            let k = key(run, addr)?;
            if smallest.as_ref().is_none_or(|(s, _, _)| k < *s) {
                smallest = Some((k, run, addr));
            }
        }
        out.push(smallest.map(|(_, run, addr)| (run, addr)));
    }
    Ok(out)
}

/// Gathers the matches of the wanted groups (page index, value bytes, best
/// value) that have their group's best value.
struct TiedCollector {
    column: String,
    by_date: bool,
    wanted: Vec<(usize, Vec<u8>, f64)>,
    cache: Arc<GroupCache>,
    searched: Vec<SegmentId>,
}

struct SegmentTied {
    segment: SegmentOrdinal,
    /// Per slot of this segment's column: the page index and best value.
    slots: hashbrown::HashMap<u32, (usize, f64)>,
    column: Option<Arc<GroupColumn>>,
    dates: Option<Column<tantivy::DateTime>>,
    found: Vec<(usize, DocAddress)>,
}

impl Collector for TiedCollector {
    type Fruit = Vec<(usize, DocAddress)>;
    type Child = SegmentTied;

    fn for_segment(&self, segment: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentTied> {
        let column = self.cache.column(reader, &self.column, &self.searched)?;
        let slots = column
            .as_ref()
            .map(|c| {
                self.wanted
                    .iter()
                    .filter_map(|(i, value, best)| Some((c.slot_of(value)?, (*i, *best))))
                    .collect()
            })
            .unwrap_or_default();
        let dates = if self.by_date { Some(reader.fast_fields().date(DATE_FIELD)?) } else { None };
        Ok(SegmentTied { segment, slots, column, dates, found: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        !self.by_date
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for SegmentTied {
    type Fruit = Vec<(usize, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let Some(column) = &self.column else { return };
        let slot = column.slot(doc);
        if slot == NO_SLOT {
            return;
        }
        let Some(&(i, best)) = self.slots.get(&slot) else { return };
        let value = match &self.dates {
            Some(dates) => dates.first(doc).map_or(0.0, |d| d.into_timestamp_millis() as f64),
            None => f64::from(score),
        };
        if value == best {
            self.found.push((i, DocAddress::new(self.segment, doc)));
        }
    }

    fn harvest(self) -> Self::Fruit {
        self.found
    }
}
