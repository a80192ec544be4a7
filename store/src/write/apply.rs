//! Applying a batch: validation, the cells, derived data and the change
//! feed in one write transaction; and preparing a batch's keyword cells
//! ahead, outside the writer lock.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use heed::RwTxn;

use super::batch::{Batch, Delete, Mutation};
use super::derived::{index_entries, keyword_changes, rows_exist, update_indexes, values_before};
use super::group::{Waiting, echo, of_the_batch};
use super::row::{RowCells, delete_row, put_row};
use crate::cell::PutCell;
use crate::clock::Clock;
use crate::db::env::Environment;
use crate::db::feed::{CommitInfo, Feed};
use crate::db::meta::Meta;
use crate::error::Result;
use crate::key;
use crate::keyword::{CellParts, KeywordCells};
use crate::read::{ReadOptions, get_row};
use crate::schema::Column;
use crate::table::{Catalog, TableHandle, Tables};
use crate::threads::assign::Threaded;

/// A row's keyword cells computed ahead, with the table handle they were
/// computed for.
type Ahead = (Arc<TableHandle>, KeywordCells);

/// A put's values as its families store them, computed ahead (compressed
/// with the family's dictionary), with the table handle they were
/// computed for: per cell of the put, `None` for a family that stores
/// values as they are.
type Encoded = (Arc<TableHandle>, Vec<Option<Vec<u8>>>);

/// What preparing a batch computed ahead, per mutation (empty slices:
/// nothing). The writer uses each part only for the table handle it was
/// computed with: a table dropped and made again, or given a dictionary,
/// in between has another handle, and the writer computes it again.
#[derive(Clone, Copy, Default)]
pub(crate) struct Computed<'p> {
    pub keywords: &'p [Option<Ahead>],
    pub values: &'p [Option<Encoded>],
}

/// What [`crate::Store::apply_each`] calls: it hands each batch to the sink
/// it is given, in order.
pub type Produce<'p> = dyn FnMut(&mut dyn FnMut(Batch) -> Result<()>) -> Result<()> + 'p;

/// The reader [`crate::Store::read_modify_write`] hands its decision: the
/// newest cell (value and timestamp) of a `family`, `qualifier` of the
/// row, if any.
pub type CellReader<'r> = dyn Fn(&str, &[u8]) -> Result<Option<crate::cell::Cell>> + 'r;

/// What [`crate::Store::read_modify_write`] calls: the batch to write (or
/// none) and what the call answers.
pub type Decide<'d, T> = dyn FnMut(&CellReader<'_>) -> Result<(Option<Batch>, T)> + 'd;

/// A batch with the keyword cells of the rows it creates computed ahead
/// ([`crate::Store::prepare`]).
#[derive(Debug)]
pub struct PreparedBatch {
    batch: Batch,
    /// Per mutation, when computed: the table handle and the row's keyword
    /// cells from its puts.
    keywords: Vec<Option<Ahead>>,
    /// Per mutation, when computed: the put's values as stored.
    values: Vec<Option<Encoded>>,
}

impl PreparedBatch {
    /// What was computed ahead.
    pub(crate) fn computed(&self) -> Computed<'_> {
        Computed { keywords: &self.keywords, values: &self.values }
    }

    /// The batch.
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The batch back.
    pub fn into_batch(self) -> Batch {
        self.batch
    }
}

/// What a write needs of the store: its environment, catalog, feed and
/// clock. Made for each call; holds nothing of its own.
pub(crate) struct Writer<'s> {
    pub env: &'s Environment,
    pub catalog: &'s Catalog,
    pub meta: Meta,
    pub feed: Feed,
    pub clock: &'s dyn Clock,
    pub max_dbs: u32,
    pub pending_runs: PendingRuns,
    /// Writes waiting for a shared commit ([`super::group`]).
    pub group: &'s super::group::GroupQueue,
}

/// Most pending runs a write leaves before it merges them: a secondary
/// index's, a table's keyword rows'.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingRuns {
    pub index: usize,
    pub keyword: usize,
}

impl Writer<'_> {
    /// [`crate::Store::prepare`].
    pub fn prepare(&self, batch: Batch) -> PreparedBatch {
        let Ok(handles) = self.check_batch(&self.catalog.current(), &batch) else {
            return PreparedBatch { batch, keywords: Vec::new(), values: Vec::new() };
        };
        let keywords = self.keywords_ahead(&handles, &batch).unwrap_or_default();
        let values = values_ahead(&handles, &batch);
        PreparedBatch { batch, keywords, values }
    }

    /// Per mutation of a batch putting each row once, the keyword cells of
    /// its row from its puts where they do not depend on the time.
    fn keywords_ahead(
        &self,
        handles: &BTreeMap<String, Arc<TableHandle>>,
        batch: &Batch,
    ) -> Result<Vec<Option<Ahead>>> {
        let now_ms = self.clock.now_ms();
        let mut keywords = Vec::new();
        if touched_rows(batch).len() != batch.mutations.len() {
            return Ok(keywords);
        }
        for m in &batch.mutations {
            let handle = &handles[m.table()];
            let (Mutation::Put { row, cells, .. }, Some(search)) = (m, &handle.search) else {
                keywords.push(None);
                continue;
            };
            let refs: Vec<&PutCell> = cells.iter().collect();
            let single = search.columns.iter().all(|(family, qualifier)| {
                refs.iter().filter(|c| *c.family == *family.name && c.qualifier == *qualifier).count() <= 1
            });
            if !single {
                keywords.push(None);
                continue;
            }
            let analyzer = self.catalog.analyzer_for(&handle.name)?;
            let values = search.values_from_puts(&refs, now_ms);
            keywords.push(Some((handle.clone(), search.entries(analyzer, row, &values)?)));
        }
        Ok(keywords)
    }

    /// Writes `batch` ([`crate::Store::apply`]), with what was `computed`
    /// ahead of it (the keyword cells of new rows, the values as stored)
    /// where it was computed for the table handle the write uses.
    pub fn apply(&self, batch: &Batch, computed: Computed<'_>) -> Result<CommitInfo> {
        let _writer = self.env.lock_writer()?;
        let mut tables = self.catalog.current();
        loop {
            let handles = self.check_fresh(&mut tables, batch)?;
            match self.apply_with(&tables, &handles, batch, computed)? {
                Some(info) => return Ok(info),
                // The catalog changed before the transaction began.
                None => tables = self.catalog.refresh(self.env)?,
            }
        }
    }

    /// [`Self::check_batch`] against `tables`, and on a refusal against the
    /// newest catalog (perhaps a table or family another process created),
    /// which `tables` then becomes; the refusal when the catalog is the same.
    pub(super) fn check_fresh(
        &self,
        tables: &mut Arc<Tables>,
        batch: &Batch,
    ) -> Result<BTreeMap<String, Arc<TableHandle>>> {
        loop {
            match self.check_batch(tables, batch) {
                Ok(handles) => return Ok(handles),
                Err(err) => {
                    let fresh = self.catalog.refresh(self.env)?;
                    if fresh.version == tables.version {
                        return Err(err);
                    }
                    *tables = fresh;
                }
            }
        }
    }

    /// Writes `batch` with `handles` (of `tables`); `None`, writing nothing,
    /// when the transaction sees another catalog version than `tables`.
    fn apply_with(
        &self,
        tables: &Tables,
        handles: &BTreeMap<String, Arc<TableHandle>>,
        batch: &Batch,
        computed: Computed<'_>,
    ) -> Result<Option<CommitInfo>> {
        let now_ms = self.clock.now_ms();
        self.env.write_txn(|wtxn| {
            if self.catalog.version_in(wtxn)? != tables.version {
                return Ok(None);
            }
            self.write_batch(wtxn, handles, batch, computed, now_ms).map(Some)
        })
    }

    /// Reads cells of `row` and writes what `decide` makes of them, in one
    /// transaction ([`crate::Store::read_modify_write`]).
    pub fn read_modify_write<T>(
        &self,
        table: &str,
        row: &[u8],
        decide: &mut Decide<'_, T>,
    ) -> Result<(T, Option<CommitInfo>)> {
        let _writer = self.env.lock_writer()?;
        let mut tables = self.catalog.current();
        loop {
            // The table and the row key checked as a delete of the row.
            let mut probe = Batch::new();
            probe.delete(table, row.to_vec(), Delete::Row { up_to: Some(0) });
            let handles = self.check_fresh(&mut tables, &probe)?;
            let now_ms = self.clock.now_ms();
            let outcome = self.env.write_txn(|wtxn| {
                if self.catalog.version_in(wtxn)? != tables.version {
                    return Ok(None);
                }
                let (batch, answer) = {
                    let handle = &handles[table];
                    let read = |family: &str, qualifier: &[u8]| -> Result<Option<crate::cell::Cell>> {
                        let column = Column::Qualifier(family.to_owned(), qualifier.to_vec());
                        let found =
                            get_row(wtxn, now_ms, handle, row, &ReadOptions::default().column(column))?;
                        Ok(found.and_then(|r| r.cells.into_iter().next()))
                    };
                    decide(&read)?
                };
                let info = match batch {
                    Some(batch) => {
                        let written = self.check_batch(&tables, &batch)?;
                        Some(self.write_batch(wtxn, &written, &batch, Computed::default(), now_ms)?)
                    }
                    None => None,
                };
                Ok(Some((answer, info)))
            })?;
            match outcome {
                Some(done) => return Ok(done),
                None => tables = self.catalog.refresh(self.env)?,
            }
        }
    }

    /// Writes the batches `produce` hands its sink, in order, in one
    /// transaction ([`crate::Store::apply_each`]).
    pub fn apply_each(&self, produce: &mut Produce<'_>) -> Result<CommitInfo> {
        let _writer = self.env.lock_writer()?;
        let mut tables = self.catalog.current();
        loop {
            let now_ms = self.clock.now_ms();
            let outcome = self.env.write_txn(|wtxn| {
                if self.catalog.version_in(wtxn)? != tables.version {
                    return Ok(None);
                }
                let mut info = CommitInfo { first_seq: None, last_seq: None, rows: 0 };
                produce(&mut |batch: Batch| {
                    let handles = self.check_batch(&tables, &batch)?;
                    let got = self.write_batch(wtxn, &handles, &batch, Computed::default(), now_ms)?;
                    info.first_seq = info.first_seq.or(got.first_seq);
                    info.last_seq = got.last_seq.or(info.last_seq);
                    info.rows += got.rows;
                    Ok(())
                })?;
                Ok(Some(info))
            });
            match outcome {
                Ok(Some(info)) => return Ok(info),
                Ok(None) => tables = self.catalog.refresh(self.env)?,
                Err(err) => {
                    // Perhaps a table or family another process created:
                    // run again against the newest catalog.
                    let fresh = self.catalog.refresh(self.env)?;
                    if fresh.version == tables.version {
                        return Err(err);
                    }
                    tables = fresh;
                }
            }
        }
    }

    /// Writes `batch` with `handles` in `wtxn`: its cells, the index
    /// entries and keyword cells of its rows, and its feed entries.
    pub(super) fn write_batch(
        &self,
        wtxn: &mut RwTxn,
        handles: &BTreeMap<String, Arc<TableHandle>>,
        batch: &Batch,
        computed: Computed<'_>,
        now_ms: u64,
    ) -> Result<CommitInfo> {
        let keywords = computed.keywords;
        // Threaded puts gain their thread column, and rows of merged
        // threads are written again, in this transaction.
        let threaded =
            crate::threads::assign::thread_batch(wtxn, self.catalog, handles, batch, keywords, now_ms)?
                .unwrap_or_default();
        let steps = steps(batch, computed, &threaded);
        let touched = distinct_rows(steps.iter().map(|s| (s.mutation.table(), s.mutation.row())).collect());
        // Rows of indexed or searchable tables: their entries and keyword
        // cells before and after the batch.
        let indexed: Vec<(&TableHandle, &[u8])> =
            touched.iter().map(|(t, r)| (&*handles[*t], *r)).filter(|(h, _)| h.is_derived()).collect();
        // One mutation per row, in order (bulk loads): the i-th step of a
        // derived table is row `indexed[i]`.
        let bulk = touched.len() == steps.len();
        let derived_steps = || steps.iter().filter(|s| handles[s.mutation.table()].is_derived());
        // For each of them, the cells put when the batch only puts into it.
        let puts_only: Vec<Option<Vec<&PutCell>>> = if bulk {
            derived_steps().map(Step::puts).collect()
        } else {
            let position: HashMap<(&str, &[u8]), usize> =
                indexed.iter().enumerate().map(|(i, (h, r))| ((h.name.as_str(), *r), i)).collect();
            let mut out: Vec<Option<Vec<&PutCell>>> = vec![Some(Vec::new()); indexed.len()];
            for step in &steps {
                let m = step.mutation;
                if let Some(&i) = position.get(&(m.table(), m.row())) {
                    match (step.puts(), &mut out[i]) {
                        (Some(puts), Some(v)) => v.extend(puts),
                        (Some(_), None) => {}
                        (None, slot) => *slot = None,
                    }
                }
            }
            out
        };
        // Keyword cells computed ahead, aligned with `indexed`: only in
        // bulk, and only if the table is unchanged since.
        let ahead: Vec<Option<CellParts<'_>>> = if !keywords.is_empty() && bulk {
            derived_steps()
                .map(|s| match s.ahead {
                    Some((h, cells)) if Arc::ptr_eq(h, &handles[s.mutation.table()]) => {
                        Some(CellParts::new(cells, s.more))
                    }
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let existed = rows_exist(wtxn, &indexed)?;
        let before = index_entries(wtxn, &indexed, &existed, None, now_ms)?;
        let values_before = values_before(wtxn, &indexed, &existed)?;
        let mut buf = Vec::with_capacity(256);
        let mut handle = None::<&Arc<TableHandle>>;
        let mut derived = 0;
        for step in &steps {
            let mutation = step.mutation;
            let h = match handle {
                Some(h) if h.name == mutation.table() => h,
                _ => &handles[mutation.table()],
            };
            handle = Some(h);
            // In bulk, the existence of a derived table's row is known.
            let new_row = if h.is_derived() {
                derived += 1;
                bulk && !existed[derived - 1]
            } else {
                false
            };
            let row = h.stored_key(mutation.row());
            match mutation {
                Mutation::Put { .. } => {
                    let encoded = step
                        .encoded
                        .filter(|(of, _)| Arc::ptr_eq(of, h))
                        .map(|(_, values)| values.as_slice());
                    let put = RowCells { cells: step.cells, encoded };
                    put_row(wtxn, h, &row, put, new_row, now_ms, &mut buf)?;
                    if let Some(extra) = step.extra {
                        let put = RowCells { cells: std::slice::from_ref(extra), encoded: None };
                        put_row(wtxn, h, &row, put, new_row, now_ms, &mut buf)?;
                    }
                }
                Mutation::Delete { what, .. } => delete_row(wtxn, h, &row, what)?,
            }
        }
        let after = index_entries(wtxn, &indexed, &existed, Some(&puts_only), now_ms)?;
        update_indexes(wtxn, &indexed, &before, &after, self.pending_runs.index)?;
        let keywords =
            keyword_changes(self.catalog, wtxn, &indexed, &values_before, &puts_only, &ahead, now_ms)?;
        crate::keyword::update(
            wtxn,
            indexed.iter().zip(&keywords).filter_map(|((t, _), k)| {
                t.search.as_ref().map(|s| (s, k.before.parts(), k.after.parts(), k.may_have_cells))
            }),
            self.pending_runs.keyword,
        )?;
        self.feed.append(wtxn, &touched, now_ms)
    }

    /// Validates a batch before any write and resolves its tables.
    fn check_batch(&self, tables: &Tables, batch: &Batch) -> Result<BTreeMap<String, Arc<TableHandle>>> {
        let mut handles: BTreeMap<String, Arc<TableHandle>> = BTreeMap::new();
        for mutation in &batch.mutations {
            let table = mutation.table();
            if !handles.contains_key(table) {
                let handle = tables.table(table)?;
                handle.check_enabled()?;
                handles.insert(table.to_owned(), handle);
            }
            let handle = &handles[table];
            key::check_row_key(table, mutation.row())?;
            match mutation {
                Mutation::Put { cells, .. } => {
                    for cell in cells {
                        handle.family(&cell.family)?;
                        key::check_qualifier(&cell.family, &cell.qualifier)?;
                    }
                }
                Mutation::Delete { what, .. } => match what {
                    Delete::Row { .. } => {}
                    Delete::Family { family, .. } => {
                        handle.family(family)?;
                    }
                    Delete::Column { family, qualifier, .. } | Delete::Version { family, qualifier, .. } => {
                        handle.family(family)?;
                        key::check_qualifier(family, qualifier)?;
                    }
                },
            }
        }
        Ok(handles)
    }
}

/// The rows a batch touches, each once, in the order of its first mutation.
pub(crate) fn touched_rows(batch: &Batch) -> Vec<(&str, &[u8])> {
    distinct_rows(batch.mutations.iter().map(|m| (m.table(), m.row())).collect())
}

/// `rows`, each once, in the order of its first place.
fn distinct_rows<'b>(rows: Vec<(&'b str, &'b [u8])>) -> Vec<(&'b str, &'b [u8])> {
    // Bulk loads come sorted: strictly ascending rows are already distinct.
    if rows.windows(2).all(|w| w[0] < w[1]) {
        return rows;
    }
    let mut order: Vec<((&str, &[u8]), usize)> = rows.into_iter().zip(0..).collect();
    order.sort_unstable();
    order.dedup_by(|later, first| later.0 == first.0);
    order.sort_unstable_by_key(|&(_, i)| i);
    order.into_iter().map(|(row, _)| row).collect()
}

/// One mutation as written: a batch's (with the thread cell it gains), or
/// a row of a merged thread written again.
struct Step<'b> {
    mutation: &'b Mutation,
    /// A put's cells (less a thread cell threading replaces).
    cells: &'b [PutCell],
    /// The thread cell the put gains.
    extra: Option<&'b PutCell>,
    /// The keyword cells computed ahead for the put.
    ahead: Option<&'b Ahead>,
    /// The thread field's keyword cells, which those computed ahead lack.
    more: Option<&'b KeywordCells>,
    /// `cells`' values as stored, computed ahead.
    encoded: Option<&'b Encoded>,
}

impl<'b> Step<'b> {
    /// The cells a put writes; `None` for a delete.
    fn puts(&self) -> Option<Vec<&'b PutCell>> {
        matches!(self.mutation, Mutation::Put { .. }).then(|| self.cells.iter().chain(self.extra).collect())
    }
}

/// Per mutation of `batch` that puts into a family storing values
/// compressed: its values as they will be stored.
fn values_ahead(handles: &BTreeMap<String, Arc<TableHandle>>, batch: &Batch) -> Vec<Option<Encoded>> {
    batch
        .mutations
        .iter()
        .map(|m| {
            let Mutation::Put { cells, .. } = m else { return None };
            let handle = &handles[m.table()];
            let values: Vec<Option<Vec<u8>>> = cells
                .iter()
                .map(|cell| match handle.family(&cell.family).ok()?.stored_value(&cell.value) {
                    std::borrow::Cow::Owned(stored) => Some(stored),
                    std::borrow::Cow::Borrowed(_) => None,
                })
                .collect();
            values.iter().any(Option::is_some).then(|| (Arc::clone(handle), values))
        })
        .collect()
}

/// The steps of `batch` (with what was `computed` ahead) as threading
/// (`threaded`) makes them.
fn steps<'b>(batch: &'b Batch, computed: Computed<'b>, threaded: &'b Threaded) -> Vec<Step<'b>> {
    let plain = |mutation: &'b Mutation| {
        let cells = match mutation {
            Mutation::Put { cells, .. } => &cells[..],
            Mutation::Delete { .. } => &[],
        };
        Step { mutation, cells, extra: None, ahead: None, more: None, encoded: None }
    };
    let mut steps: Vec<Step<'b>> = Vec::with_capacity(batch.mutations.len() + threaded.moved.len());
    for (i, mutation) in batch.mutations.iter().enumerate() {
        let mut step = plain(mutation);
        step.ahead = computed.keywords.get(i).and_then(Option::as_ref);
        step.encoded = computed.values.get(i).and_then(Option::as_ref);
        if let Some(Some((cell, more))) = threaded.cells.get(i) {
            step.extra = Some(cell);
            step.more = more.as_ref();
        }
        if let Some(cells) = threaded.replaced.get(&i) {
            // Its keyword cells computed ahead hold the thread it carried.
            step.cells = cells;
            step.ahead = None;
            step.more = None;
            step.encoded = None;
        }
        steps.push(step);
    }
    steps.extend(threaded.moved.iter().map(plain));
    steps
}

impl Writer<'_> {
    /// [`crate::Store::apply`] through the group commit.
    pub(crate) fn apply_grouped(&self, batch: &Batch) -> Result<CommitInfo> {
        let mine = Arc::new(Waiting::new(batch.clone()));
        let mut state = self.group.lock();
        state.waiting.push(Arc::clone(&mine));
        loop {
            if let Some(answer) = mine.answer() {
                return answer;
            }
            if state.leading {
                state = self.group.done.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // No commit under way: this writer leads the next one, with
            // every batch queued (its own among them, or answered already).
            state.leading = true;
            let group = std::mem::take(&mut state.waiting);
            drop(state);
            match self.env.lock_writer() {
                Ok(_writer) => self.commit_group(&group),
                Err(e) => group.iter().for_each(|w| w.set(Err(echo(&e)))),
            }
            state = self.group.lock();
            state.leading = false;
            self.group.done.notify_all();
        }
    }

    /// Writes `group`'s batches in one transaction (the writer lock held),
    /// and answers each.
    fn commit_group(&self, group: &[Arc<Waiting>]) {
        let mut tables = self.catalog.current();
        loop {
            // Each batch checked alone: a refused one is answered now.
            let mut checked = Vec::with_capacity(group.len());
            for w in group {
                match self.check_fresh(&mut tables, &w.batch) {
                    Ok(handles) => checked.push((w, handles)),
                    Err(e) => w.set(Err(e)),
                }
            }
            if checked.is_empty() {
                return;
            }
            let now_ms = self.clock.now_ms();
            let outcome = self.env.write_txn(|wtxn| {
                if self.catalog.version_in(wtxn)? != tables.version {
                    return Ok(None);
                }
                let mut answers = Vec::with_capacity(checked.len());
                for (w, handles) in &checked {
                    let mut nested = self.env.nested_write_txn(wtxn)?;
                    match self.write_batch(&mut nested, handles, &w.batch, Computed::default(), now_ms) {
                        Ok(info) => {
                            nested.commit().map_err(|e| crate::error::Error::lmdb("commit nested", e))?;
                            answers.push(Ok(info));
                        }
                        Err(e) if of_the_batch(&e) => {
                            nested.abort();
                            answers.push(Err(e));
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(Some(answers))
            });
            match outcome {
                Ok(Some(answers)) => {
                    self.group.commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.group.batches.fetch_add(
                        answers.iter().filter(|a| a.is_ok()).count() as u64,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                    for ((w, _), answer) in checked.iter().zip(answers) {
                        w.set(answer);
                    }
                    return;
                }
                // The catalog changed before the transaction began.
                Ok(None) => match self.catalog.refresh(self.env) {
                    Ok(fresh) => tables = fresh,
                    Err(e) => {
                        checked.iter().for_each(|(w, _)| w.set(Err(echo(&e))));
                        return;
                    }
                },
                Err(e) => {
                    checked.iter().for_each(|(w, _)| w.set(Err(echo(&e))));
                    return;
                }
            }
        }
    }
}
