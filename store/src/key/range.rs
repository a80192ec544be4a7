//! Row ranges: a range of row keys, and the cell-key bounds that read it.

use std::cmp::Ordering;
use std::ops::Bound;

/// Cell-key bounds: lower inclusive, upper exclusive; `None` is unbounded.
pub(crate) type KeyBounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A range of (unsalted) row keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowRange {
    pub lo: Bound<Vec<u8>>,
    pub hi: Bound<Vec<u8>>,
}

impl RowRange {
    pub fn all() -> RowRange {
        RowRange { lo: Bound::Unbounded, hi: Bound::Unbounded }
    }

    /// Rows starting with `prefix`.
    pub fn prefix(prefix: &[u8]) -> RowRange {
        let hi = match super::prefix_successor(prefix) {
            Some(s) => Bound::Excluded(s),
            None => Bound::Unbounded,
        };
        RowRange { lo: Bound::Included(prefix.to_vec()), hi }
    }

    /// The intersection.
    pub fn intersect(self, other: RowRange) -> RowRange {
        RowRange { lo: tighter_lo(self.lo, other.lo), hi: tighter_hi(self.hi, other.hi) }
    }

    /// No key can lie in the range.
    pub fn is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b))
            | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
            _ => false,
        }
    }
}

fn tighter_lo(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match x.cmp(y) {
                Ordering::Greater => a,
                Ordering::Less => b,
                Ordering::Equal => {
                    if matches!(a, Bound::Excluded(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

fn tighter_hi(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match x.cmp(y) {
                Ordering::Less => a,
                Ordering::Greater => b,
                Ordering::Equal => {
                    if matches!(a, Bound::Excluded(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

/// Cell-key bounds (lower inclusive, upper exclusive) of a stored-row range.
pub(crate) fn cell_bounds(range: &RowRange) -> KeyBounds {
    let lo = match &range.lo {
        Bound::Included(r) => Some(super::row_start(r)),
        Bound::Excluded(r) => Some(super::row_end(r)),
        Bound::Unbounded => None,
    };
    let hi = match &range.hi {
        Bound::Included(r) => Some(super::row_end(r)),
        Bound::Excluded(r) => Some(super::row_start(r)),
        Bound::Unbounded => None,
    };
    (lo, hi)
}
