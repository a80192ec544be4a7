//! A cluster of searchers over one HBase (`serve --hbase ... --cluster
//! NAME`): searchers find each other and share the shards of every
//! searchable table's index through rows in HBase (`rows.rs`), with leases
//! taken and renewed by HBase's check-and-put, and no other coordinator.
//!
//! Each searcher runs a round every [`ROUND_MS`] on a thread of its own:
//! it writes its heartbeat, reads the members and the leases, and acts on
//! the plan (`plan.rs`): renews what it holds, takes free shards up to its
//! quota, gives its extras up for searchers that lack shards. A lease runs
//! [`LEASE_MS`] from its last renewal: a searcher killed loses its shards
//! to the others within that and one round. A searcher counts as holding
//! a shard only until the lease it last won ends (by its own clock), so
//! one cut off from HBase stops claiming its shards when the others may
//! take them.

mod merge;
mod plan;
mod rows;
pub mod search;
pub mod shards;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

pub use plan::{Lease, ShardId, Step, plan, quota};
pub use rows::{CLUSTER, Member};

use crate::hbase::{HbaseError, HbaseTables};

/// How often a searcher runs a round.
pub const ROUND_MS: u64 = 1_000;
/// How long a lease (and a heartbeat) lasts without renewal.
pub const LEASE_MS: u64 = 5_000;

/// What a searcher last read and did.
#[derive(Debug, Default, Clone)]
struct View {
    members: BTreeMap<String, Member>,
    leases: BTreeMap<ShardId, Lease>,
    shards: Vec<ShardId>,
    /// What this searcher won and until when (ms).
    held: BTreeMap<ShardId, u64>,
    /// When the last round ended, and its failure if it failed.
    round_ms: u64,
    trouble: Option<String>,
}

/// This process as a searcher of a cluster.
pub struct Cluster {
    name: String,
    id: String,
    addr: String,
    started_ms: u64,
    tables: HbaseTables,
    view: Mutex<View>,
    /// Set by [`Cluster::leave`]: no more rounds.
    left: std::sync::atomic::AtomicBool,
    /// Held for a round's length, so leaving waits for one under way.
    rounds: Mutex<()>,
    /// Where the heartbeat reads how far behind each table's index is.
    lags: Mutex<Option<LagSource>>,
    /// Rounds that failed since it started.
    failures: std::sync::atomic::AtomicU64,
    /// The cluster table is known to exist (looked for once).
    ready: std::sync::atomic::AtomicBool,
    /// The indexes of the shards it holds ([`Cluster::attach`]).
    indexes: std::sync::OnceLock<Arc<shards::ShardIndexes>>,
    /// Its client to the other searchers.
    peers: std::sync::OnceLock<wire::Peers>,
    /// Shards' parts of searches it answered: statistics, keys.
    answered: [std::sync::atomic::AtomicU64; 2],
}

/// A searcher's figures in its cluster at scrape time (`/metrics`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterFigures {
    /// Shards it serves.
    pub shards_held: u64,
    /// Live searchers it last saw (itself included).
    pub searchers_live: u64,
    /// Its rounds that failed since it started.
    pub round_failures: u64,
    /// Shards' statistics it answered (for any searcher, itself included).
    pub stats_answered: u64,
    /// Shards' hits it answered (for any searcher, itself included).
    pub keys_answered: u64,
}

/// How far behind a table's index is (ms), if it has one.
pub type LagSource = Box<dyn Fn(&str) -> Option<u64> + Send>;

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("addr", &self.addr)
            .finish()
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Checks a cluster name: 1 to 64 of `A-Z a-z 0-9 _ . -`.
///
/// # Errors
/// The reason it is not one.
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if ok { Ok(()) } else { Err(format!("cluster name {name:?}: 1 to 64 of A-Z a-z 0-9 _ . -")) }
}

impl Cluster {
    /// This process joining cluster `name` of the HBase whose Thrift2
    /// gateway is `hbase` (`HOST:PORT[/NAMESPACE]`), answering HTTP at
    /// `addr`. Nothing is contacted until [`Cluster::start`].
    pub fn new(name: &str, hbase: &str, addr: &str) -> Cluster {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u64(now_ms());
        Cluster {
            name: name.to_owned(),
            id: format!("{:016x}", hasher.finish()),
            addr: addr.to_owned(),
            started_ms: now_ms(),
            tables: HbaseTables::with_timeout(hbase, Duration::from_millis(LEASE_MS / 2)),
            view: Mutex::new(View::default()),
            left: std::sync::atomic::AtomicBool::new(false),
            rounds: Mutex::new(()),
            lags: Mutex::new(None),
            failures: std::sync::atomic::AtomicU64::new(0),
            ready: std::sync::atomic::AtomicBool::new(false),
            indexes: std::sync::OnceLock::new(),
            peers: std::sync::OnceLock::new(),
            answered: Default::default(),
        }
    }

    /// Its id among the searchers (random per process).
    pub fn id(&self) -> &str {
        &self.id
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where its heartbeat reads each table's index lag from (the
    /// server's live indexes), shown by `GET /cluster`.
    pub fn set_lag_source(&self, lags: LagSource) {
        *self.lags.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(lags);
    }

    /// Runs its rounds on a thread of its own for as long as the process
    /// lives.
    ///
    /// # Errors
    /// When the operating system refuses the thread.
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let me = Arc::clone(self);
        std::thread::Builder::new().name("cluster".into()).spawn(move || {
            loop {
                let started = std::time::Instant::now();
                let round = me.rounds.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if me.left.load(std::sync::atomic::Ordering::Acquire) {
                    break;
                }
                let outcome = me.round();
                drop(round);
                if let Err(e) = outcome {
                    me.failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(target: "rowsearch::cluster", error = %e, "cluster round failed");
                    let mut view = me.view();
                    view.trouble = Some(e.to_string());
                    view.round_ms = now_ms();
                }
                let left = Duration::from_millis(ROUND_MS).saturating_sub(started.elapsed());
                std::thread::sleep(left);
            }
        })?;
        Ok(())
    }

    /// Gives it the indexes of the shards it holds (each round opens what
    /// it won, closes what it lost) and its client to the others; once.
    pub fn attach(&self, indexes: Arc<shards::ShardIndexes>, peers: wire::Peers) {
        let _ = self.indexes.set(indexes);
        let _ = self.peers.set(peers);
    }

    /// The cluster's secret (`rows.rs`), written by the first searcher.
    ///
    /// # Errors
    /// HBase's (`Client`), or no random bytes.
    pub fn secret(&self) -> std::io::Result<String> {
        rows::ensure_table(&self.tables).map_err(std::io::Error::other)?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        let fresh: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        rows::secret(&self.tables, &self.name, &fresh).map_err(std::io::Error::other)
    }

    /// The indexes of the shards it holds, once attached.
    pub fn indexes(&self) -> Option<&Arc<shards::ShardIndexes>> {
        self.indexes.get()
    }

    /// Its client to the other searchers, once attached.
    pub fn peers(&self) -> Option<&wire::Peers> {
        self.peers.get()
    }

    /// The address of the searcher holding `shard` now, as last read.
    pub fn holder(&self, shard: &ShardId) -> Option<String> {
        let now = now_ms();
        self.view().leases.get(shard).filter(|l| l.held_at(now)).map(|l| l.addr.clone())
    }

    /// The address of the searcher holding `shard` other than `not`,
    /// waiting until `until` for this searcher's view to show one (a
    /// shard given up shows no holder until another takes it, a round
    /// later at most).
    pub fn holder_by(&self, shard: &ShardId, not: Option<&str>, until: std::time::Instant) -> Option<String> {
        loop {
            if let Some(to) = self.holder(shard).filter(|to| Some(to.as_str()) != not) {
                return Some(to);
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Counts a shard's part of a search it answered.
    pub fn count_answer(&self, phase: wire::Phase) {
        let i = usize::from(phase == wire::Phase::Keys);
        self.answered[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every shard of every searchable table.
    fn shards(&self) -> Result<Vec<ShardId>, HbaseError> {
        let mut shards = Vec::new();
        for table in self.tables.tables()? {
            let Ok(schema) = self.tables.schema(&table) else { continue };
            if let Some(search) = &schema.search {
                shards.extend((0..search.shard_count()).map(|shard| ShardId { table: table.clone(), shard }));
            }
        }
        Ok(shards)
    }

    /// One round: heartbeat, read, act.
    fn round(&self) -> Result<(), HbaseError> {
        if !self.ready.load(std::sync::atomic::Ordering::Relaxed) {
            rows::ensure_table(&self.tables)?;
            self.ready.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let shards = self.shards()?;
        let mut lag_ms = BTreeMap::new();
        if let Some(lags) = &*self.lags.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            for s in shards.iter().filter(|s| s.shard == 0) {
                lag_ms.extend(lags(&s.table).map(|lag| (s.table.clone(), lag)));
            }
        }
        let now = now_ms();
        let me = Member { addr: self.addr.clone(), seen_ms: now, started_ms: self.started_ms, lag_ms };
        rows::put_member(&self.tables, &self.name, &self.id, &me)?;
        let members = rows::members(&self.tables, &self.name)?;
        let read = rows::leases(&self.tables, &self.name)?;
        let live: Vec<String> =
            members.iter().filter(|(_, m)| m.seen_ms + LEASE_MS > now).map(|(id, _)| id.clone()).collect();
        let leases: BTreeMap<ShardId, Lease> =
            read.iter().map(|(s, r)| (s.clone(), r.lease.clone())).collect();
        let steps = plan(&self.id, &live, &shards, &leases, now);
        let mut held = self.view().held.clone();
        let mut after = leases.clone();
        for step in &steps {
            let (shard, lease) = match step {
                Step::Renew(s) => {
                    let since = leases.get(s).map_or(now, |l| l.since_ms);
                    (
                        s,
                        Lease {
                            holder: self.id.clone(),
                            addr: self.addr.clone(),
                            expires_ms: now + LEASE_MS,
                            since_ms: since,
                        },
                    )
                }
                Step::Take(s) => (
                    s,
                    Lease {
                        holder: self.id.clone(),
                        addr: self.addr.clone(),
                        expires_ms: now + LEASE_MS,
                        since_ms: now,
                    },
                ),
                Step::Release(s) => {
                    (s, Lease { holder: String::new(), addr: String::new(), expires_ms: 0, since_ms: 0 })
                }
            };
            let expected = read.get(shard).map(|r| r.bytes.as_slice());
            if rows::swap_lease(&self.tables, &self.name, shard, expected, &lease)? {
                match step {
                    Step::Release(_) => held.remove(shard),
                    _ => held.insert(shard.clone(), lease.expires_ms),
                };
                after.insert(shard.clone(), lease);
            } else {
                // Another searcher changed it since it was read.
                held.remove(shard);
            }
        }
        held.retain(|s, until| *until > now && shards.contains(s));
        if let Some(indexes) = self.indexes.get() {
            let count = |table: &str| shards.iter().filter(|s| s.table == table).count() as u32;
            let with_counts: Vec<(ShardId, u32)> =
                held.keys().map(|s| (s.clone(), count(&s.table))).collect();
            if let Err(e) = indexes.hold(&with_counts) {
                tracing::warn!(target: "rowsearch::cluster", error = %e, "opening a shard's index");
            }
        }
        *self.view() = View { members, leases: after, shards, held, round_ms: now_ms(), trouble: None };
        Ok(())
    }

    /// Leaves the cluster (the server stops): no more rounds, its leases
    /// released and its heartbeat ended, so the others take its shards at
    /// their next round instead of when its leases end; how many leases it
    /// released.
    ///
    /// # Errors
    /// `Client` (the leases then end by themselves).
    pub fn leave(&self) -> Result<usize, HbaseError> {
        self.left.store(true, std::sync::atomic::Ordering::Release);
        // A round under way finishes first: its leases are read after it.
        let _round = self.rounds.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let gone = Member {
            addr: self.addr.clone(),
            seen_ms: 0,
            started_ms: self.started_ms,
            lag_ms: BTreeMap::new(),
        };
        rows::put_member(&self.tables, &self.name, &self.id, &gone)?;
        let released = Lease { holder: String::new(), addr: String::new(), expires_ms: 0, since_ms: 0 };
        let mut n = 0;
        for (shard, read) in rows::leases(&self.tables, &self.name)? {
            if read.lease.holder == self.id
                && rows::swap_lease(&self.tables, &self.name, &shard, Some(&read.bytes), &released)?
            {
                n += 1;
            }
        }
        self.view().held.clear();
        Ok(n)
    }

    /// The shards this searcher holds now (leases it won that have not
    /// ended).
    pub fn serves(&self) -> Vec<ShardId> {
        let now = now_ms();
        self.view().held.iter().filter(|(_, until)| **until > now).map(|(s, _)| s.clone()).collect()
    }

    /// `GET /cluster`: the searchers, the shards and their leases, as this
    /// searcher last read them.
    pub fn to_json(&self) -> Value {
        let now = now_ms();
        let view = self.view().clone();
        let holder = |s: &ShardId| view.leases.get(s).filter(|l| l.held_at(now));
        let searchers: Vec<Value> = view
            .members
            .iter()
            .filter(|(_, m)| m.seen_ms + 10 * LEASE_MS > now)
            .map(|(id, m)| {
                let shards: Vec<String> = view
                    .shards
                    .iter()
                    .filter(|s| holder(s).is_some_and(|l| l.holder == *id))
                    .map(ToString::to_string)
                    .collect();
                json!({
                    "id": id,
                    "addr": m.addr,
                    "live": m.seen_ms + LEASE_MS > now,
                    "seen_ms_ago": now.saturating_sub(m.seen_ms),
                    "started_ms": m.started_ms,
                    "lag_ms": m.lag_ms,
                    "me": *id == self.id,
                    "shards": shards,
                })
            })
            .collect();
        let shards: Vec<Value> = view
            .shards
            .iter()
            .map(|s| match holder(s) {
                Some(l) => json!({
                    "table": s.table, "shard": s.shard, "holder": l.holder, "addr": l.addr,
                    "expires_in_ms": l.expires_ms.saturating_sub(now), "held_since_ms": l.since_ms,
                }),
                None => json!({"table": s.table, "shard": s.shard, "holder": null}),
            })
            .collect();
        json!({
            "cluster": self.name,
            "me": self.id,
            "lease_ms": LEASE_MS,
            "round_ms_ago": now.saturating_sub(view.round_ms),
            "trouble": view.trouble,
            "searchers": searchers,
            "shards": shards,
        })
    }

    /// Its figures for `/metrics`.
    pub fn figures(&self) -> ClusterFigures {
        let now = now_ms();
        let live = self.view().members.values().filter(|m| m.seen_ms + LEASE_MS > now).count();
        ClusterFigures {
            shards_held: self.serves().len() as u64,
            searchers_live: live as u64,
            round_failures: self.failures.load(std::sync::atomic::Ordering::Relaxed),
            stats_answered: self.answered[0].load(std::sync::atomic::Ordering::Relaxed),
            keys_answered: self.answered[1].load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// What `/health` says of it: the cluster, this searcher, what it
    /// serves, and its last round's failure.
    pub fn health_json(&self) -> Value {
        let view = self.view().clone();
        let serves: Vec<String> = self.serves().iter().map(ToString::to_string).collect();
        json!({"name": self.name, "me": self.id, "serves": serves, "trouble": view.trouble})
    }
}
