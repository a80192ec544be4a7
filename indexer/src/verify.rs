//! `verify`: the store, its keyword rows and the serving generation
//! checked against each other.
//!
//! - every indexed key is a row of the store with keyword cells, indexed
//!   once;
//! - every row with keyword cells is indexed;
//! - every keyword cell belongs to a row of the store;
//! - for a sample of rows (chosen by a hash of the key, about
//!   [`VerifyOptions::sample`] of them): the keyword cells equal those the
//!   row's values give, and the index holds exactly those terms with those
//!   positions in each field (and their union in `_all`).
//!
//! Rows changed since the generation's last commit (in the change feed
//! past its recorded sequence) are not yet indexed by design: they are
//! counted as pending and left out of the index checks.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Instant;

use rowsearch_store::{ReadOptions, RowSource};
use serde::Serialize;
use tantivy::postings::Postings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, TERMINATED};

use crate::error::tantivy_err;
use crate::reader::{Generation, TableIndex, key_of};
use crate::{Error, Result};

/// Options of a verify run.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// About how many rows to compare term by term.
    pub sample: u64,
    /// At most this many keys listed per kind of mismatch.
    pub max_listed: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions { sample: 100, max_listed: 20 }
    }
}

/// What `verify` found. Keys are listed up to a limit; counts are exact.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// The table.
    pub table: String,
    /// The generation checked (0: the table has no index yet).
    pub generation: u64,
    /// The table has no index yet (never indexed): clean while it holds
    /// no row with keyword cells, every such row `missing` otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_index: bool,
    /// Documents in it.
    pub docs: u64,
    /// Rows with keyword cells in the store.
    pub rows_with_cells: u64,
    /// Rows changed since the generation's last commit (not checked).
    pub pending: u64,
    /// The store's last write (change feed seq) when the check began.
    pub store_seq: u64,
    /// The last write the generation's commit reflects (0: none).
    pub index_seq: u64,
    /// How long ago the oldest write the generation lacks was committed
    /// (ms); `None` when it lacks none (or the store kept no time).
    pub lag_ms: Option<u64>,
    /// Rows with keyword cells that the index lacks.
    pub missing: Mismatches,
    /// Indexed keys that are no row with keyword cells.
    pub stale: Mismatches,
    /// Keys indexed more than once.
    pub duplicates: Mismatches,
    /// Keyword cells whose row is not in the store.
    pub orphan_cells: Mismatches,
    /// Sampled rows whose keyword cells differ from their values'.
    pub cells_differ: Mismatches,
    /// Row numbers of the keyword rows that do not hold (the embedded
    /// store's; see `ReadTxn::check_keyword_numbers`).
    pub row_numbers: Mismatches,
    /// Sampled rows whose indexed terms differ from their keyword cells.
    pub terms_differ: Mismatches,
    /// Rows compared term by term.
    pub sampled: u64,
    /// Wall time.
    pub seconds: f64,
}

/// Keys of one kind of mismatch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Mismatches {
    /// How many.
    pub count: u64,
    /// The first ones, as binary strings, with a detail where there is one.
    pub keys: Vec<String>,
}

impl Mismatches {
    fn add(&mut self, key: &[u8], detail: Option<String>, max: usize) {
        self.count += 1;
        if self.keys.len() < max {
            let key = rowsearch_store::binstr::encode(key);
            self.keys.push(match detail {
                Some(d) => format!("{key}: {d}"),
                None => key,
            });
        }
    }
}

impl VerifyReport {
    /// Whether everything agrees.
    pub fn is_clean(&self) -> bool {
        [
            &self.missing,
            &self.stale,
            &self.duplicates,
            &self.orphan_cells,
            &self.cells_differ,
            &self.terms_differ,
            &self.row_numbers,
        ]
        .iter()
        .all(|m| m.count == 0)
    }

    /// The one-line summary.
    pub fn summary(&self) -> String {
        let state = if self.is_clean() { "clean" } else { "MISMATCH" };
        if self.no_index {
            return format!(
                "verify {:?}: {state}: no index yet, {} rows with keyword cells not indexed{}, {:.2}s",
                self.table,
                self.rows_with_cells,
                if self.rows_with_cells > 0 { " (`rowsearch reindex` builds it)" } else { "" },
                self.seconds
            );
        }
        format!(
            "verify {:?} generation {}: {state}: {} docs, {} rows with keyword cells, {} pending (index at seq {}, store at {}{}), {} missing, {} stale, \
             {} duplicate, {} orphan cells, {} sampled ({} cell and {} term mismatches){}, {:.2}s",
            self.table,
            self.generation,
            self.docs,
            self.rows_with_cells,
            self.pending,
            self.index_seq,
            self.store_seq,
            self.lag_ms
                .map(|ms| format!(", the oldest written {:.1}s ago", ms as f64 / 1e3))
                .unwrap_or_default(),
            self.missing.count,
            self.stale.count,
            self.duplicates.count,
            self.orphan_cells.count,
            self.sampled,
            self.cells_differ.count,
            self.terms_differ.count,
            match self.row_numbers.count {
                0 => String::new(),
                n => format!(", {n} row number problems"),
            },
            self.seconds
        )
    }
}

/// The report on a table that was never indexed: every row with keyword
/// cells is missing from the index it does not have (a table without
/// such rows, as `serve --create` and a restore leave it, is clean).
fn never_indexed(
    store: &dyn RowSource,
    table: &str,
    options: &VerifyOptions,
    started: Instant,
) -> Result<VerifyReport> {
    store.schema(table)?;
    let view = store.view()?;
    let mut rows: std::collections::BTreeSet<Vec<u8>> = std::collections::BTreeSet::new();
    view.for_each_keyword_cell(table, None, &mut |cell| {
        if !rows.contains(cell.key) {
            rows.insert(cell.key.to_vec());
        }
        Ok(())
    })?;
    let mut report = VerifyReport {
        table: table.to_owned(),
        no_index: true,
        rows_with_cells: rows.len() as u64,
        store_seq: view.next_seq()?.saturating_sub(1),
        ..VerifyReport::default()
    };
    for key in &rows {
        report.missing.add(key, Some("no index yet".into()), options.max_listed);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// (field name, term) -> positions, for one row.
type Terms = BTreeMap<(String, String), Vec<u32>>;

/// Checks `table`'s serving generation against its rows (see the module
/// docs): the rows of `place` (the embedded store: `&store`; tables
/// elsewhere: [`crate::Place::new`]), the index under its data directory.
///
/// # Errors
/// `NoIndex`, `Store`, `Tantivy`, `Corrupted`.
pub fn verify<'a>(
    place: impl Into<crate::Place<'a>>,
    table: &str,
    options: &VerifyOptions,
) -> Result<VerifyReport> {
    let place = place.into();
    let (store, dir) = (place.source(), place.data);
    let started = Instant::now();
    let analyzer = store.analyzer().ok_or_else(|| Error::Schema {
        table: table.to_owned(),
        reason: "the row source has no analyzer".into(),
    })?;
    let index = TableIndex::open_in(dir, table, analyzer);
    let generation = match index.generation() {
        Ok(generation) => generation,
        Err(Error::NoIndex { .. }) => return never_indexed(store, table, options, started),
        Err(e) => return Err(e),
    };
    let searcher = generation.reader.searcher();
    let max = options.max_listed;
    let mut report = VerifyReport {
        table: table.to_owned(),
        generation: generation.number,
        docs: searcher.num_docs(),
        ..VerifyReport::default()
    };

    // Rows not yet absorbed.
    let index_next = generation.next_seq()?;
    let changes = {
        let view = store.tail_view()?;
        let rtxn = &*view;
        let changes = crate::changes::changes_in(rtxn, table, index_next)?;
        report.lag_ms = changes.age_ms(rtxn)?;
        changes
    };
    let store_next = changes.next_seq;
    let pending: HashSet<Vec<u8>> = changes.rows.into_iter().collect();
    report.pending = pending.len() as u64;
    report.store_seq = store_next.saturating_sub(1);
    report.index_seq = index_next.saturating_sub(1);

    let modulus = (report.docs / options.sample.max(1)).max(1);
    let sampled = |key: &[u8]| xxhash_rust::xxh3::xxh3_64(key).is_multiple_of(modulus);

    // The keyword rows: every row, and the sampled rows' cells.
    let view = store.view()?;
    let rtxn = &*view;
    let mut rows: HashSet<Vec<u8>> = HashSet::new();
    let mut sample_cells: HashMap<Vec<u8>, Terms> = HashMap::new();
    rtxn.for_each_keyword_cell(table, None, &mut |cell| {
        if !rows.contains(cell.key) {
            rows.insert(cell.key.to_vec());
        }
        if sampled(cell.key) && !pending.contains(cell.key) {
            sample_cells
                .entry(cell.key.to_vec())
                .or_default()
                .insert((cell.field.to_owned(), cell.term.to_owned()), cell.positions().collect());
        }
        Ok(())
    })?;
    report.rows_with_cells = rows.len() as u64;
    for (key, problem) in rtxn.check_keyword_numbers(table)? {
        report.row_numbers.add(&key, Some(problem), max);
    }
    let read = ReadOptions::default();
    let mut sorted_rows: Vec<&Vec<u8>> = rows.iter().collect();
    sorted_rows.sort();
    for key in sorted_rows {
        if rtxn.get(table, key, &read)?.is_none() {
            report.orphan_cells.add(key, None, max);
        }
    }
    let mut sample_keys: Vec<&Vec<u8>> = sample_cells.keys().collect();
    sample_keys.sort();
    for key in &sample_keys {
        let from_values: Terms = rtxn
            .row_keyword_cells(table, key)?
            .into_iter()
            .map(|c| ((c.field, c.term), c.positions))
            .collect();
        if from_values != sample_cells[*key] {
            report.cells_differ.add(key, Some(first_difference(&from_values, &sample_cells[*key])), max);
        }
    }
    drop(view);

    // The index: every live document's key, and the sampled documents.
    let IndexSide { indexed, mut indexed_terms, mut all_terms } =
        index_side(dir, table, &generation, &sample_cells)?;
    for key in &sample_keys {
        if !indexed.contains_key(*key) {
            continue; // reported as missing below
        }
        report.sampled += 1;
        let want = &sample_cells[*key];
        let got = indexed_terms.remove(*key).unwrap_or_default();
        let want_all: BTreeSet<String> = want.keys().map(|(_, t)| t.clone()).collect();
        let got_all = all_terms.remove(*key).unwrap_or_default();
        if &got != want {
            report.terms_differ.add(key, Some(first_difference(want, &got)), max);
        } else if got_all != want_all {
            report.terms_differ.add(key, Some("the _all field differs".into()), max);
        }
    }

    let mut keys: Vec<(&Vec<u8>, &u32)> = indexed.iter().collect();
    keys.sort();
    for (key, &n) in keys {
        if pending.contains(key) {
            continue;
        }
        if n > 1 {
            report.duplicates.add(key, Some(format!("{n} documents")), max);
        }
        if !rows.contains(key) {
            report.stale.add(key, None, max);
        }
    }
    let mut rows: Vec<Vec<u8>> = rows.into_iter().collect();
    rows.sort();
    for key in rows {
        if !pending.contains(&key) && !indexed.contains_key(&key) {
            report.missing.add(&key, None, max);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What the index holds: how many live documents each key has, and the
/// sampled keys' terms with positions (per field) and in `_all`.
struct IndexSide {
    indexed: HashMap<Vec<u8>, u32>,
    indexed_terms: HashMap<Vec<u8>, Terms>,
    all_terms: HashMap<Vec<u8>, BTreeSet<String>>,
}

/// Reads [`IndexSide`] from `generation`, walking every term of every
/// field once per segment that holds a sampled document.
fn index_side(
    dir: &std::path::Path,
    table: &str,
    generation: &Generation,
    sample_cells: &HashMap<Vec<u8>, Terms>,
) -> Result<IndexSide> {
    let searcher = generation.reader.searcher();
    let schema = &generation.schema;
    let mut indexed: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut indexed_terms: HashMap<Vec<u8>, Terms> = HashMap::new();
    let mut all_terms: HashMap<Vec<u8>, BTreeSet<String>> = HashMap::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let mut sample_docs: Vec<(DocId, Vec<u8>)> = Vec::new();
        for doc in segment.doc_ids_alive() {
            let key = key_of(&searcher, schema, tantivy::DocAddress::new(ord as u32, doc))?;
            if sample_cells.contains_key(&key) {
                sample_docs.push((doc, key.clone()));
            }
            *indexed.entry(key).or_default() += 1;
        }
        if sample_docs.is_empty() {
            continue;
        }
        let all_name = crate::doc::ALL_FIELD.to_owned();
        let fields = schema.fields.iter().zip(&schema.names).chain([(&schema.all, &all_name)]);
        for (&field, name) in fields {
            let inverted = segment.inverted_index(field).map_err(tantivy_err(table, "read terms"))?;
            let mut stream = inverted.terms().stream().map_err(|e| Error::Io {
                path: crate::generation::IndexDir::new(dir, table).generation_path(generation.number),
                source: e,
            })?;
            let mut positions = Vec::new();
            while stream.advance() {
                let term = String::from_utf8_lossy(stream.key()).into_owned();
                let mut postings = inverted
                    .read_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqsAndPositions)
                    .map_err(|e| Error::Io { path: name.into(), source: e })?;
                for (doc, key) in &sample_docs {
                    if postings.doc() > *doc {
                        continue;
                    }
                    if postings.seek(*doc) == *doc && postings.doc() != TERMINATED {
                        if field == schema.all {
                            all_terms.entry(key.clone()).or_default().insert(term.clone());
                        } else {
                            postings.positions(&mut positions);
                            indexed_terms
                                .entry(key.clone())
                                .or_default()
                                .insert((name.clone(), term.clone()), positions.clone());
                        }
                    }
                }
            }
        }
    }
    Ok(IndexSide { indexed, indexed_terms, all_terms })
}

fn first_difference(want: &Terms, got: &Terms) -> String {
    for (k, v) in want {
        match got.get(k) {
            None => return format!("{}:{} not indexed", k.0, k.1),
            Some(g) if g != v => return format!("{}:{} at {g:?}, cells say {v:?}", k.0, k.1),
            _ => {}
        }
    }
    match got.keys().find(|k| !want.contains_key(*k)) {
        Some(k) => format!("{}:{} indexed but not in the cells", k.0, k.1),
        None => "differs".into(),
    }
}
