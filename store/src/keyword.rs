//! Keyword rows: the inbox-search layout, kept beside a table's rows.
//!
//! For a table whose schema has a [`SearchSchema`], every write also
//! maintains its keyword rows, in the same transaction: one row per
//! partition (the mailbox), one column per (search field, term), one version
//! per row of the table (the message), the term's positions in that field as
//! the value. Versions sort newest first by the row's date, then by row key,
//! so "the newest messages of this mailbox holding these words" is a merge of
//! version lists read straight from the store.
//!
//! Terms come from an [`Analyzer`] given to the store when it is opened
//! ([`crate::StoreBuilder::analyzer`]); the indexer's analyzer is the one
//! used for ingest, index building and query parsing, so all of them agree.
//!
//! Layout of the database `t/<table>/k`:
//!
//! ```text
//! key   = esc(partition) ‖ field (u8, index in `fields`) ‖ esc(term) ‖ !date (u64 BE) ‖ row key
//! value = the term's positions in the field, ascending, as LEB128 deltas
//! ```
//!
//! `esc` is the cell key's order-preserving escape (see FORMAT.md). The row
//! key is the unsalted key and comes last, unescaped: the tail after the
//! term, `!date ‖ row key`, sorts newest first and then by key, and is what
//! lookups merge.

use std::ops::Bound;
use std::sync::Arc;

use heed::RoTxn;
use serde::{Deserialize, Serialize};

use crate::cell::PutCell;
use crate::error::{Error, ErrorKind, Result};
use crate::index::{
    KeyStream, SetOp, Tail, hex_token, newest_put, newest_stored, parse_column, parse_hex_token,
};
use crate::key::{self, push_escaped};
use crate::rowkey::KeyValue;
use crate::sorted::SortedPuts;
use crate::store::{BytesDb, FamilyHandle, TableHandle};

/// Most search fields a table may declare (a field is one byte in the key).
pub const MAX_SEARCH_FIELDS: usize = 255;

/// The `search` section of a table schema: which columns are searchable,
/// how rows are partitioned, and which column dates them.
///
/// ```
/// use rowsearch_store::SearchSchema;
/// let search: SearchSchema = serde_json::from_str(
///     r#"{"partition": "user", "date_column": "m:date",
///         "fields": [{"column": "m:subject", "name": "subject", "type": "text"}]}"#,
/// ).unwrap();
/// assert_eq!(search.fields[0].name, "subject");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSchema {
    /// What splits rows into keyword rows: the name of a field of the typed
    /// row key, or a column `family:qualifier`. `None`: one partition for
    /// the whole table (the empty partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The searchable columns, each under a field name used in queries.
    pub fields: Vec<SearchField>,
    /// The column holding each row's date (as the analyzer reads dates:
    /// milliseconds since the epoch or RFC 3339 for the default one).
    /// Versions of keyword rows sort newest first by it; rows without one
    /// date 0. `None`: every row dates 0 and versions sort by row key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_column: Option<String>,
}

/// One searchable column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchField {
    /// The column, `family:qualifier`.
    pub column: String,
    /// The field name used in queries (`subject:word`).
    pub name: String,
    /// How the value is analysed.
    #[serde(rename = "type", default)]
    pub kind: FieldKind,
}

/// How a search field's values are analysed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// Free text, split into terms by the analyzer.
    #[default]
    Text,
}

impl SearchField {
    /// A text field over `column`.
    pub fn text(name: impl Into<String>, column: impl Into<String>) -> SearchField {
        SearchField { column: column.into(), name: name.into(), kind: FieldKind::Text }
    }
}

/// Turns values into terms with positions, and date values into
/// milliseconds. Must be deterministic: the store re-analyses a row's old
/// values to remove its keyword cells.
pub trait Analyzer: Send + Sync + std::fmt::Debug {
    /// Calls `sink(term, position)` for every term of `text` in `field`.
    fn terms(&self, field: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32));

    /// A date column's value in milliseconds since the epoch, `None` when it
    /// is not a date.
    fn date_ms(&self, value: &[u8]) -> Option<u64>;
}

impl SearchSchema {
    /// A search section over `fields`, without partition or date.
    pub fn new(fields: impl IntoIterator<Item = SearchField>) -> SearchSchema {
        SearchSchema { partition: None, fields: fields.into_iter().collect(), date_column: None }
    }

    /// Sets the partition (a key field name or a column).
    pub fn partition(mut self, partition: impl Into<String>) -> SearchSchema {
        self.partition = Some(partition.into());
        self
    }

    /// Sets the date column.
    pub fn date_column(mut self, column: impl Into<String>) -> SearchSchema {
        self.date_column = Some(column.into());
        self
    }

    /// Checks the section against the rest of the schema: the reason, when
    /// it does not fit.
    pub(crate) fn check(&self, schema: &crate::TableSchema) -> std::result::Result<(), String> {
        if self.fields.is_empty() {
            return Err("search: at least one field is needed".into());
        }
        if self.fields.len() > MAX_SEARCH_FIELDS {
            return Err(format!("search: at most {MAX_SEARCH_FIELDS} fields"));
        }
        let family_ok = |what: &str, column: &str| -> std::result::Result<(), String> {
            let (family, _) = parse_column(what, column)?;
            match schema.family(&family) {
                None => Err(format!("search: {what} {column:?}: unknown family {family:?}")),
                Some(f) if f.ttl_seconds.is_some() => Err(format!(
                    "search: {what} {column:?}: family {family:?} has a TTL; search columns in TTL families are not supported"
                )),
                Some(_) => Ok(()),
            }
        };
        for (i, field) in self.fields.iter().enumerate() {
            crate::schema::validate_name("search field", &field.name, crate::MAX_FAMILY_NAME_BYTES)
                .map_err(|e| format!("search: {e}"))?;
            if self.fields[..i].iter().any(|f| f.name == field.name) {
                return Err(format!("search: field {:?} declared twice", field.name));
            }
            family_ok("field column", &field.column)?;
        }
        if let Some(date) = &self.date_column {
            family_ok("date_column", date)?;
        }
        if let Some(partition) = &self.partition {
            let key_field =
                schema.row_key.as_ref().is_some_and(|rk| rk.fields.iter().any(|f| f.name == *partition));
            if !key_field {
                if !partition.contains(':') {
                    return Err(format!(
                        "search: partition {partition:?} is neither a row key field nor a family:qualifier column"
                    ));
                }
                family_ok("partition", partition)?;
            }
        }
        Ok(())
    }
}

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
    pub db_name: String,
    pub db: BytesDb,
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
}

impl SearchHandle {
    pub fn open(
        schema: &SearchSchema,
        table: &crate::TableSchema,
        families: &[Arc<FamilyHandle>],
        db_name: String,
        db: BytesDb,
    ) -> std::result::Result<SearchHandle, String> {
        let resolve =
            |what: &str, column: &str| -> std::result::Result<(Arc<FamilyHandle>, Vec<u8>), String> {
                let (family, qualifier) = parse_column(what, column)?;
                let handle = families
                    .iter()
                    .find(|f| *f.name == *family)
                    .ok_or_else(|| format!("search: {what} {column:?}: unknown family {family:?}"))?;
                Ok((handle.clone(), qualifier))
            };
        let mut columns = Vec::with_capacity(schema.fields.len() + 2);
        for field in &schema.fields {
            columns.push(resolve("field column", &field.column)?);
        }
        let partition = match &schema.partition {
            None => PartitionSource::Whole,
            Some(p) => {
                match table.row_key.as_ref().and_then(|rk| rk.fields.iter().position(|f| f.name == *p)) {
                    Some(n) => PartitionSource::KeyField(n),
                    None => {
                        columns.push(resolve("partition", p)?);
                        PartitionSource::Column(columns.len() - 1)
                    }
                }
            }
        };
        let date = match &schema.date_column {
            None => None,
            Some(d) => {
                columns.push(resolve("date_column", d)?);
                Some(columns.len() - 1)
            }
        };
        Ok(SearchHandle { schema: schema.clone(), db_name, db, columns, partition, date })
    }

    /// Whether `family` holds a column these keyword rows read.
    pub fn reads(&self, family: &Arc<FamilyHandle>) -> bool {
        self.columns.iter().any(|(f, _)| Arc::ptr_eq(f, family))
    }

    /// The newest value of each column of `stored` (a stored key) in `txn`.
    pub fn values<'t>(&self, txn: &'t RoTxn<'_>, stored: &[u8]) -> Result<Vec<Option<&'t [u8]>>> {
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

    /// The partition of a row.
    pub fn partition_of(&self, table: &TableHandle, row: &[u8], values: &[Option<&[u8]>]) -> Result<Vec<u8>> {
        Ok(match self.partition {
            PartitionSource::Whole => Vec::new(),
            PartitionSource::Column(n) => values[n].unwrap_or_default().to_vec(),
            PartitionSource::KeyField(n) => {
                let Some(rk) = &table.schema.row_key else { return Ok(Vec::new()) };
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
        table: &TableHandle,
        row: &[u8],
        values: &[Option<&[u8]>],
    ) -> Result<KeywordCells> {
        if values[..self.schema.fields.len()].iter().all(Option::is_none) {
            return Ok(KeywordCells::default());
        }
        let partition = self.partition_of(table, row, values)?;
        let date = self.date.and_then(|n| values[n]).and_then(|v| analyzer.date_ms(v)).unwrap_or(0);
        let mut prefix = Vec::with_capacity(partition.len() + 3);
        push_escaped(&mut prefix, &partition);
        let mut out = KeywordCells::default();
        // Every token's text goes to one buffer, so a message's tokens cost
        // no allocation each: (start, end, position) into `text_buf`.
        let mut text_buf = String::new();
        // (first eight bytes of the term, big-endian and zero-padded, so
        // most comparisons are one integer compare; start; end; position).
        let mut tokens: Vec<(u64, u32, u32, u32)> = Vec::new();
        for (n, field) in self.schema.fields.iter().enumerate() {
            let Some(value) = values[n] else { continue };
            text_buf.clear();
            tokens.clear();
            let text = String::from_utf8_lossy(value);
            analyzer.terms(field, &text, &mut |term, position| {
                let start = text_buf.len();
                text_buf.push_str(term);
                let mut head = [0u8; 8];
                let n = term.len().min(8);
                head[..n].copy_from_slice(&term.as_bytes()[..n]);
                // Offsets fit: a value is far below 4 GiB.
                tokens.push((u64::from_be_bytes(head), start as u32, text_buf.len() as u32, position));
            });
            let term_of = |t: &(u64, u32, u32, u32)| &text_buf[t.1 as usize..t.2 as usize];
            // Zero padding keeps the order of the heads that of the terms
            // (a shorter term sorts first, as a zero byte would), so the
            // full terms only break ties.
            tokens.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| term_of(a).cmp(term_of(b))).then(a.3.cmp(&b.3))
            });
            let mut i = 0;
            while i < tokens.len() {
                let term = term_of(&tokens[i]);
                let key = &mut out.bytes;
                key.extend_from_slice(&prefix);
                // unwrap-free: at most 255 fields (validated).
                key.push(u8::try_from(n).unwrap_or(u8::MAX));
                push_escaped(key, term.as_bytes());
                key.extend_from_slice(&(!date).to_be_bytes());
                key.extend_from_slice(row);
                let key_end = key.len();
                let mut last = None;
                while i < tokens.len() && term_of(&tokens[i]) == term {
                    let position = tokens[i].3;
                    // A term twice at one position counts once.
                    if last != Some(position) {
                        push_varint(&mut out.bytes, position - last.unwrap_or(0));
                        last = Some(position);
                    }
                    i += 1;
                }
                out.ends.push((key_end, out.bytes.len()));
            }
        }
        // Already in key order: fields in order, terms sorted within each
        // (the escape keeps byte order), one row.
        debug_assert!((1..out.len()).all(|i| out.get(i - 1).map(|c| c.0) < out.get(i).map(|c| c.0)));
        Ok(out)
    }

    /// The index of field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.schema.fields.iter().position(|f| f.name == name)
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

fn push_varint(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// How many positions a keyword cell's value holds; `None` when the bytes
/// are not LEB128 deltas (each at most 5 bytes) summing to a `u32`.
fn count_positions(mut bytes: &[u8]) -> Option<usize> {
    let (mut count, mut last) = (0usize, 0u32);
    while !bytes.is_empty() {
        let mut n = 0u32;
        let mut shift = 0;
        loop {
            let (&b, rest) = bytes.split_first()?;
            bytes = rest;
            n |= u32::from(b & 0x7F).checked_shl(shift)?;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
        last = last.checked_add(n)?;
        count += 1;
    }
    Some(count)
}

/// A keyword lookup: the rows of one partition holding every term.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeywordQuery {
    /// The partition (mailbox); empty for a table without partitions.
    pub partition: Vec<u8>,
    /// Terms, each `word` (any search field) or `field:word` (one field).
    /// Each is analysed like the stored text, so `Enron` finds `enron` and
    /// `phillip.allen` needs both parts.
    pub terms: Vec<String>,
    /// At most this many keys (`None`: all).
    pub limit: Option<usize>,
    /// Resume after the last key of a previous page (its `next_cursor`).
    pub cursor: Option<String>,
}

/// One row found by a keyword lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordHit {
    /// The row key (unsalted).
    pub key: Vec<u8>,
    /// The row's date (ms), 0 when it has none.
    pub date_ms: u64,
}

/// A page of keyword hits, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordPage {
    /// The hits, newest first (then by row key).
    pub hits: Vec<KeywordHit>,
    /// Present when the limit cut the page short.
    pub next_cursor: Option<String>,
    /// Keyword cells read to compute the page.
    pub cells_read: u64,
}

/// One keyword cell, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeywordCell {
    /// The partition (keyword row).
    pub partition: Vec<u8>,
    /// The search field's name.
    pub field: String,
    /// The term.
    pub term: String,
    /// The row's date (ms).
    pub date_ms: u64,
    /// The row key (the version).
    pub key: Vec<u8>,
    /// The term's positions in the field.
    pub positions: Vec<u32>,
}

/// One keyword cell as a scan lends it: borrowed from the store's pages
/// (or from the scan's buffers, for an escaped partition or term), so a
/// scan of millions of cells copies and allocates nothing per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeywordCellRef<'a> {
    /// The partition (keyword row).
    pub partition: &'a [u8],
    /// The search field's index in the schema's `fields`.
    pub field_index: usize,
    /// The search field's name.
    pub field: &'a str,
    /// The term.
    pub term: &'a str,
    /// The row's date (ms).
    pub date_ms: u64,
    /// The row key (the version).
    pub key: &'a [u8],
    /// The positions as stored (checked LEB128 deltas).
    positions: &'a [u8],
    position_count: usize,
}

impl<'a> KeywordCellRef<'a> {
    /// The term's positions in the field, ascending.
    pub fn positions(&self) -> Positions<'a> {
        Positions { bytes: self.positions, left: self.position_count, last: 0 }
    }

    /// An owned copy.
    pub fn to_cell(&self) -> KeywordCell {
        KeywordCell {
            partition: self.partition.to_vec(),
            field: self.field.to_owned(),
            term: self.term.to_owned(),
            date_ms: self.date_ms,
            key: self.key.to_vec(),
            positions: self.positions().collect(),
        }
    }
}

/// The positions of a [`KeywordCellRef`], ascending.
#[derive(Debug, Clone)]
pub struct Positions<'a> {
    bytes: &'a [u8],
    left: usize,
    last: u32,
}

impl Iterator for Positions<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        // The bytes were checked when the cell was read: `left` deltas,
        // each a LEB128 number of at most 5 bytes, summing without overflow.
        let mut n = 0u32;
        let mut shift = 0;
        while let Some((&b, rest)) = self.bytes.split_first() {
            self.bytes = rest;
            n |= u32::from(b & 0x7F).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                self.left = self.left.saturating_sub(1);
                self.last = self.last.saturating_add(n);
                return Some(self.last);
            }
            shift += 7;
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Positions<'_> {}

const CURSOR_PREFIX: &str = "k1.";

fn encode_cursor(tail: &[u8]) -> String {
    hex_token(CURSOR_PREFIX, tail)
}

fn decode_cursor(token: &str) -> Result<Vec<u8>> {
    match parse_hex_token(CURSOR_PREFIX, token) {
        // A tail holds at least the 8-byte date.
        Ok(tail) if tail.len() >= 8 => Ok(tail),
        _ => Err(ErrorKind::InvalidKeywordQuery { reason: format!("bad cursor {token:?}") }.into()),
    }
}

fn split_tail(db: &str, tail: &[u8]) -> Result<KeywordHit> {
    let (date, key) = tail.split_first_chunk::<8>().ok_or_else(|| -> Error {
        ErrorKind::Corrupted {
            db: db.to_owned(),
            key: crate::error::preview(tail),
            detail: "short keyword cell".into(),
        }
        .into()
    })?;
    Ok(KeywordHit { key: key.to_vec(), date_ms: !u64::from_be_bytes(*date) })
}

/// Runs a keyword lookup.
pub(crate) fn lookup(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    analyzer: &dyn Analyzer,
    query: &KeywordQuery,
) -> Result<KeywordPage> {
    let invalid = |reason: String| -> Error { ErrorKind::InvalidKeywordQuery { reason }.into() };
    let mut partition_prefix = Vec::new();
    push_escaped(&mut partition_prefix, &query.partition);
    // Each required term: the fields it may be in.
    let mut required: Vec<(Vec<usize>, String)> = Vec::new();
    for raw in &query.terms {
        let (fields, text) = match raw.split_once(':') {
            Some((name, text)) => match search.field(name) {
                Some(n) => (vec![n], text),
                None => {
                    let known: Vec<&str> = search.schema.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(invalid(format!(
                        "unknown search field {name:?} (fields: {})",
                        known.join(", ")
                    )));
                }
            },
            None => ((0..search.schema.fields.len()).collect(), raw.as_str()),
        };
        for &n in &fields {
            let mut found = Vec::new();
            analyzer.terms(&search.schema.fields[n], text, &mut |t, _| found.push(t.to_owned()));
            for term in found {
                if !required.iter().any(|(f, t)| *f == fields && *t == term) {
                    required.push((fields.clone(), term));
                }
            }
        }
    }
    if required.is_empty() {
        return Err(invalid("no terms to look up (every word was empty or dropped by the analyzer)".into()));
    }
    let mut streams = Vec::with_capacity(required.len());
    for (fields, term) in &required {
        let ranges = fields
            .iter()
            .map(|&n| {
                let mut p = partition_prefix.clone();
                p.push(u8::try_from(n).unwrap_or(u8::MAX));
                push_escaped(&mut p, term.as_bytes());
                (&search.db, p)
            })
            .collect();
        streams.push(KeyStream::live(txn, &search.db_name, ranges, Tail::Raw, 0)?);
    }
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let page = crate::index::combine(streams, SetOp::Intersect, after.as_deref(), query.limit)?;
    let hits = page.keys.iter().map(|t| split_tail(&search.db_name, t)).collect::<Result<Vec<_>>>()?;
    Ok(KeywordPage {
        hits,
        next_cursor: page.next_after.as_deref().map(encode_cursor),
        cells_read: page.entries_read,
    })
}

/// Decodes one stored keyword cell.
pub(crate) fn decode_cell(search: &SearchHandle, k: &[u8], v: &[u8]) -> Result<KeywordCell> {
    Ok(decode_cell_ref(search, k, v, &mut Vec::new(), &mut Vec::new())?.to_cell())
}

/// Calls `f` with every keyword cell of `partition` (every partition when
/// `None`), in key order: partition, field, term, newest first. The cell
/// is lent: it borrows from the store's pages.
pub(crate) fn for_each_cell(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    partition: Option<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let Some(p) = partition else { return for_each_cell_between(txn, search, None, None, f) };
    let lower = partition_start(p);
    let upper = key::prefix_successor(&lower);
    read_cells(
        txn,
        search,
        Bound::Included(&lower),
        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        f,
    )
}

/// Every cell of the partitions `from <= p < to` (`None`: unbounded).
pub(crate) fn for_each_cell_between(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let (lower, upper) = (from.map(partition_start), to.map(partition_start));
    read_cells(
        txn,
        search,
        lower.as_deref().map_or(Bound::Unbounded, Bound::Included),
        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        f,
    )
}

/// Where partition `p`'s cells start: esc(p) 00 01 (escaping keeps the
/// order, the terminator makes it prefix-free).
fn partition_start(p: &[u8]) -> Vec<u8> {
    // A partition is the keyword row's key: its cells start where a row's do.
    key::row_start(p)
}

fn read_cells(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    lower: Bound<&[u8]>,
    upper: Bound<&[u8]>,
    f: &mut dyn FnMut(&KeywordCellRef<'_>) -> Result<()>,
) -> Result<()> {
    let (mut partition, mut term) = (Vec::new(), Vec::new());
    for item in search.db.range(txn, &(lower, upper)).map_err(|e| Error::lmdb("keyword read", e))? {
        let (k, v) = item.map_err(|e| Error::lmdb("keyword read", e))?;
        f(&decode_cell_ref(search, k, v, &mut partition, &mut term)?)?;
    }
    Ok(())
}

/// Decodes one stored keyword cell, borrowing from `k` and `v` (and from
/// `partition` and `term` for an escaped partition or term).
#[inline]
fn decode_cell_ref<'a>(
    search: &'a SearchHandle,
    k: &'a [u8],
    v: &'a [u8],
    partition: &'a mut Vec<u8>,
    term: &'a mut Vec<u8>,
) -> Result<KeywordCellRef<'a>> {
    let corrupted = |detail: &str| -> Error {
        ErrorKind::Corrupted {
            db: search.db_name.clone(),
            key: crate::error::preview(k),
            detail: detail.to_owned(),
        }
        .into()
    };
    let (partition, used) =
        key::take_component_ref(k, partition).ok_or_else(|| corrupted("bad partition"))?;
    let rest = &k[used..];
    let (&field_index, rest) = rest.split_first().ok_or_else(|| corrupted("no field"))?;
    let field_index = usize::from(field_index);
    let field = search.schema.fields.get(field_index).ok_or_else(|| corrupted("unknown field"))?;
    let (term, used) = key::take_component_ref(rest, term).ok_or_else(|| corrupted("bad term"))?;
    let term = std::str::from_utf8(term).map_err(|_| corrupted("term is not UTF-8"))?;
    let (date, row) = rest[used..].split_first_chunk::<8>().ok_or_else(|| corrupted("short keyword cell"))?;
    let position_count = count_positions(v).ok_or_else(|| corrupted("bad positions"))?;
    Ok(KeywordCellRef {
        partition,
        field_index,
        field: &field.name,
        term,
        date_ms: !u64::from_be_bytes(*date),
        key: row,
        positions: v,
        position_count,
    })
}

/// Partition boundaries that cut the keyword rows where the table's
/// region splits cut its row keys: for each split, the first partition
/// whose keyword cells sort at or after it (distinct, ascending). When the
/// partition is the row key's leading string field (the mail table), the
/// keyword cells between two boundaries are exactly one region's.
pub(crate) fn partition_splits(
    txn: &RoTxn<'_>,
    search: &SearchHandle,
    splits: &[Vec<u8>],
) -> Result<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for split in splits.iter().filter(|s| !s.is_empty()) {
        let range = (Bound::Included(split.as_slice()), Bound::Unbounded);
        let Some(item) = search.db.range(txn, &range).map_err(|e| Error::lmdb("keyword read", e))?.next()
        else {
            break;
        };
        let (k, _) = item.map_err(|e| Error::lmdb("keyword read", e))?;
        let mut partition = Vec::new();
        key::take_component_into(k, &mut partition).ok_or_else(|| -> Error {
            ErrorKind::Corrupted {
                db: search.db_name.clone(),
                key: crate::error::preview(k),
                detail: "bad partition".into(),
            }
            .into()
        })?;
        if out.last() != Some(&partition) {
            out.push(partition);
        }
    }
    Ok(out)
}

/// Applies the difference between rows' keyword cells before and after a
/// batch, in key order.
pub(crate) fn update<'h>(
    wtxn: &mut heed::RwTxn,
    changes: impl IntoIterator<Item = (&'h SearchHandle, &'h KeywordCells, &'h KeywordCells)>,
) -> Result<()> {
    // (keyword rows, key, new value or None to delete)
    type Write<'h> = (&'h SearchHandle, &'h [u8], Option<&'h [u8]>);
    let changes: Vec<_> = changes.into_iter().collect();
    // At most one write per entry before and after: no regrowing (a batch
    // of mail writes hundreds of thousands).
    let mut writes: Vec<Write<'h>> =
        Vec::with_capacity(changes.iter().map(|(_, b, a)| b.len() + a.len()).sum());
    for (search, before, after) in changes {
        let (mut b, mut a) = (0, 0);
        loop {
            match (before.get(b), after.get(a)) {
                (Some(old), Some(new)) if old.0 == new.0 => {
                    if old.1 != new.1 {
                        writes.push((search, new.0, Some(new.1)));
                    }
                    b += 1;
                    a += 1;
                }
                (Some(old), Some(new)) if old.0 < new.0 => {
                    writes.push((search, old.0, None));
                    b += 1;
                }
                (Some(old), None) => {
                    writes.push((search, old.0, None));
                    b += 1;
                }
                (_, Some(new)) => {
                    writes.push((search, new.0, Some(new.1)));
                    a += 1;
                }
                (None, None) => break,
            }
        }
    }
    // In key order per database (handles compared by address: one per table).
    writes.sort_unstable_by(|a, b| {
        (std::ptr::from_ref(a.0) as usize, a.1).cmp(&(std::ptr::from_ref(b.0) as usize, b.1))
    });
    // Deletes one by one; each run of puts into one database through one
    // cursor (a new mail's cells are mostly runs of puts).
    let mut at = 0;
    while let Some(&(search, k, v)) = writes.get(at) {
        let Some(_) = v else {
            search.db.delete(wtxn, k).map_err(|e| Error::lmdb("keyword delete", e))?;
            at += 1;
            continue;
        };
        let mut puts = SortedPuts::new(wtxn, &search.db, "keyword put")?;
        while let Some(&(s, k, Some(v))) = writes.get(at) {
            if !std::ptr::eq(s, search) {
                break;
            }
            puts.put(k, v)?;
            at += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip() {
        for positions in [vec![], vec![0], vec![0, 1, 2], vec![5, 200, 70_000, u32::MAX]] {
            let mut bytes = Vec::new();
            let mut last = 0;
            for &p in &positions {
                push_varint(&mut bytes, p - last);
                last = p;
            }
            let count = count_positions(&bytes);
            assert_eq!(count, Some(positions.len()));
            let decoded = Positions { bytes: &bytes, left: positions.len(), last: 0 };
            assert_eq!(decoded.len(), positions.len());
            assert_eq!(decoded.collect::<Vec<_>>(), positions);
        }
        // Unterminated, longer than 5 bytes, and summing past u32::MAX.
        assert_eq!(count_positions(&[0x80]), None);
        assert_eq!(count_positions(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), None);
        let mut past = Vec::new();
        push_varint(&mut past, u32::MAX);
        push_varint(&mut past, 1);
        assert_eq!(count_positions(&past), None);
    }
}
