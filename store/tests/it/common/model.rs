//! An in-memory reference model of the store with HBase's semantics: a
//! `BTreeMap` keyed (row, family, qualifier, Reverse(timestamp)) per table,
//! which iterates in exactly HBase's cell order. Short and obviously correct
//! rather than fast.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};

use rowsearch_store::{
    Batch, Cell, Column, Delete, Mutation, ReadOptions, Row, Scan, ScanCursor, Store, TableSchema,
};

type CellMap = BTreeMap<(Vec<u8>, String, Vec<u8>, Reverse<u64>), Vec<u8>>;

#[derive(Debug, Default, Clone)]
pub struct Model {
    pub tables: BTreeMap<String, (TableSchema, CellMap)>,
    pub feed: Vec<(u64, String, Vec<u8>)>,
    pub next_seq: u64,
}

impl Model {
    pub fn new() -> Model {
        Model { next_seq: 1, ..Model::default() }
    }

    pub fn create_table(&mut self, name: &str, schema: TableSchema) {
        self.tables.entry(name.to_owned()).or_insert((schema, CellMap::new()));
    }

    fn live(schema: &TableSchema, family: &str, ts: u64, now: u64) -> bool {
        match schema.family(family).and_then(|f| f.ttl_seconds) {
            Some(ttl) => now < ts.saturating_add(ttl * 1000),
            None => true,
        }
    }

    pub fn apply(&mut self, batch: &Batch, now: u64) {
        let mut seen = HashSet::new();
        let mut touched = Vec::new();
        for m in &batch.mutations {
            let (schema, cells) = self.tables.get_mut(m.table()).expect("model: table exists");
            match m {
                Mutation::Put { row, cells: puts, .. } => {
                    for c in puts {
                        let ts = c.timestamp.unwrap_or(now);
                        cells.insert(
                            (row.clone(), c.family.clone(), c.qualifier.clone(), Reverse(ts)),
                            c.value.clone(),
                        );
                        // Purge: keep the newest `max_versions` live versions.
                        let max = schema.family(&c.family).expect("model: family").max_versions;
                        let versions: Vec<u64> = cells
                            .keys()
                            .filter(|(r, f, q, _)| r == row && *f == c.family && *q == c.qualifier)
                            .map(|k| k.3.0)
                            .collect();
                        let mut kept = 0;
                        for v in versions {
                            if kept < max && Self::live(schema, &c.family, v, now) {
                                kept += 1;
                            } else {
                                cells.remove(&(
                                    row.clone(),
                                    c.family.clone(),
                                    c.qualifier.clone(),
                                    Reverse(v),
                                ));
                            }
                        }
                    }
                }
                Mutation::Delete { row, what, .. } => {
                    cells.retain(|(r, f, q, Reverse(ts)), _| {
                        if r != row {
                            return true;
                        }
                        let doomed = match what {
                            Delete::Row { up_to } => up_to.is_none_or(|u| *ts <= u),
                            Delete::Family { family, up_to } => f == family && up_to.is_none_or(|u| *ts <= u),
                            Delete::Column { family, qualifier, up_to } => {
                                f == family && q == qualifier && up_to.is_none_or(|u| *ts <= u)
                            }
                            Delete::Version { family, qualifier, timestamp } => {
                                f == family && q == qualifier && ts == timestamp
                            }
                        };
                        !doomed
                    });
                }
            }
            if seen.insert((m.table().to_owned(), m.row().to_vec())) {
                touched.push((m.table().to_owned(), m.row().to_vec()));
            }
        }
        self.append_feed(touched);
    }

    fn append_feed(&mut self, touched: Vec<(String, Vec<u8>)>) {
        for (t, r) in touched {
            self.feed.push((self.next_seq, t, r));
            self.next_seq += 1;
        }
    }

    pub fn compact(&mut self, now: u64) -> u64 {
        let mut purged = 0;
        let mut seen = HashSet::new();
        let mut touched = Vec::new();
        for (name, (schema, cells)) in &mut self.tables {
            let mut families: Vec<&str> =
                schema.families.iter().filter(|f| f.ttl_seconds.is_some()).map(|f| f.name.as_str()).collect();
            families.sort();
            for fam in families {
                let dead: Vec<_> = cells
                    .keys()
                    .filter(|(_, f, _, Reverse(ts))| f == fam && !Self::live(schema, fam, *ts, now))
                    .cloned()
                    .collect();
                for k in dead {
                    if seen.insert(k.0.clone()) {
                        touched.push((name.clone(), k.0.clone()));
                    }
                    cells.remove(&k);
                    purged += 1;
                }
            }
            seen.clear();
        }
        self.append_feed(touched);
        purged
    }

    fn row_cells(
        schema: &TableSchema,
        cells: &CellMap,
        row: &[u8],
        read: &ReadOptions,
        keys_only: bool,
        now: u64,
    ) -> Vec<Cell> {
        let selected = |f: &str, q: &[u8]| {
            read.columns.is_empty()
                || read.columns.iter().any(|c| match c {
                    Column::Family(cf) => cf == f,
                    Column::Qualifier(cf, cq) => cf == f && cq == q,
                })
        };
        let mut out: Vec<Cell> = Vec::new();
        for ((r, f, q, Reverse(ts)), v) in
            cells.range((row.to_vec(), String::new(), Vec::new(), Reverse(u64::MAX))..)
        {
            if r != row {
                break;
            }
            if !selected(f, q)
                || *ts < read.min_ts
                || read.max_ts.is_some_and(|m| *ts >= m)
                || !Self::live(schema, f, *ts, now)
            {
                continue;
            }
            let n_same = out.iter().filter(|c| *c.family == **f && c.qualifier == *q).count();
            if (n_same as u64) < u64::from(read.versions) {
                out.push(Cell {
                    family: f.as_str().into(),
                    qualifier: q.clone(),
                    timestamp: *ts,
                    value: if keys_only { vec![] } else { v.clone() },
                });
            }
        }
        out
    }

    pub fn get(&self, table: &str, row: &[u8], read: &ReadOptions, now: u64) -> Option<Row> {
        let (schema, cells) = self.tables.get(table)?;
        let cells = Self::row_cells(schema, cells, row, read, false, now);
        (!cells.is_empty()).then(|| Row { key: row.to_vec(), cells })
    }

    /// Every row the scan selects, in order, before offset and limit.
    pub fn scan_all(&self, table: &str, scan: &Scan, now: u64) -> Vec<Row> {
        let Some((schema, cells)) = self.tables.get(table) else { return vec![] };
        let mut keys: Vec<Vec<u8>> = cells.keys().map(|k| k.0.clone()).collect();
        keys.dedup();
        if scan.reverse {
            keys.reverse();
        }
        keys.into_iter()
            .filter(|r| {
                let prefix_ok = scan.prefix.as_ref().is_none_or(|p| r.starts_with(p));
                let (start_ok, stop_ok, cursor_ok) = if scan.reverse {
                    (
                        scan.start.as_ref().is_none_or(|s| r <= s),
                        scan.stop.as_ref().is_none_or(|s| r > s),
                        scan.cursor.as_ref().is_none_or(|c| *r < c.last_key),
                    )
                } else {
                    (
                        scan.start.as_ref().is_none_or(|s| r >= s),
                        scan.stop.as_ref().is_none_or(|s| r < s),
                        scan.cursor.as_ref().is_none_or(|c| *r > c.last_key),
                    )
                };
                prefix_ok && start_ok && stop_ok && cursor_ok
            })
            .filter_map(|r| {
                let cells = Self::row_cells(schema, cells, &r, &scan.read, scan.keys_only, now);
                (!cells.is_empty()).then_some(Row { key: r, cells })
            })
            .collect()
    }

    /// The page a scan returns: offset and limit applied.
    pub fn scan(&self, table: &str, scan: &Scan, now: u64) -> Vec<Row> {
        let rows = self.scan_all(table, scan, now).into_iter().skip(scan.offset);
        match scan.limit {
            Some(l) => rows.take(l).collect(),
            None => rows.collect(),
        }
    }
}

/// Walks a scan in pages of the given sizes (cycled), resuming each page
/// from the previous page's cursor after a round trip through its token.
pub fn walk(store: &Store, table: &str, scan: &Scan, pages: &[usize]) -> Vec<Row> {
    let mut got = Vec::new();
    let mut cursor: Option<ScanCursor> = None;
    let mut sizes = pages.iter().cycle();
    loop {
        let mut page_scan = scan.clone();
        page_scan.limit = sizes.next().copied();
        if cursor.is_some() {
            page_scan.offset = 0;
        }
        page_scan.cursor = cursor.take();
        let page = store.scan(table, &page_scan).unwrap();
        got.extend(page.rows);
        match page.next_cursor {
            Some(c) => cursor = Some(ScanCursor::from_token(&c.to_token()).unwrap()),
            None => return got,
        }
    }
}

impl Model {
    /// Every match of an index lookup, in index order (values, then row),
    /// ignoring limit and cursor: rows whose newest version of every indexed
    /// column is live, filtered by the query.
    pub fn index_lookup(
        &self,
        table: &str,
        index: &str,
        query: &rowsearch_store::IndexQuery,
        now: u64,
    ) -> Vec<(Vec<Vec<u8>>, Vec<u8>)> {
        let (schema, cells) = &self.tables[table];
        let columns: Vec<(String, Vec<u8>)> = schema
            .indexes
            .iter()
            .find(|i| i.name == index)
            .expect("model: index exists")
            .columns
            .iter()
            .map(|c| match Column::parse(&rowsearch_store::binstr::decode(c).unwrap()) {
                Column::Qualifier(f, q) => (f, q),
                Column::Family(_) => unreachable!(),
            })
            .collect();
        let mut rows: Vec<Vec<u8>> = cells.keys().map(|k| k.0.clone()).collect();
        rows.dedup();
        let mut out = Vec::new();
        'rows: for row in rows {
            let mut values = Vec::new();
            for (f, q) in &columns {
                // The newest version of the column (the first in cell order).
                let newest = cells
                    .range((row.clone(), f.clone(), q.clone(), Reverse(u64::MAX))..)
                    .next()
                    .filter(|((r, cf, cq, _), _)| *r == row && cf == f && cq == q);
                match newest {
                    Some(((_, _, _, Reverse(ts)), v)) if Self::live(schema, f, *ts, now) => {
                        values.push(v.clone())
                    }
                    _ => continue 'rows,
                }
            }
            let k = query.eq.len();
            if values[..k.min(values.len())] != query.eq[..k.min(values.len())] || k > values.len() {
                continue;
            }
            if let Some(next) = values.get(k)
                && (query.prefix.as_ref().is_some_and(|p| !next.starts_with(p))
                    || query.start.as_ref().is_some_and(|s| next < s)
                    || query.stop.as_ref().is_some_and(|s| next >= s))
            {
                continue;
            }
            out.push((values, row));
        }
        out.sort();
        out
    }
}
