//! Whether HBase's replication brings every write to rowsearch's change
//! feed (the peer `rowsearch`, `hbase/replication/`), measured rather than
//! configured: a process that follows HBase writes a probe row now and then
//! into `rowsearch_probe`, a replicated table of its namespace; the
//! endpoint ships it into the feed like any write, and the feed read that
//! meets it knows the stream works and how far behind it is (the entry's
//! time less the probe's). While probes come back, the tailer's per-table
//! time scans are not needed (the stream names every write, old timestamps
//! and deletes included); when none has come back for [`BROKEN_AFTER_MS`],
//! the tailer scans again and `/health` says why.

use std::sync::Mutex;

use rowsearch_store::{FamilySchema, FeedEntry, Following};

use super::tables::{HbaseError, HbaseTables};

/// The probe table, in the namespace of the tables.
pub const PROBE: &str = "rowsearch_probe";
const FAMILY: &str = "f";
/// A probe at most this often (ms).
const PROBE_EVERY_MS: u64 = 1_000;
/// No probe back for this long: the stream is not followed (or broken).
pub(crate) const BROKEN_AFTER_MS: u64 = 10_000;
/// A day: probes are worth nothing once seen.
const PROBE_TTL_SECONDS: u64 = 86_400;

#[derive(Debug, Default)]
struct State {
    /// This process's probes not seen back yet: their write times.
    pending: Vec<u64>,
    /// When the last probe was written (ms).
    last_written: u64,
    /// When the newest probe seen back was written, and its lag (ms).
    last_seen: Option<(u64, u64)>,
    /// The probe table exists (made once per process).
    ready: bool,
}

/// What one process knows of HBase's replication stream.
#[derive(Debug)]
pub struct Stream {
    /// Tells this process's probes from others' (8 bytes after the time).
    nonce: [u8; 8],
    state: Mutex<State>,
}

impl Default for Stream {
    fn default() -> Stream {
        use std::hash::{BuildHasher, Hasher};
        // Randomly keyed per process (std's hasher keys), with the pid and
        // the time in: two processes never share one.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
        );
        Stream { nonce: hasher.finish().to_be_bytes(), state: Mutex::new(State::default()) }
    }
}

impl Stream {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes a probe (at most one a [`PROBE_EVERY_MS`]) at `now`.
    ///
    /// # Errors
    /// `Client`.
    pub(crate) fn probe(&self, tables: &HbaseTables, now: u64) -> Result<(), HbaseError> {
        let ready = {
            let mut state = self.state();
            if now < state.last_written + PROBE_EVERY_MS {
                return Ok(());
            }
            state.last_written = now;
            state.ready
        };
        let mut client = tables.client();
        if !ready {
            let family = FamilySchema::new(FAMILY).max_versions(1).ttl_seconds(PROBE_TTL_SECONDS);
            if !client.table_exists(PROBE)? {
                match client.create_table_scoped(PROBE, &[family], &[], 1) {
                    Err(crate::thrift::ClientError::Refused { .. }) if client.table_exists(PROBE)? => {}
                    other => other?,
                }
            }
            self.state().ready = true;
        }
        let mut key = now.to_be_bytes().to_vec();
        key.extend_from_slice(&self.nonce);
        let cell = rowsearch_store::PutCell::new(FAMILY, b"p".to_vec(), Vec::new());
        client.put_rows(PROBE, &[(key, vec![cell])])?;
        let mut state = self.state();
        state.pending.push(now);
        // Past the bound they only say the stream is broken, as the
        // oldest does.
        if state.pending.len() > 64 {
            state.pending.remove(1);
        }
        Ok(())
    }

    /// Takes the probes out of `entries` (they name no table of the
    /// user's), noting this process's as seen.
    pub(crate) fn observe(&self, entries: &mut Vec<FeedEntry>) {
        if !entries.iter().any(|e| e.table == PROBE) {
            return;
        }
        let mut state = self.state();
        entries.retain(|e| {
            if e.table != PROBE {
                return true;
            }
            if let Some((time, nonce)) = e.row.split_first_chunk::<8>()
                && nonce == self.nonce
            {
                let written = u64::from_be_bytes(*time);
                state.pending.retain(|&p| p > written);
                if state.last_seen.is_none_or(|(w, _)| w < written) {
                    state.last_seen = Some((written, e.seq.saturating_sub(written)));
                }
            }
            false
        });
    }

    /// Whether the stream brings every write now: a probe came back and
    /// none has been waiting longer than [`BROKEN_AFTER_MS`].
    pub(crate) fn following(&self, now: u64) -> bool {
        let state = self.state();
        state.last_seen.is_some() && state.pending.first().is_none_or(|&p| now < p + BROKEN_AFTER_MS)
    }

    /// How writes of other clients are followed, for `GET /tables/{t}` and
    /// `/health`.
    pub(crate) fn following_state(&self, now: u64) -> Following {
        let state = self.state();
        let waiting = state.pending.first().map(|&p| now.saturating_sub(p));
        let lag = state.last_seen.map(|(_, lag)| lag.max(waiting.unwrap_or(0)));
        match (state.last_seen, waiting) {
            (None, Some(w)) if w >= BROKEN_AFTER_MS => Following {
                by: "tailer",
                lag_ms: None,
                trouble: None,
                detail: format!(
                    "no probe came back through HBase's replication in {} s (no peer `rowsearch`, \
                     or the tables' REPLICATION_SCOPE is 0): the tailer scans every table",
                    w / 1000
                ),
            },
            (None, _) => Following {
                by: "tailer",
                lag_ms: None,
                trouble: None,
                detail: "waiting for a probe to come back through HBase's replication".into(),
            },
            (Some(_), Some(w)) if w >= BROKEN_AFTER_MS => Following {
                by: "tailer",
                lag_ms: lag,
                trouble: Some(format!(
                    "HBase's replication stream to rowsearch has brought nothing for {} s \
                     (peer disabled or its queue stuck): the tailer scans every table meanwhile, \
                     without backfills and others' deletes",
                    w / 1000
                )),
                detail: "the replication stream stopped".into(),
            },
            (Some(_), _) => Following {
                by: "replication",
                lag_ms: lag,
                trouble: None,
                detail: "every write of any HBase client reaches the change feed through HBase's \
                         replication (peer `rowsearch`)"
                    .into(),
            },
        }
    }
}
