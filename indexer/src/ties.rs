//! A page of hits with ties broken by row key: hits of equal score (or
//! date) come in key order, whichever segments hold them, so two indexes
//! of the same rows built in different orders (the embedded store's and
//! one read from HBase region by region, or a generation and its rebuild)
//! answer the same page in the same order. tantivy's collectors break
//! ties by document address, which depends on how segments were built;
//! here each run's best hits are gathered (more while the page's last tie
//! may go on past them) and the tie groups at the page's edges are
//! ordered by their keys.

use std::cmp::Ordering;

use tantivy::DocAddress;

use crate::error::Result;

/// Hits past the page gathered at most to find the end of its last tie: a
/// tie longer than that (a query whose every match scores alike, such as
/// one keyword of many rows) is cut where gathering stopped, its hits
/// past it by address, so a page costs at most this many more key reads.
pub(crate) const MAX_TIE_READ: usize = 1024;

/// Hits past the page the first pass gathers.
const FIRST_PAST: usize = 1;

/// One run's best hits: (score or date, address), in the asked order.
pub(crate) type RunHits = Vec<(f64, DocAddress)>;

/// What a gathering asks of each run: its best `best` hits; or, from a
/// gatherer that keeps ties ([`crate::top_ties::TopWithTies`]), its best
/// `page` and the hits tied with its `page`-th, by address, `cap` hits in
/// all (the hit past the page is then not needed to see a tie go on).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ask {
    pub best: usize,
    pub page: usize,
    pub cap: usize,
}

/// What gathering gives: the matches, each run's hits, what the caller
/// counts beside (facets), and whether the runs kept their ties (then no
/// tie needs gathering again).
pub(crate) type Gathered<F> = (usize, Vec<RunHits>, F, bool);

/// A page: the number of matches, the hits (key, score or date), and what
/// was counted beside.
pub(crate) type Page<F> = (usize, Vec<(Vec<u8>, f64)>, F);

/// The page `offset..offset + limit` of the hits `gather(ask)` finds
/// ([`Ask`]), in the order `before` gives values, hits of equal value by
/// key (`key(run, address)`); with the number of matches and what `gather`
/// counted beside.
///
/// # Errors
/// What `gather` and `key` return.
pub(crate) fn keyed_page<F>(
    offset: usize,
    limit: usize,
    before: fn(f64, f64) -> Ordering,
    mut gather: impl FnMut(Ask) -> Result<Gathered<F>>,
    key: impl Fn(usize, DocAddress) -> Result<Vec<u8>>,
) -> Result<Page<F>> {
    let window = offset.saturating_add(limit);
    // One hit past the page in the first pass (a tie at its end that goes
    // on shows there; a larger first window costs block-max pruning on
    // every search: 16 more hits made the peer queries 1.21x slower), then,
    // only for such a tie, the most there will be.
    let mut n = window.saturating_add(FIRST_PAST);
    let cap = window.saturating_add(MAX_TIE_READ);
    loop {
        let (total, runs, counted, ties) = gather(Ask { best: n, page: window, cap })?;
        let mut merged: Vec<(f64, DocAddress, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(run, hits)| hits.iter().map(move |&(v, addr)| (v, addr, run)))
            .collect();
        // Stable: each run's own order kept within a value.
        merged.sort_by(|a, b| before(a.0, b.0));
        if merged.len() <= offset {
            return Ok((total, Vec::new(), counted));
        }
        let end = window.min(merged.len());
        let last = merged[end - 1].0;
        // A run that gave all it was asked, its last hit tied with the
        // page's last, may hold more of that tie (unless its tie came with
        // it).
        let more =
            !ties && runs.iter().any(|hits| hits.len() >= n && hits.last().is_some_and(|h| h.0 == last));
        if more && n < total && n < cap {
            n = cap;
            continue;
        }
        let first = merged[offset].0;
        let from = merged
            .iter()
            .position(|h| h.0 == first)
            .unwrap_or(offset)
            .max(offset.saturating_sub(MAX_TIE_READ));
        let to = merged.iter().rposition(|h| h.0 == last).map_or(end, |i| i + 1);
        let mut span = Vec::with_capacity(to - from);
        for &(value, addr, run) in &merged[from..to] {
            span.push((value, key(run, addr)?));
        }
        span.sort_by(|a, b| before(a.0, b.0).then_with(|| a.1.cmp(&b.1)));
        let page = span.into_iter().skip(offset - from).take(limit).map(|(v, k)| (k, v)).collect();
        return Ok((total, page, counted));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn best_first(a: f64, b: f64) -> Ordering {
        b.total_cmp(&a)
    }

    proptest! {
        /// Against a brute force: every hit sorted by (value, key), the
        /// page cut from it; whatever order the runs hold their ties in.
        #[test]
        fn pages_equal_a_full_sort_by_value_then_key(
            runs in prop::collection::vec(prop::collection::vec((0..4u8, any::<u16>()), 0..30), 1..4),
            offset in 0..40usize,
            limit in 1..20usize,
            with_ties in any::<bool>(),
        ) {
            // Each hit: a value from a few (many ties) and a distinct key.
            let mut all = Vec::new();
            let mut by_run: Vec<Vec<(f64, Vec<u8>)>> = Vec::new();
            for (r, hits) in runs.iter().enumerate() {
                let mut mine: Vec<(f64, Vec<u8>)> = hits
                    .iter()
                    .enumerate()
                    .map(|(i, &(v, k))| (f64::from(v), [k.to_be_bytes().to_vec(), vec![r as u8, i as u8]].concat()))
                    .collect();
                // A run's ties in an order of its own (not by key).
                mine.sort_by(|a, b| best_first(a.0, b.0).then_with(|| b.1.cmp(&a.1)));
                all.extend(mine.iter().cloned());
                by_run.push(mine);
            }
            let total = all.len();
            all.sort_by(|a, b| best_first(a.0, b.0).then_with(|| a.1.cmp(&b.1)));
            let want: Vec<(Vec<u8>, f64)> = all.into_iter().skip(offset).take(limit).map(|(v, k)| (k, v)).collect();
            // Each run's best n, or (as `TopWithTies` gathers) its best n
            // and the hits tied with its n-th, cap in all.
            let mut passes = 0;
            let gather = |ask: Ask| -> Result<Gathered<()>> {
                passes += 1;
                let hits = by_run
                    .iter()
                    .enumerate()
                    .map(|(r, hits)| {
                        let kept = match hits.get(ask.page.saturating_sub(1)) {
                            Some(nth) if with_ties => hits
                                .iter()
                                .position(|h| best_first(h.0, nth.0).is_gt())
                                .unwrap_or(hits.len())
                                .min(ask.cap),
                            _ if with_ties => ask.page,
                            _ => ask.best,
                        };
                        hits.iter().take(kept).enumerate().map(|(i, h)| (h.0, DocAddress::new(r as u32, i as u32))).collect()
                    })
                    .collect();
                Ok((total, hits, (), with_ties))
            };
            let key = |run: usize, addr: DocAddress| Ok(by_run[run][addr.doc_id as usize].1.clone());
            let (n, got, ()) = keyed_page(offset, limit, best_first, gather, key).unwrap();
            prop_assert_eq!(n, total);
            prop_assert_eq!(got, want);
            if with_ties {
                prop_assert_eq!(passes, 1);
            }
        }
    }
}
