//! A search hit as a document (API.md, "Search"): the table's search
//! fields by their names, the partition and the date, and the other
//! columns a search asked for under `family:qualifier`, each value plain
//! text (bytes that are not UTF-8 kept as bytes, shown as
//! `{"base64": ...}` in JSON).
//!
//! The one owner of that shape: the HTTP answer, the CLI's `search --json`
//! and the library ([`crate::SearchHit::document`]) all take it from here.

use rowsearch_store::{Analyzer, Column, Row, RowKeySchema, SearchSchema};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The name of the date in a document.
pub const DATE: &str = rowsearch_store::DATE_NAME;

/// Most words `crop` keeps of a field.
pub const MAX_CROP_WORDS: usize = 1000;
/// Words `crop=FIELD` keeps when it names no number (Meilisearch's default).
pub const DEFAULT_CROP_WORDS: usize = 10;

/// One value of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocValue {
    /// Valid UTF-8 (as stored, control characters included).
    Text(String),
    /// Bytes that are not UTF-8.
    Bytes(Vec<u8>),
}

impl DocValue {
    /// The value of stored bytes.
    pub fn of(bytes: &[u8]) -> DocValue {
        match std::str::from_utf8(bytes) {
            Ok(text) => DocValue::Text(text.to_owned()),
            Err(_) => DocValue::Bytes(bytes.to_vec()),
        }
    }

    /// The text, when the value is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            DocValue::Text(text) => Some(text),
            DocValue::Bytes(_) => None,
        }
    }
}

impl Serialize for DocValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            DocValue::Text(text) => serializer.serialize_str(text),
            DocValue::Bytes(bytes) => {
                use base64::Engine as _;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("base64", &base64::engine::general_purpose::STANDARD.encode(bytes))?;
                map.end()
            }
        }
    }
}

/// `crop` values (`body:30,subject`, each value comma-separated): the
/// fields and the words each keeps ([`DEFAULT_CROP_WORDS`] when not
/// named); the reason when one is not `FIELD` or `FIELD:WORDS`.
pub fn parse_crop<S: AsRef<str>>(values: &[S]) -> Result<Vec<(String, usize)>, String> {
    let mut out = Vec::new();
    for spec in values.iter().flat_map(|v| v.as_ref().split(',')).map(str::trim).filter(|s| !s.is_empty()) {
        let (name, words) = match spec.split_once(':') {
            Some((name, words)) => {
                let words = words
                    .parse()
                    .map_err(|_| format!("crop: {spec:?}: FIELD or FIELD:WORDS, WORDS a number"))?;
                (name, words)
            }
            None => (spec, DEFAULT_CROP_WORDS),
        };
        out.push((name.to_owned(), words));
    }
    Ok(out)
}

/// A hit's document: named values in order (search fields, partition,
/// date, other columns). A value the row does not have is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    fields: Vec<(String, DocValue)>,
}

impl Document {
    /// The value named `name`.
    pub fn get(&self, name: &str) -> Option<&DocValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The text named `name`, when it is text.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(DocValue::as_str)
    }

    /// The values in order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &DocValue)> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v))
    }

    fn push(&mut self, name: &str, value: DocValue) {
        if self.get(name).is_none() {
            self.fields.push((name.to_owned(), value));
        }
    }
}

impl Serialize for Document {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (name, value) in &self.fields {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The names documents carry: those asked for (`*`: every one, `None`),
/// else the table's display (`None` when it is every name).
pub(crate) fn shown_names(asked: Option<&[String]>, search: &SearchSchema) -> Option<Vec<String>> {
    match asked {
        Some(names) if names.iter().any(|n| n == "*") => None,
        Some(names) => Some(names.to_vec()),
        None => search.display.clone().filter(|names| !names.iter().any(|n| n == "*")),
    }
}

/// What a table's documents are made of: its search section and row key,
/// and the columns a search asked for.
#[derive(Debug, Clone)]
pub(crate) struct DocumentShape<'a> {
    pub search: &'a SearchSchema,
    pub row_key: Option<&'a RowKeySchema>,
    /// The columns asked for (empty: none beyond the search fields).
    pub columns: &'a [Column],
    /// Only these names in the document (`fields=`): search fields, the
    /// partition, `date`, `family:qualifier` columns; `None` for all.
    pub fields: Option<&'a [String]>,
    /// Search fields cropped to a number of words (and so in the document).
    pub crop: &'a [(String, usize)],
    /// The `columns` asked for are in the document too (no `fields` named,
    /// or `*`).
    pub columns_too: bool,
}

impl DocumentShape<'_> {
    /// The columns a row must be read with to make its document (besides
    /// the ones asked for).
    pub fn needed(&self) -> Vec<Column> {
        let mut out: Vec<Column> = self
            .search
            .fields
            .iter()
            .filter(|f| self.shows(&f.name))
            .map(|f| Column::parse(f.column.as_bytes()))
            .collect();
        if self.shows(DATE) {
            out.extend(self.search.date_column.iter().map(|c| Column::parse(c.as_bytes())));
        }
        out.extend(
            self.search
                .partition
                .iter()
                .filter(|p| p.contains(':') && self.shows(p))
                .map(|c| Column::parse(c.as_bytes())),
        );
        out.extend(
            self.fields
                .unwrap_or_default()
                .iter()
                .filter(|f| f.contains(':'))
                .map(|c| Column::parse(c.as_bytes())),
        );
        out
    }

    /// Whether the document holds `name`.
    fn shows(&self, name: &str) -> bool {
        self.fields.is_none_or(|fields| fields.iter().any(|f| f == name))
            || self.crop.iter().any(|(field, _)| field == name)
    }

    /// Crops the fields `crop` names in `doc` around the first word
    /// `matches` takes (see [`rowsearch_indexer::crop`]).
    pub fn crop_document(&self, doc: &mut Document, query: Option<&rowsearch_indexer::QueryWords>) {
        let matches = |w: &str| query.is_some_and(|q| q.matches(w));
        for (name, words) in self.crop {
            if let Some((_, DocValue::Text(text))) = doc.fields.iter_mut().find(|(n, _)| n == name) {
                let spans = query.map(|q| q.phrase_spans(text)).unwrap_or_default();
                *text = rowsearch_indexer::crop(text, &matches, &spans, *words);
            }
        }
    }

    /// Checks `fields`: each must be a search field, the partition, `date`
    /// (with a date column) or a `family:qualifier` column.
    ///
    /// # Errors
    /// What is wrong, and the names a document can hold.
    pub fn check_fields(&self) -> Result<(), String> {
        for (name, words) in self.crop {
            if !self.search.fields.iter().any(|f| f.name == *name) {
                let names: Vec<&str> = self.search.fields.iter().map(|f| f.name.as_str()).collect();
                return Err(format!(
                    "crop: {name:?} is not a search field of this table: {}",
                    names.join(", ")
                ));
            }
            if !(1..=MAX_CROP_WORDS).contains(words) {
                return Err(format!("crop: {name}:{words}: the words kept must be 1..={MAX_CROP_WORDS}"));
            }
        }
        let Some(fields) = self.fields else { return Ok(()) };
        let mut known: Vec<&str> = self.search.fields.iter().map(|f| f.name.as_str()).collect();
        known.extend(self.search.partition.as_deref());
        if self.search.date_column.is_some() {
            known.push(DATE);
        }
        for name in fields {
            let column = matches!(Column::parse(name.as_bytes()), Column::Qualifier(f, q) if !f.is_empty() && !q.is_empty());
            if !known.contains(&name.as_str()) && !column {
                return Err(format!(
                    "fields: {name:?} is not in this table's documents: {}, or a family:qualifier column",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// `row`'s document (`row` read with at least [`Self::needed`] and the
    /// columns asked for).
    pub fn document(&self, row: &Row, analyzer: Option<&dyn Analyzer>) -> Document {
        let mut doc = Document::default();
        // As `Column::parse` reads `family:qualifier`, without allocating
        // per hit (a column spec is valid UTF-8: the split is `parse`'s).
        let value = |column: &str| {
            let (family, qualifier) = column.split_once(':')?;
            row.value(family, qualifier.as_bytes())
        };
        for field in self.search.fields.iter().filter(|f| self.shows(&f.name)) {
            if let Some(v) = value(&field.column) {
                doc.push(&field.name, DocValue::of(v));
            }
        }
        if let Some(partition) = self.search.partition.as_ref().filter(|p| self.shows(p)) {
            if partition.contains(':') {
                if let Some(v) = value(partition) {
                    doc.push(partition, DocValue::of(v));
                }
            } else if let Some(v) = self.key_field(&row.key, partition) {
                doc.push(partition, v);
            }
        }
        if let Some(date) = self.search.date_column.as_deref().filter(|_| self.shows(DATE)).and_then(value) {
            let ms = analyzer.and_then(|a| a.date_ms(date));
            let rfc3339 = ms.and_then(rfc3339_seconds);
            doc.push(DATE, rfc3339.map_or_else(|| DocValue::of(date), DocValue::Text));
        }
        let named: Vec<Column> = self
            .fields
            .unwrap_or_default()
            .iter()
            .filter(|f| f.contains(':'))
            .map(|c| Column::parse(c.as_bytes()))
            .collect();
        for column in self.columns.iter().filter(|_| self.columns_too).chain(&named) {
            for cell in &row.cells {
                let wanted = match column {
                    Column::Family(f) => *f == *cell.family,
                    Column::Qualifier(f, q) => *f == *cell.family && *q == cell.qualifier,
                };
                if wanted {
                    let mut name = format!("{}:", cell.family);
                    name.push_str(&String::from_utf8_lossy(&cell.qualifier));
                    doc.push(&name, DocValue::of(&cell.value));
                }
            }
        }
        doc
    }

    /// A field of the typed row key, as text (strings as they are,
    /// numbers written out).
    fn key_field(&self, key: &[u8], name: &str) -> Option<DocValue> {
        let schema = self.row_key?;
        let at = schema.fields.iter().position(|f| f.name == name)?;
        match schema.decode(key).ok()?.into_iter().nth(at)? {
            rowsearch_store::KeyValue::String(s) => Some(DocValue::Text(s)),
            other => Some(DocValue::Text(other.to_json().to_string())),
        }
    }
}

/// `ms` (milliseconds since 1970) as RFC 3339 in UTC to the second
/// (`2001-06-20T23:02:48Z`); `None` past the year 9999.
fn rfc3339_seconds(ms: u64) -> Option<String> {
    let seconds = i64::try_from(ms / 1000).ok()?;
    // Whole seconds: jiff writes no fraction.
    Some(jiff::Timestamp::from_second(seconds).ok()?.to_string())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rowsearch_store::Cell;

    use super::*;

    proptest! {
        /// As `strftime("%Y-%m-%dT%H:%M:%SZ")` of the instant wrote it.
        #[test]
        fn dates_are_written_to_the_second_as_strftime_writes_them(ms in 0u64..253_402_300_800_000) {
            let t = jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap()).ok();
            prop_assert_eq!(rfc3339_seconds(ms), t.map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()));
        }
    }

    #[test]
    fn dates_past_jiffs_range_are_not_written() {
        assert_eq!(rfc3339_seconds(253_402_300_800_000), None);
        assert_eq!(rfc3339_seconds(u64::MAX), None);
        assert_eq!(rfc3339_seconds(0).as_deref(), Some("1970-01-01T00:00:00Z"));
    }

    fn cell(family: &str, qualifier: &[u8], value: &[u8]) -> Cell {
        Cell { family: family.into(), qualifier: qualifier.to_vec(), timestamp: 1, value: value.to_vec() }
    }

    /// Bodies with CR, LF and tabs come back as JSON text with JSON's own
    /// escapes; bytes that are not UTF-8 as base64; the date in RFC 3339;
    /// the partition from the typed key; asked-for columns by
    /// `family:qualifier`; missing values absent.
    #[test]
    fn documents_are_plain_json() {
        let schema = rowsearch_indexer::mail_schema();
        let search = schema.search.as_ref().unwrap();
        let rk = schema.row_key.as_ref().unwrap();
        let key = rk.encode_json(&serde_json::json!({"user": "ann", "date": 5, "id": 7})).unwrap();
        let row = Row {
            key,
            cells: vec![
                cell("b", b"text", b"Line one\r\nLine\ttwo"),
                cell("m", b"date", b"2001-05-14T16:39:00-07:00"),
                cell("m", b"folder", b"inbox"),
                cell("m", b"from", b"ann@x.com"),
                cell("m", b"path", b"ann/inbox/1."),
                cell("m", b"subject", b"caf\xe9 \xff"),
            ],
        };
        let columns = [Column::Qualifier("m".into(), b"path".to_vec())];
        let shape = DocumentShape {
            search,
            row_key: Some(rk),
            columns: &columns,
            fields: None,
            crop: &[],
            columns_too: true,
        };
        let analyzer = rowsearch_indexer::TextAnalyzer;
        let doc = shape.document(&row, Some(&analyzer));
        let json = serde_json::to_string(&doc).unwrap();
        assert_eq!(
            json,
            r#"{"subject":{"base64":"Y2Fm6SD/"},"body":"Line one\r\nLine\ttwo","from":"ann@x.com","folder":"inbox","user":"ann","date":"2001-05-14T23:39:00Z","m:path":"ann/inbox/1."}"#
        );
        assert_eq!(doc.text("body"), Some("Line one\r\nLine\ttwo"));
        assert_eq!(doc.get("to"), None);
        let needed = shape.needed();
        assert!(needed.contains(&Column::Qualifier("m".into(), b"date".to_vec())), "{needed:?}");
    }
}
