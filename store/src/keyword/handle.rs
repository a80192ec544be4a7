//! The open keyword rows of a table, and how a row's values become its
//! keyword cells.

use std::borrow::Cow;
use std::sync::Arc;

use hashbrown::HashTable;
use heed::RoTxn;
use xxhash_rust::xxh3::xxh3_64;

use super::codec::{partition_start, push_cell_key, push_varint};
use crate::cell::PutCell;
use crate::db::BytesDb;
use crate::db::family::{FamilyHandle, newest_put, newest_stored};
use crate::error::Result;
use crate::key::rowkey::{KeyValue, RowKeySchema};
use crate::schema::{Analyzer, SearchSchema, TableSchema, parse_column};

/// Where a row's partition value comes from.
#[derive(Debug)]
pub(crate) enum PartitionSource {
    /// One partition for the table.
    Whole,
    /// Field `n` of the typed row key.
    KeyField(usize),
    /// Column number `n` of [`SearchHandle::columns`].
    Column(usize),
}

/// The open keyword rows of a table.
#[derive(Debug)]
pub(crate) struct SearchHandle {
    pub schema: SearchSchema,
    /// The table's typed row key, for a partition that is one of its fields.
    pub row_key: Option<RowKeySchema>,
    pub db_name: String,
    pub db: BytesDb,
    /// The pending runs (`runs`), and their database's name.
    pub pending: BytesDb,
    pub pending_name: String,
    /// The row numbers the blocks hold (`rows`), and their database's name.
    pub rows: BytesDb,
    pub rows_name: String,
    /// Row keys by number, as lookups read them.
    pub names: super::rows::NameCache,
    /// Every column read: the fields in order, then the partition column
    /// and the date column when they are columns.
    pub columns: Vec<(Arc<FamilyHandle>, Vec<u8>)>,
    pub partition: PartitionSource,
    /// Index in `columns` of the date column.
    pub date: Option<usize>,
}

/// A row's keyword cells in key order, keys and values in one buffer (a
/// mail has hundreds of cells: one allocation instead of two each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeywordCells {
    bytes: Vec<u8>,
    /// Per cell, where its key ends and where its value ends in `bytes`;
    /// a cell starts where the one before it ends.
    ends: Vec<(usize, usize)>,
    /// The length of every cell key's version tail (one row: one tail).
    tail_len: usize,
}

impl KeywordCells {
    /// How many cells.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Cell `i`: its key and its value.
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(key_end, value_end) = self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        Some((&self.bytes[start..key_end], &self.bytes[key_end..value_end]))
    }

    /// The cells in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Cell `i` with its key split: the column's term prefix, the version
    /// tail, the value.
    pub fn split(&self, i: usize) -> Option<(&[u8], &[u8], &[u8])> {
        let (key, value) = self.get(i)?;
        let (prefix, tail) = key.split_at_checked(key.len().checked_sub(self.tail_len)?)?;
        Some((prefix, tail, value))
    }
}

/// A row's keyword cells in two parts, each sorted, no key in both: the
/// cells computed from its values, and perhaps a few computed apart (a
/// thread's field, known only in the write transaction). Read in key
/// order as one list, never copied into one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellParts<'a> {
    main: &'a KeywordCells,
    more: Option<&'a KeywordCells>,
}

impl<'a> From<&'a KeywordCells> for CellParts<'a> {
    fn from(main: &'a KeywordCells) -> Self {
        CellParts { main, more: None }
    }
}

impl<'a> CellParts<'a> {
    /// `main`'s cells and `more`'s.
    pub fn new(main: &'a KeywordCells, more: Option<&'a KeywordCells>) -> Self {
        CellParts { main, more }
    }

    /// How many cells.
    pub fn len(&self) -> usize {
        self.main.len() + self.more.map_or(0, KeywordCells::len)
    }

    /// The cells in key order, each split as [`KeywordCells::split`] does.
    pub fn splits(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8], &'a [u8])> + use<'a> {
        let part = |cells: &'a KeywordCells| (0..cells.len()).filter_map(move |i| cells.split(i));
        let (mut a, mut b) =
            (part(self.main).peekable(), self.more.map(part).into_iter().flatten().peekable());
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            // Keys compare as their (prefix, tail) pairs: a term prefix ends
            // where no other begins.
            (Some(x), Some(y)) if (y.0, y.1) < (x.0, x.1) => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        })
    }
}

impl SearchHandle {
    pub fn open(
        schema: &SearchSchema,
        table: &TableSchema,
        families: &[Arc<FamilyHandle>],
        (db_name, db): (String, BytesDb),
        (rows_name, rows): (String, BytesDb),
        (pending_name, pending): (String, BytesDb),
    ) -> std::result::Result<SearchHandle, String> {
        let (columns, partition, date) = resolve_columns(schema, table, |what, column| {
            let (family, qualifier) = parse_column(what, column)?;
            let handle = families
                .iter()
                .find(|f| *f.name == *family)
                .ok_or_else(|| format!("search: {what} {column:?}: unknown family {family:?}"))?;
            Ok((handle.clone(), qualifier))
        })?;
        Ok(SearchHandle {
            schema: schema.clone(),
            row_key: table.row_key.clone(),
            db_name,
            db,
            pending,
            pending_name,
            rows,
            rows_name,
            names: super::rows::NameCache::default(),
            columns,
            partition,
            date,
        })
    }

    /// What turns a row's values into keyword cells.
    fn shape(&self) -> Shape<'_> {
        Shape {
            schema: &self.schema,
            row_key: self.row_key.as_ref(),
            partition: &self.partition,
            date: self.date,
        }
    }

    /// Whether `family` holds a column these keyword rows read.
    pub fn reads(&self, family: &Arc<FamilyHandle>) -> bool {
        self.columns.iter().any(|(f, _)| Arc::ptr_eq(f, family))
    }

    /// The newest value of each column of `stored` (a stored key) in `txn`.
    pub fn values<'t>(&self, txn: &'t RoTxn<'_>, stored: &[u8]) -> Result<Vec<Option<Cow<'t, [u8]>>>> {
        self.columns
            .iter()
            .map(|(family, qualifier)| Ok(newest_stored(txn, family, stored, qualifier)?.map(|(_, v)| v)))
            .collect()
    }

    /// The newest value of each column among `cells` put into a new row
    /// (the last of equal timestamps wins, as the last write of a key does).
    pub fn values_from_puts<'c>(&self, cells: &[&'c PutCell], now_ms: u64) -> Vec<Option<&'c [u8]>> {
        self.columns
            .iter()
            .map(|(family, qualifier)| newest_put(cells, family, qualifier, now_ms).map(|(_, v)| v))
            .collect()
    }

    /// The partition of row `row` when its key alone tells it (a table
    /// partitioned by a field of its key, or not partitioned); `None` when
    /// it takes the row's cells (a partition column).
    pub fn key_partition(&self, row: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.partition {
            PartitionSource::Column(_) => Ok(None),
            _ => self.partition_of(row, &[]).map(Some),
        }
    }

    /// The partition of a row.
    pub fn partition_of(&self, row: &[u8], values: &[Option<&[u8]>]) -> Result<Vec<u8>> {
        self.shape().partition_of(row, values)
    }

    /// The date of a row whose columns hold `values` (the date column's,
    /// as the analyzer reads it).
    pub fn date_ms(&self, analyzer: &dyn Analyzer, values: &[Option<&[u8]>]) -> Option<u64> {
        self.date.and_then(|n| values.get(n).copied().flatten()).and_then(|v| analyzer.date_ms(v))
    }

    /// The search field reading `family:qualifier`, if any.
    pub fn field_of(&self, family: &str, qualifier: &[u8]) -> Option<usize> {
        self.columns[..self.schema.fields.len()]
            .iter()
            .position(|(f, q)| *f.name == *family && q == qualifier)
    }

    /// Every keyword cell of a row whose columns hold `values`, sorted by key.
    pub fn entries(
        &self,
        analyzer: &dyn Analyzer,
        row: &[u8],
        values: &[Option<&[u8]>],
    ) -> Result<KeywordCells> {
        self.shape().entries(analyzer, row, values)
    }

    /// The keyword cells field `field` holding `value` gives a row of
    /// `partition` dated `date` (ms; 0 without one): [`Self::entries`] of
    /// that field alone, the row's other columns not read.
    pub fn field_entries(
        &self,
        analyzer: &dyn Analyzer,
        row: &[u8],
        (field, value): (usize, &[u8]),
        partition: &[u8],
        date: u64,
    ) -> KeywordCells {
        let mut values = vec![None; self.schema.fields.len()];
        if let Some(v) = values.get_mut(field) {
            *v = Some(value);
        }
        self.shape().entries_at(analyzer, row, &values, partition, date)
    }
}

/// A partition value as bytes: strings and bytes as they are, integers in
/// decimal.
fn partition_bytes(value: KeyValue) -> Vec<u8> {
    match value {
        KeyValue::String(s) => s.into_bytes(),
        KeyValue::Bytes(b) => b,
        KeyValue::U8(n) => n.to_string().into_bytes(),
        KeyValue::U16(n) => n.to_string().into_bytes(),
        KeyValue::U32(n) => n.to_string().into_bytes(),
        KeyValue::U64(n) => n.to_string().into_bytes(),
        KeyValue::I32(n) => n.to_string().into_bytes(),
        KeyValue::I64(n) => n.to_string().into_bytes(),
    }
}

/// The columns a search section reads, resolved by `resolve` (to a family
/// handle, or to names): the fields in order, then the partition column
/// and the date column when they are columns; where the partition comes
/// from; the date column's place.
fn resolve_columns<T>(
    schema: &SearchSchema,
    table: &TableSchema,
    mut resolve: impl FnMut(&str, &str) -> std::result::Result<T, String>,
) -> std::result::Result<(Vec<T>, PartitionSource, Option<usize>), String> {
    let mut columns = Vec::with_capacity(schema.fields.len() + 2);
    for field in &schema.fields {
        columns.push(resolve("field column", &field.column)?);
    }
    let partition = match &schema.partition {
        None => PartitionSource::Whole,
        Some(p) => match table.row_key.as_ref().and_then(|rk| rk.fields.iter().position(|f| f.name == *p)) {
            Some(n) => PartitionSource::KeyField(n),
            None => {
                columns.push(resolve("partition", p)?);
                PartitionSource::Column(columns.len() - 1)
            }
        },
    };
    let date = match &schema.date_column {
        None => None,
        Some(d) => {
            columns.push(resolve("date_column", d)?);
            Some(columns.len() - 1)
        }
    };
    Ok((columns, partition, date))
}

/// What turns a row's values into keyword cells: the search section, the
/// typed row key, where the partition and the date come from. Borrowed
/// from an open [`SearchHandle`], or made from a schema alone
/// ([`keyword_cells_of`]).
struct Shape<'a> {
    schema: &'a SearchSchema,
    row_key: Option<&'a RowKeySchema>,
    partition: &'a PartitionSource,
    date: Option<usize>,
}

impl Shape<'_> {
    /// The partition of a row.
    pub fn partition_of(&self, row: &[u8], values: &[Option<&[u8]>]) -> Result<Vec<u8>> {
        Ok(match *self.partition {
            PartitionSource::Whole => Vec::new(),
            PartitionSource::Column(n) => values[n].unwrap_or_default().to_vec(),
            PartitionSource::KeyField(n) => {
                let Some(rk) = self.row_key else { return Ok(Vec::new()) };
                let fields = rk.decode(row)?;
                match fields.into_iter().nth(n) {
                    Some(value) => partition_bytes(value),
                    None => Vec::new(),
                }
            }
        })
    }

    /// Every keyword cell of a row whose columns hold `values`, sorted by key.
    pub fn entries(
        &self,
        analyzer: &dyn Analyzer,
        row: &[u8],
        values: &[Option<&[u8]>],
    ) -> Result<KeywordCells> {
        if values[..self.schema.fields.len()].iter().all(Option::is_none) {
            return Ok(KeywordCells::default());
        }
        let partition = self.partition_of(row, values)?;
        let date = self.date.and_then(|n| values[n]).and_then(|v| analyzer.date_ms(v)).unwrap_or(0);
        Ok(self.entries_at(analyzer, row, values, &partition, date))
    }

    /// [`Self::entries`] of a row whose partition and date are known.
    fn entries_at(
        &self,
        analyzer: &dyn Analyzer,
        row: &[u8],
        values: &[Option<&[u8]>],
        partition: &[u8],
        date: u64,
    ) -> KeywordCells {
        let prefix = partition_start(partition);
        let mut out = KeywordCells { tail_len: 8 + row.len(), ..KeywordCells::default() };
        self.terms(analyzer, values, &mut |n, term, positions| {
            push_cell_key(&mut out.bytes, &prefix, n, term, date, row);
            let key_end = out.bytes.len();
            out.bytes.extend_from_slice(positions);
            out.ends.push((key_end, out.bytes.len()));
        });
        // Already in key order: fields in order, terms sorted within each
        // (the escape keeps byte order), one row.
        debug_assert!((1..out.len()).all(|i| out.get(i - 1).map(|c| c.0) < out.get(i).map(|c| c.0)));
        out
    }

    /// The terms of a row whose columns hold `values`, to `f`: field by
    /// field in order, each field's terms in byte order, each once with
    /// its positions as a keyword cell stores them (ascending LEB128
    /// deltas, a position once).
    fn terms(
        &self,
        analyzer: &dyn Analyzer,
        values: &[Option<&[u8]>],
        f: &mut dyn FnMut(usize, &str, &[u8]),
    ) {
        // The thread's buffers, grown once (taken out while in use, so a
        // call made from `f` would only get fresh ones).
        let mut terms = FIELD_TERMS.take();
        for (n, field) in self.schema.fields.iter().enumerate() {
            let Some(value) = values[n] else { continue };
            let text = String::from_utf8_lossy(value);
            terms.clear();
            analyzer.terms(field, &text, &mut |term, position| terms.push(term, position));
            terms.each(&mut |term, positions| f(n, term, positions));
        }
        // A huge value's buffers are not kept for the thread's life.
        if terms.tokens.capacity() <= KEPT_TOKENS {
            terms.clear();
            FIELD_TERMS.set(terms);
        }
    }
}

/// Most tokens [`FIELD_TERMS`] keeps room for between rows (~1 MiB of
/// buffers).
const KEPT_TOKENS: usize = 1 << 16;

thread_local! {
    /// [`Shape::terms`]' buffers: a row's fields reuse them, and so do the
    /// thread's next rows (no table or text grown again per row).
    static FIELD_TERMS: std::cell::Cell<FieldTerms> = std::cell::Cell::new(FieldTerms::default());
}

/// One field's tokens grouped by term: each distinct term's text once (in
/// one buffer, so a message's tokens cost no allocation each), found again
/// through a hash table, and its positions. Only the distinct terms are
/// sorted (a body's tokens repeat: sorting every token, ties broken by
/// comparing texts, was a sixth of an ingest's tokenizing thread).
#[derive(Default)]
struct FieldTerms {
    text: String,
    /// Per distinct term, in first-seen order: its text's start and end in
    /// `text`, and its first eight bytes big-endian, zero-padded (most
    /// comparisons of the sort are then one integer compare).
    terms: Vec<(u32, u32, u64)>,
    /// Per distinct term's id, hashed by its text.
    slots: HashTable<u32>,
    /// (term id, position) per token, in the order the analyzer gave them.
    tokens: Vec<(u32, u32)>,
    /// Scratch of [`FieldTerms::each`].
    order: Vec<u32>,
    starts: Vec<u32>,
    next: Vec<u32>,
    by_term: Vec<u32>,
    positions: Vec<u8>,
}

impl FieldTerms {
    fn clear(&mut self) {
        self.text.clear();
        self.terms.clear();
        self.slots.clear();
        self.tokens.clear();
    }

    fn term(&self, id: u32) -> &str {
        let (start, end, _) = self.terms[id as usize];
        &self.text[start as usize..end as usize]
    }

    fn push(&mut self, term: &str, position: u32) {
        let hash = xxh3_64(term.as_bytes());
        let (text, terms) = (&mut self.text, &mut self.terms);
        let same = |id: &u32| {
            let (start, end, _) = terms[*id as usize];
            &text[start as usize..end as usize] == term
        };
        let id = match self.slots.find(hash, same) {
            Some(id) => *id,
            None => {
                let id = terms.len() as u32;
                let start = text.len() as u32;
                text.push_str(term);
                let mut head = [0u8; 8];
                let n = term.len().min(8);
                head[..n].copy_from_slice(&term.as_bytes()[..n]);
                // Offsets fit: a value is far below 4 GiB.
                terms.push((start, text.len() as u32, u64::from_be_bytes(head)));
                self.slots.insert_unique(hash, id, |id| {
                    let (start, end, _) = terms[*id as usize];
                    xxh3_64(&text.as_bytes()[start as usize..end as usize])
                });
                id
            }
        };
        self.tokens.push((id, position));
    }

    /// Each distinct term in byte order, with its positions as a keyword
    /// cell stores them (ascending LEB128 deltas, a position once).
    fn each(&mut self, f: &mut dyn FnMut(&str, &[u8])) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..self.terms.len() as u32);
        // Zero padding keeps the order of the heads that of the terms (a
        // shorter term sorts first, as a zero byte would), so the full
        // terms only break ties.
        order.sort_unstable_by(|&a, &b| {
            self.terms[a as usize]
                .2
                .cmp(&self.terms[b as usize].2)
                .then_with(|| self.term(a).cmp(self.term(b)))
        });
        // Positions by term (a counting sort by id: each term's in the
        // order given).
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
        starts.resize(self.terms.len() + 1, 0);
        for &(id, _) in &self.tokens {
            starts[id as usize + 1] += 1;
        }
        for i in 0..self.terms.len() {
            starts[i + 1] += starts[i];
        }
        let mut by_term = std::mem::take(&mut self.by_term);
        by_term.clear();
        by_term.resize(self.tokens.len(), 0);
        let mut next = std::mem::take(&mut self.next);
        next.clear();
        next.extend_from_slice(&starts);
        for &(id, position) in &self.tokens {
            by_term[next[id as usize] as usize] = position;
            next[id as usize] += 1;
        }
        let mut positions = std::mem::take(&mut self.positions);
        for &id in &order {
            let run = &mut by_term[starts[id as usize] as usize..starts[id as usize + 1] as usize];
            // An analyzer gives positions in order; one that does not is
            // sorted here.
            if !run.is_sorted() {
                run.sort_unstable();
            }
            positions.clear();
            let mut last = None;
            for &position in run.iter() {
                // A term twice at one position counts once.
                if last != Some(position) {
                    push_varint(&mut positions, position - last.unwrap_or(0));
                    last = Some(position);
                }
            }
            f(self.term(id), &positions);
        }
        self.order = order;
        self.starts = starts;
        self.next = next;
        self.by_term = by_term;
        self.positions = positions;
    }
}

/// The keyword cells `row` (its newest cell of each column, as a read
/// answers it) gives in a table of `schema`, without a store: for rows that
/// live elsewhere (an HBase cluster) and are indexed by the same analyzer.
/// Equal to what the store keeps for the same row
/// ([`crate::ReadTxn::row_keyword_cells`]).
///
/// # Errors
/// `NotSearchable` for a schema without a search section; `InvalidSchema`;
/// `InvalidRowKey` for a key its typed row key cannot decode.
pub fn keyword_cells_of(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    row: &crate::cell::Row,
) -> Result<Vec<super::codec::KeywordCell>> {
    let mut out = Vec::new();
    for_each_keyword_cell_of(table, schema, analyzer, row, &mut |cell| {
        out.push(cell.to_cell());
        Ok(())
    })?;
    Ok(out)
}

/// The partition of row key `row` in a table of `schema` when the key alone
/// tells it (a table partitioned by a field of its key, or not
/// partitioned); `None` when it takes the row's cells (a partition column).
///
/// # Errors
/// `NotSearchable`; `InvalidSchema`; `InvalidRowKey`.
pub fn key_partition_of(table: &str, schema: &TableSchema, row: &[u8]) -> Result<Option<Vec<u8>>> {
    let search = schema
        .search
        .as_ref()
        .ok_or_else(|| crate::error::ErrorKind::NotSearchable { table: table.to_owned() })?;
    let invalid = |reason: String| crate::error::ErrorKind::InvalidSchema { table: table.to_owned(), reason };
    let (_, partition, date) = resolve_columns(search, schema, parse_column).map_err(invalid)?;
    if matches!(partition, PartitionSource::Column(_)) {
        return Ok(None);
    }
    let shape = Shape { schema: search, row_key: schema.row_key.as_ref(), partition: &partition, date };
    shape.partition_of(row, &[]).map(Some)
}

/// The partition and date (ms, as `analyzer` reads the date column) of a
/// row put with `cells` (the newest of each column) in a table of
/// `schema`, without a store: for rows that live elsewhere.
///
/// # Errors
/// `NotSearchable`; `InvalidSchema`; `InvalidRowKey`.
pub(crate) fn place_of(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    row: &[u8],
    cells: &[PutCell],
) -> Result<(Vec<u8>, Option<u64>)> {
    let search = schema
        .search
        .as_ref()
        .ok_or_else(|| crate::error::ErrorKind::NotSearchable { table: table.to_owned() })?;
    let invalid = |reason: String| crate::error::ErrorKind::InvalidSchema { table: table.to_owned(), reason };
    let (columns, partition, date) = resolve_columns(search, schema, parse_column).map_err(invalid)?;
    let values: Vec<Option<&[u8]>> = columns
        .iter()
        .map(|(family, qualifier)| {
            cells
                .iter()
                .rfind(|c| c.family == *family && c.qualifier == *qualifier)
                .map(|c| c.value.as_slice())
        })
        .collect();
    let shape = Shape { schema: search, row_key: schema.row_key.as_ref(), partition: &partition, date };
    let date = date.and_then(|n| values[n]).and_then(|v| analyzer.date_ms(v));
    Ok((shape.partition_of(row, &values)?, date))
}

/// [`keyword_cells_of`], each cell lent to `f` in key order (as a scan of
/// the store's keyword rows lends them).
///
/// # Errors
/// As [`keyword_cells_of`], and whatever `f` returns.
pub fn for_each_keyword_cell_of(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    row: &crate::cell::Row,
    f: &mut dyn FnMut(&super::codec::KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    for_each_kept_keyword_cell_of(table, schema, analyzer, row, &|_| true, f)
}

/// As [`for_each_keyword_cell_of`], for a row whose partition `keep`
/// takes; a row of another partition is left before its text is analyzed
/// (a shard's build reads every row and keeps its partitions' only).
///
/// # Errors
/// As [`for_each_keyword_cell_of`].
pub fn for_each_kept_keyword_cell_of(
    table: &str,
    schema: &TableSchema,
    analyzer: &dyn Analyzer,
    row: &crate::cell::Row,
    keep: &dyn Fn(&[u8]) -> bool,
    f: &mut dyn FnMut(&super::codec::KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let search = schema
        .search
        .as_ref()
        .ok_or_else(|| crate::error::ErrorKind::NotSearchable { table: table.to_owned() })?;
    let invalid = |reason: String| crate::error::ErrorKind::InvalidSchema { table: table.to_owned(), reason };
    let (columns, partition, date) = resolve_columns(search, schema, parse_column).map_err(invalid)?;
    let values: Vec<Option<&[u8]>> = columns
        .iter()
        .map(|(family, qualifier)| {
            // A read answers each column's newest version first.
            row.cells
                .iter()
                .find(|c| *c.family == **family && c.qualifier == *qualifier)
                .map(|c| c.value.as_slice())
        })
        .collect();
    let shape = Shape { schema: search, row_key: schema.row_key.as_ref(), partition: &partition, date };
    if values[..search.fields.len()].iter().all(Option::is_none) {
        return Ok(());
    }
    // The cells as [`Shape::entries`] makes them, lent without their keys
    // being encoded and decoded again.
    let partition = shape.partition_of(&row.key, &values)?;
    if !keep(&partition) {
        return Ok(());
    }
    let date_ms = date.and_then(|n| values[n]).and_then(|v| analyzer.date_ms(v)).unwrap_or(0);
    let mut failed = None;
    shape.terms(analyzer, &values, &mut |n, term, positions| {
        if failed.is_some() {
            return;
        }
        let field = search.fields[n].name.as_str();
        let cell = super::codec::KeywordCellRef::from_parts(
            &partition, n, field, term, date_ms, &row.key, positions,
        );
        // The positions were made just above: they always read back.
        if let Some(cell) = cell
            && let Err(e) = f(&cell)
        {
            failed = Some(e);
        }
    });
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::FieldTerms;
    use crate::keyword::block::take_varint;

    proptest! {
        /// Any tokens (terms sharing long prefixes, repeated, positions out
        /// of order or repeated): each distinct term once, in byte order,
        /// with its distinct positions ascending, as a map from term to
        /// positions has them.
        #[test]
        fn field_terms_group_as_a_sorted_map(
            tokens in proptest::collection::vec(("(abcdefgh|abcd|x|é|)[a-c]{0,3}", 0u32..40), 0..120),
            again in proptest::collection::vec(("[a-z]{1,12}", 0u32..40), 0..20),
        ) {
            let mut terms = FieldTerms::default();
            // Used twice: cleared state must not leak into the second field.
            for run in [&again, &tokens] {
                terms.clear();
                for (term, position) in run {
                    terms.push(term, *position);
                }
                let mut model: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
                for (term, position) in run {
                    model.entry(term.as_str()).or_default().insert(*position);
                }
                let mut got: Vec<(String, Vec<u32>)> = Vec::new();
                terms.each(&mut |term, mut bytes| {
                    let mut positions = Vec::new();
                    let mut at = 0u64;
                    while let Some(delta) = take_varint(&mut bytes) {
                        at += delta;
                        positions.push(at as u32);
                    }
                    got.push((term.to_owned(), positions));
                });
                let want: Vec<(String, Vec<u32>)> =
                    model.into_iter().map(|(t, p)| (t.to_owned(), p.into_iter().collect())).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
