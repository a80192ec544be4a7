//! The tantivy side of a searchable table: its schema, the document built
//! from a row's keyword cells, and the two tokenizers behind the one
//! tokenizer name the text fields carry.
//!
//! A row's keyword cells are already analysed (term, positions), so
//! indexing must not analyse again. Each text field's value is the row's
//! cells for that field in a compact text form ([`CellText`]); the index
//! writer's tokenizer ([`CellTokenizer`]) reads the terms and positions
//! back out of it. Queries are text, so the query side registers the
//! analyzer ([`AnalyzerTokenizer`]) under the same name. [`register_cells`]
//! and [`register_analyzer`] set either on an `Index`.
//!
//! Fields: one text field per search field (named as in the schema), the
//! catch-all `_all` holding every search field (so a bare term is one term
//! lookup; it keeps frequencies but no positions, as a bare phrase is
//! matched in each field's positions and scored over `_all`, see
//! `sloppy_phrase.rs`; indexes built before keep positions there and
//! are read as they are, [`DocSchema::all_positions`]), `_key` (the row
//! key: indexed for deletes by key, and the one stored value), `_partition` (indexed and fast, for scoping and facets),
//! `date` (indexed and fast, milliseconds, for ranges, sorting and the
//! month and year facets), and for each search field declared `facet` a
//! fast string column `_facet_<name>` of the values facets count (see
//! [`CellDoc`]). A keyword field's text field names the tokenizer
//! [`KEYWORD_TOKENIZER`], so an opened index knows its fields' kinds.

use std::sync::Arc;

use rowsearch_store::{Analyzer, FieldKind, KeywordCell, SearchField, SearchSchema};
use tantivy::schema::document::{ReferenceValue, ReferenceValueLeaf, Value};
use tantivy::schema::{
    BytesOptions, DateOptions, DateTimePrecision, Field, IndexRecordOption, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use crate::pairs::{PAIRS_FIELD, PairList};
use crate::{Error, Result};

/// The tokenizer name of every text field of a text search field.
pub const TOKENIZER: &str = "rowsearch";
/// The tokenizer name of a keyword search field's text field.
pub const KEYWORD_TOKENIZER: &str = "rowsearch_keyword";
/// The name of a search field's facet column is this and the field's name.
pub const FACET_PREFIX: &str = "_facet_";
/// The catch-all field.
pub const ALL_FIELD: &str = "_all";
/// The row key field.
pub const KEY_FIELD: &str = "_key";
/// The partition field.
pub const PARTITION_FIELD: &str = "_partition";
/// The date field (milliseconds precision).
pub const DATE_FIELD: &str = "date";

/// A table's tantivy schema and its field handles.
#[derive(Debug, Clone)]
pub struct DocSchema {
    /// The table.
    pub table: String,
    /// The tantivy schema.
    pub schema: Schema,
    /// One text field per search field, in the table schema's order.
    pub fields: Vec<Field>,
    /// The search fields' names, in the same order.
    pub names: Vec<String>,
    /// Their kinds, in the same order.
    pub kinds: Vec<FieldKind>,
    /// Their facet columns (`_facet_<name>`), in the same order; `None`
    /// for a field without facets.
    pub facets: Vec<Option<Field>>,
    /// `_all`.
    pub all: Field,
    /// Whether `_all` keeps positions (an index built before `_all` went
    /// without them): its bare phrases are then matched in `_all` itself.
    pub all_positions: bool,
    /// `_key`.
    pub key: Field,
    /// `_partition`.
    pub partition: Field,
    /// `date`.
    pub date: Field,
    /// `_pairs`, the word pairs of bare two-word phrases (`pairs.rs`);
    /// `None` in an index built before it.
    pub pairs: Option<Field>,
}

impl DocSchema {
    /// The schema for a table's search section.
    ///
    /// # Errors
    /// `Schema` when a search field takes a reserved name (`_all`, `_key`, `_pairs`,
    /// `_partition`, `date`).
    pub fn for_search(table: &str, search: &SearchSchema) -> Result<DocSchema> {
        Self::build(table, search, false, true)
    }

    /// The schema indexes were built with before `_all` went without
    /// positions, for tests of how such an index answers.
    ///
    /// # Errors
    /// As [`Self::for_search`].
    #[doc(hidden)]
    pub fn for_search_with_all_positions(table: &str, search: &SearchSchema) -> Result<DocSchema> {
        Self::build(table, search, true, false)
    }

    /// The schema indexes were built with before `_pairs`, for tests of
    /// how such an index answers.
    ///
    /// # Errors
    /// As [`Self::for_search`].
    #[doc(hidden)]
    pub fn for_search_without_pairs(table: &str, search: &SearchSchema) -> Result<DocSchema> {
        Self::build(table, search, false, false)
    }

    /// Whether an index with `schema` serves `search`: built by
    /// [`Self::for_search`], before `_pairs`, or before `_all` went
    /// without positions (otherwise the same).
    ///
    /// # Errors
    /// As [`Self::for_search`].
    pub fn serves(table: &str, search: &SearchSchema, schema: &Schema) -> Result<bool> {
        for (all_positions, pairs) in [(false, true), (false, false), (true, false)] {
            if *schema == Self::build(table, search, all_positions, pairs)?.schema {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn build(table: &str, search: &SearchSchema, all_positions: bool, pairs: bool) -> Result<DocSchema> {
        let text = |tokenizer: &str, positions: bool| {
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default().set_tokenizer(tokenizer).set_index_option(if positions {
                    IndexRecordOption::WithFreqsAndPositions
                } else {
                    IndexRecordOption::WithFreqs
                }),
            )
        };
        let mut builder = Schema::builder();
        let mut fields = Vec::with_capacity(search.fields.len());
        let mut facets = Vec::with_capacity(search.fields.len());
        for field in &search.fields {
            if [ALL_FIELD, KEY_FIELD, PARTITION_FIELD, DATE_FIELD, PAIRS_FIELD].contains(&field.name.as_str())
            {
                return Err(Error::Schema {
                    table: table.to_owned(),
                    reason: format!("search field name {:?} is reserved by the index", field.name),
                });
            }
            let tokenizer = match field.kind {
                FieldKind::Text => TOKENIZER,
                FieldKind::Keyword => KEYWORD_TOKENIZER,
            };
            fields.push(builder.add_text_field(&field.name, text(tokenizer, true)));
            // The values are whole already: the raw tokenizer keeps them so.
            facets.push(field.facet.then(|| {
                builder.add_text_field(
                    &format!("{FACET_PREFIX}{}", field.name),
                    TextOptions::default().set_fast("raw"),
                )
            }));
        }
        // Frequencies for bare terms' scores, no positions: they would
        // repeat every field's (122 -> 89 MB of index on the full corpus).
        let all = builder.add_text_field(ALL_FIELD, text(TOKENIZER, all_positions));
        // The key is stored rather than fast: reading the keys of 10 random
        // hits takes 5 us stored against 17 us from a bytes fast column
        // (indexer/BENCHMARKS.md).
        let key = builder.add_bytes_field(KEY_FIELD, BytesOptions::default().set_indexed().set_stored());
        let partition =
            builder.add_bytes_field(PARTITION_FIELD, BytesOptions::default().set_indexed().set_fast());
        let date = builder.add_date_field(
            DATE_FIELD,
            DateOptions::default().set_indexed().set_fast().set_precision(DateTimePrecision::Milliseconds),
        );
        // Last, so every other field keeps its number in indexes built
        // before it. Whole values (the raw tokenizer), frequencies, no norms:
        // a pair's documents are scored with `_all`'s.
        let pairs = pairs.then(|| {
            builder.add_text_field(
                PAIRS_FIELD,
                TextOptions::default().set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer("raw")
                        .set_fieldnorms(false)
                        .set_index_option(IndexRecordOption::WithFreqs),
                ),
            )
        });
        Ok(DocSchema {
            table: table.to_owned(),
            schema: builder.build(),
            fields,
            names: search.fields.iter().map(|f| f.name.clone()).collect(),
            kinds: search.fields.iter().map(|f| f.kind).collect(),
            facets,
            all,
            all_positions,
            key,
            partition,
            date,
            pairs,
        })
    }

    /// The field handles of an existing index.
    ///
    /// # Errors
    /// `Schema` when the index lacks one of the fixed fields.
    pub fn from_index(table: &str, index: &tantivy::Index) -> Result<DocSchema> {
        let schema = index.schema();
        let get = |name: &str| {
            schema.get_field(name).map_err(|_| Error::Schema {
                table: table.to_owned(),
                reason: format!("index has no field {name:?}"),
            })
        };
        let (all, key, partition, date) =
            (get(ALL_FIELD)?, get(KEY_FIELD)?, get(PARTITION_FIELD)?, get(DATE_FIELD)?);
        let mut fields = Vec::new();
        let mut names = Vec::new();
        let mut kinds = Vec::new();
        for (field, entry) in schema.fields() {
            let tantivy::schema::FieldType::Str(options) = entry.field_type() else { continue };
            if field == all || entry.name().starts_with(FACET_PREFIX) || entry.name() == PAIRS_FIELD {
                continue;
            }
            fields.push(field);
            names.push(entry.name().to_owned());
            let keyword = options.get_indexing_options().is_some_and(|i| i.tokenizer() == KEYWORD_TOKENIZER);
            kinds.push(if keyword { FieldKind::Keyword } else { FieldKind::Text });
        }
        let facets = names.iter().map(|n| schema.get_field(&format!("{FACET_PREFIX}{n}")).ok()).collect();
        let all_positions = has_positions(&schema, all);
        let pairs = schema.get_field(PAIRS_FIELD).ok();
        Ok(DocSchema {
            table: table.to_owned(),
            schema,
            fields,
            names,
            kinds,
            facets,
            all,
            all_positions,
            key,
            partition,
            date,
            pairs,
        })
    }

    /// The position of a search field by name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// Whether `field` of `schema` keeps positions.
pub(crate) fn has_positions(schema: &Schema, field: Field) -> bool {
    schema
        .get_field_entry(field)
        .field_type()
        .get_index_record_option()
        .is_some_and(IndexRecordOption::has_positions)
}

/// One field's keyword cells as text, for [`CellTokenizer`]: for each term,
/// its length in bytes, the term, the number of its positions, then each
/// position as its gap from the one before. Numbers are written 6 bits to a
/// byte, low bits first, with `0x40` set on every byte but the last, so
/// every byte outside the terms is ASCII and the whole is UTF-8 (tantivy
/// hands tokenizers `&str`). Terms are length-prefixed, so any term
/// round-trips.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CellText(String);

impl CellText {
    /// Appends a term with its positions (ascending).
    pub fn push<P>(&mut self, term: &str, positions: P)
    where
        P: IntoIterator<Item = u32>,
        P::IntoIter: ExactSizeIterator,
    {
        // Called for every keyword cell of a full reindex.
        let positions = positions.into_iter();
        push_number(&mut self.0, term.len() as u64);
        self.0.push_str(term);
        push_number(&mut self.0, positions.len() as u64);
        let mut last = 0u32;
        for p in positions {
            push_number(&mut self.0, u64::from(p.wrapping_sub(last)));
            last = p;
        }
    }

    /// Whether no term was pushed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The encoded text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Empties it, keeping the allocation.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

const MORE: u8 = 0x40;
const DIGIT: u8 = 0x3F;

#[inline]
fn push_number(out: &mut String, mut n: u64) {
    while n > u64::from(DIGIT) {
        out.push(char::from((n as u8 & DIGIT) | MORE));
        n >>= 6;
    }
    out.push(char::from(n as u8));
}

/// The index writer's tokenizer: reads [`CellText`] back into tokens.
/// Malformed text ends the stream (it is only ever written by
/// [`CellText::push`]).
#[derive(Debug, Clone, Default)]
pub struct CellTokenizer;

/// Tokens of one [`CellText`].
#[derive(Debug)]
pub struct CellTokenStream<'a> {
    text: &'a str,
    /// Where the next number or term starts.
    at: usize,
    /// Positions of the current term not yet returned.
    left: u64,
    token: Token,
}

impl Tokenizer for CellTokenizer {
    type TokenStream<'a> = CellTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CellTokenStream<'a> {
        CellTokenStream { text, at: 0, left: 0, token: Token::default() }
    }
}

impl CellTokenStream<'_> {
    #[inline]
    fn number(&mut self) -> Option<u64> {
        let bytes = self.text.as_bytes();
        let (mut n, mut shift) = (0u64, 0u32);
        loop {
            let b = *bytes.get(self.at)?;
            self.at += 1;
            n |= u64::from(b & DIGIT).checked_shl(shift)?;
            if b & MORE == 0 {
                return Some(n);
            }
            shift += 6;
            if shift >= 64 {
                return None;
            }
        }
    }

    fn next_term(&mut self) -> Option<()> {
        let len = usize::try_from(self.number()?).ok()?;
        let term = self.text.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        self.left = self.number()?;
        self.token.text.clear();
        self.token.text.push_str(term);
        self.token.position = 0;
        Some(())
    }

    fn next_position(&mut self) -> Option<()> {
        while self.left == 0 {
            if self.at == self.text.len() {
                return None;
            }
            self.next_term()?;
        }
        let gap = usize::try_from(self.number()?).ok()?;
        self.token.position = self.token.position.checked_add(gap)?;
        self.left -= 1;
        Some(())
    }
}

impl TokenStream for CellTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next_position().is_some() {
            return true;
        }
        // Ended or malformed: stay ended.
        self.at = self.text.len();
        self.left = 0;
        false
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// The query side's tokenizer: the store's analyzer, so query terms are
/// analysed exactly like the stored text was.
#[derive(Debug, Clone)]
pub struct AnalyzerTokenizer {
    analyzer: Arc<dyn Analyzer>,
    field: SearchField,
}

impl AnalyzerTokenizer {
    /// Wraps `analyzer` (for text fields).
    pub fn new(analyzer: Arc<dyn Analyzer>) -> AnalyzerTokenizer {
        AnalyzerTokenizer { analyzer, field: SearchField::text("", "") }
    }

    /// Wraps `analyzer` for fields of `kind`.
    pub fn of_kind(analyzer: Arc<dyn Analyzer>, kind: FieldKind) -> AnalyzerTokenizer {
        AnalyzerTokenizer { analyzer, field: SearchField { kind, ..SearchField::text("", "") } }
    }
}

/// Tokens of a query text.
#[derive(Debug)]
pub struct VecTokenStream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl Tokenizer for AnalyzerTokenizer {
    type TokenStream<'a> = VecTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let mut tokens = Vec::new();
        self.analyzer.terms(&self.field, text, &mut |term, position| {
            tokens.push(Token {
                offset_from: 0,
                offset_to: 0,
                position: position as usize,
                text: term.to_owned(),
                position_length: 1,
            });
        });
        VecTokenStream { tokens: tokens.into_iter(), current: Token::default() }
    }
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(t) => {
                self.current = t;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

/// Makes `index` read [`CellText`] values (for writing).
pub fn register_cells(index: &tantivy::Index) {
    index.tokenizers().register(TOKENIZER, CellTokenizer);
    index.tokenizers().register(KEYWORD_TOKENIZER, CellTokenizer);
}

/// Makes `index` analyse text with `analyzer` (for query parsing).
pub fn register_analyzer(index: &tantivy::Index, analyzer: Arc<dyn Analyzer>) {
    index
        .tokenizers()
        .register(KEYWORD_TOKENIZER, AnalyzerTokenizer::of_kind(Arc::clone(&analyzer), FieldKind::Keyword));
    index.tokenizers().register(TOKENIZER, AnalyzerTokenizer::new(analyzer));
}

/// One row's document, built from its keyword cells.
#[derive(Debug, Clone)]
pub struct CellDoc {
    /// The row key.
    pub key: Vec<u8>,
    /// The partition.
    pub partition: Vec<u8>,
    /// The row's date (ms).
    pub date_ms: u64,
    /// Per search field, its cells.
    pub texts: Vec<CellText>,
    /// The terms of facet fields: (field index, term), each once.
    pub facet_terms: Vec<(usize, String)>,
    /// The row's word pairs (`pairs.rs`), each as often as its words stand
    /// side by side.
    pub pairs: Vec<String>,
    fields: Vec<Field>,
    pairs_field: Option<Field>,
    /// Per search field, its facet column and kind.
    facets: Vec<Option<(Field, FieldKind)>>,
    all: Field,
    key_field: Field,
    partition_field: Field,
    date_field: Field,
    /// The bytes it holds while tantivy has it queued (a full build's).
    pub(crate) ticket: crate::inflight::Held,
}

impl CellDoc {
    /// About the bytes the document holds.
    pub fn heap_bytes(&self) -> usize {
        let texts: usize = self.texts.iter().map(|t| t.0.len()).sum();
        let facets: usize = self.facet_terms.iter().map(|(_, t)| t.len() + 32).sum();
        let pairs: usize = self.pairs.iter().map(|t| t.len() + 24).sum();
        self.key.len() + self.partition.len() + texts + facets + pairs + 256
    }

    /// An empty document for `schema`.
    pub fn new(schema: &DocSchema) -> CellDoc {
        CellDoc {
            key: Vec::new(),
            partition: Vec::new(),
            date_ms: 0,
            texts: vec![CellText::default(); schema.fields.len()],
            facet_terms: Vec::new(),
            pairs: Vec::new(),
            fields: schema.fields.clone(),
            pairs_field: schema.pairs,
            facets: schema.facets.iter().zip(&schema.kinds).map(|(f, k)| f.map(|f| (f, *k))).collect(),
            all: schema.all,
            key_field: schema.key,
            partition_field: schema.partition,
            date_field: schema.date,
            ticket: crate::inflight::Held::default(),
        }
    }

    /// Whether the row has no terms at all.
    pub fn is_empty(&self) -> bool {
        self.texts.iter().all(CellText::is_empty)
    }

    /// One row's document from its keyword cells (in key order); `None`
    /// when it has none. It holds no word pairs (see [`Self::from_cells_paired`]).
    pub fn from_cells(schema: &DocSchema, cells: &[KeywordCell]) -> Option<CellDoc> {
        Self::from_cells_paired(schema, cells, &PairList::default())
    }

    /// [`Self::from_cells`], with the row's pairs of `pairs` (a writer of
    /// an index holding pairs writes every one of them: `pairs.rs`).
    pub fn from_cells_paired(schema: &DocSchema, cells: &[KeywordCell], pairs: &PairList) -> Option<CellDoc> {
        let first = cells.first()?;
        let mut doc = CellDoc::new(schema);
        doc.key.clone_from(&first.key);
        doc.partition.clone_from(&first.partition);
        doc.date_ms = first.date_ms;
        for cell in cells {
            if let Some(field) = schema.field_index(&cell.field) {
                doc.texts[field].push(&cell.term, cell.positions.iter().copied());
                doc.add_facet_term(field, &cell.term);
            }
        }
        if schema.pairs.is_some() {
            let fielded = cells.iter().filter_map(|c| {
                schema.field_index(&c.field).map(|f| (f, c.term.as_str(), c.positions.as_slice()))
            });
            pairs.occurrences(fielded, &mut doc.pairs);
        }
        (!doc.is_empty()).then_some(doc)
    }

    /// Notes `term` of search field `field` (its index) for the field's
    /// facet column, if it has one. A row's cells hold each term of a
    /// field once.
    pub fn add_facet_term(&mut self, field: usize, term: &str) {
        if matches!(self.facets.get(field), Some(Some(_))) {
            self.facet_terms.push((field, term.to_owned()));
        }
    }

    /// The values field `field`'s facet counts for this row: a keyword
    /// field's term; the whole email addresses among a text field's terms
    /// (its words are not counted: a row whose field holds no address
    /// counts under no value, as a row without the column does).
    pub fn facet_values(&self, field: usize) -> impl Iterator<Item = &str> {
        let text = matches!(self.facets.get(field), Some(Some((_, FieldKind::Text))));
        self.facet_terms
            .iter()
            .filter(move |(f, t)| *f == field && (!text || t.contains('@')))
            .map(|(_, t)| t.as_str())
    }
}

/// A value of a [`CellDoc`].
#[derive(Debug, Clone)]
pub enum CellValue<'a> {
    /// A field's cells.
    Text(&'a str),
    /// A key or partition.
    Bytes(&'a [u8]),
    /// The date.
    Date(tantivy::DateTime),
}

impl<'a> Value<'a> for CellValue<'a> {
    type ArrayIter = std::iter::Empty<CellValue<'a>>;
    type ObjectIter = std::iter::Empty<(&'a str, CellValue<'a>)>;

    fn as_value(&self) -> ReferenceValue<'a, Self> {
        ReferenceValue::Leaf(match self {
            CellValue::Text(s) => ReferenceValueLeaf::Str(s),
            CellValue::Bytes(b) => ReferenceValueLeaf::Bytes(b),
            CellValue::Date(d) => ReferenceValueLeaf::Date(*d),
        })
    }
}

impl tantivy::Document for CellDoc {
    type Value<'a> = CellValue<'a>;
    type FieldsValuesIter<'a> = std::vec::IntoIter<(Field, CellValue<'a>)>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        let mut out = Vec::with_capacity(3 + 2 * self.texts.len());
        out.push((self.key_field, CellValue::Bytes(&self.key)));
        out.push((self.partition_field, CellValue::Bytes(&self.partition)));
        let ms = i64::try_from(self.date_ms).unwrap_or(i64::MAX);
        out.push((self.date_field, CellValue::Date(tantivy::DateTime::from_timestamp_millis(ms))));
        for (field, text) in self.fields.iter().zip(&self.texts) {
            if !text.is_empty() {
                out.push((*field, CellValue::Text(text.as_str())));
            }
        }
        // One value per field: tantivy leaves a position gap between values,
        // so a phrase never spans two fields.
        for text in &self.texts {
            if !text.is_empty() {
                out.push((self.all, CellValue::Text(text.as_str())));
            }
        }
        for (i, facet) in self.facets.iter().enumerate() {
            if let Some((column, _)) = facet {
                out.extend(self.facet_values(i).map(|v| (*column, CellValue::Text(v))));
            }
        }
        if let Some(field) = self.pairs_field {
            out.extend(self.pairs.iter().map(|p| (field, CellValue::Text(p))));
        }
        out.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<(String, usize)> {
        let mut tok = CellTokenizer;
        let mut stream = tok.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    #[test]
    fn cell_text_round_trips_terms_and_positions() {
        let mut t = CellText::default();
        t.push("gas", [0, 7, 12]);
        t.push("a:b;c,1", [3]);
        t.push("", []);
        t.push("éx", [4_000_000, u32::MAX]);
        t.push("long", [63, 64, 4095, 4096]);
        assert_eq!(
            tokens(t.as_str()),
            vec![
                ("gas".into(), 0),
                ("gas".into(), 7),
                ("gas".into(), 12),
                ("a:b;c,1".into(), 3),
                ("éx".into(), 4_000_000),
                ("éx".into(), u32::MAX as usize),
                ("long".into(), 63),
                ("long".into(), 64),
                ("long".into(), 4095),
                ("long".into(), 4096),
            ]
        );
        // Only the terms' own bytes are not ASCII.
        assert_eq!(t.as_str().bytes().filter(|b| !b.is_ascii()).count(), "é".len());
    }

    #[test]
    fn cell_tokenizer_stops_on_malformed_text() {
        let mut t = CellText::default();
        t.push("gas", [0, 1]);
        let good = t.as_str().to_owned();
        // A term cut short, a count promising more positions than follow, a
        // length past the end, and a number that never ends.
        assert_eq!(tokens(&good[..2]), vec![]);
        assert_eq!(tokens(&good[..good.len() - 1]), vec![("gas".into(), 0)]);
        assert!(tokens("\x3fgas").is_empty());
        assert!(tokens("\x40\x40\x40").is_empty());
        // After the end, the stream stays ended.
        let mut tok = CellTokenizer;
        let mut stream = tok.token_stream(&good[..good.len() - 1]);
        assert!(stream.advance());
        assert!(!stream.advance());
        assert!(!stream.advance());
    }
}
