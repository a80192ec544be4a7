//! HBase's filter language (the string form of its shell and gateways),
//! parsed into [`Filter`]s.
//!
//! ```text
//! expr    := and ('OR' and)*                 -- OR binds loosest
//! and     := unary ('AND' unary)*
//! unary   := ('SKIP' | 'WHILE') unary | '(' expr ')' | filter
//! filter  := Name '(' [arg (',' arg)*] ')'
//! arg     := 'quoted' | integer | decimal | true | false | < | <= | = | != | >= | >
//! ```
//!
//! A quoted argument is taken byte for byte; `''` inside it is one quote.
//! A comparator is a quoted `binary:`, `binaryprefix:`, `regexstring:` or
//! `substring:` followed by its operand. Keywords are upper case, as in HBase.

use super::{Comparator, CompareOp, Filter, ListOp, RegexComparator};
use crate::error::{ErrorKind, Result};

/// Longest filter string accepted, in bytes.
pub const MAX_FILTER_BYTES: usize = 64 * 1024;
/// Deepest nesting of parentheses, SKIP and WHILE accepted.
pub const MAX_FILTER_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Quoted(Vec<u8>),
    Number(String),
    Op(CompareOp),
    Open,
    Close,
    Comma,
    End,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Ident(name) => format!("{name:?}"),
            Token::Quoted(bytes) => format!("quoted '{}'", crate::binstr::encode(bytes)),
            Token::Number(n) => format!("number {n}"),
            Token::Op(op) => format!("operator {}", op.symbol()),
            Token::Open => "'('".into(),
            Token::Close => "')'".into(),
            Token::Comma => "','".into(),
            Token::End => "end of input".into(),
        }
    }
}

fn error(position: usize, expected: impl Into<String>, found: impl Into<String>) -> crate::Error {
    ErrorKind::InvalidFilter { position, expected: expected.into(), found: found.into() }.into()
}

fn tokenize(input: &[u8]) -> Result<Vec<(usize, Token)>> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let start = i;
        let b = input[i];
        let token = match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' => {
                i += 1;
                Token::Open
            }
            b')' => {
                i += 1;
                Token::Close
            }
            b',' => {
                i += 1;
                Token::Comma
            }
            b'\'' => {
                let mut bytes = Vec::new();
                i += 1;
                loop {
                    match input.get(i) {
                        None => {
                            return Err(error(start, "a closing quote", "end of input (unterminated quote)"));
                        }
                        Some(b'\'') if input.get(i + 1) == Some(&b'\'') => {
                            bytes.push(b'\'');
                            i += 2;
                        }
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(&c) => {
                            bytes.push(c);
                            i += 1;
                        }
                    }
                }
                Token::Quoted(bytes)
            }
            b'<' | b'>' | b'=' | b'!' => {
                let two = input.get(i + 1) == Some(&b'=');
                let op = match (b, two) {
                    (b'<', true) => CompareOp::LessOrEqual,
                    (b'<', false) => CompareOp::Less,
                    (b'>', true) => CompareOp::GreaterOrEqual,
                    (b'>', false) => CompareOp::Greater,
                    (b'=', _) => CompareOp::Equal,
                    (_, true) => CompareOp::NotEqual,
                    (_, false) => return Err(error(start, "'!='", "'!' alone")),
                };
                i += if two && b != b'=' { 2 } else { 1 };
                Token::Op(op)
            }
            b'-' | b'0'..=b'9' | b'.' => {
                i += 1;
                while input.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'.') {
                    i += 1;
                }
                Token::Number(String::from_utf8_lossy(&input[start..i]).into_owned())
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while input.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    i += 1;
                }
                Token::Ident(String::from_utf8_lossy(&input[start..i]).into_owned())
            }
            _ => {
                let shown = std::str::from_utf8(&input[i..])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or_else(|| format!("byte 0x{b:02x}"), |c| format!("{c:?}"));
                return Err(error(start, "a filter, '(' or an argument", shown));
            }
        };
        tokens.push((start, token));
    }
    tokens.push((input.len(), Token::End));
    Ok(tokens)
}

/// An argument of a filter call, with its position.
#[derive(Debug)]
struct Arg {
    at: usize,
    token: Token,
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    next: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &(usize, Token) {
        // `tokens` always ends with `End`, which is never consumed.
        &self.tokens[self.next.min(self.tokens.len() - 1)]
    }

    fn bump(&mut self) -> (usize, Token) {
        let t = self.peek().clone();
        if t.1 != Token::End {
            self.next += 1;
        }
        t
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(&self.peek().1, Token::Ident(w) if w == word)
    }

    fn expr(&mut self) -> Result<Filter> {
        self.list(ListOp::One, "OR", Parser::and)
    }

    fn and(&mut self) -> Result<Filter> {
        self.list(ListOp::All, "AND", Parser::unary)
    }

    /// `operand (KEYWORD operand)*`: the operand alone, or a list of them.
    fn list(
        &mut self,
        op: ListOp,
        keyword: &str,
        operand: fn(&mut Parser) -> Result<Filter>,
    ) -> Result<Filter> {
        let mut parts = vec![operand(self)?];
        while self.keyword(keyword) {
            self.bump();
            parts.push(operand(self)?);
        }
        Ok(if parts.len() == 1 { parts.remove(0) } else { Filter::List(op, parts) })
    }

    fn unary(&mut self) -> Result<Filter> {
        let (at, token) = self.peek().clone();
        self.depth += 1;
        if self.depth > MAX_FILTER_DEPTH {
            return Err(error(at, format!("at most {MAX_FILTER_DEPTH} levels of nesting"), "deeper nesting"));
        }
        let filter = match token {
            Token::Ident(w) if w == "SKIP" => {
                self.bump();
                Filter::Skip(Box::new(self.unary()?))
            }
            Token::Ident(w) if w == "WHILE" => {
                self.bump();
                Filter::WhileMatch(Box::new(self.unary()?))
            }
            Token::Open => {
                self.bump();
                let inner = self.expr()?;
                let (at, close) = self.bump();
                if close != Token::Close {
                    return Err(error(at, "')' or AND/OR", close.describe()));
                }
                inner
            }
            Token::Ident(name) => {
                self.bump();
                self.call(at, &name)?
            }
            other => return Err(error(at, "a filter name, SKIP, WHILE or '('", other.describe())),
        };
        self.depth -= 1;
        Ok(filter)
    }

    fn call(&mut self, at: usize, name: &str) -> Result<Filter> {
        let (open_at, open) = self.bump();
        if open != Token::Open {
            return Err(error(open_at, format!("'(' after {name}"), open.describe()));
        }
        let mut args = Vec::new();
        if self.peek().1 == Token::Close {
            self.bump();
        } else {
            loop {
                let (arg_at, token) = self.bump();
                match token {
                    Token::Quoted(_) | Token::Number(_) | Token::Op(_) | Token::Ident(_) => {
                        args.push(Arg { at: arg_at, token });
                    }
                    other => return Err(error(arg_at, format!("an argument of {name}"), other.describe())),
                }
                let (sep_at, sep) = self.bump();
                match sep {
                    Token::Comma => {}
                    Token::Close => break,
                    other => return Err(error(sep_at, "',' or ')'", other.describe())),
                }
            }
        }
        let close_at = self.tokens[self.next - 1].0;
        build(name, at, close_at, args)
    }
}

/// Reads the arguments of one call.
struct Args {
    name: String,
    close_at: usize,
    args: std::vec::IntoIter<Arg>,
}

impl Args {
    fn next(&mut self, what: &str) -> Result<Arg> {
        self.args
            .next()
            .ok_or_else(|| error(self.close_at, format!("{what} (argument of {})", self.name), "')'"))
    }

    fn bytes(&mut self, what: &str) -> Result<Vec<u8>> {
        let arg = self.next(what)?;
        match arg.token {
            Token::Quoted(b) => Ok(b),
            other => Err(error(arg.at, format!("{what}, a quoted string"), other.describe())),
        }
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let at = self.args.as_slice().first().map_or(self.close_at, |a| a.at);
        String::from_utf8(self.bytes(what)?)
            .map_err(|_| error(at, format!("{what} in UTF-8"), "invalid UTF-8"))
    }

    fn integer<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        let arg = self.next(what)?;
        match &arg.token {
            Token::Number(n) => {
                n.parse().map_err(|_| error(arg.at, format!("{what}, an integer in range"), n.as_str()))
            }
            other => Err(error(arg.at, format!("{what}, an integer"), other.describe())),
        }
    }

    /// A non-negative Java `int`, as HBase's filters take counts: larger
    /// values are refused where HBase refuses them, not wrapped or widened.
    fn java_int(&mut self, what: &str) -> Result<u32> {
        let at = self.args.as_slice().first().map_or(self.close_at, |a| a.at);
        let n: i32 = self.integer(what)?;
        u32::try_from(n).map_err(|_| error(at, format!("{what}, not negative"), n.to_string()))
    }

    /// A non-negative Java `long` (timestamps, page sizes).
    fn java_long(&mut self, what: &str) -> Result<u64> {
        let at = self.args.as_slice().first().map_or(self.close_at, |a| a.at);
        let n: i64 = self.integer(what)?;
        u64::try_from(n).map_err(|_| error(at, format!("{what}, not negative"), n.to_string()))
    }

    fn float(&mut self, what: &str) -> Result<f32> {
        let arg = self.next(what)?;
        match &arg.token {
            Token::Number(n) => n.parse().map_err(|_| error(arg.at, format!("{what}, a number"), n.as_str())),
            other => Err(error(arg.at, format!("{what}, a number"), other.describe())),
        }
    }

    fn boolean(&mut self, what: &str) -> Result<bool> {
        let arg = self.next(what)?;
        match &arg.token {
            Token::Ident(w) if w.eq_ignore_ascii_case("true") => Ok(true),
            Token::Ident(w) if w.eq_ignore_ascii_case("false") => Ok(false),
            other => Err(error(arg.at, format!("{what}, true or false"), other.describe())),
        }
    }

    fn op(&mut self) -> Result<(usize, CompareOp)> {
        let arg = self.next("a compare operator")?;
        match arg.token {
            Token::Op(op) => Ok((arg.at, op)),
            other => Err(error(arg.at, "a compare operator (< <= = != >= >)", other.describe())),
        }
    }

    /// A compare operator and a comparator.
    fn comparison(&mut self) -> Result<(CompareOp, Comparator)> {
        let (op_at, op) = self.op()?;
        let arg = self.next("a comparator")?;
        let Token::Quoted(text) = arg.token else {
            return Err(error(arg.at, "a quoted comparator like 'binary:abc'", arg.token.describe()));
        };
        let colon = text.iter().position(|&b| b == b':').ok_or_else(|| {
            error(arg.at, "a comparator type (binary: binaryprefix: regexstring: substring:)", "no ':'")
        })?;
        let (kind, operand) = (&text[..colon], text[colon + 1..].to_vec());
        let utf8 = |what: &str| {
            String::from_utf8(operand.clone())
                .map_err(|_| error(arg.at, format!("a {what} operand in UTF-8"), "invalid UTF-8"))
        };
        let comparator = match kind {
            b"binary" => Comparator::Binary(operand.clone()),
            b"binaryprefix" => Comparator::BinaryPrefix(operand.clone()),
            b"regexstring" => {
                let source = utf8("regexstring")?;
                Comparator::Regex(
                    RegexComparator::new(&source).map_err(|e| error(arg.at, "a valid regex", e))?,
                )
            }
            b"substring" => Comparator::substring(&utf8("substring")?),
            other => {
                return Err(error(
                    arg.at,
                    "a comparator type (binary: binaryprefix: regexstring: substring:)",
                    format!("{:?}", String::from_utf8_lossy(other)),
                ));
            }
        };
        if matches!(comparator, Comparator::Regex(_) | Comparator::Substring(_))
            && !matches!(op, CompareOp::Equal | CompareOp::NotEqual)
        {
            return Err(error(
                op_at,
                "= or != (regexstring and substring only test for a match)",
                op.symbol(),
            ));
        }
        Ok((op, comparator))
    }

    /// A `FuzzyRowFilter` key's mask, as long as `key`: one byte per key
    /// byte, 0 fixed and 1 any, written as the digits '0' and '1' (or as
    /// the bytes \x00 and \x01, HBase's own form).
    fn fuzzy_mask(&mut self, key: Vec<u8>) -> Result<super::FuzzyKey> {
        const WHAT: &str = "a fuzzy key's mask (one '0' fixed or '1' any per key byte)";
        let arg = self.next(WHAT)?;
        let Token::Quoted(mask) = arg.token else {
            return Err(error(arg.at, WHAT, arg.token.describe()));
        };
        let mask: Option<Vec<u8>> = mask
            .iter()
            .map(|b| match b {
                b'0' | 0 => Some(0),
                b'1' | 1 => Some(1),
                _ => None,
            })
            .collect();
        match mask {
            Some(mask) if mask.len() == key.len() => Ok(super::FuzzyKey { key, mask }),
            Some(mask) => Err(error(
                arg.at,
                format!("a mask of {} bytes, as long as its key", key.len()),
                format!("{} bytes", mask.len()),
            )),
            None => Err(error(arg.at, WHAT, "other bytes")),
        }
    }

    fn more(&self) -> bool {
        self.args.len() > 0
    }

    fn finish(mut self) -> Result<()> {
        match self.args.next() {
            None => Ok(()),
            Some(extra) => Err(error(
                extra.at,
                format!("')': {} takes no more arguments", self.name),
                extra.token.describe(),
            )),
        }
    }
}

/// The filters the language knows, for error messages.
const FILTER_NAMES: &str = "RowFilter FamilyFilter QualifierFilter ValueFilter PrefixFilter KeyOnlyFilter \
FirstKeyOnlyFilter RandomRowFilter SingleColumnValueFilter SingleColumnValueExcludeFilter ColumnCountGetFilter \
ColumnPaginationFilter ColumnPrefixFilter MultipleColumnPrefixFilter ColumnRangeFilter TimestampsFilter PageFilter \
InclusiveStopFilter DependentColumnFilter ColumnValueFilter MultiRowRangeFilter FuzzyRowFilter";

fn build(name: &str, at: usize, close_at: usize, args: Vec<Arg>) -> Result<Filter> {
    let mut a = Args { name: name.to_owned(), close_at, args: args.into_iter() };
    let filter = match name {
        "RowFilter" | "FamilyFilter" | "QualifierFilter" | "ValueFilter" => {
            let (op, cmp) = a.comparison()?;
            match name {
                "RowFilter" => Filter::Row(op, cmp),
                "FamilyFilter" => Filter::Family(op, cmp),
                "QualifierFilter" => Filter::Qualifier(op, cmp),
                _ => Filter::Value(op, cmp),
            }
        }
        "PrefixFilter" => Filter::Prefix(a.bytes("the row prefix")?),
        "KeyOnlyFilter" => {
            let len_as_value = if a.more() { a.boolean("lenAsVal")? } else { false };
            Filter::KeyOnly { len_as_value }
        }
        "FirstKeyOnlyFilter" => Filter::FirstKeyOnly,
        "RandomRowFilter" => Filter::RandomRow { chance: a.float("the chance (0 to 1)")? },
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            let family = a.string("the family")?;
            let qualifier = a.bytes("the qualifier")?;
            let (op, comparator) = a.comparison()?;
            let (filter_if_missing, latest_version_only) = if a.more() {
                (a.boolean("filterIfMissing")?, a.boolean("latestVersionOnly")?)
            } else {
                (false, true)
            };
            Filter::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_version_only,
                exclude: name == "SingleColumnValueExcludeFilter",
            }
        }
        "ColumnCountGetFilter" => Filter::ColumnCountGet { limit: a.java_int("the column limit")? },
        "ColumnPaginationFilter" => Filter::ColumnPagination {
            limit: a.java_int("the column limit")?,
            offset: a.java_int("the column offset")?,
        },
        "ColumnPrefixFilter" => Filter::ColumnPrefix(a.bytes("the qualifier prefix")?),
        "MultipleColumnPrefixFilter" => {
            let mut prefixes = vec![a.bytes("a qualifier prefix")?];
            while a.more() {
                prefixes.push(a.bytes("a qualifier prefix")?);
            }
            Filter::MultipleColumnPrefix(prefixes)
        }
        "ColumnRangeFilter" => {
            let min = a.bytes("the minimum column")?;
            let min_inclusive = a.boolean("minColumnInclusive")?;
            let max = a.bytes("the maximum column")?;
            let max_inclusive = a.boolean("maxColumnInclusive")?;
            Filter::ColumnRange {
                min: (!min.is_empty()).then_some(min),
                min_inclusive,
                max: (!max.is_empty()).then_some(max),
                max_inclusive,
            }
        }
        "TimestampsFilter" => {
            let mut stamps = Vec::new();
            while a.more() {
                stamps.push(a.java_long("a timestamp")?);
            }
            Filter::Timestamps(stamps)
        }
        "PageFilter" => Filter::Page(a.java_long("the page size")?),
        "InclusiveStopFilter" => Filter::InclusiveStop(a.bytes("the stop row")?),
        "DependentColumnFilter" => {
            let family = a.string("the family")?;
            let qualifier = a.bytes("the qualifier")?;
            let drop_dependent_column = if a.more() { a.boolean("dropDependentColumn")? } else { false };
            let value = if a.more() { Some(a.comparison()?) } else { None };
            Filter::DependentColumn { family, qualifier, drop_dependent_column, value }
        }
        "ColumnValueFilter" => {
            let family = a.string("the family")?;
            let qualifier = a.bytes("the qualifier")?;
            let (op, comparator) = a.comparison()?;
            Filter::ColumnValue { family, qualifier, op, comparator }
        }
        "MultiRowRangeFilter" => {
            // (startRow, startInclusive, stopRow, stopInclusive) per range;
            // an empty row is an open side.
            let mut ranges = Vec::new();
            loop {
                let start = a.bytes("a range's start row")?;
                let start_inclusive = a.boolean("startRowInclusive")?;
                let stop = a.bytes("a range's stop row")?;
                let stop_inclusive = a.boolean("stopRowInclusive")?;
                ranges.push(super::MultiRowRange {
                    start: (!start.is_empty()).then_some(start),
                    start_inclusive,
                    stop: (!stop.is_empty()).then_some(stop),
                    stop_inclusive,
                });
                if !a.more() {
                    break;
                }
            }
            Filter::MultiRowRange(ranges)
        }
        "FuzzyRowFilter" => {
            let mut keys = Vec::new();
            loop {
                let key = a.bytes("a fuzzy key")?;
                keys.push(a.fuzzy_mask(key)?);
                if !a.more() {
                    break;
                }
            }
            Filter::FuzzyRow(keys)
        }
        other => return Err(error(at, format!("a filter name ({FILTER_NAMES})"), format!("{other:?}"))),
    };
    a.finish()?;
    Ok(filter)
}

impl Filter {
    /// Parses HBase's filter language.
    ///
    /// ```
    /// use rowsearch_store::{CompareOp, Comparator, Filter};
    /// let f = Filter::parse("PrefixFilter('row') AND QualifierFilter(>=, 'binary:b')").unwrap();
    /// assert_eq!(f, Filter::all([
    ///     Filter::Prefix(b"row".to_vec()),
    ///     Filter::Qualifier(CompareOp::GreaterOrEqual, Comparator::Binary(b"b".to_vec())),
    /// ]));
    /// let err = Filter::parse("PrefixFilter('row'").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid filter at byte 18: expected ',' or ')', found end of input");
    /// ```
    ///
    /// # Errors
    /// `InvalidFilter` naming the byte position, what was expected there and
    /// what was found.
    pub fn parse(input: impl AsRef<[u8]>) -> Result<Filter> {
        let input = input.as_ref();
        if input.len() > MAX_FILTER_BYTES {
            return Err(error(
                MAX_FILTER_BYTES,
                format!("at most {MAX_FILTER_BYTES} bytes"),
                "a longer filter",
            ));
        }
        let mut parser = Parser { tokens: tokenize(input)?, next: 0, depth: 0 };
        let filter = parser.expr()?;
        let (at, rest) = parser.bump();
        if rest != Token::End {
            let expected = if rest == Token::Close {
                "end of input (unbalanced ')')"
            } else {
                "AND, OR or end of input"
            };
            return Err(error(at, expected, rest.describe()));
        }
        Ok(filter)
    }
}

fn push_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.push(b'\'');
        }
        out.push(b);
    }
    out.push(b'\'');
}

fn push_comparison(out: &mut Vec<u8>, op: CompareOp, comparator: &Comparator) {
    out.extend_from_slice(op.symbol().as_bytes());
    out.extend_from_slice(b", ");
    let mut text = Vec::new();
    match comparator {
        Comparator::Binary(b) => {
            text.extend_from_slice(b"binary:");
            text.extend_from_slice(b);
        }
        Comparator::BinaryPrefix(b) => {
            text.extend_from_slice(b"binaryprefix:");
            text.extend_from_slice(b);
        }
        Comparator::Regex(r) => {
            text.extend_from_slice(b"regexstring:");
            text.extend_from_slice(r.source().as_bytes());
        }
        Comparator::Substring(s) => {
            text.extend_from_slice(b"substring:");
            text.extend_from_slice(s.as_bytes());
        }
    }
    push_quoted(out, &text);
}

impl Filter {
    /// The filter in HBase's filter language; [`Filter::parse`] reads it
    /// back. Lists are parenthesised. An empty list has no written form; it
    /// is written as `ColumnPrefixFilter('')`, which passes everything too.
    ///
    /// ```
    /// use rowsearch_store::Filter;
    /// let text = "(PrefixFilter('it''s') AND (RowFilter(<, 'binary:z') OR SKIP PageFilter(2)))";
    /// assert_eq!(Filter::parse(text).unwrap().to_language(), text.as_bytes());
    /// ```
    pub fn to_language(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_language(&mut out);
        out
    }

    fn write_language(&self, out: &mut Vec<u8>) {
        let call = |out: &mut Vec<u8>, name: &str| {
            out.extend_from_slice(name.as_bytes());
            out.push(b'(');
        };
        match self {
            Filter::Row(op, c) | Filter::Family(op, c) | Filter::Qualifier(op, c) | Filter::Value(op, c) => {
                let name = match self {
                    Filter::Row(..) => "RowFilter",
                    Filter::Family(..) => "FamilyFilter",
                    Filter::Qualifier(..) => "QualifierFilter",
                    _ => "ValueFilter",
                };
                call(out, name);
                push_comparison(out, *op, c);
            }
            Filter::Prefix(p) => {
                call(out, "PrefixFilter");
                push_quoted(out, p);
            }
            Filter::KeyOnly { len_as_value } => {
                call(out, "KeyOnlyFilter");
                if *len_as_value {
                    out.extend_from_slice(b"true");
                }
            }
            Filter::FirstKeyOnly => call(out, "FirstKeyOnlyFilter"),
            Filter::RandomRow { chance } => {
                call(out, "RandomRowFilter");
                out.extend_from_slice(format!("{chance}").as_bytes());
            }
            Filter::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_version_only,
                exclude,
            } => {
                call(
                    out,
                    if *exclude { "SingleColumnValueExcludeFilter" } else { "SingleColumnValueFilter" },
                );
                push_quoted(out, family.as_bytes());
                out.extend_from_slice(b", ");
                push_quoted(out, qualifier);
                out.extend_from_slice(b", ");
                push_comparison(out, *op, comparator);
                out.extend_from_slice(format!(", {filter_if_missing}, {latest_version_only}").as_bytes());
            }
            Filter::ColumnCountGet { limit } => {
                call(out, "ColumnCountGetFilter");
                out.extend_from_slice(limit.to_string().as_bytes());
            }
            Filter::ColumnPagination { limit, offset } => {
                call(out, "ColumnPaginationFilter");
                out.extend_from_slice(format!("{limit}, {offset}").as_bytes());
            }
            Filter::ColumnPrefix(p) => {
                call(out, "ColumnPrefixFilter");
                push_quoted(out, p);
            }
            Filter::MultipleColumnPrefix(ps) => {
                call(out, "MultipleColumnPrefixFilter");
                push_joined(out, ps.iter().map(|p| p.as_slice()), push_quoted);
            }
            Filter::ColumnRange { min, min_inclusive, max, max_inclusive } => {
                call(out, "ColumnRangeFilter");
                push_quoted(out, min.as_deref().unwrap_or_default());
                out.extend_from_slice(format!(", {min_inclusive}, ").as_bytes());
                push_quoted(out, max.as_deref().unwrap_or_default());
                out.extend_from_slice(format!(", {max_inclusive}").as_bytes());
            }
            Filter::Timestamps(stamps) => {
                call(out, "TimestampsFilter");
                let list: Vec<String> = stamps.iter().map(u64::to_string).collect();
                out.extend_from_slice(list.join(", ").as_bytes());
            }
            Filter::Page(size) => {
                call(out, "PageFilter");
                out.extend_from_slice(size.to_string().as_bytes());
            }
            Filter::InclusiveStop(stop) => {
                call(out, "InclusiveStopFilter");
                push_quoted(out, stop);
            }
            Filter::DependentColumn { family, qualifier, drop_dependent_column, value } => {
                call(out, "DependentColumnFilter");
                push_quoted(out, family.as_bytes());
                out.extend_from_slice(b", ");
                push_quoted(out, qualifier);
                out.extend_from_slice(format!(", {drop_dependent_column}").as_bytes());
                if let Some((op, comparator)) = value {
                    out.extend_from_slice(b", ");
                    push_comparison(out, *op, comparator);
                }
            }
            Filter::ColumnValue { family, qualifier, op, comparator } => {
                call(out, "ColumnValueFilter");
                push_quoted(out, family.as_bytes());
                out.extend_from_slice(b", ");
                push_quoted(out, qualifier);
                out.extend_from_slice(b", ");
                push_comparison(out, *op, comparator);
            }
            Filter::MultiRowRange(ranges) => {
                call(out, "MultiRowRangeFilter");
                write_ranges(ranges, out);
            }
            Filter::FuzzyRow(keys) => {
                call(out, "FuzzyRowFilter");
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    push_quoted(out, &k.key);
                    out.extend_from_slice(b", ");
                    let digits: Vec<u8> = k.mask.iter().map(|m| if *m == 0 { b'0' } else { b'1' }).collect();
                    push_quoted(out, &digits);
                }
            }
            Filter::List(op, filters) => write_list(*op, filters, out),
            Filter::Skip(inner) | Filter::WhileMatch(inner) => {
                out.extend_from_slice(if matches!(self, Filter::Skip(_)) { b"SKIP " } else { b"WHILE " });
                inner.write_language(out);
                return;
            }
        }
        out.push(b')');
    }
}

/// A list of filters, AND or OR, in parentheses (its closing one is the
/// caller's); an empty list as the one filter that passes everything.
fn write_list(op: ListOp, filters: &[Filter], out: &mut Vec<u8>) {
    if filters.is_empty() {
        // Passes every cell of every row, as an empty list does.
        out.extend_from_slice(b"ColumnPrefixFilter(''");
        return;
    }
    out.push(b'(');
    let between: &[u8] = if op == ListOp::All { b" AND " } else { b" OR " };
    for (i, f) in filters.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(between);
        }
        f.write_language(out);
    }
}

/// A `MultiRowRangeFilter`'s ranges: start, inclusive, stop, inclusive,
/// comma-separated (an open side as '').
fn write_ranges(ranges: &[super::MultiRowRange], out: &mut Vec<u8>) {
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        push_quoted(out, r.start.as_deref().unwrap_or_default());
        out.extend_from_slice(format!(", {}, ", r.start_inclusive).as_bytes());
        push_quoted(out, r.stop.as_deref().unwrap_or_default());
        out.extend_from_slice(format!(", {}", r.stop_inclusive).as_bytes());
    }
}

/// Items written by `write`, comma-separated.
fn push_joined<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a [u8]>, write: fn(&mut Vec<u8>, &[u8])) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        write(out, item);
    }
}
