//! What a write of rows does to their keyword rows in HBase: one run per
//! keyword column it changes ([`changes`]).
//!
//! A batch of an ingest is thousands of rows of hundreds of keyword cells
//! each, computed on the writing thread while HBase waits: cells are
//! grouped by interned (partition, field, term) in a hash map and each
//! column's versions sorted once (nested ordered maps of byte strings took
//! 19 of an ingest's 48 s over HBase).

use std::collections::HashMap;

use rowsearch_store::{Analyzer, PutCell, Row, TableSchema};

use super::block::{self, FAMILY, row_key, term_prefix};
use crate::hbase::tables::{HbaseError, HbaseTables};

/// Strings given numbers in the order met.
#[derive(Default)]
struct Interner {
    ids: HashMap<Vec<u8>, u32>,
    names: Vec<Vec<u8>>,
}

impl Interner {
    fn id(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.ids.insert(name.to_vec(), id);
        self.names.push(name.to_vec());
        id
    }
}

/// A companion row's key and the cells put into it.
type RowCells = (Vec<u8>, Vec<PutCell>);

/// A keyword column: partition, field, term (interned).
type ColumnId = (u32, u8, u32);

/// One version a write puts or removes.
struct Change {
    date_ms: u64,
    /// The row (index into the batch's keys), which is also the order of
    /// the writes: the later wins.
    row: u32,
    /// Range of its positions in the batch's buffer; `None`: removed.
    positions: Option<(u32, u32)>,
}

/// The keyword columns of each row `(old, new)` (either may be absent; in
/// the order written) made into one run per column, stamped `stamp`: the
/// versions the new row has that the old did not (or with other
/// positions), and the old row's versions the new one has not, removed.
/// Nothing for a row whose keyword cells did not change.
///
/// # Errors
/// The store's errors computing cells (a key its typed row key cannot
/// decode).
pub fn changes(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(Option<&Row>, Option<&Row>)],
    stamp: u64,
) -> rowsearch_store::Result<Vec<RowCells>> {
    let (mut partitions, mut terms) = (Interner::default(), Interner::default());
    let mut columns: HashMap<ColumnId, Vec<Change>> = HashMap::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut keys: Vec<&[u8]> = Vec::with_capacity(rows.len());
    // An old row's versions: where, when -> positions.
    let mut before: HashMap<(ColumnId, u64), (u32, u32)> = HashMap::new();
    for (old, new) in rows {
        let Some(key) = new.or(*old).map(|r| r.key.as_slice()) else { continue };
        // The row's number: its key's place in `keys`, in the order written.
        let row = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        keys.push(key);
        before.clear();
        let mut keep = |cell: &rowsearch_store::KeywordCellRef<'_>, buffer: &mut Vec<u8>| {
            let column = (
                partitions.id(cell.partition),
                u8::try_from(cell.field_index).unwrap_or(u8::MAX),
                terms.id(cell.term.as_bytes()),
            );
            let start = u32::try_from(buffer.len()).unwrap_or(u32::MAX);
            buffer.extend_from_slice(cell.encoded_positions());
            (column, (start, u32::try_from(buffer.len()).unwrap_or(u32::MAX)))
        };
        if let Some(old) = old {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, old, &mut |cell| {
                let (column, range) = keep(cell, &mut buffer);
                before.insert((column, cell.date_ms), range);
                Ok(())
            })?;
        }
        if let Some(new) = new {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, new, &mut |cell| {
                let (column, range) = keep(cell, &mut buffer);
                let bytes = |(a, b): (u32, u32)| &buffer[a as usize..b as usize];
                let same =
                    before.remove(&(column, cell.date_ms)).is_some_and(|old| bytes(old) == bytes(range));
                if !same {
                    let change = Change { date_ms: cell.date_ms, row, positions: Some(range) };
                    columns.entry(column).or_default().push(change);
                }
                Ok(())
            })?;
        }
        for &(column, date_ms) in before.keys() {
            columns.entry(column).or_default().push(Change { date_ms, row, positions: None });
        }
    }
    let tag = block::process_tag();
    let mut by_row: HashMap<u32, Vec<PutCell>> = HashMap::new();
    for ((partition, field, term), mut changes) in columns {
        // Newest first, then by key; of one version, the last write only.
        changes.sort_by(|a, b| {
            b.date_ms
                .cmp(&a.date_ms)
                .then_with(|| keys[a.row as usize].cmp(keys[b.row as usize]))
                .then(a.row.cmp(&b.row))
        });
        changes.dedup_by(|later, earlier| {
            let same =
                later.date_ms == earlier.date_ms && keys[later.row as usize] == keys[earlier.row as usize];
            if same {
                std::mem::swap(later, earlier);
            }
            same
        });
        let term = std::str::from_utf8(&terms.names[term as usize]).unwrap_or_default();
        let prefix = term_prefix(usize::from(field), term);
        let value = block::encode(changes.iter().map(|c| {
            let positions = c.positions.map(|(a, b)| &buffer[a as usize..b as usize]);
            (c.date_ms, keys[c.row as usize], positions)
        }));
        by_row.entry(partition).or_default().push(PutCell::new(
            FAMILY,
            block::run_qualifier(&prefix, stamp, tag),
            value,
        ));
    }
    let mut out: Vec<RowCells> =
        by_row.into_iter().map(|(p, cells)| (row_key(&partitions.names[p as usize]), cells)).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// [`changes`] of `rows` cut into `ways` consecutive parts computed at
/// once, each part stamped after the one before (the stamps come from
/// `stamp`, strictly increasing): where two parts change one version, the
/// later part's run is the newer, as its rows were written later.
///
/// # Errors
/// As [`changes`].
fn changes_in_parallel(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(Option<&Row>, Option<&Row>)],
    ways: usize,
    stamp: &(dyn Fn() -> u64 + Sync),
) -> rowsearch_store::Result<Vec<RowCells>> {
    let ways = ways.clamp(1, rows.len().max(1));
    if ways == 1 {
        return changes(table, schema, analyzer, rows, stamp());
    }
    let part = rows.len().div_ceil(ways);
    let stamps: Vec<u64> = (0..ways).map(|_| stamp()).collect();
    let parts: Vec<rowsearch_store::Result<Vec<RowCells>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .chunks(part)
            .zip(&stamps)
            .map(|(chunk, &at)| scope.spawn(move || changes(table, schema, analyzer, chunk, at)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut by_row: std::collections::BTreeMap<Vec<u8>, Vec<PutCell>> = std::collections::BTreeMap::new();
    for part in parts {
        for (row, cells) in part? {
            by_row.entry(row).or_default().extend(cells);
        }
    }
    Ok(by_row.into_iter().collect())
}

/// Computes and puts the runs of `rows` (as [`changes`] says): computed
/// on every core ([`changes_in_parallel`], the batch cut in as many
/// parts), then put over `ways` connections. The whole batch at once, as
/// each part writes its own run of every column it changes: parts of
/// 1,024 rows put while the next was computed wrote 22% more cells and
/// took longer (BENCHMARKS.md, "Search and ingest over HBase").
///
/// # Errors
/// `Schema` for cells the store cannot compute; `Client`.
pub fn write_runs(
    tables: &HbaseTables,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(Option<&Row>, Option<&Row>)],
    ways: usize,
) -> Result<(), HbaseError> {
    let cores =
        if rows.len() >= 64 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { 1 };
    let puts = changes_in_parallel(table, schema, analyzer, rows, cores, &crate::hbase::clock::stamp)
        .map_err(|e| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() })?;
    tables.put_parallel(&block::companion(table), &puts, ways)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;
    use rowsearch_store::{Cell, Row, TableSchema};

    use super::*;

    const WORDS: [&str; 5] = ["gas", "price", "enron", "power", "gas gas"];

    /// A keyword cell: companion row, term prefix, version tail, positions.
    type KeywordCell = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);
    /// A column's runs: (companion row, term prefix) -> values in order.
    type Columns<'v> = BTreeMap<(Vec<u8>, Vec<u8>), Vec<&'v [u8]>>;

    fn schema() -> TableSchema {
        serde_json::from_str(
            r#"{"families":[{"name":"m"}],
                "search":{"fields":[{"column":"m:text","name":"text","type":"text"},
                                    {"column":"m:subject","name":"subject","type":"text"}]}}"#,
        )
        .expect("a schema")
    }

    fn row(key: usize, text: usize, subject: usize) -> Row {
        let cell = |q: &str, v: &str| Cell {
            family: "m".into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: 0,
            value: v.as_bytes().to_vec(),
        };
        Row {
            key: format!("r{key}").into_bytes(),
            cells: vec![
                cell("subject", WORDS[subject]),
                cell("text", &format!("{} {}", WORDS[text], WORDS[subject])),
            ],
        }
    }

    /// The keyword cells of `rows` as the store computes them:
    /// (companion row, term prefix, version tail, positions).
    fn cells_of(rows: &BTreeMap<usize, Row>) -> BTreeSet<KeywordCell> {
        let (schema, analyzer) = (schema(), rowsearch_indexer::TextAnalyzer);
        let mut out = BTreeSet::new();
        for r in rows.values() {
            rowsearch_store::for_each_keyword_cell_of("t", &schema, &analyzer, r, &mut |c| {
                let tail = block::tail(c.date_ms, c.key);
                out.insert((
                    row_key(c.partition),
                    term_prefix(c.field_index, c.term),
                    tail,
                    c.encoded_positions().to_vec(),
                ));
                Ok(())
            })
            .expect("cells");
        }
        out
    }

    proptest! {
        /// The runs of successive writes (puts, rewrites, deletes, a key
        /// twice in a batch), merged as a reader merges them, are the
        /// keyword cells of the rows as they end.
        #[test]
        fn runs_of_writes_merge_to_the_rows_keyword_cells(
            batches in proptest::collection::vec(
                proptest::collection::vec((0usize..4, proptest::option::of((0usize..5, 0usize..5))), 1..4),
                1..6,
            ),
            ways in 1usize..3,
        ) {
            let (schema, analyzer) = (schema(), rowsearch_indexer::TextAnalyzer);
            let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
            // (companion row, qualifier) -> value: HBase's cells.
            let mut stored: BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>> = BTreeMap::new();
            let mut clock = 0u64;
            for batch in &batches {
                let mut pairs: Vec<(Option<Row>, Option<Row>)> = Vec::new();
                for &(key, write) in batch {
                    let old = rows.get(&key).cloned();
                    let new = write.map(|(t, s)| row(key, t, s));
                    match &new {
                        Some(r) => rows.insert(key, r.clone()),
                        None => rows.remove(&key),
                    };
                    pairs.push((old, new));
                }
                let refs: Vec<(Option<&Row>, Option<&Row>)> = pairs.iter().map(|(o, n)| (o.as_ref(), n.as_ref())).collect();
                let stamp = || {
                    clock += 1;
                    clock
                };
                let stamps = std::sync::Mutex::new(stamp);
                let next = || (stamps.lock().unwrap())();
                for (row, cells) in changes_in_parallel("t", &schema, &analyzer, &refs, ways, &next).unwrap() {
                    for c in cells {
                        prop_assert!(stored.insert((row.clone(), c.qualifier), c.value).is_none(), "two runs in one cell");
                    }
                }
            }
            // As a reader: each column's runs in qualifier order, merged.
            let mut got = BTreeSet::new();
            let mut columns: Columns<'_> = BTreeMap::new();
            for ((row, q), v) in &stored {
                let n = block::prefix_len(q).unwrap();
                columns.entry((row.clone(), q[..n].to_vec())).or_default().push(v);
            }
            for ((row, prefix), runs) in columns {
                for v in block::merge(runs).unwrap() {
                    got.insert((row.clone(), prefix.clone(), v.tail, v.positions.unwrap()));
                }
            }
            prop_assert_eq!(got, cells_of(&rows));
        }
    }
}
