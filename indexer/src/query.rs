//! The query language (API.md, "Search"), parsed here into tantivy
//! queries: one parser for HTTP, the CLI and the library.
//!
//! ```text
//! query   = or
//! or      = and { "OR" and }
//! and     = unary { ["AND"] unary }          bare clauses are ANDed
//! unary   = ("-" | "+" | "NOT") unary | primary
//! primary = "(" or ")" | [field ":"] atom
//! atom    = "*" (every document) | word ["*" | "~" N] | '"' words '"' ["*" | "~" N]
//!         | on date: day | month | year | time | A..B | [A TO B] | {A TO B}
//!                    | >=A | >A | <=A | <A
//! ```
//!
//! Words and phrases go through the store's analyzer, as the indexed text
//! did. `word*` matches every indexed term starting with the word (at
//! least [`MIN_PREFIX_CHARS`] characters); `word~N` every term within N
//! edits (N <= 2; insert, delete, substitute, or swap two adjacent
//! characters); `"a b"*` phrases whose last word is a prefix. Dates are
//! UTC: a day, month or year stands for the whole of it, as a bound too
//! (an inclusive upper bound includes all of it; an exclusive one none).
//! Every error names the byte where it is.

use std::ops::Bound;

use rowsearch_store::{Analyzer, FieldKind, SearchField};
use tantivy::Term;
use tantivy::query::{AllQuery, BooleanQuery, EmptyQuery, Occur, PhraseQuery, Query, RangeQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

use crate::doc::{DATE_FIELD, DocSchema};
use crate::expand::{Expansion, WordQuery};
use crate::phrase_prefix::PhrasePrefix;
use crate::sloppy_phrase::SloppyPhrase;
use crate::word_cursor::PositionFiles;

/// Deepest nesting of parentheses a query may have: the parser and the
/// query tree recurse once per level, and a request must not be able to
/// exhaust a worker's stack.
pub const MAX_QUERY_DEPTH: usize = 32;

/// Shortest word a prefix query takes (characters).
pub const MIN_PREFIX_CHARS: usize = 2;
pub use crate::phrase_prefix::MAX_COMPLETIONS as MAX_PHRASE_EXPANSIONS;
/// Most edits a fuzzy term takes.
pub const MAX_EDITS: u8 = 2;
/// Most moves a sloppy phrase (`"a b"~N`) takes.
pub const MAX_SLOP: u32 = 100;
/// Most words a phrase takes.
pub const MAX_PHRASE_WORDS: usize = 32;
/// Most times one word may stand in a sloppy phrase.
pub const MAX_SLOPPY_REPEATS: usize = 4;

/// A query that does not parse: why, and the byte where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// Byte offset in the query.
    pub position: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses `text` over `schema`'s fields, analysing words with `analyzer`.
///
/// # Errors
/// [`QueryError`] with the byte where the query goes wrong.
pub fn parse(text: &str, schema: &DocSchema, analyzer: &dyn Analyzer) -> Result<Box<dyn Query>, QueryError> {
    parse_with(text, schema, analyzer, &ParseOptions::default())
}

/// How a query is read beyond its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Tolerate typos in plain words as Meilisearch does by default
    /// (`typos=auto`): a word of [`ONE_TYPO_CHARS`] characters or more
    /// also matches terms one typo away, of [`TWO_TYPOS_CHARS`] or more two,
    /// a typo on the first character counting as two (`crate::typos`);
    /// the exact word scores above its variants (its BM25 plus the
    /// variants' constant score), so exact matches rank first.
    pub typos: bool,
    /// Most expansion units a query may use (0: [`DEFAULT_MAX_EXPANSIONS`]):
    /// a prefix, a fuzzy word or a word with typo variants counts 1, a
    /// phrase prefix [`PHRASE_PREFIX_UNITS`] (each completion of its last
    /// word is a phrase to find). Past it the query is refused, not run.
    pub max_expansions: usize,
    /// Most leaf clauses (terms, phrases' words, expanding words, dates) a
    /// query may have (0: [`DEFAULT_MAX_CLAUSES`]).
    pub max_clauses: usize,
    /// The search stops with `Cancelled` once this fires, looked at before
    /// each segment and each expanding word's walk of a segment's terms
    /// (`crate::cancellable`). The default never fires.
    pub cancel: rowsearch_store::Cancel,
}

/// Default most expansion units of a query ([`ParseOptions::max_expansions`]).
pub const DEFAULT_MAX_EXPANSIONS: usize = 32;
/// What a phrase prefix (`"a b"*`) counts against the expansion budget.
pub const PHRASE_PREFIX_UNITS: usize = 4;
/// Default most leaf clauses of a query ([`ParseOptions::max_clauses`]),
/// Elasticsearch's `max_clause_count`.
pub const DEFAULT_MAX_CLAUSES: usize = 1024;

pub use crate::typos::{ONE_TYPO_CHARS, TWO_TYPOS_CHARS};

/// What a parsed query costs: (expansion units, leaf clauses).
fn cost(query: &dyn Query) -> (usize, usize) {
    if let Some(boolean) = query.downcast_ref::<BooleanQuery>() {
        return boolean.clauses().iter().fold((0, 0), |(e, c), (_, q)| {
            let (qe, qc) = cost(q.as_ref());
            (e + qe, c + qc)
        });
    }
    if query.downcast_ref::<WordQuery>().is_some() {
        return (1, 1);
    }
    if let Some(phrase) = query.downcast_ref::<PhrasePrefix>() {
        return (PHRASE_PREFIX_UNITS, phrase.words());
    }
    let mut terms = 0;
    query.query_terms(&mut |_, _| terms += 1);
    (0, terms.max(1))
}

/// [`parse`] with `options`.
///
/// # Errors
/// As [`parse`].
pub fn parse_with(
    text: &str,
    schema: &DocSchema,
    analyzer: &dyn Analyzer,
    options: &ParseOptions,
) -> Result<Box<dyn Query>, QueryError> {
    parse_over(text, schema, analyzer, options, &PositionFiles::default())
}

/// [`parse_with`] for an index whose segments' positions are opened
/// (`positions`, what its phrases read; segments it does not hold are
/// opened as they are met).
///
/// # Errors
/// As [`parse`].
pub fn parse_over(
    text: &str,
    schema: &DocSchema,
    analyzer: &dyn Analyzer,
    options: &ParseOptions,
    positions: &PositionFiles,
) -> Result<Box<dyn Query>, QueryError> {
    let mut parser = Parser {
        text,
        at: 0,
        schema,
        analyzer,
        depth: 0,
        typos: options.typos,
        cancel: &options.cancel,
        positions,
    };
    parser.skip_space();
    if parser.at == text.len() {
        return Err(parser.error("the query is empty"));
    }
    let query = parser.or()?;
    parser.skip_space();
    if parser.at < text.len() {
        return Err(parser.error(&format!("unexpected {:?}", parser.rest().chars().next().unwrap_or(' '))));
    }
    let query = query.unwrap_or_else(|| Box::new(EmptyQuery));
    let (expansions, clauses) = cost(&*query);
    let max_expansions =
        if options.max_expansions == 0 { DEFAULT_MAX_EXPANSIONS } else { options.max_expansions };
    let max_clauses = if options.max_clauses == 0 { DEFAULT_MAX_CLAUSES } else { options.max_clauses };
    if expansions > max_expansions {
        return Err(parser.error_at(
            0,
            &format!(
                "the query expands words worth {expansions} units (a prefix, fuzzy word or typo-tolerant \
                 word 1, a phrase prefix {PHRASE_PREFIX_UNITS}); at most {max_expansions} (serve --max-expansions)"
            ),
        ));
    }
    if clauses > max_clauses {
        return Err(parser.error_at(
            0,
            &format!("the query has {clauses} clauses; at most {max_clauses} (serve --max-clauses)"),
        ));
    }
    Ok(crate::cancellable::query(query, &options.cancel))
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    schema: &'a DocSchema,
    analyzer: &'a dyn Analyzer,
    depth: usize,
    typos: bool,
    cancel: &'a rowsearch_store::Cancel,
    positions: &'a PositionFiles,
}

/// A clause and how it joins its neighbours.
type Clause = (Occur, Box<dyn Query>);

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn error(&self, reason: &str) -> QueryError {
        QueryError { position: self.at, reason: format!("{reason} at byte {}", self.at) }
    }

    fn error_at(&self, position: usize, reason: &str) -> QueryError {
        QueryError { position, reason: format!("{reason} at byte {position}") }
    }

    fn skip_space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    /// Whether the keyword `word` (followed by a space or a bracket)
    /// comes next.
    fn keyword(&self, word: &str) -> bool {
        self.rest()
            .strip_prefix(word)
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t', '\n', '(', '"']))
    }

    fn or(&mut self) -> Result<Option<Box<dyn Query>>, QueryError> {
        let mut alternatives = vec![self.and()?];
        loop {
            self.skip_space();
            if !self.keyword("OR") {
                break;
            }
            self.at += 2;
            alternatives.push(self.and()?);
        }
        if alternatives.len() == 1 {
            return Ok(alternatives.pop().flatten());
        }
        let should: Vec<Clause> = alternatives.into_iter().flatten().map(|q| (Occur::Should, q)).collect();
        Ok((!should.is_empty()).then(|| Box::new(BooleanQuery::new(should)) as Box<dyn Query>))
    }

    fn and(&mut self) -> Result<Option<Box<dyn Query>>, QueryError> {
        let mut clauses: Vec<Clause> = Vec::new();
        let start = self.at;
        loop {
            self.skip_space();
            if self.at == self.text.len() || self.rest().starts_with(')') || self.keyword("OR") {
                break;
            }
            if self.keyword("AND") {
                self.at += 3;
                continue;
            }
            if let Some(clause) = self.unary()? {
                clauses.push(clause);
            }
        }
        if self.at == start || (clauses.is_empty() && self.text[start..self.at].trim().is_empty()) {
            return Err(self.error("a clause is missing"));
        }
        if clauses.is_empty() {
            return Ok(None);
        }
        if clauses.iter().all(|(occur, _)| *occur == Occur::MustNot) {
            clauses.push((Occur::Must, Box::new(AllQuery)));
        }
        if clauses.len() == 1 && clauses[0].0 == Occur::Must {
            return Ok(clauses.pop().map(|(_, q)| q));
        }
        Ok(Some(Box::new(BooleanQuery::new(clauses))))
    }

    fn unary(&mut self) -> Result<Option<Clause>, QueryError> {
        let sign_at = self.at;
        let occur = if self.rest().starts_with('-') {
            self.at += 1;
            Occur::MustNot
        } else if self.rest().starts_with('+') {
            self.at += 1;
            Occur::Must
        } else if self.keyword("NOT") {
            self.at += 3;
            self.skip_space();
            Occur::MustNot
        } else {
            Occur::Must
        };
        if occur == Occur::MustNot && self.rest().starts_with([' ', '\t', '\n']) {
            return Err(self.error_at(sign_at, "nothing follows the negation"));
        }
        Ok(self.primary()?.map(|q| (occur, q)))
    }

    fn primary(&mut self) -> Result<Option<Box<dyn Query>>, QueryError> {
        if self.rest().starts_with('(') {
            let open = self.at;
            self.depth += 1;
            if self.depth > MAX_QUERY_DEPTH {
                return Err(self.error("nesting too deep"));
            }
            self.at += 1;
            let inner = self.or()?;
            self.skip_space();
            if !self.rest().starts_with(')') {
                return Err(self.error_at(open, "this parenthesis is not closed"));
            }
            self.at += 1;
            self.depth -= 1;
            return Ok(inner);
        }
        if self.rest().starts_with(')') {
            return Err(self.error("a parenthesis closes that was not opened"));
        }
        // `field:` when the text before a colon names a field.
        let word_end =
            self.rest().find(|c: char| c.is_whitespace() || "()\"".contains(c)).unwrap_or(self.rest().len());
        let word = &self.rest()[..word_end];
        if let Some((name, _)) = word.split_once(':')
            && !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            let name_at = self.at;
            self.at += name.len() + 1;
            if name == DATE_FIELD {
                return self.date().map(Some);
            }
            let Some(index) = self.schema.field_index(name) else {
                let fields: Vec<&str> = self.schema.names.iter().map(String::as_str).collect();
                return Err(self
                    .error_at(name_at, &format!("no field {name:?} (fields: {}, date)", fields.join(", "))));
            };
            let field = self.schema.fields[index];
            if self.rest().starts_with([' ', '\t', '\n', ')']) || self.at == self.text.len() {
                return Err(self.error(&format!("nothing follows {name}:")));
            }
            if self.rest().starts_with('(') {
                return Err(
                    self.error(&format!("{name}:( ... ) is not supported: write {name}: before each word"))
                );
            }
            return self.atom(field);
        }
        self.atom(self.schema.all)
    }

    /// A word or phrase on `field`, with its `*` or `~N`.
    fn atom(&mut self, field: Field) -> Result<Option<Box<dyn Query>>, QueryError> {
        let start = self.at;
        // `*` alone: every document.
        if field == self.schema.all
            && self.rest().starts_with('*')
            && self.rest()[1..].chars().next().is_none_or(|c| c.is_whitespace() || c == ')')
        {
            self.at += 1;
            return Ok(Some(Box::new(AllQuery)));
        }
        let (text, phrase) = if self.rest().starts_with('"') {
            let Some(len) = self.rest()[1..].find('"') else {
                return Err(self.error("this quote is not closed"));
            };
            let text = &self.text[start + 1..start + 1 + len];
            self.at += len + 2;
            (text, true)
        } else {
            let len = self
                .rest()
                .find(|c: char| c.is_whitespace() || "()\"".contains(c))
                .unwrap_or(self.rest().len());
            let mut word = &self.rest()[..len];
            self.at += len;
            // The suffix is part of the word's text: strip it back.
            if let Some(stripped) = word.strip_suffix('*') {
                word = stripped;
                self.at -= 1;
            } else if let Some(tilde) = word.rfind('~') {
                self.at -= word.len() - tilde;
                word = &word[..tilde];
            }
            (word, false)
        };
        let suffix_at = self.at;
        let (prefix, edits, slop) = if self.rest().starts_with('*') {
            self.at += 1;
            (true, None, 0)
        } else if let Some(rest) = self.rest().strip_prefix('~') {
            let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            let n: u32 = rest[..digits].parse().map_err(|_| self.error_at(suffix_at, "~ needs a number"))?;
            self.at += 1 + digits;
            if phrase { (false, None, n) } else { (false, Some(n), 0) }
        } else {
            (false, None, 0)
        };
        let terms = self.terms(field, text);
        if prefix {
            let chars = if phrase {
                terms.last().map_or(0, |(t, _)| t.chars().count())
            } else {
                text.chars().count()
            };
            if chars < MIN_PREFIX_CHARS {
                return Err(
                    self.error_at(start, &format!("a prefix needs at least {MIN_PREFIX_CHARS} characters"))
                );
            }
        }
        if terms.is_empty() {
            // Only punctuation: nothing to look for (the clause drops out).
            return Ok(None);
        }
        if terms.len() > MAX_PHRASE_WORDS {
            return Err(self.error_at(
                start,
                &format!("a phrase takes at most {MAX_PHRASE_WORDS} words (this one has {})", terms.len()),
            ));
        }
        if prefix {
            if terms.len() == 1 {
                let term = Term::from_field_text(field, &terms[0].0);
                return Ok(Some(Box::new(WordQuery::new(term, Expansion::Prefix, self.cancel))));
            }
            let mut words: Vec<_> =
                terms.into_iter().map(|(t, p)| (p, Term::from_field_text(field, &t))).collect();
            let across = self.across(field);
            return Ok(words.pop().map(|last| match across {
                Some(fields) => {
                    Box::new(PhrasePrefix::across(words, last, fields, self.cancel).reading(self.positions))
                        as Box<dyn Query>
                }
                None => Box::new(PhrasePrefix::new(words, last, self.cancel).reading(self.positions)),
            }));
        }
        if let Some(n) = edits {
            if n > u32::from(MAX_EDITS) {
                return Err(self.error_at(suffix_at, &format!("at most {MAX_EDITS} edits (~{n})")));
            }
            if terms.len() != 1 {
                return Err(self.error_at(start, "~N takes one word; quote a phrase"));
            }
            let term = Term::from_field_text(field, &terms[0].0);
            return Ok(Some(Box::new(WordQuery::new(term, Expansion::Edits(n as u8), self.cancel))));
        }
        if terms.len() == 1 {
            let term = Term::from_field_text(field, &terms[0].0);
            let exact = Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
            let chars = terms[0].0.chars().count();
            let typos = if self.typos && !phrase { crate::typos::allowed(chars) } else { 0 };
            if typos == 0 {
                return Ok(Some(exact));
            }
            let variants = Box::new(WordQuery::new(term, Expansion::Typos(typos), self.cancel));
            return Ok(Some(Box::new(BooleanQuery::new(vec![
                (Occur::Should, exact),
                (Occur::Should, variants),
            ]))));
        }
        if slop > MAX_SLOP {
            return Err(self.error_at(suffix_at, &format!("a phrase takes at most ~{MAX_SLOP} (~{slop})")));
        }
        if slop > 0 {
            for (word, _) in &terms {
                let repeats = terms.iter().filter(|(w, _)| w == word).count();
                if repeats > MAX_SLOPPY_REPEATS {
                    return Err(self.error_at(
                        start,
                        &format!(
                            "a sloppy phrase takes one word at most {MAX_SLOPPY_REPEATS} times ({word:?} stands \
                             {repeats} times)"
                        ),
                    ));
                }
            }
        }
        // A bare exact phrase of two words: its word pair, if the index
        // keeps pairs (`pairs.rs`).
        let pair = match (&terms[..], self.schema.pairs) {
            ([(a, p), (b, q)], Some(pairs))
                if slop == 0
                    && *q == p + 1
                    && a != b
                    && crate::pairs::usable(a)
                    && crate::pairs::usable(b) =>
            {
                Some(Term::from_field_text(pairs, &crate::pairs::text(a, b)))
            }
            _ => None,
        };
        let words: Vec<_> = terms.into_iter().map(|(t, p)| (p, Term::from_field_text(field, &t))).collect();
        if let Some(fields) = self.across(field) {
            // Exact (slop 0) too: `_all` keeps no positions.
            let phrase = SloppyPhrase::across(words, fields, slop, self.cancel).reading(self.positions);
            return Ok(Some(Box::new(match pair {
                Some(pair) => phrase.with_pair(pair),
                None => phrase,
            })));
        }
        if slop > 0 {
            // Ours, not tantivy's sloppy scorer (`crate::sloppy_phrase`).
            return Ok(Some(Box::new(SloppyPhrase::new(words, slop, self.cancel).reading(self.positions))));
        }
        Ok(Some(Box::new(PhraseQuery::new_with_offset(words))))
    }

    /// For a phrase on `field`: the fields to match it in when it is `_all`
    /// without positions (every field `_all` holds); `None` to match it
    /// in `field` itself.
    fn across(&self, field: Field) -> Option<Vec<Field>> {
        (field == self.schema.all && !self.schema.all_positions).then(|| self.schema.fields.clone())
    }

    /// `text`'s terms with their positions, as the analyzer makes them.
    fn terms(&self, field: Field, text: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let kind = self
            .schema
            .fields
            .iter()
            .position(|f| *f == field)
            .map_or(FieldKind::Text, |i| self.schema.kinds[i]);
        let field = SearchField { kind, ..SearchField::text("", "") };
        self.analyzer.terms(&field, text, &mut |term, position| {
            out.push((term.to_owned(), position as usize));
        });
        out
    }

    /// The value of `date:` in any of its forms.
    fn date(&mut self) -> Result<Box<dyn Query>, QueryError> {
        let start = self.at;
        let range = |lower: Bound<i64>, upper: Bound<i64>| -> Box<dyn Query> {
            let term = |ms: i64| {
                Term::from_field_date(self.schema.date, tantivy::DateTime::from_timestamp_millis(ms))
            };
            if matches!((&lower, &upper), (Bound::Unbounded, Bound::Unbounded)) {
                // `date:[* TO *]`, `date:..`: every date, so every document
                // (tantivy's range query needs a bound to know its field).
                return Box::new(AllQuery);
            }
            Box::new(RangeQuery::new(lower.map(term), upper.map(term)))
        };
        if let Some(close) = match self.rest().chars().next() {
            Some('[') => Some(']'),
            Some('{') => Some('}'),
            _ => None,
        } {
            let Some(len) = self.rest().find([']', '}']) else {
                return Err(self.error("this range is not closed"));
            };
            let inner = &self.text[start + 1..start + len];
            let right = self.text[start + len..].chars().next().unwrap_or(close);
            let Some((a, b)) = inner.split_once(" TO ") else {
                return Err(self.error_at(start, "a range is [A TO B] (or {A TO B}, * for open ends)"));
            };
            let (a_at, b_at) = (start + 1, start + 1 + a.len() + 4);
            let lower = match a.trim() {
                "*" => Bound::Unbounded,
                a => {
                    let (from, to) = self.period(a.trim(), a_at)?;
                    if self.rest().starts_with('[') { Bound::Included(from) } else { Bound::Included(to) }
                }
            };
            let upper = match b.trim() {
                "*" => Bound::Unbounded,
                b => {
                    let (from, to) = self.period(b.trim(), b_at)?;
                    if right == ']' { Bound::Excluded(to) } else { Bound::Excluded(from) }
                }
            };
            self.at += len + 1;
            return Ok(range(lower, upper));
        }
        let len = self.rest().find(|c: char| c.is_whitespace() || c == ')').unwrap_or(self.rest().len());
        let value = &self.text[start..start + len];
        self.at += len;
        if value.is_empty() {
            return Err(self.error_at(start, "nothing follows date:"));
        }
        if let Some((a, b)) = value.split_once("..") {
            let lower =
                if a.is_empty() { Bound::Unbounded } else { Bound::Included(self.period(a, start)?.0) };
            let upper = if b.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(self.period(b, start + a.len() + 2)?.1)
            };
            return Ok(range(lower, upper));
        }
        for (op, make) in [
            (
                ">=",
                (|(from, _): (i64, i64)| (Bound::Included(from), Bound::Unbounded))
                    as fn((i64, i64)) -> (Bound<i64>, Bound<i64>),
            ),
            ("<=", |(_, to)| (Bound::Unbounded, Bound::Excluded(to))),
            (">", |(_, to)| (Bound::Included(to), Bound::Unbounded)),
            ("<", |(from, _)| (Bound::Unbounded, Bound::Excluded(from))),
        ] {
            if let Some(rest) = value.strip_prefix(op) {
                let (lower, upper) = make(self.period(rest, start + op.len())?);
                return Ok(range(lower, upper));
            }
        }
        let (from, to) = self.period(value, start)?;
        Ok(range(Bound::Included(from), Bound::Excluded(to)))
    }

    /// The milliseconds a date stands for, `[from, to)`: a year, a month,
    /// a day (UTC), or one instant (RFC 3339).
    fn period(&self, text: &str, at: usize) -> Result<(i64, i64), QueryError> {
        let bad = || {
            self.error_at(
                at,
                &format!(
                    "{text:?} is not a date (YYYY, YYYY-MM, YYYY-MM-DD or RFC 3339 like 2001-05-14T16:39:00Z)"
                ),
            )
        };
        if let Ok(t) = text.parse::<jiff::Timestamp>() {
            let ms = t.as_millisecond();
            return Ok((ms, ms + 1));
        }
        let parts: Vec<&str> = text.split('-').collect();
        let number = |s: &str, digits: usize| -> Option<i16> {
            (s.len() == digits && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
        };
        let (year, month, day) = match parts.as_slice() {
            [y] => (number(y, 4).ok_or_else(bad)?, None, None),
            [y, m] => (number(y, 4).ok_or_else(bad)?, Some(number(m, 2).ok_or_else(bad)?), None),
            [y, m, d] => (
                number(y, 4).ok_or_else(bad)?,
                Some(number(m, 2).ok_or_else(bad)?),
                Some(number(d, 2).ok_or_else(bad)?),
            ),
            _ => return Err(bad()),
        };
        let (from, to) = match (month, day) {
            (None, _) => {
                let from = jiff::civil::Date::new(year, 1, 1).map_err(|_| bad())?;
                (from, from.checked_add(jiff::Span::new().years(1)).map_err(|_| bad())?)
            }
            (Some(m), None) => {
                let from = jiff::civil::Date::new(year, m as i8, 1).map_err(|_| bad())?;
                (from, from.checked_add(jiff::Span::new().months(1)).map_err(|_| bad())?)
            }
            (Some(m), Some(d)) => {
                let from = jiff::civil::Date::new(year, m as i8, d as i8).map_err(|_| bad())?;
                (from, from.checked_add(jiff::Span::new().days(1)).map_err(|_| bad())?)
            }
        };
        let ms = |d: jiff::civil::Date| -> Result<i64, QueryError> {
            Ok(d.to_zoned(jiff::tz::TimeZone::UTC).map_err(|_| bad())?.timestamp().as_millisecond())
        };
        Ok((ms(from)?, ms(to)?))
    }
}

/// Longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 8 << 10;

/// Refuses a query too long or nested too deep, before anything recurses
/// over it; the reason names the byte where it goes wrong.
pub(crate) fn check_shape(query: &str) -> crate::Result<()> {
    let refuse = |reason: String| crate::Error::Query {
        query: query.chars().take(80).collect(),
        reason,
        position: None,
    };
    if query.len() > MAX_QUERY_BYTES {
        return Err(refuse(format!("the query is {} bytes, at most {MAX_QUERY_BYTES}", query.len())));
    }
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    for (at, b) in query.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => quoted = !quoted,
            b'(' | b'[' | b'{' if !quoted => {
                depth += 1;
                if depth > MAX_QUERY_DEPTH {
                    return Err(refuse(format!("nesting deeper than {MAX_QUERY_DEPTH} levels at byte {at}")));
                }
            }
            b')' | b']' | b'}' if !quoted => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    #[test]
    fn deep_or_long_queries_are_refused_with_where() {
        let deep = format!("{}gas{}", "(".repeat(MAX_QUERY_DEPTH + 1), ")".repeat(MAX_QUERY_DEPTH + 1));
        match check_shape(&deep) {
            Err(crate::Error::Query { reason, .. }) => {
                assert!(reason.contains(&format!("byte {MAX_QUERY_DEPTH}")), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(check_shape(&"-(".repeat(3000)).is_err());
        assert!(check_shape(&"a ".repeat(MAX_QUERY_BYTES)).is_err());
        let fine = format!("{}gas{}", "(".repeat(MAX_QUERY_DEPTH), ")".repeat(MAX_QUERY_DEPTH));
        assert!(check_shape(&fine).is_ok());
        // Parentheses inside a phrase do not nest.
        assert!(check_shape(&format!("\"{}\"", "(".repeat(100))).is_ok());
    }
}
