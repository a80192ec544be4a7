//! One page from the pages of many shards: each shard answers its best
//! `offset + limit` hits in the search's order (hits of equal score or
//! date by row key, `indexer/src/ties.rs`; collapsed groups of equal best
//! by their value), so the page of the whole table is the same order over
//! their union, cut at `offset`. Totals and facet counts add up: a mailbox
//! is in one shard, and so are its threads (threads live within a
//! partition), so no group spans two shards.

use std::collections::HashMap;

use rowsearch_indexer::{KeyHits, SortBy};

use super::wire::ShardAnswer;

/// A shard's hit: its score or date, its key, its group when collapsed.
type Hit<'a> = (f64, &'a [u8], Option<&'a (String, u64)>);

/// The page `offset..offset + limit` of `answers` (each a shard's best
/// hits, in `sort` order), `facets` facets counted, collapsed or not.
pub fn merge(
    answers: &[ShardAnswer],
    sort: SortBy,
    offset: usize,
    limit: usize,
    collapsed: bool,
    facets: usize,
) -> KeyHits {
    let before = |a: f64, b: f64| match sort {
        SortBy::Relevance | SortBy::Newest => b.total_cmp(&a),
        SortBy::Oldest => a.total_cmp(&b),
    };
    // (value, key, group) of every shard's hits.
    let mut hits: Vec<Hit<'_>> = answers
        .iter()
        .flat_map(|a| {
            a.keys.iter().enumerate().map(|(i, (key, value))| (*value, key.as_slice(), a.groups.get(i)))
        })
        .collect();
    hits.sort_by(|a, b| {
        before(a.0, b.0).then_with(|| match (collapsed, a.2, b.2) {
            (true, Some(ga), Some(gb)) => ga.0.as_bytes().cmp(gb.0.as_bytes()).then_with(|| a.1.cmp(b.1)),
            _ => a.1.cmp(b.1),
        })
    });
    let page: Vec<_> = hits.into_iter().skip(offset).take(limit).collect();
    let mut counts: Vec<HashMap<String, u64>> = vec![HashMap::new(); facets];
    for answer in answers {
        for (into, from) in counts.iter_mut().zip(&answer.facets) {
            for (value, n) in from {
                *into.entry(value.clone()).or_default() += n;
            }
        }
    }
    let mut commits = String::new();
    for answer in answers {
        commits.push_str(&format!("{:x};", answer.commit));
    }
    KeyHits {
        total: answers.iter().map(|a| a.total).sum(),
        keys: page.iter().map(|(value, key, _)| (key.to_vec(), *value)).collect(),
        generation: 0,
        commit: xxhash_rust::xxh3::xxh3_64(commits.as_bytes()),
        facets: counts,
        groups: if collapsed { page.iter().filter_map(|(_, _, g)| g.cloned()).collect() } else { Vec::new() },
    }
}

/// Whether `a` goes before `b` in `sort`'s order of (value, key).
#[cfg(test)]
fn order(sort: SortBy, a: &(f64, Vec<u8>), b: &(f64, Vec<u8>)) -> std::cmp::Ordering {
    let by_value = match sort {
        SortBy::Relevance | SortBy::Newest => b.0.total_cmp(&a.0),
        SortBy::Oldest => a.0.total_cmp(&b.0),
    };
    by_value.then_with(|| a.1.cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn answer(hits: Vec<(f64, Vec<u8>)>, total: u64, facet: Vec<(String, u64)>) -> ShardAnswer {
        ShardAnswer {
            stats: None,
            total,
            keys: hits.into_iter().map(|(v, k)| (k, v)).collect(),
            facets: vec![facet],
            groups: Vec::new(),
            commit: total,
            snapshot: None,
        }
    }

    proptest! {
        /// Against one index: every hit of every shard sorted by (value,
        /// key), the page cut from it; each shard giving only its best
        /// `offset + limit`, as shards do.
        #[test]
        fn a_merged_page_is_the_page_of_every_hit_sorted(
            shards in prop::collection::vec(prop::collection::vec((0..5u8, any::<u16>()), 0..25), 1..5),
            offset in 0..30usize,
            limit in 1..15usize,
            sort in prop::sample::select(vec![SortBy::Relevance, SortBy::Newest, SortBy::Oldest]),
        ) {
            let mut all = Vec::new();
            let mut answers = Vec::new();
            for (s, hits) in shards.iter().enumerate() {
                let mut mine: Vec<(f64, Vec<u8>)> = hits
                    .iter()
                    .enumerate()
                    .map(|(i, &(v, k))| (f64::from(v), [k.to_be_bytes().to_vec(), vec![s as u8, i as u8]].concat()))
                    .collect();
                mine.sort_by(|a, b| order(sort, a, b));
                all.extend(mine.iter().cloned());
                let total = mine.len() as u64;
                let facet = vec![("x".to_owned(), total), (format!("s{s}"), 1)];
                mine.truncate(offset + limit);
                answers.push(answer(mine, total, facet));
            }
            all.sort_by(|a, b| order(sort, a, b));
            let want: Vec<(Vec<u8>, f64)> = all.iter().skip(offset).take(limit).map(|(v, k)| (k.clone(), *v)).collect();
            let got = merge(&answers, sort, offset, limit, false, 1);
            prop_assert_eq!(got.keys, want);
            prop_assert_eq!(got.total, all.len() as u64);
            prop_assert_eq!(got.facets[0].get("x").copied(), Some(all.len() as u64));
            prop_assert_eq!(got.facets[0].len(), shards.len() + 1);
        }
    }

    /// Collapsed: groups of equal best go by their value, whichever
    /// shard holds them, and each keeps its count.
    #[test]
    fn collapsed_groups_of_equal_best_go_by_their_value() {
        let mut a = answer(vec![(2.0, b"k9".to_vec()), (1.0, b"k1".to_vec())], 2, Vec::new());
        a.groups = vec![("t2".into(), 3), ("t0".into(), 1)];
        let mut b = answer(vec![(2.0, b"k5".to_vec())], 1, Vec::new());
        b.groups = vec![("t1".into(), 2)];
        let got = merge(&[a, b], SortBy::Relevance, 0, 3, true, 0);
        assert_eq!(
            got.keys.iter().map(|(k, _)| k.as_slice()).collect::<Vec<_>>(),
            [&b"k5"[..], b"k9", b"k1"]
        );
        assert_eq!(got.groups, [("t1".into(), 2), ("t2".into(), 3), ("t0".into(), 1)]);
        assert_eq!(got.total, 3);
    }
}
