//! Read options: which cells a get or scan returns, and scan ranges and cursors.

use crate::cursor;
use crate::error::{ErrorKind, Result};
use crate::filter::Filter;
use crate::schema::Column;

/// Every version, for [`ReadOptions::versions`].
pub const ALL_VERSIONS: u32 = u32::MAX;

/// Which cells of a row a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Families and columns to return; empty means every family.
    pub columns: Vec<Column>,
    /// Newest versions returned per column (default 1; [`ALL_VERSIONS`] for all).
    pub versions: u32,
    /// Inclusive lower bound on timestamps.
    pub min_ts: u64,
    /// Exclusive upper bound on timestamps; `None` for no bound.
    pub max_ts: Option<u64>,
    /// Per family, a time range `[min, max)` in place of `min_ts`/`max_ts`
    /// (HBase's `Scan.setColumnFamilyTimeRange`).
    pub family_time_ranges: Vec<(String, u64, Option<u64>)>,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            columns: Vec::new(),
            versions: 1,
            min_ts: 0,
            max_ts: None,
            family_time_ranges: Vec::new(),
        }
    }
}

impl ReadOptions {
    /// Adds a column selection.
    pub fn column(mut self, column: Column) -> ReadOptions {
        self.columns.push(column);
        self
    }

    /// Sets the number of versions per column.
    pub fn versions(mut self, versions: u32) -> ReadOptions {
        self.versions = versions;
        self
    }

    /// Restricts timestamps to `[min_ts, max_ts)`.
    pub fn time_range(mut self, min_ts: u64, max_ts: Option<u64>) -> ReadOptions {
        self.min_ts = min_ts;
        self.max_ts = max_ts;
        self
    }

    /// Restricts the timestamps of `family`'s cells to `[min_ts, max_ts)`,
    /// whatever the read's own time range.
    pub fn family_time_range(
        mut self,
        family: impl Into<String>,
        min_ts: u64,
        max_ts: Option<u64>,
    ) -> ReadOptions {
        let family = family.into();
        self.family_time_ranges.retain(|(f, _, _)| *f != family);
        self.family_time_ranges.push((family, min_ts, max_ts));
        self
    }

    pub(crate) fn in_time_range(&self, family: &str, ts: u64) -> bool {
        let (min, max) = self
            .family_time_ranges
            .iter()
            .find(|(f, _, _)| f == family)
            .map_or((self.min_ts, self.max_ts), |(_, min, max)| (*min, *max));
        ts >= min && max.is_none_or(|max| ts < max)
    }
}

/// A scan: a row range, what to read of each row, and paging.
///
/// Forward scans return rows with `start <= key < stop`. With `reverse`, rows
/// come in descending order and `start` is the inclusive *upper* bound, `stop`
/// the exclusive *lower* bound (HBase's reversed scan). `prefix` further
/// restricts to keys starting with it.
///
/// ```
/// use rowsearch_store::Scan;
/// let scan = Scan::new().prefix(b"user1/").limit(10).reverse(true);
/// assert_eq!(scan.limit, Some(10));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scan {
    /// First row (inclusive; the upper bound when reversed).
    pub start: Option<Vec<u8>>,
    /// Row where the scan stops (exclusive; the lower bound when reversed).
    pub stop: Option<Vec<u8>>,
    /// Only rows whose key starts with this.
    pub prefix: Option<Vec<u8>>,
    /// Walk down instead of up.
    pub reverse: bool,
    /// Which cells of each row.
    pub read: ReadOptions,
    /// Rows to skip (after the cursor, before the limit).
    pub offset: usize,
    /// Most rows returned.
    pub limit: Option<usize>,
    /// Resume after the last row of an earlier page.
    pub cursor: Option<ScanCursor>,
    /// Return cells without values.
    pub keys_only: bool,
    /// Only rows and cells the filter passes.
    pub filter: Option<Filter>,
    /// Only rows of this region (an index into [`crate::Store::regions`]).
    pub region: Option<usize>,
}

impl Scan {
    /// A scan of the whole table.
    pub fn new() -> Scan {
        Scan::default()
    }
    /// Sets the start row.
    pub fn start(mut self, start: impl Into<Vec<u8>>) -> Scan {
        self.start = Some(start.into());
        self
    }
    /// Sets the stop row.
    pub fn stop(mut self, stop: impl Into<Vec<u8>>) -> Scan {
        self.stop = Some(stop.into());
        self
    }
    /// Sets the key prefix.
    pub fn prefix(mut self, prefix: impl Into<Vec<u8>>) -> Scan {
        self.prefix = Some(prefix.into());
        self
    }
    /// Walks down when true.
    pub fn reverse(mut self, reverse: bool) -> Scan {
        self.reverse = reverse;
        self
    }
    /// Sets what to read of each row.
    pub fn read(mut self, read: ReadOptions) -> Scan {
        self.read = read;
        self
    }
    /// Sets the offset.
    pub fn offset(mut self, offset: usize) -> Scan {
        self.offset = offset;
        self
    }
    /// Sets the limit.
    pub fn limit(mut self, limit: usize) -> Scan {
        self.limit = Some(limit);
        self
    }
    /// Resumes after a cursor.
    pub fn cursor(mut self, cursor: ScanCursor) -> Scan {
        self.cursor = Some(cursor);
        self
    }
    /// Returns keys and cells without values.
    pub fn keys_only(mut self, keys_only: bool) -> Scan {
        self.keys_only = keys_only;
        self
    }
    /// Sets the filter.
    pub fn filter(mut self, filter: Filter) -> Scan {
        self.filter = Some(filter);
        self
    }
    /// Limits the scan to one region.
    pub fn region(mut self, region: usize) -> Scan {
        self.region = Some(region);
        self
    }
}

/// Where a scan left off: it resumes strictly after (or, reversed, before)
/// `last_key`. Rows that exist throughout a walk are neither skipped nor
/// repeated, whatever is written meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanCursor {
    /// The last row key returned.
    pub last_key: Vec<u8>,
    /// The direction of the scan that produced it.
    pub reverse: bool,
}

impl ScanCursor {
    /// An opaque, URL-safe token.
    ///
    /// ```
    /// use rowsearch_store::ScanCursor;
    /// let cursor = ScanCursor { last_key: b"a\x00".to_vec(), reverse: false };
    /// assert_eq!(ScanCursor::from_token(&cursor.to_token()).unwrap(), cursor);
    /// assert!(ScanCursor::from_token("garbage").is_err());
    /// ```
    pub fn to_token(&self) -> String {
        let kind = if self.reverse { cursor::Kind::ScanReverse } else { cursor::Kind::ScanForward };
        cursor::encode(kind, &self.last_key)
    }

    /// Parses a token made by [`ScanCursor::to_token`].
    ///
    /// # Errors
    /// `InvalidCursor` for anything else.
    pub fn from_token(token: &str) -> Result<ScanCursor> {
        let invalid = |reason| ErrorKind::InvalidCursor { reason };
        match cursor::decode(token).map_err(invalid)? {
            (cursor::Kind::ScanForward, last_key) => Ok(ScanCursor { last_key, reverse: false }),
            (cursor::Kind::ScanReverse, last_key) => Ok(ScanCursor { last_key, reverse: true }),
            _ => Err(invalid("not a scan cursor").into()),
        }
    }
}
