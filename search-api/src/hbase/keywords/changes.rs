//! What a write of rows does to their keyword rows in HBase: one run per
//! keyword column it changes ([`changes_of`]), and the rows' records.
//!
//! A batch of an ingest is thousands of rows of hundreds of keyword cells
//! each, computed on the writing thread while HBase waits: cells are
//! grouped by interned (partition, field, term) in a hash map and each
//! column's versions sorted once (nested ordered maps of byte strings took
//! 19 of an ingest's 48 s over HBase).

use std::collections::{BTreeMap, HashMap, HashSet};

use rowsearch_store::{Analyzer, KeywordCellRef, PutCell, Row, TableSchema};

use super::block::{self, FAMILY, META_ROW, RECORDS_COLUMN, Record, positions_hash, row_key, term_prefix};
use crate::hbase::tables::{HbaseError, HbaseTables};
use crate::thrift::HbaseClient;

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

/// A record's cell: field index, term, hash of the positions.
type RecordedCell = (u8, String, u32);
/// A row's cells held in the keyword rows, by (partition, date).
type ByPartitionDate = BTreeMap<(Vec<u8>, u64), Vec<RecordedCell>>;
/// A range of partitions (`None`: open).
type OwnedRange = (Option<Vec<u8>>, Option<Vec<u8>>);

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

/// What a row's keyword cells were before a write.
#[derive(Debug, Clone, Copy)]
pub enum Before<'a> {
    /// None: a new row (or one without keyword cells).
    Nothing,
    /// Not known, taken as the row given (none: nothing), and the row's
    /// record left unwritten: a row without a record, old row nor
    /// partition read, in a table an earlier build wrote (its keyword rows
    /// may hold cells of it that build wrote; the change feed's entry for
    /// this write brings them right, [`super::follow`]); again in the same
    /// batch, the row the write before left.
    Unrecorded(Option<&'a Row>),
    /// The row as it was: its cells computed again.
    Row(&'a Row),
    /// Its record: the cells its runs were last written with (all a write
    /// by another client leaves to compare with); left as it is when the
    /// row's cells are the same now.
    Recorded(&'a Record),
    /// What the keyword rows hold of it, read from its partition's row (one
    /// per partition and date): a row without a record, or whose last write
    /// was cut off between its runs and its record ([`RecordState::Unsure`]);
    /// its record is written whatever it holds.
    Found(&'a [Record]),
}

impl<'a> Before<'a> {
    /// The records it gives (a recorded or a found row's; else none).
    fn records(self) -> &'a [Record] {
        match self {
            Before::Recorded(record) => std::slice::from_ref(record),
            Before::Found(records) => records,
            Before::Nothing | Before::Unrecorded(_) | Before::Row(_) => &[],
        }
    }
}

/// What a row's record says of what the keyword rows hold of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// No record: the row was never written through rowsearch nor followed
    /// (in a table made with records: nothing).
    Absent,
    /// What its runs were last written with.
    Kept(Record),
    /// A write began putting the row's runs and did not put its record
    /// (the writer was killed, or failed, between the two): the runs may
    /// hold either, so what they hold is read ([`Before::Found`]).
    Unsure,
}

/// One row a write changes: its key, what its keyword cells were, and the
/// row now (`None`: gone).
#[derive(Debug, Clone, Copy)]
pub struct RowWrite<'a> {
    /// The row's key.
    pub key: &'a [u8],
    /// Its keyword cells before.
    pub before: Before<'a>,
    /// The row now.
    pub after: Option<&'a Row>,
}

/// What a write puts into the companion: the runs, then (only once they
/// are in) the rows' records.
#[derive(Debug, Default)]
pub struct Puts {
    /// One run per keyword column changed.
    pub runs: Vec<RowCells>,
    /// The records of the rows whose cells are not what their record says.
    pub records: Vec<RowCells>,
}

impl Puts {
    /// The marks of a write begun, put before the runs: one in the
    /// record's row of each row whose record this write puts (none when it
    /// puts no runs).
    pub fn marks(&self) -> Vec<RowCells> {
        if self.runs.is_empty() {
            return Vec::new();
        }
        let mark =
            |(key, _): &RowCells| (key.clone(), vec![PutCell::new(FAMILY, block::WRITING_COLUMN, "1")]);
        self.records.iter().map(mark).collect()
    }
}

/// The keyword columns of each row (its cells before, and the row now)
/// made into one run per column, stamped `stamp`: the versions the row
/// has that it did not (or with other positions), and the versions it had
/// and has not, removed; nothing for a row whose keyword cells did not
/// change. With the records to put after the runs (each row's cells now).
///
/// # Errors
/// The store's errors computing cells (a key its typed row key cannot
/// decode).
pub fn changes_of(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[RowWrite<'_>],
    stamp: u64,
) -> rowsearch_store::Result<Puts> {
    let (mut partitions, mut terms) = (Interner::default(), Interner::default());
    let mut columns: HashMap<ColumnId, Vec<Change>> = HashMap::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut keys: Vec<&[u8]> = Vec::with_capacity(rows.len());
    let mut records: Vec<RowCells> = Vec::new();
    // An old row's versions: where, when -> hash of the positions.
    let mut before: HashMap<(ColumnId, u64), u32> = HashMap::new();
    for write in rows {
        let key = write.key;
        // The row's number: its key's place in `keys`, in the order written.
        let row = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        keys.push(key);
        before.clear();
        let mut column_of = |partition: &[u8], field: usize, term: &str| {
            (partitions.id(partition), u8::try_from(field).unwrap_or(u8::MAX), terms.id(term.as_bytes()))
        };
        match write.before {
            Before::Nothing | Before::Unrecorded(None) => {}
            Before::Row(old) | Before::Unrecorded(Some(old)) => {
                rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, old, &mut |cell| {
                    let column = column_of(cell.partition, cell.field_index, cell.term);
                    before.insert((column, cell.date_ms), block::positions_hash(cell.encoded_positions()));
                    Ok(())
                })?;
            }
            Before::Recorded(_) | Before::Found(_) => {
                for record in write.before.records() {
                    for (field, term, hash) in &record.cells {
                        let column = column_of(&record.partition, usize::from(*field), term);
                        before.insert((column, record.date_ms), *hash);
                    }
                }
            }
        }
        let mut now = Record::default();
        if let Some(new) = write.after {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, new, &mut |cell| {
                let column = column_of(cell.partition, cell.field_index, cell.term);
                let start = u32::try_from(buffer.len()).unwrap_or(u32::MAX);
                buffer.extend_from_slice(cell.encoded_positions());
                let range = (start, u32::try_from(buffer.len()).unwrap_or(u32::MAX));
                let hash = block::positions_hash(cell.encoded_positions());
                if now.cells.is_empty() {
                    now.partition = cell.partition.to_vec();
                    now.date_ms = cell.date_ms;
                }
                now.cells.push((column.1, cell.term.to_owned(), hash));
                if before.remove(&(column, cell.date_ms)) != Some(hash) {
                    let change = Change { date_ms: cell.date_ms, row, positions: Some(range) };
                    columns.entry(column).or_default().push(change);
                }
                Ok(())
            })?;
        }
        for &(column, date_ms) in before.keys() {
            columns.entry(column).or_default().push(Change { date_ms, row, positions: None });
        }
        let unknown = matches!(write.before, Before::Unrecorded(_));
        if !unknown && !matches!(write.before, Before::Recorded(r) if *r == now) {
            // (The same put clears the mark of a write begun.)
            let cells = vec![
                PutCell::new(FAMILY, block::RECORD_COLUMN, now.encode()),
                PutCell::new(FAMILY, block::WRITING_COLUMN, Vec::new()),
            ];
            records.push((block::record_key(key), cells));
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
    let mut runs: Vec<RowCells> =
        by_row.into_iter().map(|(p, cells)| (row_key(&partitions.names[p as usize]), cells)).collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    // Of a row written twice in the batch, the last record.
    records.reverse();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records.dedup_by(|later, earlier| later.0 == earlier.0);
    Ok(Puts { runs, records })
}

/// [`changes_of`] of `rows` cut into `ways` consecutive parts computed at
/// once, each part stamped after the one before (the stamps come from
/// `stamp`, strictly increasing): where two parts change one version, the
/// later part's run is the newer, as its rows were written later.
///
/// # Errors
/// As [`changes_of`].
fn changes_in_parallel(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[RowWrite<'_>],
    ways: usize,
    stamp: &(dyn Fn() -> u64 + Sync),
) -> rowsearch_store::Result<Puts> {
    let ways = ways.clamp(1, rows.len().max(1));
    if ways == 1 {
        return changes_of(table, schema, analyzer, rows, stamp());
    }
    let part = rows.len().div_ceil(ways);
    let stamps: Vec<u64> = (0..ways).map(|_| stamp()).collect();
    let parts: Vec<rowsearch_store::Result<Puts>> = std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .chunks(part)
            .zip(&stamps)
            .map(|(chunk, &at)| scope.spawn(move || changes_of(table, schema, analyzer, chunk, at)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut by_row: std::collections::BTreeMap<Vec<u8>, Vec<PutCell>> = std::collections::BTreeMap::new();
    // A row's record from the latest part that wrote it.
    let mut records: std::collections::BTreeMap<Vec<u8>, Vec<PutCell>> = std::collections::BTreeMap::new();
    for part in parts {
        let part = part?;
        for (row, cells) in part.runs {
            by_row.entry(row).or_default().extend(cells);
        }
        records.extend(part.records);
    }
    Ok(Puts { runs: by_row.into_iter().collect(), records: records.into_iter().collect() })
}

/// Whether the table's companion was made with every row's record (a row
/// without one has nothing in the keyword rows), and what the records of
/// the table's rows `keys` say; one get.
///
/// # Errors
/// `Client`; `Corrupted` for a record that is not one.
pub fn records(
    client: &mut HbaseClient,
    table: &str,
    keys: &[&[u8]],
) -> Result<(bool, Vec<RecordState>), HbaseError> {
    let mut wanted: Vec<Vec<u8>> = vec![META_ROW.to_vec()];
    wanted.extend(keys.iter().map(|k| block::record_key(k)));
    let wanted: Vec<&[u8]> = wanted.iter().map(Vec::as_slice).collect();
    let mut rows = client.get_rows(&block::companion(table), &wanted)?.into_iter();
    let meta = rows.next().flatten();
    let complete = meta.is_some_and(|m| m.cells.iter().any(|c| c.qualifier == RECORDS_COLUMN));
    let records = rows
        .map(|row| {
            let cells = row.map(|r| r.cells).unwrap_or_default();
            if cells.iter().any(|c| c.qualifier == block::WRITING_COLUMN && !c.value.is_empty()) {
                return Ok(RecordState::Unsure);
            }
            let Some(cell) = cells.into_iter().find(|c| c.qualifier == block::RECORD_COLUMN) else {
                return Ok(RecordState::Absent);
            };
            Record::decode(&cell.value)
                .map(RecordState::Kept)
                .ok_or_else(|| block::corrupted(table, "a row's record that is not one"))
        })
        .collect::<Result<_, _>>()?;
    Ok((complete, records))
}

/// Computes and puts the runs of `rows` (as [`changes_of`] says), each row's
/// cells before taken from its record when it has one (another client may
/// have written the row since rowsearch did, and its runs say what they
/// were written with, not the row read before this write); without one,
/// nothing in a table made with records, else (rows an earlier build
/// wrote) what its partition's row holds of it, read with `read`.
/// Computed on every core ([`changes_in_parallel`], the batch cut in as
/// many parts), then put over `ways` connections, then the records. The
/// whole batch at once, as each part writes its own run of every column
/// it changes: parts of 1,024 rows put while the next was computed wrote
/// 22% more cells and took longer (BENCHMARKS.md, "Search and ingest over
/// HBase").
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
    read: &mut ReadPartitions<'_>,
) -> Result<(), HbaseError> {
    let rows: Vec<(&[u8], Option<&Row>, Option<&Row>)> =
        rows.iter().filter_map(|&(old, new)| Some((new.or(old)?.key.as_slice(), old, new))).collect();
    let keys: Vec<&[u8]> = rows.iter().map(|(k, _, _)| *k).collect();
    let (complete, recorded) = records(&mut tables.client(), table, &keys)?;
    let missing = unrecorded(&rows, complete, &recorded);
    let found =
        if missing.is_empty() { HashMap::new() } else { found(table, schema, analyzer, &missing, read)? };
    let writes = own_writes(&rows, complete, &recorded, &found);
    put(tables, table, schema, analyzer, &writes, ways)
}

/// The rows of a write through rowsearch (key, old, new) whose cells
/// before must be read from their partition's row: those whose last write
/// was cut off, and those with an old row and no record in a table an
/// earlier build wrote (not `complete`); each key once, with the row it
/// will be.
pub(super) fn unrecorded<'r>(
    rows: &[(&'r [u8], Option<&'r Row>, Option<&'r Row>)],
    complete: bool,
    recorded: &[RecordState],
) -> Vec<(&'r [u8], Option<&'r Row>)> {
    let mut firsts = HashSet::new();
    rows.iter()
        .zip(recorded)
        .filter(|((k, old, _), r)| {
            let read = match r {
                RecordState::Unsure => true,
                RecordState::Absent => !complete && old.is_some(),
                RecordState::Kept(_) => false,
            };
            read && firsts.insert(*k)
        })
        .map(|((k, old, new), _)| (*k, new.or(*old)))
        .collect()
}

/// The changes of a write through rowsearch: each row's cells before are
/// its record's; without one (or when its last write was cut off), what
/// its partition's row held of it (`found`, read for [`unrecorded`] rows),
/// else nothing (the old row
/// says nothing of what the keyword rows hold: another client may have
/// written it, unfollowed yet), or [`Before::Unrecorded`] for a row
/// without an old row in a table that is not `complete` (an earlier build
/// may have written it before another client deleted it). A key twice in
/// the batch: the first's are the record's, the next ones' the row the
/// one before left.
pub(super) fn own_writes<'w>(
    rows: &[(&'w [u8], Option<&'w Row>, Option<&'w Row>)],
    complete: bool,
    recorded: &'w [RecordState],
    found: &'w HashMap<Vec<u8>, Vec<Record>>,
) -> Vec<RowWrite<'w>> {
    let mut seen = HashSet::with_capacity(rows.len());
    let mut unknown = HashSet::new();
    rows.iter()
        .zip(recorded)
        .map(|(&(key, old, new), record)| {
            let before = if unknown.contains(key) {
                Before::Unrecorded(old)
            } else if seen.insert(key) {
                // (A row without a record that was [`unrecorded`] and
                // not found has nothing in its partition.)
                match (record, found.get(key)) {
                    (RecordState::Kept(r), _) => Before::Recorded(r),
                    (_, Some(f)) => Before::Found(f),
                    (RecordState::Unsure, None) => Before::Found(&[]),
                    (RecordState::Absent, None) if complete || old.is_some() => Before::Nothing,
                    (RecordState::Absent, None) => {
                        unknown.insert(key);
                        Before::Unrecorded(None)
                    }
                }
            } else {
                old.map_or(Before::Nothing, Before::Row)
            };
            RowWrite { key, before, after: new }
        })
        .collect()
}

/// Computes `writes`' runs and records and puts them: first a mark in the
/// record's row of each row whose record changes (a write begun), then the
/// runs, then the records (each clearing its mark). A write cut off between
/// leaves the mark: the next write of the row reads what the runs hold
/// instead of trusting the record ([`RecordState::Unsure`]).
///
/// # Errors
/// `Schema` for cells the store cannot compute; `Client`.
pub fn put(
    tables: &HbaseTables,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    writes: &[RowWrite<'_>],
    ways: usize,
) -> Result<(), HbaseError> {
    let cores =
        if writes.len() >= 64 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { 1 };
    let puts = changes_in_parallel(table, schema, analyzer, writes, cores, &crate::hbase::clock::stamp)
        .map_err(|e| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() })?;
    let name = block::companion(table);
    for rows in [&puts.marks(), &puts.runs, &puts.records] {
        if !rows.is_empty() {
            tables.put_parallel(&name, rows, ways)?;
        }
    }
    Ok(())
}

/// Reads the keyword cells of the partitions in a range (`None`: open) to a
/// callback ([`super::for_each_cell_between`]).
pub(super) type ReadPartitions<'r> = dyn FnMut(
        (Option<&[u8]>, Option<&[u8]>),
        &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()>
    + 'r;

/// What the keyword rows hold of rows without a record: read from the
/// partition each row is in now, or from every partition when that is not
/// known (the row is gone or has no keyword cells, or the partition is a
/// column's, which another client may have changed).
pub(super) fn found(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(&[u8], Option<&Row>)],
    read: &mut ReadPartitions<'_>,
) -> Result<HashMap<Vec<u8>, Vec<Record>>, HbaseError> {
    let schema_error =
        |e: rowsearch_store::Error| HbaseError::Schema { table: table.to_owned(), reason: e.to_string() };
    let mut partitions: HashSet<Vec<u8>> = HashSet::new();
    // A partition taken from a column may have been another before the
    // write (a row moved between mailboxes): only a key's stays put.
    let partition = schema.search.as_ref().and_then(|s| s.partition.as_deref());
    let mut everywhere = partition.is_some_and(|p| p.contains(':'));
    for (_, row) in rows {
        let mut partition = None;
        if let Some(row) = row {
            rowsearch_store::for_each_keyword_cell_of(table, schema, analyzer, row, &mut |cell| {
                partition.get_or_insert_with(|| cell.partition.to_vec());
                Ok(())
            })
            .map_err(schema_error)?;
        }
        match partition {
            Some(p) => {
                partitions.insert(p);
            }
            None => everywhere = true,
        }
    }
    let wanted: HashSet<&[u8]> = rows.iter().map(|(k, _)| *k).collect();
    // key -> (partition, date) -> cells
    let mut held: HashMap<Vec<u8>, ByPartitionDate> = HashMap::new();
    let mut keep = |cell: &rowsearch_store::KeywordCellRef<'_>| {
        if wanted.contains(cell.key) {
            let field = u8::try_from(cell.field_index).unwrap_or(u8::MAX);
            held.entry(cell.key.to_vec())
                .or_default()
                .entry((cell.partition.to_vec(), cell.date_ms))
                .or_default()
                .push((field, cell.term.to_owned(), positions_hash(cell.encoded_positions())));
        }
        Ok(())
    };
    let ranges: Vec<OwnedRange> = if everywhere {
        vec![(None, None)]
    } else {
        partitions
            .into_iter()
            .map(|p| {
                let mut end = p.clone();
                end.push(0);
                (Some(p), Some(end))
            })
            .collect()
    };
    for (from, to) in &ranges {
        read((from.as_deref(), to.as_deref()), &mut keep).map_err(|e| {
            match e.into_callback::<HbaseError>() {
                Ok(e) => e,
                Err(e) => schema_error(e),
            }
        })?;
    }
    Ok(held
        .into_iter()
        .map(|(key, by)| {
            let records = by
                .into_iter()
                .map(|((partition, date_ms), cells)| Record { partition, date_ms, cells })
                .collect();
            (key, records)
        })
        .collect())
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
                let writes: Vec<RowWrite<'_>> = refs
                    .iter()
                    .map(|&(old, new)| RowWrite {
                        key: new.or(old).map(|r| r.key.as_slice()).unwrap_or_default(),
                        before: old.map_or(Before::Nothing, Before::Row),
                        after: new,
                    })
                    .collect();
                for (row, cells) in changes_in_parallel("t", &schema, &analyzer, &writes, ways, &next).unwrap().runs {
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
