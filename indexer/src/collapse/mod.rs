//! Collapsing hits by a field (search's `collapse=thread`): one hit per
//! value, the best matching document of each (by score, or by date), with
//! how many documents of it match; the groups in the asked order, and how
//! many there are.
//!
//! A group's place is its best document's: groups go in the order their
//! first documents go in the plain search (by score or date; groups
//! whose best tie by their value, in its byte order, the same whichever
//! segments hold them), as if the plain hits were read and each group's
//! later documents left out.
//!
//! As Lucene's grouping does it: each segment keeps only the `window`
//! best groups seen so far (a document that cannot enter them costs one
//! comparison; by score, block-max WAND does not even score the blocks
//! that cannot, exactly as for a plain search, as a document scoring the
//! same as the window's last comes after it) and a count per value (a
//! byte each, so they stay in cache). A document's value is its slot in
//! the segment's [`column::GroupColumn`], built once per segment from the
//! field's facet column: slots follow document order, so the counts of
//! consecutive matches sit together. The window best groups of a search
//! are among the window best of each segment; only those are merged, by
//! their values. The number of groups is the count of values matched: in
//! the largest segment read off its counts, in the others by looking
//! their matched values up in it.

mod column;
mod tied;

use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery, Weight};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

pub(crate) use column::GroupCache;
use column::{GroupColumn, Key, NO_SLOT};

use crate::doc::{DATE_FIELD, FACET_PREFIX};

/// One group: its value, its best document (score or date, where) and how
/// many of its documents match.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The field's value (a thread id; empty for a document without one).
    pub value: String,
    /// The best document's score or date (ms).
    pub best: f64,
    /// The best document.
    pub addr: DocAddress,
    /// Which searcher of a search's runs found it (0: the generation).
    pub run: usize,
    /// Matching documents of the group.
    pub matched: u64,
    /// When other matching documents of the group have its best value:
    /// the value's bytes, to find them ([`settle`] makes the one of
    /// smallest row key the best, as plain hits of equal value go).
    pub tied: Option<Vec<u8>>,
}

/// The order groups go in: by score or by date, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupOrder {
    /// By the date field (else by score).
    pub by_date: bool,
    /// Highest first (scores, newest first).
    pub descending: bool,
}

impl GroupOrder {
    /// Whether value `a` goes strictly before `b`.
    fn before(self, a: f64, b: f64) -> bool {
        if self.descending { a > b } else { a < b }
    }

    /// `a` against `b` in this order (the first goes first).
    fn cmp(self, a: f64, b: f64) -> std::cmp::Ordering {
        if self.descending { b.total_cmp(&a) } else { a.total_cmp(&b) }
    }
}

/// Documents whose groups are read together.
const BLOCK: usize = 64;

/// The group of a document without a value (each such document is one).
const NO_VALUE: u64 = u64::MAX;

/// A segment's candidate: a group (a slot, or [`NO_VALUE`]) with
/// its best document so far. Ranked by value, then group (in the values'
/// byte order, none last), then document: the order [`page`] sorts groups
/// in, restricted to a segment.
#[derive(Debug, Clone, Copy)]
struct Entry {
    value: f64,
    ord: u64,
    /// The group's place in the values' byte order (its term ordinal;
    /// `NO_VALUE` for none).
    rank: u64,
    doc: DocId,
    /// Whether another document of the group has the same value.
    tied: bool,
}

impl Entry {
    fn ahead(self, of: Entry, sort: GroupOrder) -> bool {
        sort.cmp(self.value, of.value)
            .then_with(|| self.rank.cmp(&of.rank))
            .then_with(|| self.doc.cmp(&of.doc))
            == std::cmp::Ordering::Less
    }
}

/// The `window` best groups of a segment so far.
struct Top {
    window: usize,
    sort: GroupOrder,
    entries: Vec<Entry>,
    /// Where each slot's entry is (documents without a value are each
    /// a group of their own, never looked up).
    at: hashbrown::HashMap<u64, usize>,
    /// The last entry in the order (when `entries` is not empty).
    worst: usize,
}

impl Top {
    fn new(window: usize, sort: GroupOrder) -> Top {
        Top { window, sort, entries: Vec::new(), at: hashbrown::HashMap::new(), worst: 0 }
    }

    /// Whether `entry` can change the window: false only when it is full
    /// and `entry` goes after its last (then neither its group's best nor
    /// a new group's can be `entry`).
    fn admits(&self, entry: Entry) -> bool {
        self.entries.len() < self.window || entry.ahead(self.entries[self.worst], self.sort)
    }

    fn offer(&mut self, entry: Entry) {
        if !self.admits(entry) {
            // A document the window does not take may still tie with its
            // last, when of the same group.
            let last = &mut self.entries[self.worst];
            if entry.ord != NO_VALUE && entry.ord == last.ord && entry.value == last.value {
                last.tied = true;
            }
            return;
        }
        let known = if entry.ord == NO_VALUE { None } else { self.at.get(&entry.ord).copied() };
        match known {
            Some(i) => {
                let kept = self.entries[i];
                if entry.ahead(kept, self.sort) {
                    self.entries[i] = Entry { tied: entry.value == kept.value, ..entry };
                    if i == self.worst {
                        self.find_worst();
                    }
                } else if entry.value == kept.value {
                    self.entries[i].tied = true;
                }
            }
            None if self.entries.len() < self.window => {
                if entry.ord != NO_VALUE {
                    self.at.insert(entry.ord, self.entries.len());
                }
                self.entries.push(entry);
                if self.entries.len() == 1 || self.entries[self.worst].ahead(entry, self.sort) {
                    self.worst = self.entries.len() - 1;
                }
            }
            None => {
                let out = self.entries[self.worst];
                if out.ord != NO_VALUE {
                    self.at.remove(&out.ord);
                }
                if entry.ord != NO_VALUE {
                    self.at.insert(entry.ord, self.worst);
                }
                self.entries[self.worst] = entry;
                self.find_worst();
            }
        }
    }

    fn find_worst(&mut self) {
        let mut worst = 0;
        for (i, e) in self.entries.iter().enumerate() {
            if self.entries[worst].ahead(*e, self.sort) {
                worst = i;
            }
        }
        self.worst = worst;
    }
}

/// What a segment found: its window best groups, and per slot how
/// many of its documents match.
pub(crate) struct Fruit {
    segment: SegmentOrdinal,
    run: usize,
    top: Vec<Entry>,
    /// Matching documents per slot, up to 255 (a byte each, so the
    /// counts of a segment of many values stay in cache) ...
    counts: Vec<u8>,
    /// ... and what a value has beyond that.
    more: hashbrown::HashMap<u64, u64>,
    /// Matching documents without a value.
    loose: u64,
    /// Values matched (documents without one not counted).
    distinct: u64,
    column: Option<Arc<GroupColumn>>,
}

impl Fruit {
    /// Values matched (documents without one not counted).
    fn values(&self) -> u64 {
        self.distinct
    }

    /// The slot of value `key` in this segment.
    fn ord(&self, key: &Key) -> Option<u64> {
        self.column.as_ref()?.slot_of(&key.bytes()).map(u64::from)
    }

    /// How many documents with value `key` match (`ord`: its slot here,
    /// when known).
    fn matched(&self, key: &Key, ord: Option<u64>) -> u64 {
        let Some(ord) = ord.or_else(|| self.ord(key)) else { return 0 };
        self.counts.get(ord as usize).map_or(0, |&n| u64::from(n)) + self.more.get(&ord).copied().unwrap_or(0)
    }

    /// The value of each of `ords` (slots), each given to `each` once.
    fn keys(&self, ords: &[u64], mut each: impl FnMut(u64, Key)) {
        let Some(column) = &self.column else { return };
        let slots: Vec<u32> = ords.iter().map(|&o| o as u32).collect();
        column.keys(&slots, |slot, key| each(u64::from(slot), key));
    }
}

/// Groups matches by the facet column of field `field`, keeping the
/// `window` best.
pub(crate) struct CollapseCollector {
    column: String,
    sort: GroupOrder,
    run: usize,
    window: usize,
    /// Whether the query's weight prunes by block maxima ([`prunes`]).
    prunes: bool,
    /// Where segments' groups are kept.
    cache: Arc<GroupCache>,
    /// Every segment the search reads (what the cache keeps).
    searched: Vec<SegmentId>,
}

impl CollapseCollector {
    /// Collects for `query` (which decides how a segment is walked), the
    /// segments' groups kept in `cache` (`searched`: every segment the
    /// search reads).
    pub(crate) fn new(
        field: &str,
        sort: GroupOrder,
        (run, window): (usize, usize),
        query: &dyn Query,
        cache: Arc<GroupCache>,
        searched: Vec<SegmentId>,
    ) -> CollapseCollector {
        let prunes = prunes(query);
        CollapseCollector {
            column: format!("{FACET_PREFIX}{field}"),
            sort,
            run,
            window: window.max(1),
            prunes,
            cache,
            searched,
        }
    }
}

/// Whether a segment is better walked twice for `query`: once without
/// scores to count every match, then by block-max WAND for the window
/// (only documents that may enter it scored). So for a term, or an
/// intersection of terms alone, where WAND skips most of the scoring (the
/// 48 peer queries measured: `enron` 0.93 -> 0.65 ms, `enron meeting` 0.62
/// -> 0.47); a union of terms walks its WAND slower than scoring every
/// match once (`gas OR power` 0.46 -> 0.61), and other queries (phrases,
/// nested clauses, filters) would be matched twice.
fn prunes(query: &dyn Query) -> bool {
    let query = crate::cancellable::inner(query).unwrap_or(query);
    if query.downcast_ref::<TermQuery>().is_some() {
        return true;
    }
    let Some(boolean) = query.downcast_ref::<BooleanQuery>() else { return false };
    let clauses = boolean.clauses();
    !clauses.is_empty()
        && clauses.iter().all(|(occur, q)| *occur == Occur::Must && q.downcast_ref::<TermQuery>().is_some())
}

pub(crate) struct SegmentGroups {
    segment: SegmentOrdinal,
    values: Option<Arc<GroupColumn>>,
    dates: Option<Column<tantivy::DateTime>>,
    run: usize,
    counts: Vec<u8>,
    more: hashbrown::HashMap<u64, u64>,
    loose: u64,
    distinct: u64,
    top: Top,
}

impl Collector for CollapseCollector {
    type Fruit = Vec<Fruit>;
    type Child = SegmentGroups;

    fn for_segment(&self, segment: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentGroups> {
        let fast = reader.fast_fields();
        let values = self.cache.column(reader, &self.column, &self.searched)?;
        let terms = values.as_ref().map_or(0, |c| c.len());
        let dates = if self.sort.by_date { Some(fast.date(DATE_FIELD)?) } else { None };
        Ok(SegmentGroups {
            segment,
            values,
            dates,
            run: self.run,
            counts: vec![0; terms],
            more: hashbrown::HashMap::new(),
            loose: 0,
            distinct: 0,
            top: Top::new(self.window, self.sort),
        })
    }

    fn requires_scoring(&self) -> bool {
        !self.sort.by_date
    }

    /// By date: one pass without scores. By score: one scored pass (the
    /// groups of each block of matches read together, a match offered
    /// to the window only when it beats the window's last), or where the
    /// query [`prunes`], every match counted without scores and then the
    /// window filled by block-max WAND.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<Fruit>> {
        let mut groups = self.for_segment(segment, reader)?;
        let alive = reader.alive_bitset();
        let is_alive = |doc| alive.is_none_or(|a| a.is_alive(doc));
        let mut live = Vec::with_capacity(BLOCK);
        if self.sort.by_date {
            weight.for_each_no_score(reader, &mut |docs| {
                for block in docs.chunks(BLOCK) {
                    live.clear();
                    live.extend(block.iter().copied().filter(|&d| is_alive(d)));
                    groups.collect_dated(&live);
                }
            })?;
            return Ok(groups.harvest());
        }
        if !self.sort.descending {
            weight.for_each(reader, &mut |doc, score| {
                if is_alive(doc) {
                    groups.collect(doc, score);
                }
            })?;
            return Ok(groups.harvest());
        }
        if !self.prunes {
            // One pass: scored, counted in blocks, offered what beats the
            // window's last.
            let mut block = [0; BLOCK];
            let mut filled = 0;
            let mut threshold = Score::MIN;
            weight.for_each(reader, &mut |doc, score| {
                if !is_alive(doc) {
                    return;
                }
                block[filled] = doc;
                filled += 1;
                if filled == BLOCK {
                    groups.count_block(&block);
                    filled = 0;
                }
                if score > threshold {
                    let ord = groups.ord(doc);
                    let rank = groups.rank(ord);
                    groups.top.offer(Entry { value: f64::from(score), ord, rank, doc, tied: false });
                    threshold = groups.threshold();
                }
            })?;
            groups.count_block(&block[..filled]);
            return Ok(groups.harvest());
        }
        weight.for_each_no_score(reader, &mut |docs| {
            for block in docs.chunks(BLOCK) {
                match alive {
                    None => groups.count_block(block),
                    Some(alive) => {
                        live.clear();
                        live.extend(block.iter().copied().filter(|&d| alive.is_alive(d)));
                        groups.count_block(&live);
                    }
                }
            }
        })?;
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if is_alive(doc) {
                let ord = groups.ord(doc);
                let rank = groups.rank(ord);
                groups.top.offer(Entry { value: f64::from(score), ord, rank, doc, tied: false });
            }
            groups.threshold()
        })?;
        Ok(groups.harvest())
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Fruit>>) -> tantivy::Result<Vec<Fruit>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentGroups {
    /// `doc`'s group: its value's slot, or [`NO_VALUE`].
    #[inline]
    fn ord(&self, doc: DocId) -> u64 {
        match self.values.as_ref().map_or(NO_SLOT, |c| c.slot(doc)) {
            NO_SLOT => NO_VALUE,
            slot => u64::from(slot),
        }
    }

    /// A group's place in the values' byte order ([`Entry::rank`]).
    fn rank(&self, ord: u64) -> u64 {
        match self.values.as_ref() {
            Some(column) if ord != NO_VALUE => column.term_ord(ord as u32),
            _ => NO_VALUE,
        }
    }

    /// Counts `doc` as a match of its group; the group.
    fn count(&mut self, doc: DocId) -> u64 {
        let ord = self.ord(doc);
        self.tally(ord);
        ord
    }

    /// One more match of group `ord`.
    #[inline(always)]
    fn tally(&mut self, ord: u64) {
        match self.counts.get_mut(ord as usize) {
            Some(n) if *n < u8::MAX => {
                self.distinct += u64::from(*n == 0);
                *n += 1;
            }
            Some(_) => self.tally_more(ord),
            None => self.loose += 1,
        }
    }

    /// One more match of group `ord`, whose byte is full.
    #[cold]
    #[inline(never)]
    fn tally_more(&mut self, ord: u64) {
        *self.more.entry(ord).or_insert(0) += 1;
    }

    /// Counts each of `docs` (at most [`BLOCK`]), their groups read
    /// together.
    fn count_block(&mut self, docs: &[DocId]) {
        let mut ords = [NO_VALUE; BLOCK];
        self.block_ords(docs, &mut ords);
        for &ord in &ords[..docs.len()] {
            self.tally(ord);
        }
    }

    /// Counts and offers each of `docs` (at most [`BLOCK`]) by its date,
    /// their groups and dates read together.
    fn collect_dated(&mut self, docs: &[DocId]) {
        let mut ords = [NO_VALUE; BLOCK];
        self.block_ords(docs, &mut ords);
        let mut dates = [None; BLOCK];
        let dates = &mut dates[..docs.len()];
        if let Some(column) = &self.dates {
            column.first_vals(docs, dates);
        }
        for ((&doc, &ord), date) in docs.iter().zip(&ords).zip(dates.iter()) {
            self.tally(ord);
            let value = date.map_or(0.0, |d| d.into_timestamp_millis() as f64);
            let rank = self.rank(ord);
            self.top.offer(Entry { value, ord, rank, doc, tied: false });
        }
    }

    /// The group of each of `docs` (at most [`BLOCK`]), as [`Self::ord`]
    /// gives one.
    fn block_ords(&self, docs: &[DocId], out: &mut [u64; BLOCK]) {
        for (slot, &doc) in out.iter_mut().zip(docs) {
            *slot = self.ord(doc);
        }
    }

    /// The score a document must beat to change the window (when scores
    /// go highest first): just under its last's (a document of the same
    /// score enters when its group goes first).
    fn threshold(&self) -> Score {
        match self.top.entries.get(self.top.worst) {
            Some(last) if self.top.entries.len() >= self.top.window => (last.value as Score).next_down(),
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentGroups {
    type Fruit = Vec<Fruit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let value = match &self.dates {
            Some(dates) => dates.first(doc).map_or(0.0, |d| d.into_timestamp_millis() as f64),
            None => f64::from(score),
        };
        let ord = self.count(doc);
        let rank = self.rank(ord);
        self.top.offer(Entry { value, ord, rank, doc, tied: false });
    }

    fn harvest(self) -> Vec<Fruit> {
        vec![Fruit {
            segment: self.segment,
            run: self.run,
            top: self.top.entries,
            counts: self.counts,
            more: self.more,
            loose: self.loose,
            distinct: self.distinct,
            column: self.values,
        }]
    }
}

/// A candidate for the page: a group of one fruit's window, by value.
struct Candidate {
    key: Key,
    /// Whether another document of the group has its best value.
    tied: bool,
    /// The fruit it came from and its slot there.
    from: (usize, u64),
    best: f64,
    addr: DocAddress,
    run: usize,
}

/// How many groups `fruits` (the segments of every run of a search) hold
/// together, and the `limit` from `offset` in `sort`'s order (by the best
/// document's value, a tie by its run and address, as plain hits go),
/// with their matches. `offset + limit` must not exceed the window the
/// collectors kept.
pub(crate) fn page(sort: GroupOrder, fruits: Vec<Fruit>, offset: usize, limit: usize) -> (u64, Vec<Group>) {
    let total = groups(&fruits);
    let window = offset.saturating_add(limit);
    // Every fruit's window, by value: a value's best is the best of its
    // fruits' (the first run and address on a tie).
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut by_key: hashbrown::HashMap<Key, usize> = hashbrown::HashMap::new();
    for (n, fruit) in fruits.iter().enumerate() {
        let mut keyed: Vec<(u64, Entry)> = Vec::new();
        for e in &fruit.top {
            if e.ord == NO_VALUE {
                candidates.push(Candidate {
                    key: Key::None,
                    tied: false,
                    from: (n, NO_VALUE),
                    best: e.value,
                    addr: DocAddress::new(fruit.segment, e.doc),
                    run: fruit.run,
                });
            } else {
                keyed.push((e.ord, *e));
            }
        }
        let ords: Vec<u64> = keyed.iter().map(|(o, _)| *o).collect();
        let best: hashbrown::HashMap<u64, Entry> = keyed.into_iter().collect();
        fruit.keys(&ords, |ord, key| {
            let Some(e) = best.get(&ord) else { return };
            let found = Candidate {
                key,
                tied: e.tied,
                from: (n, ord),
                best: e.value,
                addr: DocAddress::new(fruit.segment, e.doc),
                run: fruit.run,
            };
            match by_key.get(&found.key) {
                Some(&i) => {
                    let kept = &mut candidates[i];
                    let earlier = (found.run, found.addr) < (kept.run, kept.addr);
                    let tie = found.best == kept.best;
                    if sort.before(found.best, kept.best) || (tie && earlier) {
                        *kept = Candidate { tied: found.tied || (tie && kept.tied), ..found };
                    }
                    kept.tied |= tie;
                }
                None => {
                    by_key.insert(found.key.clone(), candidates.len());
                    candidates.push(found);
                }
            }
        });
    }
    // Groups of equal best value by their value (a thread id), the same
    // whichever segments hold them; hits without one after, by address.
    let order = |a: &Candidate, b: &Candidate| {
        sort.cmp(a.best, b.best)
            .then_with(|| a.key.cmp(&b.key))
            .then_with(|| (a.run, a.addr).cmp(&(b.run, b.addr)))
    };
    let end = window.min(candidates.len());
    if end < candidates.len() {
        candidates.select_nth_unstable_by(end, order);
        candidates.truncate(end);
    }
    candidates.sort_unstable_by(order);
    let page = candidates.into_iter().skip(offset).map(|c| {
        let matched = match c.key {
            Key::None => 1,
            _ => fruits
                .iter()
                .enumerate()
                .map(|(n, f)| f.matched(&c.key, (n == c.from.0).then_some(c.from.1)))
                .sum(),
        };
        let bytes = c.key.bytes();
        Group {
            tied: c.tied.then(|| bytes.clone()),
            value: String::from_utf8_lossy(&bytes).into_owned(),
            best: c.best,
            addr: c.addr,
            run: c.run,
            matched,
        }
    });
    (total, page.collect())
}

/// Makes each tied group of `page` (the groups [`page`] gives, whose
/// best documents were found in `runs`: each searcher with its query,
/// scored with `stats`) stand for by the one of its best documents of
/// smallest row key (`key(run, address)`), as plain hits of equal value
/// go; the groups by the facet column of `field`, kept in `cache` (for
/// `searched`, every segment the search reads).
///
/// # Errors
/// A search's error as `err` makes it; what `key` returns.
#[allow(clippy::too_many_arguments)]
pub(crate) fn settle<E>(
    page: &mut [Group],
    field: &str,
    sort: GroupOrder,
    runs: &[(&tantivy::Searcher, Box<dyn Query>)],
    stats: &dyn tantivy::query::Bm25StatisticsProvider,
    (cache, searched): (&Arc<GroupCache>, &[SegmentId]),
    key: impl Fn(usize, DocAddress) -> Result<Vec<u8>, E>,
    err: impl Fn(tantivy::TantivyError) -> E,
) -> Result<(), E> {
    let wanted: Vec<(usize, Vec<u8>, f64)> =
        page.iter().enumerate().filter_map(|(i, g)| Some((i, g.tied.clone()?, g.best))).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let column = format!("{FACET_PREFIX}{field}");
    let smallest = tied::smallest_keys(
        page.len(),
        &wanted,
        (&column, sort.by_date),
        runs,
        stats,
        (cache, searched),
        key,
        err,
    )?;
    for (group, found) in page.iter_mut().zip(smallest) {
        if let Some((run, addr)) = found {
            group.run = run;
            group.addr = addr;
        }
    }
    Ok(())
}

/// How many groups `fruits` hold together: the values matched in the one
/// with the most, each other fruit's values not matched there (its
/// matched slots' text looked up), and every document
/// without a value.
fn groups(fruits: &[Fruit]) -> u64 {
    let loose: u64 = fruits.iter().map(|f| f.loose).sum();
    let values: Vec<u64> = fruits.iter().map(Fruit::values).collect();
    let Some(largest) = (0..fruits.len()).max_by_key(|&i| values[i]) else { return loose };
    let main = &fruits[largest];
    let mut elsewhere: hashbrown::HashSet<Key> = hashbrown::HashSet::new();
    for (i, fruit) in fruits.iter().enumerate() {
        if i == largest || values[i] == 0 {
            continue;
        }
        let ords: Vec<u64> =
            (0..fruit.counts.len() as u64).filter(|&o| fruit.counts[o as usize] > 0).collect();
        fruit.keys(&ords, |_, key| {
            let there = main.ord(&key).and_then(|o| main.counts.get(o as usize)).is_some_and(|&n| n > 0);
            if !there {
                elsewhere.insert(key);
            }
        });
    }
    loose + values[largest] + elsewhere.len() as u64
}
