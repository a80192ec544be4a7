//! A reference evaluator of filters over a model's rows, written for
//! clarity: each filter is a function from a row to "row passes?" plus the
//! set of cell indexes kept and the set whose values are stripped. Scan-level
//! state (PageFilter's count, filters that end the scan) lives in a map keyed
//! by the node's pre-order number.

use std::collections::{BTreeSet, HashMap};

use rowsearch_store::{Cell, Comparator, CompareOp, Filter, ListOp, Row};

#[derive(Default)]
pub struct FilterModel {
    reverse: bool,
    versions: u32,
    pages: HashMap<usize, u64>,
    ended: BTreeSet<usize>,
}

struct Out {
    row: bool,
    keep: BTreeSet<usize>,
    strip: BTreeSet<usize>,
    len_as_value: bool,
}

fn holds(op: CompareOp, cmp: &Comparator, subject: &[u8]) -> bool {
    let ord = match cmp {
        Comparator::Binary(b) => subject.cmp(b.as_slice()),
        Comparator::BinaryPrefix(b) => subject.iter().take(b.len()).copied().collect::<Vec<u8>>().cmp(b),
        Comparator::Regex(r) => {
            let re = regex::bytes::RegexBuilder::new(r.source()).dot_matches_new_line(true).build().unwrap();
            if re.is_match(subject) { std::cmp::Ordering::Equal } else { std::cmp::Ordering::Greater }
        }
        Comparator::Substring(s) => {
            if String::from_utf8_lossy(subject).to_lowercase().contains(s.as_str()) {
                std::cmp::Ordering::Equal
            } else {
                std::cmp::Ordering::Greater
            }
        }
    };
    match op {
        CompareOp::Less => ord.is_lt(),
        CompareOp::LessOrEqual => ord.is_le(),
        CompareOp::Equal => ord.is_eq(),
        CompareOp::NotEqual => ord.is_ne(),
        CompareOp::GreaterOrEqual => ord.is_ge(),
        CompareOp::Greater => ord.is_gt(),
    }
}

fn nodes(f: &Filter) -> usize {
    1 + match f {
        Filter::List(_, fs) => fs.iter().map(nodes).sum(),
        Filter::Skip(inner) | Filter::WhileMatch(inner) => nodes(inner),
        _ => 0,
    }
}

/// Whether a row-key filter of `f` (a prefix, an inclusive stop, a row
/// compared with bytes), alone or in an AND list, rejects `key` before any
/// cell is looked at.
fn key_rejects(f: &Filter, key: &[u8], reverse: bool) -> bool {
    match f {
        Filter::Prefix(p) => !key.starts_with(p),
        Filter::InclusiveStop(stop) if reverse => key < stop.as_slice(),
        Filter::InclusiveStop(stop) => key > stop.as_slice(),
        Filter::Row(op, cmp @ Comparator::Binary(_)) => !holds(*op, cmp, key),
        Filter::List(ListOp::All, children) => children.iter().any(|c| key_rejects(c, key, reverse)),
        Filter::Skip(inner) => key_rejects(inner, key, reverse),
        _ => false,
    }
}

fn same_column(a: &Cell, b: &Cell) -> bool {
    a.family == b.family && a.qualifier == b.qualifier
}

impl FilterModel {
    pub fn new(reverse: bool, versions: u32) -> FilterModel {
        FilterModel { reverse, versions, ..FilterModel::default() }
    }

    /// Runs the filter over rows in scan order (every version in the time
    /// range), then keeps `versions` per column.
    pub fn run(filter: &Filter, rows: Vec<Row>, reverse: bool, versions: u32) -> Vec<Row> {
        let mut model = FilterModel::new(reverse, versions);
        let mut out = Vec::new();
        for row in rows {
            if model.all_ended(filter, &mut 0) {
                break;
            }
            // HBase asks every filter of an AND about the row key before
            // any sees a cell: a row a key filter rejects is never counted
            // by the others (ColumnCountGetFilter, PageFilter).
            if key_rejects(filter, &row.key, reverse) {
                continue;
            }
            let o = model.eval(filter, &mut 0, &row);
            if !o.row {
                continue;
            }
            let mut cells: Vec<Cell> = Vec::new();
            for (i, c) in row.cells.iter().enumerate() {
                if !o.keep.contains(&i) {
                    continue;
                }
                let mut c = c.clone();
                if o.strip.contains(&i) {
                    c.value =
                        if o.len_as_value { (c.value.len() as u32).to_be_bytes().to_vec() } else { vec![] };
                }
                let seen = cells.iter().filter(|p| same_column(p, &c)).count();
                if (seen as u64) < u64::from(versions) {
                    cells.push(c);
                }
            }
            if !cells.is_empty() {
                out.push(Row { key: row.key, cells });
            }
        }
        out
    }

    fn all_ended(&self, f: &Filter, id: &mut usize) -> bool {
        let me = *id;
        *id += 1;
        match f {
            Filter::List(op, children) => {
                let flags: Vec<bool> = children.iter().map(|c| self.all_ended(c, id)).collect();
                match op {
                    ListOp::All => flags.contains(&true),
                    ListOp::One => !flags.is_empty() && !flags.contains(&false),
                }
            }
            Filter::Skip(inner) => self.all_ended(inner, id),
            Filter::WhileMatch(inner) => {
                let inner = self.all_ended(inner, id);
                self.ended.contains(&me) || inner
            }
            _ => self.ended.contains(&me),
        }
    }

    fn eval(&mut self, f: &Filter, id: &mut usize, row: &Row) -> Out {
        let me = *id;
        *id += 1;
        let all: BTreeSet<usize> = (0..row.cells.len()).collect();
        let whole =
            |pass: bool| Out { row: pass, keep: all.clone(), strip: BTreeSet::new(), len_as_value: false };
        let some = |pred: &dyn Fn(&Cell) -> bool| Out {
            row: true,
            keep: row.cells.iter().enumerate().filter(|(_, c)| pred(c)).map(|(i, _)| i).collect(),
            strip: BTreeSet::new(),
            len_as_value: false,
        };
        // Distinct columns in order, with the index of each one's newest cell.
        let firsts: Vec<usize> = (0..row.cells.len())
            .filter(|&i| i == 0 || !same_column(&row.cells[i - 1], &row.cells[i]))
            .collect();
        match f {
            Filter::Row(op, cmp) => whole(holds(*op, cmp, &row.key)),
            Filter::Family(op, cmp) => some(&|c| holds(*op, cmp, c.family.as_bytes())),
            Filter::Qualifier(op, cmp) => some(&|c| holds(*op, cmp, &c.qualifier)),
            Filter::Value(op, cmp) => some(&|c| holds(*op, cmp, &c.value)),
            Filter::Prefix(p) => {
                let pass = row.key.starts_with(p);
                let past = if self.reverse { row.key < *p } else { row.key > *p };
                if !pass && past {
                    self.ended.insert(me);
                }
                whole(pass)
            }
            Filter::KeyOnly { len_as_value } => {
                Out { row: true, keep: all.clone(), strip: all.clone(), len_as_value: *len_as_value }
            }
            Filter::FirstKeyOnly => some(&|c| std::ptr::eq(c, &row.cells[0])),
            Filter::RandomRow { chance } => whole(*chance >= 1.0),
            Filter::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_version_only,
                exclude,
            } => {
                let target = |c: &Cell| &*c.family == family && c.qualifier == *qualifier;
                let values: Vec<&Cell> = row.cells.iter().filter(|c| target(c)).collect();
                let pass = if values.is_empty() {
                    !filter_if_missing
                } else if *latest_version_only {
                    holds(*op, comparator, &values[0].value)
                } else {
                    values.iter().any(|c| holds(*op, comparator, &c.value))
                };
                let mut out = if *exclude { some(&|c| !target(c)) } else { whole(true) };
                out.row = pass;
                out
            }
            Filter::ColumnCountGet { limit } => {
                if firsts.len() > *limit as usize {
                    self.ended.insert(me);
                }
                let keep = firsts.iter().take(*limit as usize).copied().collect();
                Out { row: true, keep, strip: BTreeSet::new(), len_as_value: false }
            }
            Filter::ColumnPagination { limit, offset } => {
                let keep = firsts.iter().skip(*offset as usize).take(*limit as usize).copied().collect();
                Out { row: true, keep, strip: BTreeSet::new(), len_as_value: false }
            }
            Filter::ColumnPrefix(p) => some(&|c| c.qualifier.starts_with(p)),
            Filter::MultipleColumnPrefix(ps) => some(&|c| ps.iter().any(|p| c.qualifier.starts_with(p))),
            Filter::ColumnRange { min, min_inclusive, max, max_inclusive } => some(&|c| {
                let lo_ok = match min {
                    None => true,
                    Some(m) => c.qualifier > *m || (*min_inclusive && c.qualifier == *m),
                };
                let hi_ok = match max {
                    None => true,
                    Some(m) => c.qualifier < *m || (*max_inclusive && c.qualifier == *m),
                };
                lo_ok && hi_ok
            }),
            Filter::Timestamps(ts) => some(&|c| ts.contains(&c.timestamp)),
            Filter::Page(size) => {
                let seen = self.pages.entry(me).or_insert(0);
                if *seen >= *size {
                    self.ended.insert(me);
                    return whole(false);
                }
                *seen += 1;
                if *seen >= *size {
                    self.ended.insert(me);
                }
                whole(true)
            }
            Filter::InclusiveStop(stop) => {
                let past = if self.reverse { row.key < *stop } else { row.key > *stop };
                if past {
                    self.ended.insert(me);
                }
                whole(!past)
            }
            Filter::DependentColumn { family, qualifier, drop_dependent_column, value } => {
                let reference = |c: &Cell| &*c.family == family && c.qualifier == *qualifier;
                let value_ok = |c: &Cell| value.as_ref().is_none_or(|(op, cmp)| holds(*op, cmp, &c.value));
                let stamps: BTreeSet<u64> =
                    row.cells.iter().filter(|c| reference(c) && value_ok(c)).map(|c| c.timestamp).collect();
                // A cell is included by itself (a reference cell when its
                // value holds and it is not dropped; any other always);
                // the versions limit counts included cells per column;
                // then those without a reference stamp go.
                let included = |c: &Cell| !reference(c) || (!drop_dependent_column && value_ok(c));
                let mut kept_per_column: HashMap<(String, Vec<u8>), u32> = HashMap::new();
                let mut within = BTreeSet::new();
                for (i, c) in row.cells.iter().enumerate() {
                    if included(c) {
                        let n =
                            kept_per_column.entry((c.family.to_string(), c.qualifier.clone())).or_insert(0);
                        if *n < self.versions {
                            within.insert(i);
                        }
                        *n += 1;
                    }
                }
                let mut out = whole(true);
                out.keep = (0..row.cells.len())
                    .filter(|i| within.contains(i) && stamps.contains(&row.cells[*i].timestamp))
                    .collect();
                out.row = !stamps.is_empty();
                out
            }
            // The matching cells of one column only.
            Filter::ColumnValue { family, qualifier, op, comparator } => some(&|c| {
                &*c.family == family && c.qualifier == *qualifier && holds(*op, comparator, &c.value)
            }),
            // The row when it lies in any range, written out bound by bound.
            Filter::MultiRowRange(ranges) => whole(ranges.iter().any(|r| {
                let k = row.key.as_slice();
                let after_start = match &r.start {
                    None => true,
                    Some(s) if r.start_inclusive => k >= s.as_slice(),
                    Some(s) => k > s.as_slice(),
                };
                let before_stop = match &r.stop {
                    None => true,
                    Some(s) if r.stop_inclusive => k <= s.as_slice(),
                    Some(s) => k < s.as_slice(),
                };
                after_start && before_stop
            })),
            // The row when some key's fixed bytes are the row's, byte by
            // byte over the shorter of the two.
            Filter::FuzzyRow(keys) => whole(keys.iter().any(|k| {
                (0..k.key.len().min(row.key.len())).all(|i| k.mask[i] == 1 || k.key[i] == row.key[i])
            })),
            Filter::List(ListOp::All, children) => {
                let mut out = whole(true);
                for child in children {
                    if !out.row || out.keep.is_empty() {
                        *id += nodes(child);
                        continue;
                    }
                    // A later child sees only the cells every earlier one
                    // kept (HBase's FilterListWithAND, HBASE-20565).
                    let kept: Vec<usize> = out.keep.iter().copied().collect();
                    let subset = Row {
                        key: row.key.clone(),
                        cells: kept.iter().map(|&i| row.cells[i].clone()).collect(),
                    };
                    let sub = self.eval(child, id, &subset);
                    let back =
                        |set: &BTreeSet<usize>| -> BTreeSet<usize> { set.iter().map(|&j| kept[j]).collect() };
                    let o = Out {
                        row: sub.row,
                        keep: back(&sub.keep),
                        strip: back(&sub.strip),
                        len_as_value: sub.len_as_value,
                    };
                    out.row &= o.row;
                    out.keep = out.keep.intersection(&o.keep).copied().collect();
                    out.strip.extend(o.strip);
                    out.len_as_value |= o.len_as_value;
                }
                out
            }
            Filter::List(ListOp::One, children) => {
                let mut out = if children.is_empty() { whole(true) } else { whole(false) };
                if !children.is_empty() {
                    out.keep.clear();
                }
                for child in children {
                    let o = self.eval(child, id, row);
                    out.len_as_value |= o.len_as_value;
                    if o.row {
                        out.row = true;
                        out.strip.extend(o.strip.intersection(&o.keep));
                        out.keep.extend(o.keep);
                    }
                }
                out
            }
            Filter::Skip(inner) => {
                let o = self.eval(inner, id, row);
                let pass = o.row && o.keep.len() == row.cells.len();
                Out { row: pass, keep: all.clone(), strip: o.strip, len_as_value: o.len_as_value }
            }
            Filter::WhileMatch(inner) => {
                let o = self.eval(inner, id, row);
                if !o.row || o.keep.len() != row.cells.len() {
                    self.ended.insert(me);
                    return whole(false);
                }
                o
            }
        }
    }
}
