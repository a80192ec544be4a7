//! A conversation as a tree (`GET /tables/{t}/threads/{id}`, `rowsearch
//! thread`): the rows of one thread read in one snapshot, each a document,
//! in reading order, each reply under the message it answers. The one
//! owner of that shape.
//!
//! A message's parent is the message its In-Reply-To names when the thread
//! holds it, else the last of its References the thread holds (notmuch's
//! rule), else, for a reply gathered by subject, the newest earlier
//! message of the same subject; a message without one is a root. Roots
//! and the replies to each message go oldest first.

use std::collections::{HashMap, HashSet};

use rowsearch_store::{Column, ReadOptions, Row, Store, normalize_subject, parse_thread_id, thread_id_text};
use serde::Serialize;

use crate::document::{Document, DocumentShape};
use crate::error::{Error, Result};

/// One message of a thread.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadMessage {
    /// The row key.
    #[serde(skip)]
    pub key: Vec<u8>,
    /// Replies above it (0 for a root).
    pub depth: usize,
    /// The place in [`ThreadView::messages`] of the message it answers.
    pub parent: Option<usize>,
    /// The message's date (ms; 0 unknown).
    #[serde(skip)]
    pub date_ms: u64,
    /// Its document (the table's display, or the fields asked for).
    pub document: Document,
}

/// A thread in reading order.
#[derive(Debug, Clone)]
pub struct ThreadView {
    /// The thread id.
    pub thread: String,
    /// The partition (mailbox) it lives in.
    pub partition: Vec<u8>,
    /// Its messages, depth first.
    pub messages: Vec<ThreadMessage>,
    /// Ids the thread's messages name that no message carries.
    pub missing: usize,
}

/// What a thread view asks.
#[derive(Debug, Clone, Default)]
pub struct ThreadRequest {
    /// Only these names in each document (as search's `fields`; `*` all).
    pub fields: Option<Vec<String>>,
    /// Columns each document carries besides (`family:qualifier`).
    pub columns: Vec<Column>,
    /// The partitions the caller may see (`None`: all).
    pub scope: Option<Vec<Vec<u8>>>,
}

/// The ids in a header value: each `<...>`, in order.
fn ids_in(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find('<') {
        let Some(len) = rest[start + 1..].find('>') else { break };
        let id = rest[start + 1..start + 1 + len].trim();
        if !id.is_empty() {
            out.push(id);
        }
        rest = &rest[start + 1 + len + 1..];
    }
    out
}

/// Thread `thread` of `table` in reading order; `None` when there is no
/// such thread, or it lives in a partition outside `request.scope`.
///
/// # Errors
/// `BadRequest` for a malformed id or `fields`; the store's (`NotThreaded`,
/// `UnknownTable`).
pub fn thread_view(
    store: &Store,
    table: &str,
    thread: &str,
    request: &ThreadRequest,
) -> Result<Option<ThreadView>> {
    let id = parse_thread_id(thread)
        .ok_or_else(|| Error::BadRequest(format!("thread id {thread:?}: 16 hex digits, as thread: takes")))?;
    let rtxn = store.begin_read()?;
    let schema = rtxn.schema(table)?;
    let members = rtxn.thread_members(table, id)?;
    let Some(partition) = members.first().map(|m| m.partition.clone()) else { return Ok(None) };
    if request.scope.as_ref().is_some_and(|scope| !scope.contains(&partition)) {
        return Ok(None);
    }
    let search = schema
        .search
        .as_ref()
        .ok_or_else(|| Error::BadRequest(format!("table {table:?} is not searchable")))?;
    let threads = schema.threads.as_ref().ok_or_else(|| {
        Error::Store(rowsearch_store::ErrorKind::NotThreaded { table: table.to_owned() }.into())
    })?;
    let fields = crate::document::shown_names(request.fields.as_deref(), search);
    let shape = DocumentShape {
        search,
        row_key: schema.row_key.as_ref(),
        columns: &request.columns,
        fields: fields.as_deref(),
        crop: &[],
        columns_too: request.fields.as_ref().is_none_or(|names| names.iter().any(|n| n == "*")),
    };
    shape.check_fields().map_err(Error::BadRequest)?;
    // The columns the tree is made of, besides the document's.
    let mut read = ReadOptions::default();
    let mut tree_columns: Vec<&str> = vec![&threads.id_column];
    tree_columns.extend(threads.refs_columns.iter().map(String::as_str));
    tree_columns.extend(threads.subject_column.as_deref());
    tree_columns.extend(search.date_column.as_deref());
    let asked = request.columns.iter().cloned();
    for c in shape
        .needed()
        .into_iter()
        .chain(asked)
        .chain(tree_columns.iter().map(|c| Column::parse(c.as_bytes())))
    {
        read = read.column(c);
    }
    let keys: Vec<&[u8]> = members.iter().filter_map(|m| m.row.as_deref()).collect();
    let mut unique: Vec<&[u8]> = Vec::with_capacity(keys.len());
    for k in keys {
        if !unique.contains(&k) {
            unique.push(k);
        }
    }
    let rows: Vec<Row> = rtxn.multi_get(table, &unique, &read)?.into_iter().flatten().collect();
    let missing = members.iter().filter(|m| m.row.is_none()).count();
    let analyzer = store.analyzer();
    let text = |row: &Row, column: &str| -> String {
        match Column::parse(column.as_bytes()) {
            Column::Qualifier(f, q) => {
                String::from_utf8_lossy(row.value(&f, &q).unwrap_or_default()).into_owned()
            }
            Column::Family(_) => String::new(),
        }
    };
    let dates: Vec<u64> = rows
        .iter()
        .map(|r| {
            search
                .date_column
                .as_deref()
                .and_then(|c| analyzer.and_then(|a| a.date_ms(text(r, c).as_bytes())))
                .unwrap_or(0)
        })
        .collect();
    // Which row carries each id.
    let mut carrier: HashMap<String, usize> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        for id in text(row, &threads.id_column).lines() {
            let id = id.trim().trim_start_matches('<').trim_end_matches('>');
            carrier.entry(id.to_owned()).or_insert(i);
        }
    }
    let subjects: Vec<(String, bool)> = rows
        .iter()
        .map(|r| {
            threads.subject_column.as_deref().map(|c| normalize_subject(&text(r, c))).unwrap_or_default()
        })
        .collect();
    let mut parent: Vec<Option<usize>> = vec![None; rows.len()];
    for (i, row) in rows.iter().enumerate() {
        let mut named: Vec<Vec<&str>> = Vec::new();
        let refs: Vec<String> = threads.refs_columns.iter().map(|c| text(row, c)).collect();
        for value in &refs {
            named.push(ids_in(value));
        }
        // In-Reply-To (the first refs column) when the thread holds it,
        // else the last of the References it holds.
        let by_reply = named.first().and_then(|ids| ids.first()).and_then(|id| carrier.get(*id)).copied();
        let by_refs =
            named.iter().skip(1).flat_map(|ids| ids.iter().rev()).find_map(|id| carrier.get(*id)).copied();
        let mut p = by_reply.or(by_refs).filter(|&p| p != i);
        if p.is_none() && named.iter().all(Vec::is_empty) && subjects[i].1 {
            // A reply gathered by subject: the newest earlier message of it.
            p = (0..rows.len())
                .filter(|&j| j != i && subjects[j].0 == subjects[i].0 && (dates[j], j) < (dates[i], i))
                .max_by_key(|&j| (dates[j], j));
        }
        parent[i] = p;
    }
    // Cut cycles (ids naming each other): a message whose chain comes back
    // to it is a root.
    for i in 0..rows.len() {
        let mut seen = HashSet::from([i]);
        let mut at = parent[i];
        while let Some(p) = at {
            if !seen.insert(p) {
                parent[i] = None;
                break;
            }
            at = parent[p];
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match *p {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_date = |list: &mut Vec<usize>| list.sort_by_key(|&i| (dates[i], rows[i].key.clone()));
    by_date(&mut roots);
    children.iter_mut().for_each(by_date);
    let mut order: Vec<(usize, usize, Option<usize>)> = Vec::with_capacity(rows.len());
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        order.push((i, depth, parent[i]));
        stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
    }
    let place: HashMap<usize, usize> = order.iter().enumerate().map(|(n, (i, _, _))| (*i, n)).collect();
    let messages = order
        .into_iter()
        .map(|(i, depth, p)| ThreadMessage {
            key: rows[i].key.clone(),
            depth,
            parent: p.and_then(|p| place.get(&p).copied()),
            date_ms: dates[i],
            document: shape.document(&rows[i], analyzer.map(|a| &**a)),
        })
        .collect();
    Ok(Some(ThreadView { thread: thread_id_text(id), partition, messages, missing }))
}

/// What a collapsed hit says of its thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadSummary {
    /// The thread id.
    pub id: String,
    /// Its messages the search matched.
    pub matched: u64,
    /// Its messages (rows), whether they match or not.
    pub messages: u64,
    /// The senders of its messages (the `from` field), each once, in the
    /// order they first wrote (of its first [`PARTICIPANT_ROWS`] rows by
    /// key: the mail table's keys sort a mailbox's newest first).
    pub participants: Vec<String>,
}

/// Most participants a summary names.
pub const MAX_PARTICIPANTS: usize = 10;
/// Most of a thread's rows a summary reads for its participants (the
/// thread's rows are counted from its entries, without reading them).
pub const PARTICIPANT_ROWS: usize = 64;

/// The columns a summary reads of a thread's rows: the `from` field's and
/// the date column (of a table whose search schema has them).
pub fn summary_columns(search: Option<&rowsearch_store::SearchSchema>) -> (Option<String>, Option<String>) {
    let from = search.and_then(|s| s.fields.iter().find(|f| f.name == "from")).map(|f| f.column.clone());
    (from, search.and_then(|s| s.date_column.clone()))
}

/// The summaries of threads `threads` (id, matched) of `table`, read in one
/// snapshot of `store`; a thread the store does not hold (a table in
/// HBase) says only what the search saw.
///
/// # Errors
/// The store's.
pub fn summaries(store: &Store, table: &str, threads: &[(String, u64)]) -> Result<Vec<ThreadSummary>> {
    summaries_with(store, table, threads, &[])
}

/// [`summaries`], with rows already read (`known`, with at least the
/// [`summary_columns`]: a search's hits) taken as they are instead of read
/// again.
///
/// # Errors
/// The store's.
pub fn summaries_with(
    store: &Store,
    table: &str,
    threads: &[(String, u64)],
    known: &[Row],
) -> Result<Vec<ThreadSummary>> {
    let rtxn = store.begin_read()?;
    let schema = match rtxn.schema(table) {
        Ok(schema) => schema,
        Err(_) => {
            return Ok(threads
                .iter()
                .map(|(id, matched)| ThreadSummary {
                    id: id.clone(),
                    matched: *matched,
                    messages: *matched,
                    participants: Vec::new(),
                })
                .collect());
        }
    };
    let (from, date) = summary_columns(schema.search.as_ref());
    let mut read = ReadOptions::default();
    for c in from.iter().chain(date.iter()) {
        read = read.column(Column::parse(c.as_bytes()));
    }
    let known: std::collections::HashMap<&[u8], &Row> = known.iter().map(|r| (r.key.as_slice(), r)).collect();
    let mut out = Vec::with_capacity(threads.len());
    for (id, matched) in threads {
        let members = match parse_thread_id(id) {
            Some(thread) if schema.threads.is_some() => rtxn.thread_members(table, thread)?,
            _ => Vec::new(),
        };
        let mut keys: Vec<&[u8]> = members.iter().filter_map(|m| m.row.as_deref()).collect();
        keys.sort_unstable();
        keys.dedup();
        // The hits' rows lent, the others read.
        let mut rows: Vec<&Row> = Vec::new();
        let mut read_rows: Vec<Option<Row>> = Vec::new();
        if from.is_some() {
            let some = &keys[..keys.len().min(PARTICIPANT_ROWS)];
            let (have, read_now): (Vec<&[u8]>, Vec<&[u8]>) =
                some.iter().partition(|k| known.contains_key(*k));
            rows.extend(have.iter().filter_map(|k| known.get(k).copied()));
            if !read_now.is_empty() {
                read_rows = rtxn.multi_get(table, &read_now, &read)?;
            }
        }
        rows.extend(read_rows.iter().flatten());
        let value = |row: &Row, column: &Option<String>| -> String {
            match column.as_deref().map(|c| Column::parse(c.as_bytes())) {
                Some(Column::Qualifier(f, q)) => {
                    String::from_utf8_lossy(row.value(&f, &q).unwrap_or_default()).into_owned()
                }
                _ => String::new(),
            }
        };
        // By date, a tie by key (the order rows are read in).
        rows.sort_by_cached_key(|r| (value(r, &date), r.key.clone()));
        let mut participants: Vec<String> = Vec::new();
        for row in &rows {
            let sender = value(row, &from);
            if !sender.is_empty() && !participants.contains(&sender) && participants.len() < MAX_PARTICIPANTS
            {
                participants.push(sender);
            }
        }
        out.push(ThreadSummary {
            id: id.clone(),
            matched: *matched,
            messages: (keys.len() as u64).max(*matched),
            participants,
        });
    }
    Ok(out)
}
