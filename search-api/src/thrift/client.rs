//! A blocking client of HBase's Thrift2 gateway (`THBaseService`), the
//! way rowsearch reaches tables that live in an Apache HBase cluster:
//! the same codec as the gateways rowsearch serves (one owner
//! of Thrift's bytes), binary protocol, buffered transport, one call at a
//! time on one connection, with a time limit per call. A call that cannot
//! reach HBase is [`ClientError::Unavailable`] with the reason, and the
//! next call connects again: nothing needs restarting when HBase is back.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rowsearch_store::{Cell, Delete, FamilySchema, PutCell, Region, Row};

use super::codec::{self, DecodeError, Limits, Message, MessageType, Protocol, TType, Value};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// HBase could not be reached, or stopped answering within the time
    /// limit (the connection is dropped; the next call connects again).
    #[error("HBase at {addr} is unavailable: {reason}")]
    Unavailable {
        /// The gateway's address.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// HBase answered the call with an exception (`TIOError`,
    /// `TIllegalArgument`): the call was refused.
    #[error("HBase refused {method}: {message}")]
    Refused {
        /// The method.
        method: String,
        /// HBase's message.
        message: String,
    },
    /// An answer that is not what the interface declares.
    #[error("HBase's answer to {method} does not decode: {detail}")]
    Protocol {
        /// The method.
        method: String,
        /// What was wrong.
        detail: String,
    },
}

/// A region's start and end keys (`None`: open).
type Bounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A connection to one Thrift2 gateway.
#[derive(Debug)]
pub struct HbaseClient {
    /// `HOST:PORT`, or `HOST:PORT/NAMESPACE`: every table named in the
    /// namespace (HBase's `NAMESPACE:TABLE`).
    addr: String,
    stream: Option<TcpStream>,
    timeout: Duration,
    seq: i32,
    buf: Vec<u8>,
}

/// The calls [`HbaseClient::call`] sends again on a fresh connection when
/// a kept one turns out closed: those that may run twice.
pub const RETRIED: &[&str] = &[
    "get",
    "getMultiple",
    "exists",
    "existsAll",
    "put",
    "putMultiple",
    "deleteSingle",
    "deleteMultiple",
    "tableExists",
    "isTableEnabled",
    "getAllRegionLocations",
    "getTableDescriptor",
    "getScannerResults",
];

/// Most bytes of cells one put call carries.
const PUT_CALL_BYTES: usize = 4 << 20;

pub(super) fn binary(b: impl Into<Vec<u8>>) -> Value {
    Value::Binary(b.into())
}

pub(super) fn structs(items: Vec<Value>) -> Value {
    Value::List { elem: TType::Struct, items }
}

impl HbaseClient {
    /// A client of the gateway at `addr` (`HOST:PORT`); it connects on
    /// the first call. Each call may take up to `timeout`.
    pub fn new(addr: impl Into<String>, timeout: Duration) -> HbaseClient {
        HbaseClient { addr: addr.into(), stream: None, timeout, seq: 0, buf: Vec::new() }
    }

    /// The gateway's address (with its namespace, if one was given).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The namespace every table is named in (`HOST:PORT/NAMESPACE`).
    pub fn namespace(&self) -> Option<&str> {
        self.addr.split_once('/').map(|(_, ns)| ns).filter(|ns| !ns.is_empty())
    }

    /// `table` as the data calls name it: `NAMESPACE:TABLE` in a namespace.
    pub(super) fn full_name(&self, table: &str) -> Value {
        match self.namespace() {
            Some(ns) => binary(format!("{ns}:{table}")),
            None => binary(table.as_bytes()),
        }
    }

    /// `table` as the admin calls name it (a `TTableName`).
    pub(super) fn table_name(&self, table: &str) -> Value {
        let mut name = vec![(2, binary(table.as_bytes()))];
        if let Some(ns) = self.namespace() {
            name.insert(0, (1, binary(ns.as_bytes())));
        }
        Value::Struct(name)
    }

    /// Creates the namespace tables are named in, unless there is none or
    /// it exists.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn ensure_namespace(&mut self) -> Result<(), ClientError> {
        let Some(ns) = self.namespace().map(str::to_owned) else { return Ok(()) };
        let descriptor = Value::Struct(vec![(1, Value::Binary(ns.clone().into_bytes()))]);
        match self.call("createNamespace", vec![(1, descriptor)]) {
            Ok(_) => Ok(()),
            // Made meanwhile, or before: as good.
            Err(ClientError::Refused { .. })
                if self.call("getNamespaceDescriptor", vec![(1, Value::Binary(ns.into_bytes()))]).is_ok() =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn unavailable(&mut self, reason: impl std::fmt::Display) -> ClientError {
        self.stream = None;
        ClientError::Unavailable { addr: self.addr.clone(), reason: reason.to_string() }
    }

    fn stream(&mut self) -> Result<&mut TcpStream, ClientError> {
        if self.stream.is_none() {
            let host = self.addr.split('/').next().unwrap_or_default().to_owned();
            let addr = std::net::ToSocketAddrs::to_socket_addrs(host.as_str())
                .map_err(|e| self.unavailable(e))?
                .next()
                .ok_or_else(|| self.unavailable("the address resolves to nothing"))?;
            let stream = TcpStream::connect_timeout(&addr, self.timeout).map_err(|e| self.unavailable(e))?;
            let _ = stream.set_nodelay(true);
            stream.set_read_timeout(Some(self.timeout)).map_err(|e| self.unavailable(e))?;
            stream.set_write_timeout(Some(self.timeout)).map_err(|e| self.unavailable(e))?;
            self.stream = Some(stream);
        }
        self.stream
            .as_mut()
            .ok_or_else(|| ClientError::Unavailable { addr: String::new(), reason: "no connection".into() })
    }

    /// Calls `method` with `args` (its argument struct's fields); the
    /// result's field 0 (`None` for `void`). For a call that may run twice
    /// (`RETRIED`: reads by key, puts, deletes, admin reads), a
    /// connection kept from an earlier call that turns out closed (the
    /// gateway restarted, or went away and came back) before any of the
    /// answer came is replaced and the call sent once more. Never a
    /// scanner's next rows: sent again, they would skip the rows whose
    /// answer was lost.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn call(&mut self, method: &str, args: Vec<(i16, Value)>) -> Result<Option<Value>, ClientError> {
        let reused = self.stream.is_some();
        if !(reused && RETRIED.contains(&method)) {
            return self.call_once(method, args);
        }
        match self.call_once(method, args.clone()) {
            Err(ClientError::Unavailable { .. }) if self.buf.is_empty() => self.call_once(method, args),
            other => other,
        }
    }

    fn call_once(&mut self, method: &str, args: Vec<(i16, Value)>) -> Result<Option<Value>, ClientError> {
        self.seq = self.seq.wrapping_add(1);
        let message = Message {
            name: method.to_owned(),
            kind: MessageType::Call,
            seq: self.seq,
            body: Value::Struct(args),
        };
        let bytes = codec::encode(Protocol::Binary, &message);
        let written = self.stream()?.write_all(&bytes);
        if let Err(e) = written {
            return Err(self.unavailable(e));
        }
        self.buf.clear();
        // A reply is decoded when the socket has nothing more for now, or
        // the bytes have doubled since the last try: a large reply is not
        // decoded again after every read (quadratic in its size).
        let mut tried_at = 0;
        let mut chunk = vec![0u8; 256 * 1024];
        let reply = loop {
            let worth_trying = self.buf.len() >= tried_at * 2 || !self.more_waiting()?;
            if worth_trying {
                tried_at = self.buf.len();
                match codec::decode(
                    Protocol::Binary,
                    &self.buf,
                    &Limits { max_depth: 32, max_message_bytes: 256 << 20 },
                ) {
                    Ok((reply, _)) => break reply,
                    Err(DecodeError::Incomplete) => {}
                    Err(e) => return Err(self.unavailable(format!("a reply that does not decode: {e}"))),
                }
            }
            let n = match self.stream()?.read(&mut chunk) {
                Ok(0) => return Err(self.unavailable("the connection closed")),
                Ok(n) => n,
                Err(e) => return Err(self.unavailable(e)),
            };
            self.buf.extend_from_slice(&chunk[..n]);
        };
        if reply.seq != self.seq || reply.name != method {
            return Err(self.unavailable(format!(
                "a reply to {} #{} for {method} #{}",
                reply.name, reply.seq, self.seq
            )));
        }
        let text = |v: Option<&Value>| match v {
            Some(Value::Binary(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        match (reply.kind, reply.body) {
            (MessageType::Exception, body) => {
                Err(ClientError::Refused { method: method.to_owned(), message: text(body.field(1)) })
            }
            (_, Value::Struct(mut fields)) => {
                if let Some((_, e)) = fields.iter().find(|(id, _)| *id != 0) {
                    return Err(ClientError::Refused {
                        method: method.to_owned(),
                        message: text(e.field(1)),
                    });
                }
                Ok(fields.pop().map(|(_, v)| v))
            }
            (_, other) => {
                Err(ClientError::Protocol { method: method.to_owned(), detail: format!("{other:?}") })
            }
        }
    }

    /// Whether the socket has bytes waiting to be read right now.
    fn more_waiting(&mut self) -> Result<bool, ClientError> {
        if self.buf.is_empty() {
            return Ok(true);
        }
        let stream = self.stream()?;
        if let Err(e) = stream.set_nonblocking(true) {
            return Err(self.unavailable(e));
        }
        let mut byte = [0u8; 1];
        let peeked = stream.peek(&mut byte);
        let reset = stream.set_nonblocking(false);
        match (peeked, reset) {
            (_, Err(e)) => Err(self.unavailable(e)),
            (Ok(n), Ok(())) => Ok(n > 0),
            (Err(e), Ok(())) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            (Err(e), Ok(())) => Err(self.unavailable(e)),
        }
    }

    pub(super) fn protocol(method: &str, detail: impl Into<String>) -> ClientError {
        ClientError::Protocol { method: method.to_owned(), detail: detail.into() }
    }

    /// Whether `table` exists.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn table_exists(&mut self, table: &str) -> Result<bool, ClientError> {
        match self.call("tableExists", vec![(1, self.table_name(table))]) {
            Ok(Some(Value::Bool(b))) => Ok(b),
            Ok(other) => Err(Self::protocol("tableExists", format!("{other:?}"))),
            // HBase answers a table of a namespace that does not exist
            // with an error: no such table either.
            Err(e @ ClientError::Refused { .. }) => match self.namespace().map(str::to_owned) {
                Some(ns)
                    if self.call("getNamespaceDescriptor", vec![(1, binary(ns.as_bytes()))]).is_err() =>
                {
                    Ok(false)
                }
                _ => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Whether `table` is enabled.
    ///
    /// # Errors
    /// [`ClientError`]; `Refused` when it does not exist.
    pub fn is_table_enabled(&mut self, table: &str) -> Result<bool, ClientError> {
        match self.call("isTableEnabled", vec![(1, self.table_name(table))])? {
            Some(Value::Bool(b)) => Ok(b),
            other => Err(Self::protocol("isTableEnabled", format!("{other:?}"))),
        }
    }

    /// Enables or disables `table` (HBase's `enableTable`, `disableTable`).
    ///
    /// # Errors
    /// [`ClientError`]; `Refused` when it does not exist or is so already.
    pub fn set_table_enabled(&mut self, table: &str, enabled: bool) -> Result<(), ClientError> {
        let method = if enabled { "enableTable" } else { "disableTable" };
        self.call(method, vec![(1, self.table_name(table))])?;
        Ok(())
    }

    /// Creates `table` with `families` (max versions, time to live) and
    /// region `splits`.
    ///
    /// # Errors
    /// [`ClientError`]; `Refused` when it exists.
    pub fn create_table(
        &mut self,
        table: &str,
        families: &[FamilySchema],
        splits: &[Vec<u8>],
    ) -> Result<(), ClientError> {
        self.create_table_scoped(table, families, splits, 0)
    }

    /// [`Self::create_table`] with every family's `REPLICATION_SCOPE` at
    /// `scope` (1: HBase's replication ships its writes to the peers).
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn create_table_scoped(
        &mut self,
        table: &str,
        families: &[FamilySchema],
        splits: &[Vec<u8>],
        scope: i32,
    ) -> Result<(), ClientError> {
        let columns = families
            .iter()
            .map(|f| {
                let mut d = vec![
                    (1, binary(f.name.as_bytes())),
                    (10, Value::I32(i32::try_from(f.max_versions).unwrap_or(i32::MAX))),
                ];
                if scope != 0 {
                    d.push((12, Value::I32(scope)));
                }
                if let Some(ttl) = f.ttl_seconds {
                    d.push((13, Value::I32(i32::try_from(ttl).unwrap_or(i32::MAX))));
                }
                Value::Struct(d)
            })
            .collect();
        let desc = Value::Struct(vec![(1, self.table_name(table)), (2, structs(columns))]);
        let splits =
            Value::List { elem: TType::Binary, items: splits.iter().map(|s| binary(s.clone())).collect() };
        self.call("createTable", vec![(1, desc), (2, splits)]).map(|_| ())
    }

    /// Disables and deletes `table`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn drop_table(&mut self, table: &str) -> Result<(), ClientError> {
        self.call("disableTable", vec![(1, self.table_name(table))])?;
        self.call("deleteTable", vec![(1, self.table_name(table))]).map(|_| ())
    }

    /// Deletes a whole row.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn delete_row(&mut self, table: &str, row: &[u8]) -> Result<(), ClientError> {
        let delete = Value::Struct(vec![(1, binary(row))]);
        self.call("deleteSingle", vec![(1, self.full_name(table)), (2, delete)]).map(|_| ())
    }

    /// Deletes what `what` names of row `row`, as HBase's `Delete` does
    /// (a tombstone: a later put with an older timestamp stays hidden,
    /// unlike the embedded store).
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn delete_cells(&mut self, table: &str, row: &[u8], what: &Delete) -> Result<(), ClientError> {
        let ts = |t: &Option<u64>| t.map(|t| Value::I64(i64::try_from(t).unwrap_or(i64::MAX)));
        let column = |family: &str, qualifier: Option<&[u8]>, at: Option<Value>| {
            let mut c = vec![(1, binary(family.as_bytes()))];
            c.extend(qualifier.map(|q| (2, binary(q))));
            c.extend(at.map(|t| (3, t)));
            structs(vec![Value::Struct(c)])
        };
        // deleteType: 0 DELETE_COLUMN (one version), 1 DELETE_COLUMNS
        // (every version up to the time), 2 DELETE_FAMILY.
        let mut delete = vec![(1, binary(row))];
        match what {
            Delete::Row { up_to } => delete.extend(ts(up_to).map(|t| (3, t))),
            Delete::Family { family, up_to } => {
                delete.extend([(2, column(family, None, ts(up_to))), (4, Value::I32(2))]);
            }
            Delete::Column { family, qualifier, up_to } => {
                delete.extend([(2, column(family, Some(qualifier), ts(up_to))), (4, Value::I32(1))]);
            }
            Delete::Version { family, qualifier, timestamp } => {
                delete.extend([
                    (2, column(family, Some(qualifier), ts(&Some(*timestamp)))),
                    (4, Value::I32(0)),
                ]);
            }
        }
        self.call("deleteSingle", vec![(1, self.full_name(table)), (2, Value::Struct(delete))]).map(|_| ())
    }

    /// Deletes every version of the columns `qualifiers` of `family` in
    /// row `row`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn delete_columns(
        &mut self,
        table: &str,
        row: &[u8],
        family: &str,
        qualifiers: &[Vec<u8>],
    ) -> Result<(), ClientError> {
        let columns = qualifiers
            .iter()
            .map(|q| Value::Struct(vec![(1, binary(family.as_bytes())), (2, binary(q.clone()))]))
            .collect();
        // deleteType 1: DELETE_COLUMNS (every version).
        let delete = Value::Struct(vec![(1, binary(row)), (2, structs(columns)), (4, Value::I32(1))]);
        self.call("deleteSingle", vec![(1, self.full_name(table)), (2, delete)]).map(|_| ())
    }

    /// Writes rows (each its cells, at their timestamps or now), in one
    /// call.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn put_rows(&mut self, table: &str, rows: &[(Vec<u8>, Vec<PutCell>)]) -> Result<(), ClientError> {
        for call in put_calls(rows) {
            self.put_call(table, &call)?;
        }
        Ok(())
    }

    /// The table's regions, in key order.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn regions(&mut self, table: &str) -> Result<Vec<Region>, ClientError> {
        let answer = self.call("getAllRegionLocations", vec![(1, self.full_name(table))])?;
        let Some(Value::List { items, .. }) = answer else {
            return Err(Self::protocol("getAllRegionLocations", "not a list"));
        };
        let key = |info: &Value, id| match info.field(id) {
            Some(Value::Binary(b)) if !b.is_empty() => Some(b.clone()),
            _ => None,
        };
        let mut bounds: Vec<Bounds> =
            items.iter().filter_map(|loc| loc.field(2)).map(|info| (key(info, 3), key(info, 4))).collect();
        bounds.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(bounds.into_iter().enumerate().map(|(index, (start, end))| Region { index, start, end }).collect())
    }

    /// Scans `[start, stop)` (open sides as `None`), the newest version of
    /// each column with a timestamp in `[min_ts, max_ts)`, `page` rows a
    /// call, handing each row to `each`; the rows scanned.
    ///
    /// # Errors
    /// [`ClientError`]; the scanner is closed either way when it can be.
    pub fn scan(
        &mut self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        time: Option<(u64, u64)>,
        page: usize,
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, ClientError> {
        let mut tscan = tscan_paged(range, page);
        if let Some((min, max)) = time {
            tscan.push((
                6,
                Value::Struct(vec![
                    (1, Value::I64(min as i64)),
                    (2, Value::I64(max.min(i64::MAX as u64) as i64)),
                ]),
            ));
        }
        self.run_scanner(table, tscan, page, each)
    }

    /// Scans `[start, stop)` as [`Self::scan`] does, every version of each
    /// cell (HBase's `maxVersions`): what an export or a copy of a table
    /// reads.
    ///
    /// # Errors
    /// As [`Self::scan`].
    pub fn scan_all_versions(
        &mut self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        page: usize,
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, ClientError> {
        let mut tscan = tscan_paged(range, page);
        tscan.push((5, Value::I32(i32::MAX)));
        self.run_scanner(table, tscan, page, each)
    }

    /// Scans `[start, stop)` as [`Self::scan`] does (every time), a wide
    /// row's cells at most `batch` at a time: a row wider than that comes
    /// as several rows of the same key, in column order.
    ///
    /// # Errors
    /// As [`Self::scan`].
    pub fn scan_batched(
        &mut self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        batch: usize,
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, ClientError> {
        let mut tscan = tscan_of(range);
        tscan.push((4, Value::I32(16)));
        tscan.push((8, Value::I32(i32::try_from(batch).unwrap_or(i32::MAX))));
        self.run_scanner(table, tscan, 16, each)
    }

    /// Every row key of `[start, stop)` (a keys-only scan: one empty cell a
    /// row), `page` rows a call, to `each`.
    ///
    /// # Errors
    /// As [`Self::scan`].
    pub fn scan_keys(
        &mut self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        page: usize,
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, ClientError> {
        let mut tscan = tscan_paged(range, page);
        tscan.push((7, binary(&b"FirstKeyOnlyFilter() AND KeyOnlyFilter()"[..])));
        self.run_scanner(table, tscan, page, each)
    }

    /// At most `limit` rows of `[start, stop)` (the newest cell of each
    /// column), in one call (`getScannerResults`).
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn scan_once(
        &mut self,
        table: &str,
        range: (Option<&[u8]>, Option<&[u8]>),
        limit: usize,
    ) -> Result<Vec<Row>, ClientError> {
        let tscan = tscan_of(range);
        let n = Value::I32(i32::try_from(limit).unwrap_or(i32::MAX));
        let args = vec![(1, self.full_name(table)), (2, Value::Struct(tscan)), (3, n)];
        let Some(Value::List { items, .. }) = self.call("getScannerResults", args)? else {
            return Err(Self::protocol("getScannerResults", "not a list"));
        };
        let mut rows = Vec::with_capacity(items.len());
        for r in &items {
            if let Some(row) = row_of("getScannerResults", r)? {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    fn run_scanner(
        &mut self,
        table: &str,
        tscan: Vec<(i16, Value)>,
        page: usize,
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, ClientError> {
        self.scan_until(table, tscan, page, &mut |row| {
            each(row);
            true
        })
    }

    /// Runs the scanner of `tscan` (a `TScan`'s fields), `page` rows a
    /// call, handing each row to `each` until it answers false; the rows
    /// handed. The scanner is closed either way when it can be.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn scan_until(
        &mut self,
        table: &str,
        tscan: Vec<(i16, Value)>,
        page: usize,
        each: &mut dyn FnMut(Row) -> bool,
    ) -> Result<u64, ClientError> {
        let id =
            match self.call("openScanner", vec![(1, self.full_name(table)), (2, Value::Struct(tscan))])? {
                Some(Value::I32(id)) => id,
                other => return Err(Self::protocol("openScanner", format!("{other:?}"))),
            };
        let mut scanned = 0;
        let outcome = loop {
            let rows =
                match self.call("getScannerRows", vec![(1, Value::I32(id)), (2, Value::I32(page as i32))]) {
                    Ok(Some(Value::List { items, .. })) => items,
                    Ok(other) => break Err(Self::protocol("getScannerRows", format!("{other:?}"))),
                    Err(e) => break Err(e),
                };
            if rows.is_empty() {
                break Ok(scanned);
            }
            let mut go_on = true;
            let mut failed = None;
            for r in &rows {
                match row_of("getScannerRows", r) {
                    Ok(Some(row)) if go_on => {
                        scanned += 1;
                        go_on = each(row);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                break Err(e);
            }
            if !go_on {
                break Ok(scanned);
            }
        };
        if !matches!(outcome, Err(ClientError::Unavailable { .. })) {
            let _ = self.call("closeScanner", vec![(1, Value::I32(id))]);
        }
        outcome
    }
}

/// A scan as HBase's `TScan` carries it (1 start, 2 stop, 3 columns,
/// 4 caching, 5 maxVersions, 6 timeRange, 7 filterString, 11 reversed,
/// 15 limit).
#[derive(Debug, Default)]
pub struct TScanSpec<'a> {
    /// First row (inclusive; reversed: the highest).
    pub start: Option<&'a [u8]>,
    /// Row to stop before (reversed: the lowest, excluded).
    pub stop: Option<&'a [u8]>,
    /// Families, or a family's one column.
    pub columns: Vec<(&'a str, Option<&'a [u8]>)>,
    /// Newest versions of each column.
    pub versions: u32,
    /// `[min, max)`.
    pub time: Option<(u64, u64)>,
    /// HBase's filter language.
    pub filter: Option<Vec<u8>>,
    /// Rows in descending key order.
    pub reversed: bool,
    /// Rows HBase returns at most.
    pub limit: Option<usize>,
}

impl HbaseClient {
    /// Runs the scan of `spec`, `page` rows a call, handing each row to
    /// `each` until it answers false ([`Self::scan_until`]).
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn scan_spec(
        &mut self,
        table: &str,
        spec: &TScanSpec<'_>,
        page: usize,
        each: &mut dyn FnMut(Row) -> bool,
    ) -> Result<u64, ClientError> {
        let mut tscan = tscan_paged((spec.start, spec.stop), page);
        if !spec.columns.is_empty() {
            let columns = spec
                .columns
                .iter()
                .map(|(family, qualifier)| {
                    let mut c = vec![(1, binary(family.as_bytes()))];
                    if let Some(q) = qualifier {
                        c.push((2, binary(*q)));
                    }
                    Value::Struct(c)
                })
                .collect();
            tscan.push((3, Value::List { elem: TType::Struct, items: columns }));
        }
        tscan.push((5, Value::I32(i32::try_from(spec.versions.max(1)).unwrap_or(i32::MAX))));
        if let Some((min, max)) = spec.time {
            let max = i64::try_from(max).unwrap_or(i64::MAX);
            let range = Value::Struct(vec![
                (1, Value::I64(i64::try_from(min).unwrap_or(i64::MAX))),
                (2, Value::I64(max)),
            ]);
            tscan.push((6, range));
        }
        if let Some(filter) = &spec.filter {
            tscan.push((7, binary(filter.clone())));
        }
        if spec.reversed {
            tscan.push((11, Value::Bool(true)));
        }
        if let Some(limit) = spec.limit {
            tscan.push((15, Value::I32(i32::try_from(limit).unwrap_or(i32::MAX))));
        }
        self.scan_until(table, tscan, page, each)
    }
}

/// A `TScan`'s start and stop rows (open sides left out).
fn tscan_of(range: (Option<&[u8]>, Option<&[u8]>)) -> Vec<(i16, Value)> {
    let mut tscan = Vec::new();
    if let Some(start) = range.0 {
        tscan.push((1, binary(start)));
    }
    if let Some(stop) = range.1 {
        tscan.push((2, binary(stop)));
    }
    tscan
}

/// [`tscan_of`] with `page` rows a call (TScan's `caching`).
fn tscan_paged(range: (Option<&[u8]>, Option<&[u8]>), page: usize) -> Vec<(i16, Value)> {
    let mut tscan = tscan_of(range);
    tscan.push((4, Value::I32(i32::try_from(page).unwrap_or(i32::MAX))));
    tscan
}

/// `rows` cut into put calls of at most `PUT_CALL_BYTES` (a gateway
/// bounds its messages: rowsearch's at 16 MiB); a row wider than that goes
/// in pieces.
pub fn put_calls(rows: &[(Vec<u8>, Vec<PutCell>)]) -> Vec<Vec<(&[u8], &[PutCell])>> {
    let mut calls = Vec::new();
    let mut call: Vec<(&[u8], &[PutCell])> = Vec::new();
    let mut bytes = 0;
    for (key, cells) in rows {
        let mut start = 0;
        for (i, c) in cells.iter().enumerate() {
            let size = key.len() + c.qualifier.len() + c.value.len() + c.family.len() + 32;
            if bytes + size > PUT_CALL_BYTES && (i > start || !call.is_empty()) {
                if i > start {
                    call.push((key, &cells[start..i]));
                }
                calls.push(std::mem::take(&mut call));
                bytes = 0;
                start = i;
            }
            bytes += size;
        }
        if start < cells.len() || cells.is_empty() {
            call.push((key, &cells[start..]));
        }
    }
    if !call.is_empty() {
        calls.push(call);
    }
    calls
}

/// A `TResult` as a row (`None`: empty).
pub(super) fn row_of(method: &str, r: &Value) -> Result<Option<Row>, ClientError> {
    let Some(Value::Binary(key)) = r.field(1) else { return Ok(None) };
    let Some(Value::List { items, .. }) = r.field(2) else {
        return Err(HbaseClient::protocol(method, "a TResult without columnValues"));
    };
    let mut cells = Vec::with_capacity(items.len());
    for cv in items {
        let (Some(Value::Binary(f)), Some(Value::Binary(q)), Some(Value::Binary(v))) =
            (cv.field(1), cv.field(2), cv.field(3))
        else {
            return Err(HbaseClient::protocol(method, "a TColumnValue without family, qualifier or value"));
        };
        let timestamp = match cv.field(4) {
            Some(Value::I64(ts)) => u64::try_from(*ts).unwrap_or(0),
            _ => 0,
        };
        let family = String::from_utf8(f.clone())
            .map_err(|_| HbaseClient::protocol(method, "a family that is not UTF-8"))?;
        cells.push(Cell { family: family.into(), qualifier: q.clone(), timestamp, value: v.clone() });
    }
    if cells.is_empty() {
        return Ok(None);
    }
    Ok(Some(Row { key: key.clone(), cells }))
}
