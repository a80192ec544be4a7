//! Scan filters with HBase's names and semantics, and their evaluation.
//!
//! A filter sees one row at a time: its key and the cells the scan selected
//! (every version in the time range; the versions limit applies after the
//! filter, as in HBase 2). It decides whether the row is returned, which of
//! its cells are kept, and whether values are stripped (`KeyOnlyFilter`).
//! Filters that bound the row range (`PrefixFilter`, `InclusiveStopFilter`,
//! a binary `RowFilter`, and these under `WhileMatchFilter` or an `AND` list)
//! narrow the LMDB range the scan walks; filters that end the scan
//! (`PageFilter`, `WhileMatchFilter`, `InclusiveStopFilter`,
//! `ColumnCountGetFilter`) stop it as soon as they say so.
//!
//! Differences from HBase, all documented in API.md and the README:
//! `regexstring` is Rust's `regex` (no lookaround or backreferences) and
//! matches anywhere in the value with `.` matching a newline; `substring`
//! ignores case; `PageFilter` counts rows over the whole scan (HBase counts
//! per region server); `RandomRowFilter` decides by a hash of the row key, so
//! the same rows are sampled on every run. Every child of a `FilterList` sees
//! every cell of the row (HBase 2's behaviour), except that a row an earlier
//! child of an `AND` rejected, or emptied of cells, does not reach the later
//! children: `X AND PageFilter(n)` pages over the rows `X` passes, as in HBase.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use crate::cell::Cell;
use crate::key::range::RowRange;

pub(crate) mod lang;
mod proto;

/// A comparison operator: `subject OP operand`, where the subject is the
/// row key, family, qualifier or value and the operand the comparator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `>=`
    GreaterOrEqual,
    /// `>`
    Greater,
}

impl CompareOp {
    /// Whether `ord` (the subject compared with the operand) satisfies the
    /// operator.
    pub fn accepts(self, ord: Ordering) -> bool {
        match self {
            CompareOp::Less => ord == Ordering::Less,
            CompareOp::LessOrEqual => ord != Ordering::Greater,
            CompareOp::Equal => ord == Ordering::Equal,
            CompareOp::NotEqual => ord != Ordering::Equal,
            CompareOp::GreaterOrEqual => ord != Ordering::Less,
            CompareOp::Greater => ord == Ordering::Greater,
        }
    }

    /// The operator as the filter language writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Less => "<",
            CompareOp::LessOrEqual => "<=",
            CompareOp::Equal => "=",
            CompareOp::NotEqual => "!=",
            CompareOp::GreaterOrEqual => ">=",
            CompareOp::Greater => ">",
        }
    }
}

/// What a subject is compared with.
#[derive(Clone)]
pub enum Comparator {
    /// Bytewise comparison with the whole subject.
    Binary(Vec<u8>),
    /// Bytewise comparison of the subject's first `len(operand)` bytes.
    BinaryPrefix(Vec<u8>),
    /// Equal when the regex matches anywhere in the subject; only `=` and
    /// `!=` are meaningful.
    Regex(RegexComparator),
    /// Equal when the subject contains the operand, ignoring case; only `=`
    /// and `!=` are meaningful.
    Substring(String),
}

/// A compiled `regexstring:` comparator.
#[derive(Clone)]
pub struct RegexComparator {
    source: String,
    regex: regex::bytes::Regex,
}

impl RegexComparator {
    /// Compiles `source` with `.` matching a newline.
    ///
    /// # Errors
    /// The regex crate's message when `source` does not compile.
    pub fn new(source: &str) -> Result<RegexComparator, String> {
        let regex = regex::bytes::RegexBuilder::new(source)
            .dot_matches_new_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(RegexComparator { source: source.to_owned(), regex })
    }

    /// The pattern.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl fmt::Debug for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Comparator::Binary(b) => write!(f, "binary:{}", crate::binstr::encode(b)),
            Comparator::BinaryPrefix(b) => write!(f, "binaryprefix:{}", crate::binstr::encode(b)),
            Comparator::Regex(r) => write!(f, "regexstring:{}", r.source),
            Comparator::Substring(s) => write!(f, "substring:{s}"),
        }
    }
}

impl PartialEq for Comparator {
    fn eq(&self, other: &Comparator) -> bool {
        match (self, other) {
            (Comparator::Binary(a), Comparator::Binary(b))
            | (Comparator::BinaryPrefix(a), Comparator::BinaryPrefix(b)) => a == b,
            (Comparator::Regex(a), Comparator::Regex(b)) => a.source == b.source,
            (Comparator::Substring(a), Comparator::Substring(b)) => a == b,
            _ => false,
        }
    }
}

impl Comparator {
    /// A substring comparator (case-insensitive).
    pub fn substring(s: &str) -> Comparator {
        Comparator::Substring(s.to_lowercase())
    }

    /// How `subject` compares with the operand.
    pub fn compare(&self, subject: &[u8]) -> Ordering {
        match self {
            Comparator::Binary(operand) => subject.cmp(operand),
            Comparator::BinaryPrefix(operand) => subject[..subject.len().min(operand.len())].cmp(operand),
            Comparator::Regex(r) => {
                if r.regex.is_match(subject) {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
            Comparator::Substring(needle) => {
                let hay = String::from_utf8_lossy(subject).to_lowercase();
                if hay.contains(needle.as_str()) { Ordering::Equal } else { Ordering::Greater }
            }
        }
    }

    /// Whether `subject OP operand` holds.
    pub fn matches(&self, op: CompareOp, subject: &[u8]) -> bool {
        op.accepts(self.compare(subject))
    }
}

/// `FilterList` operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOp {
    /// `MUST_PASS_ALL` (`AND`).
    All,
    /// `MUST_PASS_ONE` (`OR`).
    One,
}

/// A filter. Build one directly or parse HBase's filter language with
/// [`Filter::parse`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Filter {
    /// Rows whose key compares as asked.
    Row(CompareOp, Comparator),
    /// Cells whose family compares as asked.
    Family(CompareOp, Comparator),
    /// Cells whose qualifier compares as asked.
    Qualifier(CompareOp, Comparator),
    /// Cells whose value compares as asked.
    Value(CompareOp, Comparator),
    /// Rows whose key starts with the prefix.
    Prefix(Vec<u8>),
    /// Every cell, value removed (or replaced by its 4-byte big-endian length).
    KeyOnly { len_as_value: bool },
    /// The first cell of each row.
    FirstKeyOnly,
    /// Each row with probability `chance` (by a hash of its key).
    RandomRow { chance: f32 },
    /// Rows by the value of one column (`exclude`: that column is not returned).
    SingleColumnValue {
        family: String,
        qualifier: Vec<u8>,
        op: CompareOp,
        comparator: Comparator,
        filter_if_missing: bool,
        latest_version_only: bool,
        exclude: bool,
    },
    /// The first `limit` columns of a row; a row with more ends the scan.
    ColumnCountGet { limit: u32 },
    /// Columns `offset .. offset + limit` of each row (newest version each).
    ColumnPagination { limit: u32, offset: u32 },
    /// Cells whose qualifier starts with the prefix.
    ColumnPrefix(Vec<u8>),
    /// Cells whose qualifier starts with any of the prefixes.
    MultipleColumnPrefix(Vec<Vec<u8>>),
    /// Cells whose qualifier lies in the range (`None`: unbounded side).
    ColumnRange { min: Option<Vec<u8>>, min_inclusive: bool, max: Option<Vec<u8>>, max_inclusive: bool },
    /// Cells with one of these timestamps.
    Timestamps(Vec<u64>),
    /// At most this many rows, then the scan ends.
    Page(u64),
    /// Rows up to and including this key (down to it in a reverse scan), then the scan ends.
    InclusiveStop(Vec<u8>),
    /// Cells whose timestamp is one of the reference column's in the row
    /// (whose value compares as asked, when given).
    DependentColumn {
        family: String,
        qualifier: Vec<u8>,
        drop_dependent_column: bool,
        value: Option<(CompareOp, Comparator)>,
    },
    /// `ColumnValueFilter`: only the cells of one column whose value
    /// compares as asked (where `SingleColumnValue` keeps the whole row);
    /// a row with none is left out.
    ColumnValue { family: String, qualifier: Vec<u8>, op: CompareOp, comparator: Comparator },
    /// `MultiRowRangeFilter`: rows in any of these ranges.
    MultiRowRange(Vec<MultiRowRange>),
    /// `FuzzyRowFilter`: rows that match any of these keys at their fixed
    /// positions.
    FuzzyRow(Vec<FuzzyKey>),
    /// `FilterList`: all or one of the filters.
    List(ListOp, Vec<Filter>),
    /// `SKIP`: the row is dropped if the filter drops any of its cells.
    Skip(Box<Filter>),
    /// `WHILE`: the scan ends at the first row the filter drops anything of.
    WhileMatch(Box<Filter>),
}

/// One range of a [`Filter::MultiRowRange`] (`None`: unbounded side).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiRowRange {
    /// The first row (with `start_inclusive`) or the row after which it starts.
    pub start: Option<Vec<u8>>,
    /// Whether `start` itself is in the range.
    pub start_inclusive: bool,
    /// The last row (with `stop_inclusive`) or the row before which it stops.
    pub stop: Option<Vec<u8>>,
    /// Whether `stop` itself is in the range.
    pub stop_inclusive: bool,
}

impl MultiRowRange {
    /// Whether `key` is in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        let above = self.start.as_deref().is_none_or(|s| key > s || (self.start_inclusive && key == s));
        let below = self.stop.as_deref().is_none_or(|s| key < s || (self.stop_inclusive && key == s));
        above && below
    }
}

/// One key of a [`Filter::FuzzyRow`], as HBase's `FuzzyRowFilter` takes
/// it: a row matches when each of its bytes at a fixed position equals the
/// key's (the rest may be anything). As in HBase, a row shorter than the
/// key is compared on its own length.
#[derive(Debug, Clone, PartialEq)]
pub struct FuzzyKey {
    /// The key; its bytes at positions the mask leaves free are ignored.
    pub key: Vec<u8>,
    /// Per byte of `key`: 0 fixed, 1 any (HBase's mask); as long as `key`.
    pub mask: Vec<u8>,
}

impl FuzzyKey {
    /// Whether `row` matches.
    pub fn matches(&self, row: &[u8]) -> bool {
        self.key.iter().zip(&self.mask).zip(row).all(|((k, m), r)| *m != 0 || k == r)
    }
}

/// A filter's verdict on one row.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// The row as a whole passes.
    pub row: bool,
    /// Which cells are kept.
    pub keep: Vec<bool>,
    /// Which cells lose their value.
    pub strip: Vec<bool>,
    /// `KeyOnlyFilter(true)`: a stripped value becomes its length.
    pub len_as_value: bool,
}

impl Verdict {
    fn all(n: usize, row: bool) -> Verdict {
        Verdict { row, keep: vec![true; n], strip: vec![false; n], len_as_value: false }
    }

    fn cells(keep: Vec<bool>) -> Verdict {
        let n = keep.len();
        Verdict { row: true, keep, strip: vec![false; n], len_as_value: false }
    }

    fn drops_anything(&self) -> bool {
        !self.row || self.keep.iter().any(|k| !k)
    }
}

/// Per-node state of a running filter (pre-order node numbering).
#[derive(Debug, Clone, Default)]
struct NodeState {
    count: u64,
    done: bool,
}

/// A filter running over one scan: the filter and its counters.
#[derive(Debug, Clone)]
pub(crate) struct FilterRun {
    filter: Filter,
    state: Vec<NodeState>,
    ctx: Ctx,
}

/// What every node of a filter sees of its scan.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    reverse: bool,
    /// The scan's versions limit (applied after the filter, but
    /// `DependentColumnFilter` counts versions before its row step, as
    /// HBase's `filterRowCells` runs after the version check).
    versions: u32,
}

fn node_count(f: &Filter) -> usize {
    1 + match f {
        Filter::List(_, children) => children.iter().map(node_count).sum(),
        Filter::Skip(inner) | Filter::WhileMatch(inner) => node_count(inner),
        _ => 0,
    }
}

impl FilterRun {
    pub fn new(filter: Filter, reverse: bool, versions: u32) -> FilterRun {
        let n = node_count(&filter);
        FilterRun { filter, state: vec![NodeState::default(); n], ctx: Ctx { reverse, versions } }
    }

    /// Whether the filter has ended the scan (HBase's `filterAllRemaining`).
    pub fn done(&self) -> bool {
        done(&self.filter, &mut 0, &self.state)
    }

    /// Evaluates one row. `key` is the (unsalted) row key.
    pub fn eval(&mut self, key: &[u8], cells: &[Cell]) -> Verdict {
        let mut id = 0;
        eval(&self.filter, &mut id, &mut self.state, self.ctx, key, cells)
    }
}

fn done(f: &Filter, id: &mut usize, state: &[NodeState]) -> bool {
    let me = *id;
    *id += 1;
    match f {
        Filter::List(op, children) => {
            // Every child is visited so the pre-order numbering stays aligned.
            let (mut any, mut all) = (false, true);
            for c in children {
                let d = done(c, id, state);
                any |= d;
                all &= d;
            }
            match op {
                ListOp::All => any,
                ListOp::One => !children.is_empty() && all,
            }
        }
        Filter::Skip(inner) => done(inner, id, state),
        Filter::WhileMatch(inner) => {
            let inner_done = done(inner, id, state);
            state[me].done || inner_done
        }
        _ => state[me].done,
    }
}

fn column_eq(a: &Cell, b: &Cell) -> bool {
    a.family == b.family && a.qualifier == b.qualifier
}

/// For each cell, the index of its column among the row's distinct columns
/// and whether it is the newest version of that column (cells are in HBase order).
fn columns(cells: &[Cell]) -> impl Iterator<Item = (usize, bool)> + '_ {
    let mut column = 0usize;
    cells.iter().enumerate().map(move |(i, c)| {
        let first = i == 0 || !column_eq(&cells[i - 1], c);
        if first && i > 0 {
            column += 1;
        }
        (column, first)
    })
}

fn eval(
    f: &Filter,
    id: &mut usize,
    state: &mut [NodeState],
    ctx: Ctx,
    key: &[u8],
    cells: &[Cell],
) -> Verdict {
    let reverse = ctx.reverse;
    let me = *id;
    *id += 1;
    let n = cells.len();
    let per_cell = |pred: &dyn Fn(&Cell) -> bool| Verdict::cells(cells.iter().map(pred).collect());
    match f {
        Filter::Row(op, cmp) => Verdict::all(n, cmp.matches(*op, key)),
        Filter::Family(op, cmp) => per_cell(&|c| cmp.matches(*op, c.family.as_bytes())),
        Filter::Qualifier(op, cmp) => per_cell(&|c| cmp.matches(*op, &c.qualifier)),
        Filter::Value(op, cmp) => per_cell(&|c| cmp.matches(*op, &c.value)),
        Filter::Prefix(prefix) => {
            let pass = key.starts_with(prefix);
            if !pass && ((!reverse && key > prefix.as_slice()) || (reverse && key < prefix.as_slice())) {
                state[me].done = true;
            }
            Verdict::all(n, pass)
        }
        Filter::KeyOnly { len_as_value } => {
            Verdict { row: true, keep: vec![true; n], strip: vec![true; n], len_as_value: *len_as_value }
        }
        Filter::FirstKeyOnly => Verdict::cells((0..n).map(|i| i == 0).collect()),
        Filter::RandomRow { chance } => {
            let pass = if *chance <= 0.0 {
                false
            } else if *chance >= 1.0 {
                true
            } else {
                f64::from(crc32fast::hash(key)) < f64::from(*chance) * f64::from(u32::MAX)
            };
            Verdict::all(n, pass)
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
            let is_target = |c: &Cell| &*c.family == family.as_str() && c.qualifier == *qualifier;
            let mut v = if *exclude { per_cell(&|c| !is_target(c)) } else { Verdict::all(n, true) };
            v.row = single_column_value(
                cells,
                is_target,
                *op,
                comparator,
                *filter_if_missing,
                *latest_version_only,
            );
            v
        }
        Filter::ColumnCountGet { limit } => column_count_get(&mut state[me], *limit as usize, cells),
        Filter::ColumnPagination { limit, offset } => {
            let (lo, hi) = (*offset as usize, *offset as usize + *limit as usize);
            Verdict::cells(
                columns(cells).map(|(column, first)| first && column >= lo && column < hi).collect(),
            )
        }
        Filter::ColumnPrefix(prefix) => per_cell(&|c| c.qualifier.starts_with(prefix)),
        Filter::MultipleColumnPrefix(prefixes) => {
            per_cell(&|c| prefixes.iter().any(|p| c.qualifier.starts_with(p)))
        }
        Filter::ColumnRange { min, min_inclusive, max, max_inclusive } => per_cell(&|c| {
            let q = c.qualifier.as_slice();
            let above = min.as_deref().is_none_or(|m| if *min_inclusive { q >= m } else { q > m });
            let below = max.as_deref().is_none_or(|m| if *max_inclusive { q <= m } else { q < m });
            above && below
        }),
        Filter::Timestamps(stamps) => per_cell(&|c| stamps.contains(&c.timestamp)),
        Filter::Page(size) => page(&mut state[me], *size, n),
        Filter::InclusiveStop(stop) => {
            let past = if reverse { key < stop.as_slice() } else { key > stop.as_slice() };
            if past {
                state[me].done = true;
            }
            Verdict::all(n, !past)
        }
        Filter::DependentColumn { family, qualifier, drop_dependent_column, value } => {
            dependent_column(family, qualifier, *drop_dependent_column, value.as_ref(), ctx.versions, cells)
        }
        Filter::ColumnValue { family, qualifier, op, comparator } => per_cell(&|c| {
            &*c.family == family.as_str() && c.qualifier == *qualifier && comparator.matches(*op, &c.value)
        }),
        Filter::MultiRowRange(ranges) => Verdict::all(n, ranges.iter().any(|r| r.contains(key))),
        Filter::FuzzyRow(keys) => Verdict::all(n, keys.iter().any(|k| k.matches(key))),
        Filter::List(op, children) => eval_list(*op, children, id, state, ctx, key, cells),
        Filter::Skip(inner) => {
            let v = eval(inner, id, state, ctx, key, cells);
            let row = !v.drops_anything();
            Verdict { row, keep: vec![true; n], strip: v.strip, len_as_value: v.len_as_value }
        }
        Filter::WhileMatch(inner) => {
            let v = eval(inner, id, state, ctx, key, cells);
            if v.drops_anything() {
                state[me].done = true;
                return Verdict::all(n, false);
            }
            v
        }
    }
}

/// A [`Filter::Page`]: the first `size` rows it sees, then done.
fn page(st: &mut NodeState, size: u64, n: usize) -> Verdict {
    if st.count >= size {
        st.done = true;
        return Verdict::all(n, false);
    }
    st.count += 1;
    if st.count >= size {
        st.done = true;
    }
    Verdict::all(n, true)
}

/// A [`Filter::ColumnCountGet`]: the first version of the first `limit`
/// columns; done (for the scan) once a row reaches the limit.
fn column_count_get(st: &mut NodeState, limit: usize, cells: &[Cell]) -> Verdict {
    let mut keep = vec![false; cells.len()];
    for (i, (column, first)) in columns(cells).enumerate() {
        if column >= limit {
            st.done = true;
            break;
        }
        keep[i] = first;
    }
    Verdict::cells(keep)
}

/// Whether a [`Filter::SingleColumnValue`] passes the row: on its target
/// column's newest version, or any version, or when the column is missing.
fn single_column_value(
    cells: &[Cell],
    is_target: impl Fn(&Cell) -> bool,
    op: CompareOp,
    comparator: &Comparator,
    filter_if_missing: bool,
    latest_version_only: bool,
) -> bool {
    let mut versions = cells.iter().filter(|c| is_target(c));
    match versions.next() {
        None => !filter_if_missing,
        Some(newest) if latest_version_only => comparator.matches(op, &newest.value),
        Some(newest) => {
            comparator.matches(op, &newest.value) || versions.any(|c| comparator.matches(op, &c.value))
        }
    }
}

/// A [`Filter::List`]: its children in order, AND or OR.
fn eval_list(
    op: ListOp,
    children: &[Filter],
    id: &mut usize,
    state: &mut [NodeState],
    ctx: Ctx,
    key: &[u8],
    cells: &[Cell],
) -> Verdict {
    let n = cells.len();
    let mut out = match op {
        ListOp::All => Verdict::all(n, true),
        ListOp::One => {
            Verdict { row: children.is_empty(), keep: vec![children.is_empty(); n], ..Verdict::all(n, true) }
        }
    };
    for child in children {
        // A row an earlier child of an AND rejected (whole, or by
        // dropping every cell) does not reach the later ones, so a
        // PageFilter after it does not count it.
        if op == ListOp::All && (!out.row || !out.keep.contains(&true)) {
            *id += node_count(child);
            continue;
        }
        // Nor does a cell an earlier child dropped: as in HBase's
        // FilterListWithAND (HBASE-20565), later filters see only the
        // cells every earlier one included, so the counting filters
        // (ColumnPaginationFilter, ColumnCountGetFilter) count
        // those alone.
        let v = if op == ListOp::All && out.keep.contains(&false) {
            let kept: Vec<usize> = (0..n).filter(|&i| out.keep[i]).collect();
            let subset: Vec<Cell> = kept.iter().map(|&i| cells[i].clone()).collect();
            let sub = eval(child, id, state, ctx, key, &subset);
            let mut full = Verdict {
                row: sub.row,
                keep: vec![false; n],
                strip: vec![false; n],
                len_as_value: sub.len_as_value,
            };
            for (j, &i) in kept.iter().enumerate() {
                full.keep[i] = sub.keep[j];
                full.strip[i] = sub.strip[j];
            }
            full
        } else {
            eval(child, id, state, ctx, key, cells)
        };
        out.len_as_value |= v.len_as_value;
        match op {
            ListOp::All => {
                out.row &= v.row;
                for i in 0..n {
                    out.keep[i] &= v.keep[i];
                    out.strip[i] |= v.strip[i];
                }
            }
            ListOp::One => {
                if v.row {
                    out.row = true;
                    for i in 0..n {
                        out.keep[i] |= v.keep[i];
                        out.strip[i] |= v.keep[i] && v.strip[i];
                    }
                }
            }
        }
    }
    out
}

/// A [`Filter::DependentColumn`]: the cells whose timestamps the reference
/// column has (with a value passing `value`, if given).
fn dependent_column(
    family: &str,
    qualifier: &[u8],
    drop_dependent_column: bool,
    value: Option<&(CompareOp, Comparator)>,
    versions: u32,
    cells: &[Cell],
) -> Verdict {
    let is_reference = |c: &Cell| &*c.family == family && c.qualifier == qualifier;
    let matches = |c: &Cell| value.is_none_or(|(op, cmp)| cmp.matches(*op, &c.value));
    // Every matching version of the reference column gives its stamp.
    let stamps: Vec<u64> =
        cells.iter().filter(|c| is_reference(c) && matches(c)).map(|c| c.timestamp).collect();
    // As HBase: each cell is first included or not one by one (the
    // reference column's when it matches and is not dropped, every other
    // one), the versions limit counts the included ones per column, and
    // only then are the survivors without a reference stamp removed. So
    // a newer version without a stamp uses up the limit and the older one
    // with a stamp is not shown.
    let mut keep = Vec::with_capacity(cells.len());
    let mut run = 0u32;
    for (i, c) in cells.iter().enumerate() {
        let same_column = i > 0 && cells[i - 1].family == c.family && cells[i - 1].qualifier == c.qualifier;
        let included = if is_reference(c) { !drop_dependent_column && matches(c) } else { true };
        if !same_column {
            run = 0;
        }
        let within = included && run < versions;
        run += u32::from(included);
        keep.push(within && stamps.contains(&c.timestamp));
    }
    let mut v = Verdict::cells(keep);
    v.row = !stamps.is_empty();
    v
}

impl Filter {
    /// The row range outside which this filter passes no row (and ends or
    /// never starts the scan), so the scan need not read it.
    pub(crate) fn row_range(&self, reverse: bool) -> RowRange {
        match self {
            Filter::Prefix(p) => RowRange::prefix(p),
            Filter::InclusiveStop(stop) if reverse => {
                RowRange { lo: Bound::Included(stop.clone()), hi: Bound::Unbounded }
            }
            Filter::InclusiveStop(stop) => {
                RowRange { lo: Bound::Unbounded, hi: Bound::Included(stop.clone()) }
            }
            Filter::Row(op, Comparator::Binary(x)) => {
                let x = x.clone();
                match op {
                    CompareOp::Equal => RowRange { lo: Bound::Included(x.clone()), hi: Bound::Included(x) },
                    CompareOp::Less => RowRange { lo: Bound::Unbounded, hi: Bound::Excluded(x) },
                    CompareOp::LessOrEqual => RowRange { lo: Bound::Unbounded, hi: Bound::Included(x) },
                    CompareOp::Greater => RowRange { lo: Bound::Excluded(x), hi: Bound::Unbounded },
                    CompareOp::GreaterOrEqual => RowRange { lo: Bound::Included(x), hi: Bound::Unbounded },
                    CompareOp::NotEqual => RowRange::all(),
                }
            }
            Filter::List(ListOp::All, children) => {
                children.iter().fold(RowRange::all(), |r, c| r.intersect(c.row_range(reverse)))
            }
            Filter::Skip(inner) => inner.row_range(reverse),
            // Rows before the inner range end the scan (they are not skipped),
            // so only the far side may be cut.
            Filter::WhileMatch(inner) => {
                let inner = inner.row_range(reverse);
                if reverse {
                    RowRange { lo: inner.lo, hi: Bound::Unbounded }
                } else {
                    RowRange { lo: Bound::Unbounded, hi: inner.hi }
                }
            }
            _ => RowRange::all(),
        }
    }

    /// `FilterList(AND)` of the filters.
    pub fn all(filters: impl IntoIterator<Item = Filter>) -> Filter {
        Filter::List(ListOp::All, filters.into_iter().collect())
    }

    /// `FilterList(OR)` of the filters.
    pub fn one(filters: impl IntoIterator<Item = Filter>) -> Filter {
        Filter::List(ListOp::One, filters.into_iter().collect())
    }
}
