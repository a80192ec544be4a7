//! Sorted key streams with seeking, and the set operations over them:
//! the merge that index lookups and keyword lookups share. A stream reads
//! the tails of the keys under a set of prefixes (an index's regions and
//! runs, or a keyword's fields) as one sorted sequence; [`combine`]
//! intersects (leapfrog) or unites streams.

use std::collections::BinaryHeap;
use std::ops::Bound;

use heed::RoTxn;

use crate::db::BytesDb;
use crate::error::{Error, ErrorKind, Result};
use crate::key::{self, push_escaped};

/// A range a stream reads: a database and the key prefix before the
/// tails (for an index: empty in the main database, the run id in a run).
pub(crate) type Source<'a> = (&'a BytesDb, Vec<u8>);

/// The lower LMDB bound of the keys starting with `prefix` (LMDB refuses an
/// empty key, even as a bound).
pub(crate) fn prefix_start(prefix: &[u8]) -> Bound<&[u8]> {
    if prefix.is_empty() { Bound::Unbounded } else { Bound::Included(prefix) }
}

/// The LMDB range of keys `prefix | k` for `k` in `[lower, upper)` (`upper`
/// `None`: to the end of the prefix).
pub(crate) fn prefixed_range(
    prefix: &[u8],
    lower: &[u8],
    upper: Option<&[u8]>,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let lo = [prefix, lower].concat();
    let hi = match upper {
        Some(u) => Some([prefix, u].concat()),
        None => key::prefix_successor(prefix),
    };
    (lo, hi)
}

/// How [`crate::ReadTxn::index_combine`] combines lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Row keys present in every lookup.
    Intersect,
    /// Row keys present in any lookup.
    Union,
}

/// Row keys of a combination, in row-key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPage {
    /// The row keys.
    pub keys: Vec<Vec<u8>>,
    /// Resume after this row key (pass it as `after`) when the limit cut
    /// the page short.
    pub next_after: Option<Vec<u8>>,
    /// Index entries read to compute the page (to see that a combination
    /// stops early).
    pub entries_read: u64,
}

/// Sorted keys of one lookup, with seeking: row keys of an index lookup,
/// or the (date, row key) versions of a keyword list.
pub(crate) enum KeyStream<'t> {
    /// Ranges sharing one tail order (each region of an index, or each
    /// search field of a keyword), merged lazily; a seek re-positions every
    /// range.
    Live {
        txn: &'t RoTxn<'t>,
        db_name: &'t str,
        /// Every range: a database and the key prefix of its keys; the key
        /// after it is the stream's tail.
        ranges: Vec<Source<'t>>,
        tail: Tail,
        heap: BinaryHeap<std::cmp::Reverse<(Vec<u8>, usize)>>,
        iters: Vec<heed::RoRange<'t, heed::types::Bytes, heed::types::Bytes>>,
        now_ms: u64,
        read: u64,
    },
    /// Any other lookup: all its keys, sorted.
    Sorted { keys: Vec<Vec<u8>>, at: usize, read: u64 },
    /// Keys read by their owner's own cursor (keyword versions in blocks).
    Other(Box<dyn SortedKeys + 't>),
}

/// A sorted key sequence with seeking, read by its owner's own cursor.
pub(crate) trait SortedKeys {
    /// The current key; `None` at the end.
    fn peek(&self) -> Option<&[u8]>;
    /// Positions at the first key >= `target` (never backwards).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Moves past the current key.
    fn advance(&mut self) -> Result<()>;
    /// Entries read so far.
    fn entries_read(&self) -> u64;
}

/// How a live stream's entries end after their prefix.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tail {
    /// An escaped row key; `expiry` reads the entry's expiry from its
    /// value, and expired entries are skipped (index entries).
    EscapedRow {
        /// The expiry (ms) of a stored value.
        expiry: fn(&[u8]) -> u64,
    },
}

impl<'t> KeyStream<'t> {
    /// A stream over the tails of the keys of every range (a database and
    /// the prefix of the keys read there).
    pub fn live(
        txn: &'t RoTxn<'t>,
        db_name: &'t str,
        ranges: Vec<Source<'t>>,
        tail: Tail,
        now_ms: u64,
    ) -> Result<KeyStream<'t>> {
        let mut stream = KeyStream::Live {
            txn,
            db_name,
            ranges,
            tail,
            heap: BinaryHeap::new(),
            iters: Vec::new(),
            now_ms,
            read: 0,
        };
        stream.seek(&[])?;
        Ok(stream)
    }

    pub fn entries_read(&self) -> u64 {
        match self {
            KeyStream::Live { read, .. } | KeyStream::Sorted { read, .. } => *read,
            KeyStream::Other(keys) => keys.entries_read(),
        }
    }

    pub fn peek(&self) -> Option<&[u8]> {
        match self {
            KeyStream::Live { heap, .. } => heap.peek().map(|std::cmp::Reverse((k, _))| k.as_slice()),
            KeyStream::Sorted { keys, at, .. } => keys.get(*at).map(Vec::as_slice),
            KeyStream::Other(keys) => keys.peek(),
        }
    }

    /// Positions at the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        match self {
            KeyStream::Sorted { keys, at, .. } => {
                *at = (*at).max(keys.partition_point(|k| k.as_slice() < target));
                Ok(())
            }
            KeyStream::Other(keys) => {
                keys.seek(target)?;
                // A seek left below its target would make the leapfrog
                // loop forever: fail the read instead.
                match keys.peek() {
                    Some(k) if k < target => Err(ErrorKind::Corrupted {
                        db: "keyword rows".into(),
                        key: crate::binstr::encode(target),
                        detail: "a seek stopped before its target".into(),
                    }
                    .into()),
                    _ => Ok(()),
                }
            }
            KeyStream::Live { txn, ranges, tail, heap, iters, .. } => {
                heap.clear();
                iters.clear();
                for (db, prefix) in ranges.iter() {
                    let mut lower = prefix.clone();
                    match tail {
                        Tail::EscapedRow { .. } if !target.is_empty() => push_escaped(&mut lower, target),
                        Tail::EscapedRow { .. } => {}
                    }
                    let upper = key::prefix_successor(prefix);
                    let range = (
                        Bound::Included(lower.as_slice()),
                        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    );
                    iters.push(db.range(txn, &range).map_err(|e| Error::lmdb("lookup", e))?);
                }
                for source in 0..iters.len() {
                    self.refill(source)?;
                }
                Ok(())
            }
        }
    }

    /// Reads range `source`'s next live entry into the heap.
    fn refill(&mut self, source: usize) -> Result<()> {
        let KeyStream::Live { db_name, ranges, tail, heap, iters, now_ms, read, .. } = self else {
            return Ok(());
        };
        let skip = ranges[source].1.len();
        for item in iters[source].by_ref() {
            let (k, v) = item.map_err(|e| Error::lmdb("lookup", e))?;
            *read += 1;
            let rest = k.get(skip..).unwrap_or_default();
            let item = match tail {
                Tail::EscapedRow { expiry } => {
                    if *now_ms >= expiry(v) {
                        continue;
                    }
                    key::take_component(rest)
                        .ok_or_else(|| -> Error {
                            ErrorKind::Corrupted {
                                db: (*db_name).to_owned(),
                                key: crate::error::preview(k),
                                detail: "bad index entry".into(),
                            }
                            .into()
                        })?
                        .0
                }
            };
            heap.push(std::cmp::Reverse((item, source)));
            break;
        }
        Ok(())
    }

    /// Moves past the current key.
    pub fn advance(&mut self) -> Result<()> {
        match self {
            KeyStream::Sorted { at, .. } => {
                *at += 1;
                Ok(())
            }
            KeyStream::Other(keys) => keys.advance(),
            KeyStream::Live { heap, .. } => {
                // Every range holding the current key moves past it (a term
                // can be in several fields of one row).
                let Some(std::cmp::Reverse((current, source))) = heap.pop() else { return Ok(()) };
                let mut sources = vec![source];
                while let Some(std::cmp::Reverse((k, _))) = heap.peek()
                    && *k == current
                {
                    if let Some(std::cmp::Reverse((_, s))) = heap.pop() {
                        sources.push(s);
                    }
                }
                for source in sources {
                    self.refill(source)?;
                }
                Ok(())
            }
        }
    }
}

/// Intersects or unites row-key streams, after `after`, up to `limit` keys.
pub(crate) fn combine(
    mut streams: Vec<KeyStream<'_>>,
    op: SetOp,
    after: Option<&[u8]>,
    limit: Option<usize>,
) -> Result<KeyPage> {
    combine_in(&mut streams, op, after, limit, &|_, _| false)
}

/// [`combine`] on streams the caller keeps (to go on from where a page
/// ended), and past `limit` for as long as `go_on(last key, next key)`
/// says (a caller that sorts ties its own way takes a whole group of
/// ties).
pub(crate) fn combine_in(
    streams: &mut [KeyStream<'_>],
    op: SetOp,
    after: Option<&[u8]>,
    limit: Option<usize>,
    go_on: &dyn Fn(&[u8], &[u8]) -> bool,
) -> Result<KeyPage> {
    let limit = limit.unwrap_or(usize::MAX);
    if let Some(after) = after {
        let mut next = after.to_vec();
        next.push(0);
        for s in streams.iter_mut() {
            s.seek(&next)?;
        }
    }
    let full = |keys: &[Vec<u8>], next: &[u8]| {
        keys.len() >= limit && keys.last().is_none_or(|last| !go_on(last, next))
    };
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut more = false;
    match op {
        SetOp::Union => {
            while let Some(min) = streams.iter().filter_map(KeyStream::peek).min().map(<[u8]>::to_vec) {
                if full(&keys, &min) {
                    more = true;
                    break;
                }
                for s in streams.iter_mut() {
                    if s.peek() == Some(min.as_slice()) {
                        s.advance()?;
                    }
                }
                keys.push(min);
            }
        }
        SetOp::Intersect => 'outer: loop {
            // Leapfrog: seek every stream to the largest head until all agree.
            let mut candidate: Vec<u8> = match streams.iter().map(KeyStream::peek).collect::<Option<Vec<_>>>()
            {
                Some(heads) if !heads.is_empty() => {
                    heads.iter().max().map(|k| k.to_vec()).unwrap_or_default()
                }
                _ => break,
            };
            loop {
                let mut agreed = true;
                for s in streams.iter_mut() {
                    if s.peek().is_some_and(|k| k < candidate.as_slice()) {
                        s.seek(&candidate)?;
                    }
                    match s.peek() {
                        None => break 'outer,
                        Some(k) if k > candidate.as_slice() => {
                            candidate = k.to_vec();
                            agreed = false;
                        }
                        Some(_) => {}
                    }
                }
                if agreed {
                    break;
                }
            }
            if full(&keys, &candidate) {
                more = true;
                break;
            }
            for s in streams.iter_mut() {
                s.advance()?;
            }
            keys.push(candidate);
        },
    }
    let entries_read = streams.iter().map(KeyStream::entries_read).sum();
    let next_after = if more { keys.last().cloned() } else { None };
    Ok(KeyPage { keys, next_after, entries_read })
}
