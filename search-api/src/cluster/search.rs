//! A search over a cluster's shards.
//!
//! Where it runs ([`route`]): a search of one mailbox is coordinated by
//! the holder of that mailbox's shard (passed on to it when another
//! searcher received it); any other by the searcher that received it when
//! it holds a shard of the table (else passed on to a holder of one).
//!
//! How ([`Coordinated`], the searcher's [`FindKeys`]): by relevance, every
//! shard whose documents score the search (all of them; a confined key's:
//! those of its mailboxes) first says what scoring asks of its statistics,
//! and the sums are sent with the query (`dfs_query_then_fetch`); then
//! the shards the search covers (a mailbox's: one) each answer their best
//! `offset + limit` hits, merged into the page (`merge.rs`). A shard
//! without a live holder fails the search with `shard_unavailable` (503,
//! naming it): never a page without it. The coordinator then reads the
//! hits' rows from HBase as one server does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use rowsearch_indexer::query::ParseOptions;
use rowsearch_indexer::{Consistency, KeyHits, ParsedQuery, ShardStats, Snapshot, SortBy, Want};
use rowsearch_store::{Cancel, SearchSchema};

use super::merge::merge;
use super::shards::ShardIndex;
use super::wire::{Phase, ShardAnswer, ShardCall};
use super::{Cluster, ShardId};
use crate::searcher::{Asked, FindKeys, SearchRequest};
use crate::{Error, Result};

/// Where a search of a table goes.
#[derive(Debug)]
pub enum Route {
    /// Coordinated here, with this shard's index parsing the query.
    Here(Arc<ShardIndex>),
    /// Passed on to the searcher at this address.
    There(String),
}

/// Where a search of `table` (of `count` shards) for `partition` (a
/// mailbox's; `None`: any other) goes; `passed_on`: it was passed on
/// already, so it is not passed on again.
///
/// # Errors
/// `ShardUnavailable`.
pub fn route(
    cluster: &Cluster,
    table: &str,
    count: u32,
    partition: Option<&[u8]>,
    passed_on: bool,
) -> Result<Route> {
    let local =
        |shard: u32| cluster.indexes().and_then(|i| i.get(&ShardId { table: table.to_owned(), shard }));
    let unavailable = |shard: u32, reason: &str| Error::ShardUnavailable {
        table: table.to_owned(),
        shard,
        reason: reason.to_owned(),
    };
    if let Some(partition) = partition {
        let shard = SearchSchema::shard_of(partition, count);
        if let Some(index) = local(shard) {
            return Ok(Route::Here(index));
        }
        if passed_on {
            return Err(unavailable(shard, "it was passed on to this searcher, which no longer holds it"));
        }
        let wait = Instant::now() + MOVE_WAIT;
        return match cluster.holder_by(&ShardId { table: table.to_owned(), shard }, None, wait) {
            Some(addr) => Ok(Route::There(addr)),
            None => Err(unavailable(shard, "its lease is not held")),
        };
    }
    if let Some(index) = (0..count).find_map(local) {
        return Ok(Route::Here(index));
    }
    if passed_on {
        return Err(unavailable(0, "it was passed on to this searcher, which holds no shard of the table"));
    }
    (0..count)
        .find_map(|shard| cluster.holder(&ShardId { table: table.to_owned(), shard }))
        .map(Route::There)
        .ok_or_else(|| unavailable(0, "no searcher holds a shard of the table"))
}

/// The keys of a search from every shard it needs (see the module docs).
pub struct Coordinated<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// The table.
    pub table: &'a str,
    /// Its shard count.
    pub count: u32,
}

impl Coordinated<'_> {
    /// Each of `shards` asked `call` (its shard set per call), at once.
    fn ask(
        &self,
        shards: &[u32],
        call: &ShardCall,
        resume: &BTreeMap<u32, (u64, u64)>,
        cancel: &Cancel,
        deadline: Instant,
    ) -> Result<Vec<ShardAnswer>> {
        let one = |shard: u32| -> Result<ShardAnswer> {
            let id = ShardId { table: self.table.to_owned(), shard };
            let call = ShardCall { shard, resume: resume.get(&shard).copied(), ..call.clone() };
            // Held here: answered here (once reopened at the table's count).
            if let Some(index) = opened(self.cluster, &id, self.count, deadline) {
                self.cluster.count_answer(call.phase);
                return answer(&index, &call, cancel, deadline);
            }
            let unavailable =
                |reason: String| Error::ShardUnavailable { table: self.table.to_owned(), shard, reason };
            let wait = deadline.min(Instant::now() + MOVE_WAIT);
            let addr = self
                .cluster
                .holder_by(&id, None, wait)
                .ok_or_else(|| unavailable("its lease is not held".into()))?;
            let peers =
                self.cluster.peers().ok_or_else(|| unavailable("this searcher has no client".into()))?;
            match peers.call(&addr, &call, deadline) {
                Ok(answer) => Ok(answer),
                // The shard moved since this searcher last read the leases
                // (a round ago at most), or its holder had not yet opened
                // it at the table's new count: asked again, where it went
                // or (none shown within a round and a half) where it was.
                Err(_) => {
                    let to = self
                        .cluster
                        .holder_by(&id, Some(&addr), deadline.min(Instant::now() + MOVE_WAIT))
                        .unwrap_or(addr);
                    peers.call(&to, &call, deadline).map_err(|e| unavailable(e.to_string()))
                }
            }
        };
        std::thread::scope(|scope| {
            let running: Vec<_> = shards.iter().map(|&s| scope.spawn(move || one(s))).collect();
            running
                .into_iter()
                .map(|r| r.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        })
    }
}

/// Shard `id`'s index when this searcher has it, waiting (until
/// `deadline`, at most eight rounds) for it to be reopened at the
/// table's shard count `count` when a reindex changed it: this searcher
/// sees the new count within a second of the change (its catalog is read
/// again after one) and reopens at its next round.
pub fn opened(cluster: &Cluster, id: &ShardId, count: u32, deadline: Instant) -> Option<Arc<ShardIndex>> {
    let until = deadline.min(Instant::now() + REOPEN_WAIT);
    loop {
        let index = cluster.indexes()?.get(id)?;
        if index.count == count || Instant::now() >= until {
            return Some(index);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// How long a shard held here may take to be reopened at a new count:
/// the catalog's second and a round, with room for rounds a busy
/// machine slows.
const REOPEN_WAIT: std::time::Duration = std::time::Duration::from_millis(8 * super::ROUND_MS);

/// Marks the walks a search's statistics phase keeps apart from cursors'.
const WALK_MARK: u64 = 0xdf5_0000_0000_0000;

/// How long a search waits for a shard without a holder, or one whose
/// holder did not answer, to show another: a round and a half (a shard
/// handed over shows none until the next holder's round).
const MOVE_WAIT: std::time::Duration = std::time::Duration::from_millis(super::ROUND_MS * 3 / 2);

impl FindKeys for Coordinated<'_> {
    fn find(
        &self,
        _snapshot: &Snapshot,
        _parsed: &ParsedQuery,
        request: &SearchRequest,
        asked: &Asked<'_>,
    ) -> Result<KeyHits> {
        let partitions = crate::searcher::partitions_of(&request.partition, &request.scope)?;
        // The shards the search covers: its mailboxes' (a confined key's,
        // or the one asked), or every one.
        let mut covered: Vec<u32> =
            partitions.iter().map(|p| SearchSchema::shard_of(p, self.count)).collect();
        if partitions.is_empty() {
            covered = (0..self.count).collect();
        }
        covered.sort_unstable();
        covered.dedup();
        let deadline =
            request.deadline.unwrap_or_else(|| Instant::now() + crate::searcher::DEFAULT_FRESHNESS_WAIT);
        let mut call = ShardCall {
            phase: Phase::Stats,
            table: self.table.to_owned(),
            shard: 0,
            count: self.count,
            query: request.query.clone(),
            partitions: partitions.iter().map(|p| p.to_vec()).collect(),
            scoped_stats: !asked.stats_partitions.is_empty(),
            sort: sort_name(request.sort).to_owned(),
            typos: request.typos,
            max_expansions: request.max_expansions,
            max_clauses: request.max_clauses,
            consistency: match request.consistency {
                Consistency::Eventual => "eventual".into(),
                _ => "snapshot".into(),
            },
            min_seq: request.min_seq,
            facets: asked.facets.iter().map(|f| f.name.clone()).collect(),
            window: asked.offset.saturating_add(asked.limit),
            collapse: asked.collapse.map(str::to_owned),
            stats: None,
            wait_ms: 0,
            resume: None,
        };
        call.wait_ms =
            u64::try_from(deadline.saturating_duration_since(Instant::now()).as_millis()).unwrap_or(0);
        let mut resume = BTreeMap::new();
        if request.sort == SortBy::Relevance {
            // A confined key's statistics are its mailboxes'; anyone
            // else's the whole table's.
            let scoring: Vec<u32> =
                if call.scoped_stats { covered.clone() } else { (0..self.count).collect() };
            let mut sums = ShardStats::default();
            for (shard, answer) in
                scoring.iter().zip(self.ask(&scoring, &call, &resume, &request.cancel, deadline)?)
            {
                sums.add(&answer.stats.unwrap_or_default());
                resume.extend(answer.snapshot.map(|at| (*shard, at)));
            }
            call.stats = Some(sums);
        }
        call.phase = Phase::Keys;
        let answers = self.ask(&covered, &call, &resume, &request.cancel, deadline)?;
        Ok(merge(
            &answers,
            request.sort,
            asked.offset,
            asked.limit,
            asked.collapse.is_some(),
            asked.facets.len(),
        ))
    }
}

fn sort_name(sort: SortBy) -> &'static str {
    match sort {
        SortBy::Relevance => "relevance",
        SortBy::Newest => "newest",
        SortBy::Oldest => "oldest",
    }
}

/// This searcher's answer for a shard it holds (`index`), from a snapshot
/// of its index as `call` asks.
///
/// # Errors
/// `BadRequest` for a call that does not parse (another build's);
/// `Indexer` (`Query`, `NotFresh`...), `Store`.
pub fn answer(
    index: &ShardIndex,
    call: &ShardCall,
    cancel: &Cancel,
    deadline: Instant,
) -> Result<ShardAnswer> {
    if call.count != index.count {
        return Err(Error::ShardUnavailable {
            table: call.table.clone(),
            shard: call.shard,
            reason: format!(
                "asked for {} shards, this searcher serves it as one of {}",
                call.count, index.count
            ),
        });
    }
    let sort = match call.sort.as_str() {
        "relevance" => SortBy::Relevance,
        "newest" => SortBy::Newest,
        "oldest" => SortBy::Oldest,
        other => return Err(Error::BadRequest(format!("sort {other:?}"))),
    };
    let searcher = &index.searcher;
    let (schema, table_id) = searcher.searchable(&call.table)?;
    let search = schema.search.as_ref().ok_or_else(|| Error::BadRequest("not searchable".into()))?;
    let live = searcher.live().table(&call.table, table_id)?;
    let want = Want {
        consistency: if call.consistency == "eventual" {
            Consistency::Eventual
        } else {
            Consistency::Snapshot
        },
        min_seq: call.min_seq,
        deadline: deadline.min(Instant::now() + std::time::Duration::from_millis(call.wait_ms)),
    };
    // The keys of a search by relevance are read from the snapshot its
    // statistics were (kept a few seconds, as a cursor's walk is); a fresh
    // one when it is gone.
    let kept = call.resume.and_then(|(number, walk)| searcher.live().resume(&live, number, walk).ok());
    let snapshot = match kept {
        Some(snapshot) => snapshot,
        None => searcher.live().snapshot(&live, &want)?,
    };
    let partitions: Vec<&[u8]> = call.partitions.iter().map(Vec::as_slice).collect();
    let options = ParseOptions {
        typos: call.typos,
        max_expansions: call.max_expansions,
        max_clauses: call.max_clauses,
        cancel: cancel.clone(),
    };
    let parsed = snapshot.parse(&call.query, &partitions, &options)?;
    let stats_partitions: &[&[u8]] = if call.scoped_stats { &partitions } else { &[] };
    let empty = ShardAnswer {
        stats: None,
        total: 0,
        keys: Vec::new(),
        facets: Vec::new(),
        groups: Vec::new(),
        commit: 0,
        snapshot: None,
    };
    if call.phase == Phase::Stats {
        let stats = snapshot.bm25_stats(&parsed, stats_partitions)?;
        // Kept under its sequence, a key no page's commit takes.
        let walk = snapshot.seq() ^ WALK_MARK;
        live.keep_walk(&snapshot, walk);
        return Ok(ShardAnswer { stats: Some(stats), snapshot: Some((snapshot.number(), walk)), ..empty });
    }
    let facets = rowsearch_indexer::facets::resolve(
        &snapshot.generation().schema,
        search.partition.as_deref(),
        search.date_column.is_some(),
        &call.facets,
    )
    .map_err(Error::BadRequest)?;
    let window = call.window.max(1);
    let collapse = call.collapse.as_deref();
    let found = match &call.stats {
        Some(stats) => snapshot.search_with_stats(
            &parsed,
            &facets,
            stats_partitions,
            sort,
            0,
            window,
            collapse,
            stats,
        )?,
        None => snapshot.search(&parsed, &facets, stats_partitions, sort, 0, window, collapse)?,
    };
    Ok(ShardAnswer {
        total: found.total,
        keys: found.keys,
        facets: found.facets.into_iter().map(|counts| counts.into_iter().collect()).collect(),
        groups: found.groups,
        commit: found.commit,
        ..empty
    })
}
