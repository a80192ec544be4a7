//! Collapsing hits by a field (search's `collapse=thread`): one hit per
//! value, the best matching document of each (by score, or by date), with
//! how many documents of it match; the groups in the asked order. Read per
//! segment from the field's facet column (term ordinals, resolved to text
//! once per segment), merged across segments and an overlay's layers by
//! value: a thread id (16 hex digits) as its number, so the merge hashes
//! and compares integers; only the page's groups are written as text.

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{BytesColumn, Column};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::doc::{DATE_FIELD, FACET_PREFIX};

/// A group's value as the merge keeps it: a thread id (16 lowercase hex
/// digits, what the store writes) as its number, whose order is the text's;
/// any other text as it is (after every id); none (a document without a
/// value, a group of its own).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Key {
    Id(u64),
    Text(Box<str>),
    /// A term ordinal of the one segment a search read ([`Fruit::column`]):
    /// resolved to text for the page only.
    Ord(u64),
    None,
}

impl Key {
    fn of(term: &[u8]) -> Key {
        let id = (term.len() == 16)
            .then(|| {
                term.iter().try_fold(0u64, |id, &b| {
                    let nibble = match b {
                        b'0'..=b'9' => b - b'0',
                        b'a'..=b'f' => b - b'a' + 10,
                        _ => return None,
                    };
                    Some(id << 4 | u64::from(nibble))
                })
            })
            .flatten();
        match id {
            Some(id) => Key::Id(id),
            None => Key::Text(String::from_utf8_lossy(term).into()),
        }
    }

    fn text(&self) -> String {
        match self {
            Key::Id(id) => format!("{id:016x}"),
            Key::Text(text) => text.to_string(),
            Key::Ord(_) | Key::None => String::new(),
        }
    }
}

/// The groups of a segment, or of several merged: keyed by ordinals of
/// `column` while they come from one segment (no text read yet), else by
/// value.
pub(crate) struct Fruit {
    groups: Vec<Partial>,
    column: Option<BytesColumn>,
}

impl Fruit {
    /// The groups keyed by value: ordinals resolved through the column's
    /// dictionary (an unreadable one leaves those groups out: the column
    /// was written by this build).
    fn resolved(self) -> Vec<Partial> {
        let Some(column) = self.column else { return self.groups };
        let (mut keyed, loose): (Vec<Partial>, Vec<Partial>) =
            self.groups.into_iter().partition(|g| matches!(g.key, Key::Ord(_)));
        keyed.sort_unstable_by_key(|g| match g.key {
            Key::Ord(ord) => ord,
            _ => 0,
        });
        let ords: Vec<u64> = keyed.iter().map(|g| if let Key::Ord(ord) = g.key { ord } else { 0 }).collect();
        let mut at = 0;
        let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |term| {
            if let Some(group) = keyed.get_mut(at) {
                group.key = if term.is_empty() { Key::None } else { Key::of(term) };
            }
            at += 1;
        });
        keyed.truncate(at);
        keyed.extend(loose);
        keyed
    }
}

/// One group as segments and searches give it (its value as a [`Key`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Partial {
    key: Key,
    best: f64,
    addr: DocAddress,
    run: usize,
    matched: u64,
}

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
    type Fruit = Fruit;
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

    fn merge_fruits(&self, mut fruits: Vec<Fruit>) -> tantivy::Result<Fruit> {
        if fruits.len() == 1 {
            return Ok(fruits.remove(0));
        }
        Ok(Fruit { groups: combine(self.sort, fruits), column: None })
    }
}

/// Groups of several segments or searches as one, in no order: by value,
/// the best document kept and the matches added.
fn combine(sort: GroupOrder, mut fruits: Vec<Fruit>) -> Vec<Partial> {
    // Each value is once in a fruit: one fruit is merged already.
    if fruits.len() <= 1 {
        return fruits.pop().map_or_else(Vec::new, |f| f.groups);
    }
    let fruits: Vec<Vec<Partial>> = fruits.into_iter().map(Fruit::resolved).collect();
    let groups: usize = fruits.iter().map(Vec::len).sum();
    let mut out: Vec<Partial> = Vec::with_capacity(groups);
    // Where a value is in `out`: ids by number, other text by text.
    let mut ids: hashbrown::HashMap<u64, usize> = hashbrown::HashMap::with_capacity(groups);
    let mut texts: hashbrown::HashMap<Box<str>, usize> = hashbrown::HashMap::new();
    for group in fruits.into_iter().flatten() {
        let found = match &group.key {
            Key::None | Key::Ord(_) => None,
            Key::Id(id) => match ids.entry(*id) {
                hashbrown::hash_map::Entry::Occupied(e) => Some(*e.get()),
                hashbrown::hash_map::Entry::Vacant(e) => {
                    e.insert(out.len());
                    None
                }
            },
            Key::Text(text) => match texts.get(text) {
                Some(&i) => Some(i),
                None => {
                    texts.insert(text.clone(), out.len());
                    None
                }
            },
        };
        match found {
            Some(i) => {
                let kept = &mut out[i];
                kept.matched += group.matched;
                if better(sort, group.best, kept.best) {
                    kept.best = group.best;
                    kept.addr = group.addr;
                    kept.run = group.run;
                }
            }
            None => out.push(group),
        }
    }
    out
}

/// The groups of `fruits` merged ([`combine`]), how many there are, and
/// the `limit` from `offset` in `sort`'s order (ties by value, then
/// address, so pages are stable): only those are sorted and written as
/// text.
pub(crate) fn page(
    sort: GroupOrder,
    mut fruits: Vec<Fruit>,
    offset: usize,
    limit: usize,
) -> (u64, Vec<Group>) {
    // One segment: its ordinals stand for the values (in the same order)
    // until the page is known.
    let column = match fruits.as_mut_slice() {
        [one] => one.column.take(),
        _ => None,
    };
    let mut all = combine(sort, fruits);
    let total = all.len() as u64;
    let order = |a: &Partial, b: &Partial| {
        let order = if sort.descending { b.best.total_cmp(&a.best) } else { a.best.total_cmp(&b.best) };
        order.then_with(|| a.key.cmp(&b.key)).then_with(|| (a.run, a.addr).cmp(&(b.run, b.addr)))
    };
    let end = offset.saturating_add(limit).min(all.len());
    if end < all.len() {
        all.select_nth_unstable_by(end, order);
        all.truncate(end);
    }
    all.sort_unstable_by(order);
    let mut all: Vec<Partial> = all.into_iter().skip(offset).collect();
    if let Some(column) = column {
        // Resolved in place; the page keeps its order.
        let mut by_ord: Vec<usize> = (0..all.len()).filter(|&i| matches!(all[i].key, Key::Ord(_))).collect();
        by_ord.sort_unstable_by_key(|&i| if let Key::Ord(ord) = all[i].key { ord } else { 0 });
        let ords: Vec<u64> =
            by_ord.iter().map(|&i| if let Key::Ord(ord) = all[i].key { ord } else { 0 }).collect();
        let mut at = 0;
        let _ = column.dictionary().sorted_ords_to_term_cb(&ords, |term| {
            if let Some(&i) = by_ord.get(at) {
                all[i].key = Key::of(term);
            }
            at += 1;
        });
    }
    let page = all.into_iter().map(|g| Group {
        value: g.key.text(),
        best: g.best,
        addr: g.addr,
        run: g.run,
        matched: g.matched,
    });
    (total, page.collect())
}

impl SegmentCollector for SegmentGroups {
    type Fruit = Fruit;

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

    /// The groups by ordinal (a value's text is read when the page, or a
    /// merge with other segments, needs it).
    fn harvest(self) -> Fruit {
        let mut out = Vec::with_capacity(self.groups.len() + self.loose.len());
        for (ord, &(best, doc, matched)) in self.groups.iter().enumerate().filter(|(_, g)| g.2 > 0) {
            out.push(Partial {
                key: Key::Ord(ord as u64),
                best,
                addr: DocAddress::new(self.segment, doc),
                run: self.run,
                matched,
            });
        }
        out.extend(self.loose.into_iter().map(|(best, doc)| Partial {
            key: Key::None,
            best,
            addr: DocAddress::new(self.segment, doc),
            run: self.run,
            matched: 1,
        }));
        Fruit { groups: out, column: self.values }
    }
}
