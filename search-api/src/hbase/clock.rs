//! The clocks of rowsearch's writes to HBase: the wall clock, and the
//! stamps of writes to indexed tables (strictly increasing in a process,
//! so one clock orders a row's cells and its index entries). A leaf.

use std::sync::atomic::{AtomicU64, Ordering};

/// The wall clock, ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

static LAST: AtomicU64 = AtomicU64::new(0);

/// A timestamp for a write to an indexed table: the wall clock, strictly
/// above every one given before in this process.
pub(crate) fn stamp() -> u64 {
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let t = now_ms().max(last + 1);
        match LAST.compare_exchange_weak(last, t, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return t,
            Err(seen) => last = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamps_only_go_up() {
        let a = super::stamp();
        let b = super::stamp();
        assert!(b > a);
    }
}
