//! One connection's open scanners (both services): opened over a scan,
//! read a page at a time (each page a scan from the last row's cursor, so
//! a scanner holds no transaction), expired after HBase's lease unused,
//! bounded per connection.

use std::collections::HashMap;

use rowsearch_store::{Row, Scan, Store};

use super::args::store_error;
use super::hbase_types::HbaseError;

/// Scanners one connection may hold open at once.
pub(crate) const MAX_SCANNERS: usize = 64;

/// Rows one `scannerGetList` returns at most.
pub(crate) const MAX_SCANNER_ROWS: usize = 10_000;

/// A scanner not used this long is closed (HBase's scanner lease).
pub(crate) const SCANNER_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

/// One connection's open scanners.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) scanners: HashMap<i32, Scanner>,
    next_id: i32,
}

#[derive(Debug)]
pub(crate) struct Scanner {
    table: String,
    scan: Scan,
    sorted: bool,
    done: bool,
    /// Rows it may still answer (a `TScan`'s limit).
    remaining: Option<usize>,
    pub(crate) last_used: std::time::Instant,
}

impl Session {
    /// Closes the scanners whose lease ran out by `now`.
    pub(crate) fn expire(&mut self, now: std::time::Instant) {
        self.scanners.retain(|_, s| now.saturating_duration_since(s.last_used) < SCANNER_LEASE);
    }

    /// Opens a scanner over `scan` of `table` (which must exist now, as
    /// HBase's open checks); its id. `sorted`: rows answered with sorted
    /// columns (the `Hbase` service's `TScan.sortColumns`).
    pub(crate) fn open(
        &mut self,
        store: &Store,
        table: String,
        scan: Scan,
        sorted: bool,
    ) -> Result<i32, HbaseError> {
        store.schema(&table).map_err(store_error)?;
        if self.scanners.len() >= MAX_SCANNERS {
            return Err(HbaseError::Io(format!("at most {MAX_SCANNERS} open scanners per connection")));
        }
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let id = self.next_id;
        let last_used = std::time::Instant::now();
        self.scanners.insert(id, Scanner { table, scan, sorted, done: false, remaining: None, last_used });
        Ok(id)
    }

    /// The next `n` rows of scanner `id` (none once it is done), and
    /// whether it answers sorted columns. `check` runs on its table first
    /// (a table disabled since the open).
    pub(crate) fn next(
        &mut self,
        store: &Store,
        id: i32,
        n: usize,
        check: impl Fn(&str) -> Result<(), HbaseError>,
    ) -> Result<(Vec<Row>, bool), HbaseError> {
        let scanner = self.scanners.get_mut(&id).ok_or_else(|| no_scanner(id))?;
        scanner.last_used = std::time::Instant::now();
        if scanner.done {
            return Ok((Vec::new(), scanner.sorted));
        }
        check(&scanner.table)?;
        let n = scanner.remaining.map_or(n, |left| n.min(left));
        scanner.scan.limit = Some(n);
        let page = store.scan(&scanner.table, &scanner.scan).map_err(store_error)?;
        match page.next_cursor {
            Some(cursor) => scanner.scan.cursor = Some(cursor),
            None => scanner.done = true,
        }
        if let Some(left) = &mut scanner.remaining {
            *left -= page.rows.len().min(*left);
            scanner.done |= *left == 0;
        }
        Ok((page.rows, scanner.sorted))
    }

    /// Ends scanner `id` after `limit` rows in all (none: no limit).
    pub(crate) fn limit(&mut self, id: i32, limit: Option<usize>) {
        if let Some(scanner) = self.scanners.get_mut(&id) {
            scanner.remaining = limit;
            scanner.done |= limit == Some(0);
        }
    }

    /// Closes scanner `id`.
    pub(crate) fn close(&mut self, id: i32) -> Result<(), HbaseError> {
        self.scanners
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| HbaseError::IllegalArgument(format!("no scanner {id}")))
    }
}

/// How many rows a scanner call asks for: at least 1, at most
/// [`MAX_SCANNER_ROWS`].
pub(crate) fn rows_wanted(n: i64) -> Result<usize, HbaseError> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n >= 1)
        .map(|n| n.min(MAX_SCANNER_ROWS))
        .ok_or_else(|| HbaseError::IllegalArgument(format!("nbRows {n}: at least 1")))
}

/// The error for a scanner id no session holds.
pub(crate) fn no_scanner(id: i32) -> HbaseError {
    HbaseError::IllegalArgument(format!(
        "no scanner {id} (closed, unused for {} s, or never opened)",
        SCANNER_LEASE.as_secs()
    ))
}
