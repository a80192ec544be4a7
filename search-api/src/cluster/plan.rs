//! What a searcher does with the shards' leases in one round, decided from
//! what it read of the cluster (a pure function, so every case is tested
//! against a model): renew what it holds, take free shards up to its
//! quota, release those past its quota when others lack shards.
//!
//! Quotas: the live searchers sorted by id, the `T` shards shared so that
//! the first `T % S` take one more than `T / S`; every searcher computes
//! the same from the same view. Which free shards a searcher prefers is
//! rendezvous hashing (xxh3 of its id and the shard): a searcher that comes
//! back tends to take the shards it had, and two searchers rarely want the
//! same one. HBase's check-and-put makes each take and renewal atomic, so
//! views that differ for a moment never give a shard two holders; the
//! next rounds even the counts out.

use std::collections::BTreeMap;

/// A shard of a table's index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardId {
    /// The table.
    pub table: String,
    /// The shard, `0..shards`.
    pub shard: u32,
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.table, self.shard)
    }
}

/// Who holds a shard and until when (ms).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// The searcher's id; empty: released.
    pub holder: String,
    /// Its HTTP address.
    pub addr: String,
    /// When it expires unless renewed.
    pub expires_ms: u64,
    /// When this holder took it.
    pub since_ms: u64,
}

impl Lease {
    /// Whether it is held at `now` (not released, not expired).
    pub fn held_at(&self, now: u64) -> bool {
        !self.holder.is_empty() && self.expires_ms > now
    }
}

/// One thing to do to a shard's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Extend the lease this searcher holds.
    Renew(ShardId),
    /// Take a free shard (no lease, released or expired).
    Take(ShardId),
    /// Give a held shard up (for a searcher below its quota).
    Release(ShardId),
}

/// `me`'s quota of `shards` among the `live` searchers (sorted ids).
pub fn quota(me: &str, live: &[String], shards: usize) -> usize {
    let Some(rank) = live.iter().position(|id| id == me) else { return 0 };
    shards / live.len() + usize::from(rank < shards % live.len())
}

/// How much `me` wants `shard` (higher first).
fn preference(me: &str, shard: &ShardId) -> u64 {
    let mut bytes = Vec::with_capacity(me.len() + shard.table.len() + 6);
    bytes.extend_from_slice(me.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(shard.table.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&shard.shard.to_be_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// What `me` does this round, given the `live` searchers (sorted ids, `me`
/// among them), every shard, and the leases read at `now`.
pub fn plan(
    me: &str,
    live: &[String],
    shards: &[ShardId],
    leases: &BTreeMap<ShardId, Lease>,
    now: u64,
) -> Vec<Step> {
    let holder = |s: &ShardId| leases.get(s).filter(|l| l.held_at(now)).map(|l| l.holder.as_str());
    let mut mine: Vec<&ShardId> = shards.iter().filter(|s| holder(s) == Some(me)).collect();
    let mut free: Vec<&ShardId> = shards.iter().filter(|s| holder(s).is_none()).collect();
    let want = quota(me, live, shards.len());
    let mut steps = Vec::new();
    if mine.len() > want {
        // Give one up only when the others lack more than the free shards
        // can give them (they take free ones first).
        let lacking: usize = live
            .iter()
            .filter(|id| *id != me)
            .map(|id| {
                let has = shards.iter().filter(|s| holder(s) == Some(id.as_str())).count();
                quota(id, live, shards.len()).saturating_sub(has)
            })
            .sum();
        if lacking > free.len() {
            // Its extras, those it wants least first, as many as the
            // others lack past the free ones (each searcher over its quota
            // gives up its own extras: together, what the others lack).
            mine.sort_by_key(|s| preference(me, s));
            let give = (mine.len() - want).min(lacking - free.len());
            steps.extend(mine.drain(..give).map(|s| Step::Release(s.clone())));
        }
    }
    steps.extend(mine.iter().map(|s| Step::Renew((*s).clone())));
    if mine.len() < want {
        free.sort_by_key(|s| std::cmp::Reverse(preference(me, s)));
        steps.extend(free.into_iter().take(want - mine.len()).map(|s| Step::Take(s.clone())));
    }
    steps
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::{Lease, ShardId, Step, plan, quota};

    const LEASE_MS: u64 = 5_000;

    /// The model of HBase's lease rows: a step applies only if the lease
    /// is as the planner read it (its check-and-put). `serves` is what the
    /// searcher believes it holds, and until when: what it won.
    fn apply(
        leases: &mut BTreeMap<ShardId, Lease>,
        read: &BTreeMap<ShardId, Lease>,
        me: &str,
        steps: &[Step],
        now: u64,
        serves: &mut BTreeMap<ShardId, u64>,
    ) {
        for step in steps {
            let (shard, new) = match step {
                Step::Renew(s) => {
                    let since = read.get(s).map_or(now, |l| l.since_ms);
                    (
                        s,
                        Lease {
                            holder: me.into(),
                            addr: String::new(),
                            expires_ms: now + LEASE_MS,
                            since_ms: since,
                        },
                    )
                }
                Step::Take(s) => (
                    s,
                    Lease {
                        holder: me.into(),
                        addr: String::new(),
                        expires_ms: now + LEASE_MS,
                        since_ms: now,
                    },
                ),
                Step::Release(s) => {
                    (s, Lease { holder: String::new(), addr: String::new(), expires_ms: 0, since_ms: 0 })
                }
            };
            if leases.get(shard) == read.get(shard) {
                match step {
                    Step::Release(_) => serves.remove(shard),
                    _ => serves.insert(shard.clone(), new.expires_ms),
                };
                leases.insert(shard.clone(), new);
            }
        }
    }

    /// One event of a run.
    #[derive(Debug, Clone)]
    enum Event {
        /// Searcher `i` runs a round (from a view read `stale` rounds ago).
        Round { i: usize, stale: bool },
        /// Searcher `i` stops (killed) or starts again.
        Toggle(usize),
        /// Time passes (ms).
        Pass(u64),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            8 => (0..4usize, prop::bool::weighted(0.2)).prop_map(|(i, stale)| Event::Round { i, stale }),
            1 => (0..4usize).prop_map(Event::Toggle),
            2 => (100..3_000u64).prop_map(Event::Pass),
        ]
    }

    proptest! {
        /// Searchers taking rounds in any order, from fresh or stale views,
        /// killed and started again, time passing: no two searchers ever
        /// believe they hold a shard at once (what each won, until its
        /// lease's end), and once the live ones have run their rounds
        /// undisturbed, every shard is held by a live searcher, each
        /// holding its quota.
        #[test]
        fn leases_settle_to_each_live_searchers_quota(
            shard_count in 1..12u32,
            events in prop::collection::vec(event(), 0..80),
        ) {
            let ids: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
            let shards: Vec<ShardId> =
                (0..shard_count).map(|shard| ShardId { table: "t".into(), shard }).collect();
            let mut leases = BTreeMap::new();
            let mut up = [true, true, true, false];
            let mut now = 1_000_000u64;
            let mut old = leases.clone();
            let mut serves: Vec<BTreeMap<ShardId, u64>> = vec![BTreeMap::new(); 4];
            for e in &events {
                match *e {
                    Event::Round { i, stale } if up[i] => {
                        let read = if stale { old.clone() } else { leases.clone() };
                        old = leases.clone();
                        let live: Vec<String> =
                            ids.iter().zip(up).filter(|(_, u)| *u).map(|(id, _)| id.clone()).collect();
                        let steps = plan(&ids[i], &live, &shards, &read, now);
                        apply(&mut leases, &read, &ids[i], &steps, now, &mut serves[i]);
                    }
                    Event::Round { .. } => {}
                    Event::Toggle(i) => {
                        up[i] = !up[i];
                        serves[i].clear();
                    }
                    Event::Pass(ms) => now += ms,
                }
                for s in &shards {
                    let believers = serves.iter().filter(|b| b.get(s).is_some_and(|&until| until > now)).count();
                    prop_assert!(believers <= 1, "{} believed held by {} searchers", s, believers);
                }
            }
            // Rounds of the live ones, every 500 ms (their leases never
            // lapse; a stopped searcher's do), until nothing changes.
            let live: Vec<String> = ids.iter().zip(up).filter(|(_, u)| *u).map(|(id, _)| id.clone()).collect();
            prop_assume!(!live.is_empty());
            for _ in 0..(LEASE_MS / 500) as usize + 2 * shards.len() + 2 {
                for id in &live {
                    let read = leases.clone();
                    let steps = plan(id, &live, &shards, &read, now);
                    let i = ids.iter().position(|x| x == id).unwrap();
                    apply(&mut leases, &read, id, &steps, now, &mut serves[i]);
                }
                now += 500;
            }
            for s in &shards {
                let holder = leases.get(s).filter(|l| l.held_at(now)).map(|l| l.holder.clone());
                prop_assert!(holder.as_ref().is_some_and(|h| live.contains(h)), "{s} held by {holder:?}");
            }
            for id in &live {
                let held = shards.iter().filter(|s| leases[*s].holder == *id).count();
                prop_assert_eq!(held, quota(id, &live, shards.len()), "{} of {:?}", id, live);
            }
        }
    }

    #[test]
    fn quotas_share_every_shard() {
        let live: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(live.iter().map(|id| quota(id, &live, 8)).collect::<Vec<_>>(), [3, 3, 2]);
        assert_eq!(quota("z", &live, 8), 0, "not live, no quota");
    }
}
