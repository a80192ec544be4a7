//! Keyword rows following writes rowsearch did not make: another client's
//! put or delete, shipped into the change feed by HBase's replication (or
//! found by the tailer), leaves no old row to compare with. Each row's
//! record (what its runs were last written with, [`super::block::Record`])
//! is: the row as HBase has it now against its record gives the runs to
//! write, as a write through rowsearch does. Applied twice, the second
//! finds the record equal to the row and writes nothing.
//!
//! A row written before records were kept has none: what its partition's
//! keyword row holds of it is read instead (once: it has one after).

use std::collections::HashMap;

use rowsearch_store::{Analyzer, Row, TableSchema};

use super::block::Record;
use super::changes::{Before, ReadPartitions, RecordState, RowWrite, found, put, records};
use crate::hbase::tables::{HbaseError, HbaseTables};

/// Brings the keyword rows of `rows` (each key with the row as HBase has
/// it now, `None`: gone) to what the rows hold, reading partitions with
/// `read` for rows without a record.
///
/// # Errors
/// `Client`; `Corrupted` for a record or run that is not one; `Schema` for
/// cells the store cannot compute.
pub(super) fn follow(
    tables: &HbaseTables,
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(&[u8], Option<&Row>)],
    read: &mut ReadPartitions<'_>,
) -> Result<(), HbaseError> {
    let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| *k).collect();
    let (complete, recorded) = records(&mut tables.client(), table, &keys)?;
    let before = befores(table, schema, analyzer, rows, complete, recorded, read)?;
    let writes: Vec<RowWrite<'_>> = rows
        .iter()
        .zip(&before)
        .map(|(&(key, after), before)| RowWrite { key, before: before.as_before(), after })
        .collect();
    put(tables, table, schema, analyzer, &writes, 1)
}

/// What a followed row's keyword cells were before, owned.
#[derive(Debug)]
pub(super) enum Prior {
    /// Nothing.
    Nothing,
    /// Its record.
    Recorded(Record),
    /// What its partition's keyword row holds of it.
    Found(Vec<Record>),
}

impl Prior {
    pub(super) fn as_before(&self) -> Before<'_> {
        match self {
            Prior::Nothing => Before::Nothing,
            Prior::Recorded(r) => Before::Recorded(r),
            Prior::Found(f) => Before::Found(f),
        }
    }
}

/// What each of `rows` was written with before: its record; without one,
/// nothing in a table made with records (`complete`), else what its
/// partition's row holds of it, read with `read`, as for a row whose last
/// write was cut off ([`RecordState::Unsure`]).
///
/// # Errors
/// `Schema` for cells the store cannot compute; what `read` gives.
pub(super) fn befores(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    rows: &[(&[u8], Option<&Row>)],
    complete: bool,
    recorded: Vec<RecordState>,
    read: &mut ReadPartitions<'_>,
) -> Result<Vec<Prior>, HbaseError> {
    let unread = |r: &RecordState| match r {
        RecordState::Unsure => true,
        RecordState::Absent => !complete,
        RecordState::Kept(_) => false,
    };
    let missing: Vec<(&[u8], Option<&Row>)> =
        rows.iter().zip(&recorded).filter(|(_, r)| unread(r)).map(|(row, _)| *row).collect();
    let mut found =
        if missing.is_empty() { HashMap::new() } else { found(table, schema, analyzer, &missing, read)? };
    Ok(rows
        .iter()
        .zip(recorded)
        .map(|((key, _), record)| match record {
            RecordState::Kept(r) => Prior::Recorded(r),
            RecordState::Unsure => Prior::Found(found.remove(*key).unwrap_or_default()),
            RecordState::Absent => found.remove(*key).map_or(Prior::Nothing, Prior::Found),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;
    use rowsearch_store::{Cell, KeywordCellRef, Row, TableSchema};

    use super::super::block::{
        self, RECORD_COLUMN, ROW_PREFIX, Record, WRITING_COLUMN, record_key, split_qualifier, split_tail,
    };
    use super::super::changes::{Before, RecordState, RowWrite, changes_of, found, own_writes, unrecorded};
    use super::befores;

    const WORDS: [&str; 4] = ["gas", "price", "enron", "gas gas"];

    fn schema() -> TableSchema {
        serde_json::from_str(
            r#"{"families":[{"name":"m"}],
                "search":{"partition":"m:box",
                          "fields":[{"column":"m:text","name":"text","type":"text"},
                                    {"column":"m:subject","name":"subject","type":"text"}]}}"#,
        )
        .expect("a schema")
    }

    /// A row: its mailbox (`m:box`, so another write can move it), text
    /// and subject.
    fn row(key: usize, (mailbox, text, subject): (usize, usize, usize)) -> Row {
        let cell = |q: &str, v: &str| Cell {
            family: "m".into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: 0,
            value: v.as_bytes().to_vec(),
        };
        Row {
            key: format!("r{key}").into_bytes(),
            cells: vec![
                cell("box", ["a", "b"][mailbox]),
                cell("subject", WORDS[subject]),
                cell("text", &format!("{} {}", WORDS[text], WORDS[subject])),
            ],
        }
    }

    /// HBase's cells of the companion: (row, qualifier) -> value.
    type Stored = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;
    /// A column's runs: (companion row, term prefix) -> values, in order.
    type Columns<'v> = BTreeMap<(Vec<u8>, Vec<u8>), Vec<&'v [u8]>>;
    /// Keyword cells: (partition, term, row key, positions).
    type Cells = BTreeSet<(Vec<u8>, String, Vec<u8>, Vec<u32>)>;

    /// Every keyword cell the stored runs hold (as a reader merges them):
    /// (partition, field, term, row key, positions), in the partitions of
    /// `range`, to `f`.
    fn read(
        stored: &Stored,
        range: (Option<&[u8]>, Option<&[u8]>),
        f: &mut dyn FnMut(&KeywordCellRef<'_>) -> rowsearch_store::Result<()>,
    ) -> rowsearch_store::Result<()> {
        let fields = ["text", "subject"];
        let mut columns: Columns<'_> = BTreeMap::new();
        for ((row, q), v) in stored {
            let Some(partition) = row.strip_prefix(&[ROW_PREFIX]) else { continue };
            if range.0.is_some_and(|from| partition < from) || range.1.is_some_and(|to| partition >= to) {
                continue;
            }
            let n = block::prefix_len(q).expect("a keyword column");
            columns.entry((row.clone(), q[..n].to_vec())).or_default().push(v);
        }
        for ((row, prefix), runs) in columns {
            let (field, term, _) = split_qualifier(&prefix).expect("a prefix");
            for v in block::merge(runs).expect("runs") {
                let (date_ms, key) = split_tail(&v.tail).expect("a tail");
                let positions = v.positions.as_deref().unwrap_or_default();
                let cell = KeywordCellRef::from_parts(
                    &row[1..],
                    field,
                    fields[field],
                    term,
                    date_ms,
                    key,
                    positions,
                )
                .expect("positions");
                f(&cell)?;
            }
        }
        Ok(())
    }

    /// Every keyword cell the stored runs hold.
    fn held(stored: &Stored) -> Cells {
        let mut out = BTreeSet::new();
        read(stored, (None, None), &mut |c| {
            out.insert((c.partition.to_vec(), c.term.to_owned(), c.key.to_vec(), c.positions().collect()));
            Ok(())
        })
        .expect("read");
        out
    }

    /// The keyword cells of the rows as they are.
    fn wanted(rows: &BTreeMap<usize, Row>) -> Cells {
        let (schema, analyzer) = (schema(), rowsearch_indexer::TextAnalyzer);
        let mut out = BTreeSet::new();
        for r in rows.values() {
            rowsearch_store::for_each_keyword_cell_of("t", &schema, &analyzer, r, &mut |c| {
                out.insert((
                    c.partition.to_vec(),
                    c.term.to_owned(),
                    c.key.to_vec(),
                    c.positions().collect(),
                ));
                Ok(())
            })
            .expect("cells");
        }
        out
    }

    fn recorded(stored: &Stored, key: &[u8]) -> RecordState {
        if stored.get(&(record_key(key), WRITING_COLUMN.to_vec())).is_some_and(|v| !v.is_empty()) {
            return RecordState::Unsure;
        }
        match stored.get(&(record_key(key), RECORD_COLUMN.to_vec())) {
            Some(value) => RecordState::Kept(Record::decode(value).expect("a record")),
            None => RecordState::Absent,
        }
    }

    /// Puts runs (each in a cell of its own) and then records, as HBase
    /// would; `cut`: the writer killed after the runs, before the records.
    fn store(stored: &mut Stored, puts: super::super::changes::Puts, cut: bool) -> usize {
        let mut cells = 0;
        let records = if cut { Vec::new() } else { puts.records.clone() };
        for (row, put) in puts.marks().into_iter().chain(puts.runs).chain(records) {
            for c in put {
                let fresh = stored.insert((row.clone(), c.qualifier.clone()), c.value).is_none();
                let record = c.qualifier == RECORD_COLUMN || c.qualifier == WRITING_COLUMN;
                assert!(fresh || record, "two runs in one cell");
                cells += 1;
            }
        }
        cells
    }

    /// A row's mailbox, text and subject.
    type Content = (usize, usize, usize);

    #[derive(Debug, Clone)]
    enum Step {
        /// rowsearch writes a batch (a key twice allowed): its runs
        /// compared with each row's record, else the row it read; `true`:
        /// killed (-9) between putting the runs and the records.
        Own(Vec<(usize, Option<Content>)>, bool),
        /// Another client writes a row: only HBase's row changes.
        Other(usize, Option<Content>),
        /// The feed's entries so far are followed.
        Follow,
        /// They are followed by a follower killed (-9) between putting
        /// the runs and the records; they stay in the feed.
        Cut,
    }

    fn write() -> impl Strategy<Value = Option<(usize, usize, usize)>> {
        proptest::option::weighted(0.8, (0usize..2, 0usize..4, 0usize..4))
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (proptest::collection::vec((0usize..4, write()), 1..4), proptest::bool::weighted(0.2))
                .prop_map(|(batch, cut)| Step::Own(batch, cut)),
            (0usize..4, write()).prop_map(|(k, w)| Step::Other(k, w)),
            Just(Step::Follow),
            Just(Step::Cut),
        ]
    }

    proptest! {
        /// rowsearch's writes and other clients' (moves between mailboxes
        /// and deletes included), followed from the feed in any order, end
        /// with the keyword rows holding exactly the rows' keyword cells;
        /// following the same entries again writes nothing. A row written
        /// before records were kept (no record) is found in its partition.
        #[test]
        fn others_writes_followed_leave_the_keyword_rows_exact(
            steps in proptest::collection::vec(step(), 1..12),
            legacy in 0usize..4,
        ) {
            let (schema, analyzer) = (schema(), rowsearch_indexer::TextAnalyzer);
            let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
            let mut stored = Stored::new();
            let mut clock = 0u64;
            let mut pending: BTreeSet<usize> = BTreeSet::new();
            // The first `legacy` steps, when they are rowsearch's writes, are
            // an earlier build's (no records), before this build runs.
            let mut earlier = legacy;
            // A table an earlier build wrote has no marker of records.
            let complete = legacy == 0;
            let follow = |stored: &mut Stored, rows: &BTreeMap<usize, Row>, keys: &BTreeSet<usize>, at: u64, cut: bool| {
                let names: Vec<Vec<u8>> = keys.iter().map(|k| format!("r{k}").into_bytes()).collect();
                let now: Vec<(&[u8], Option<&Row>)> =
                    keys.iter().zip(&names).map(|(k, n)| (n.as_slice(), rows.get(k))).collect();
                let records = names.iter().map(|n| recorded(stored, n)).collect();
                let snapshot = stored.clone();
                let before = befores("t", &schema, &analyzer, &now, complete, records, &mut |range, f| read(&snapshot, range, f))
                    .expect("befores");
                let writes: Vec<RowWrite<'_>> = now
                    .iter()
                    .zip(&before)
                    .map(|(&(key, after), b)| RowWrite { key, before: b.as_before(), after })
                    .collect();
                let puts = changes_of("t", &schema, &analyzer, &writes, at).expect("changes");
                store(stored, puts, cut)
            };
            for step in &steps {
                clock += 1;
                let legacy = matches!(step, Step::Own(..)) && earlier > 0;
                earlier = if legacy { earlier - 1 } else { 0 };
                match step {
                    Step::Own(batch, cut) => {
                        let mut pairs = Vec::new();
                        for &(key, w) in batch {
                            let old = rows.get(&key).cloned();
                            let new = w.map(|w| row(key, w));
                            match &new {
                                Some(r) => rows.insert(key, r.clone()),
                                None => rows.remove(&key),
                            };
                            pairs.push((key, old, new));
                            pending.insert(key);
                        }
                        let names: Vec<Vec<u8>> = pairs.iter().map(|(k, _, _)| format!("r{k}").into_bytes()).collect();
                        let triples: Vec<(&[u8], Option<&Row>, Option<&Row>)> = pairs
                            .iter()
                            .zip(&names)
                            .map(|((_, old, new), name)| (name.as_slice(), old.as_ref(), new.as_ref()))
                            .collect();
                        // (an earlier build reads no records)
                        let records: Vec<RecordState> = names
                            .iter()
                            .map(|n| if legacy { RecordState::Absent } else { recorded(&stored, n) })
                            .collect();
                        let missing = unrecorded(&triples, complete, &records);
                        let snapshot = stored.clone();
                        let found = if legacy || missing.is_empty() {
                            std::collections::HashMap::new()
                        } else {
                            found("t", &schema, &analyzer, &missing, &mut |range, f| read(&snapshot, range, f))
                                .expect("found")
                        };
                        let writes = if legacy {
                            triples
                                .iter()
                                .map(|&(key, old, new)| RowWrite { key, before: old.map_or(Before::Nothing, Before::Row), after: new })
                                .collect()
                        } else {
                            own_writes(&triples, complete, &records, &found)
                        };
                        let mut puts = changes_of("t", &schema, &analyzer, &writes, clock).expect("changes");
                        if legacy {
                            puts.records.clear(); // an earlier build: no records
                        }
                        store(&mut stored, puts, *cut);
                    }
                    Step::Other(key, w) => {
                        match w.map(|w| row(*key, w)) {
                            Some(r) => rows.insert(*key, r),
                            None => rows.remove(key),
                        };
                        pending.insert(*key);
                    }
                    Step::Follow => {
                        follow(&mut stored, &rows, &pending, clock, false);
                        pending.clear();
                    }
                    Step::Cut => {
                        follow(&mut stored, &rows, &pending, clock, true);
                    }
                }
            }
            clock += 1;
            follow(&mut stored, &rows, &pending, clock, false);
            prop_assert_eq!(held(&stored), wanted(&rows));
            // Again: nothing to write.
            let all: BTreeSet<usize> = (0..4).collect();
            clock += 1;
            follow(&mut stored, &rows, &all, clock, false);
            clock += 1;
            prop_assert_eq!(follow(&mut stored, &rows, &all, clock, false), 0, "a second follow wrote cells");
            prop_assert_eq!(held(&stored), wanted(&rows));
        }
    }
}
