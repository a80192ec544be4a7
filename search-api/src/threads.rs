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

use rowsearch_store::{
    Column, ReadOptions, Row, RowSource, normalize_subject, parse_thread_id, thread_id_text,
};
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
    /// The view stops with `Cancelled` once this fires (looked at before
    /// the rows are read and every 1,024 messages after).
    pub cancel: rowsearch_store::Cancel,
}

/// Messages handled between two looks at a view's cancel.
const CHECK_EVERY: usize = 1024;

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
    source: &dyn RowSource,
    table: &str,
    thread: &str,
    request: &ThreadRequest,
) -> Result<Option<ThreadView>> {
    let id = parse_thread_id(thread)
        .ok_or_else(|| Error::BadRequest(format!("thread id {thread:?}: 16 hex digits, as thread: takes")))?;
    let schema = source.schema(table)?;
    let members = source.thread_members(table, id)?;
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
    let mut seen_keys: HashSet<&[u8]> = HashSet::with_capacity(members.len());
    let unique: Vec<&[u8]> =
        members.iter().filter_map(|m| m.row.as_deref()).filter(|k| seen_keys.insert(k)).collect();
    request.cancel.check()?;
    let rows: Vec<Row> = source.rows(table, &unique, &read)?.into_iter().flatten().collect();
    request.cancel.check()?;
    let missing = members.iter().filter(|m| m.row.is_none()).count();
    let analyzer = source.analyzer();
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
                .and_then(|c| analyzer.as_ref().and_then(|a| a.date_ms(text(r, c).as_bytes())))
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
    // Each subject's messages by (date, place): a reply gathered by
    // subject answers the one before it there.
    let mut by_subject: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (subject, _)) in subjects.iter().enumerate() {
        by_subject.entry(subject.as_str()).or_default().push(i);
    }
    for list in by_subject.values_mut() {
        list.sort_unstable_by_key(|&j| (dates[j], j));
    }
    let mut parent: Vec<Option<usize>> = vec![None; rows.len()];
    for (i, row) in rows.iter().enumerate() {
        if i % CHECK_EVERY == CHECK_EVERY - 1 {
            request.cancel.check()?;
        }
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
            let list = &by_subject[subjects[i].0.as_str()];
            let at = list.partition_point(|&j| (dates[j], j) < (dates[i], i));
            p = at.checked_sub(1).map(|k| list[k]);
        }
        parent[i] = p;
    }
    cut_cycles(&mut parent);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match *p {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_date = |list: &mut Vec<usize>| {
        list.sort_by(|&a, &b| (dates[a], &rows[a].key).cmp(&(dates[b], &rows[b].key)))
    };
    by_date(&mut roots);
    children.iter_mut().for_each(by_date);
    let mut order: Vec<(usize, usize, Option<usize>)> = Vec::with_capacity(rows.len());
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        order.push((i, depth, parent[i]));
        stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
    }
    request.cancel.check()?;
    let place: HashMap<usize, usize> = order.iter().enumerate().map(|(n, (i, _, _))| (*i, n)).collect();
    let mut messages = Vec::with_capacity(order.len());
    for (n, (i, depth, p)) in order.into_iter().enumerate() {
        if n % CHECK_EVERY == CHECK_EVERY - 1 {
            request.cancel.check()?;
        }
        messages.push(ThreadMessage {
            key: rows[i].key.clone(),
            depth,
            parent: p.and_then(|p| place.get(&p).copied()),
            date_ms: dates[i],
            document: shape.document(&rows[i], analyzer.as_deref()),
        });
    }
    Ok(Some(ThreadView { thread: thread_id_text(id), partition, messages, missing }))
}

/// Cuts cycles of `parent` (ids naming each other): in each, the message
/// of the lowest place becomes a root; messages leading into a cycle keep
/// their parent. Linear: each message is walked once.
fn cut_cycles(parent: &mut [Option<usize>]) {
    // 0: not yet walked; 1: on the walk being made; 2: done.
    let mut state = vec![0u8; parent.len()];
    let mut walk = Vec::new();
    for start in 0..parent.len() {
        walk.clear();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                0 => {
                    state[i] = 1;
                    walk.push(i);
                    at = parent[i];
                }
                1 => {
                    // The walk came back to `i`: the cycle is the walk from it.
                    let from = walk.iter().position(|&w| w == i).unwrap_or(0);
                    if let Some(&lowest) = walk[from..].iter().min() {
                        parent[lowest] = None;
                    }
                    break;
                }
                _ => break,
            }
        }
        for &w in &walk {
            state[w] = 2;
        }
    }
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

/// The summaries of threads `threads` (id, matched) of `table`, read from
/// `source` (the store, or HBase); a table gone meanwhile (dropped) says
/// only what the search saw.
///
/// # Errors
/// The store's.
pub fn summaries(
    source: &dyn RowSource,
    table: &str,
    threads: &[(String, u64)],
) -> Result<Vec<ThreadSummary>> {
    summaries_with(source, table, threads, &[])
}

/// [`summaries`], with rows already read (`known`, with at least the
/// [`summary_columns`]: a search's hits) taken as they are instead of read
/// again.
///
/// # Errors
/// The store's.
pub fn summaries_with(
    source: &dyn RowSource,
    table: &str,
    threads: &[(String, u64)],
    known: &[Row],
) -> Result<Vec<ThreadSummary>> {
    let schema = match source.schema(table) {
        Ok(schema) => schema,
        // A table dropped since the search; any other error is the
        // source's and is said.
        Err(e) if matches!(e.kind(), rowsearch_store::ErrorKind::UnknownTable { .. }) => {
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
        Err(e) => return Err(e.into()),
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
            Some(thread) if schema.threads.is_some() => source.thread_members(table, thread)?,
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
                read_rows = source.rows(table, &read_now, &read)?;
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::cut_cycles;

    /// A table gone since the search (dropped) gets summaries of what the
    /// search matched.
    #[test]
    fn summaries_of_a_table_gone_say_what_matched() {
        let dir = tempfile::tempdir().unwrap();
        let store = rowsearch_store::Store::open(dir.path().join("d")).unwrap();
        let threads = vec![("t1".to_owned(), 3), ("t2".to_owned(), 1)];
        let got = super::summaries(&store, "elsewhere", &threads).unwrap();
        let seen: Vec<(&str, u64, u64, usize)> =
            got.iter().map(|s| (s.id.as_str(), s.matched, s.messages, s.participants.len())).collect();
        assert_eq!(seen, [("t1", 3, 3, 0), ("t2", 1, 1, 0)]);
    }

    /// The places on a cycle of `parent` (each reaches itself).
    fn on_cycles(parent: &[Option<usize>]) -> Vec<bool> {
        (0..parent.len())
            .map(|i| {
                let mut at = parent[i];
                for _ in 0..parent.len() {
                    match at {
                        Some(p) if p == i => return true,
                        Some(p) => at = parent[p],
                        None => return false,
                    }
                }
                false
            })
            .collect()
    }

    proptest! {
        /// Against the definition: no cycle is left, each cycle lost the
        /// parent of its lowest place and no other, every other message
        /// keeps its parent.
        #[test]
        fn cycles_are_cut_at_their_lowest_place(
            links in prop::collection::vec(prop::option::of(0usize..40), 1..40),
        ) {
            let before: Vec<Option<usize>> = links.iter().map(|l| l.map(|p| p % links.len())).collect();
            let cyclic = on_cycles(&before);
            let mut after = before.clone();
            cut_cycles(&mut after);
            prop_assert!(on_cycles(&after).iter().all(|c| !c), "{:?}", after);
            for i in 0..before.len() {
                if after[i] != before[i] {
                    prop_assert!(cyclic[i] && after[i].is_none());
                    // The lowest of its cycle.
                    let mut at = before[i];
                    while let Some(p) = at.filter(|&p| p != i) {
                        prop_assert!(p > i);
                        at = before[p];
                    }
                }
            }
            let cut = (0..before.len()).filter(|&i| after[i] != before[i]).count();
            let mut cycles = std::collections::HashSet::new();
            for i in (0..before.len()).filter(|&i| cyclic[i]) {
                let mut members = vec![i];
                let mut at = before[i];
                while let Some(p) = at.filter(|&p| p != i) {
                    members.push(p);
                    at = before[p];
                }
                cycles.insert(*members.iter().min().unwrap());
            }
            prop_assert_eq!(cut, cycles.len());
        }
    }

    #[test]
    fn a_long_chain_is_walked_once() {
        // 200,000 replies each to the one before, and one cycle at the end:
        // linear (the earlier walk from every message was quadratic).
        let n: usize = 200_000;
        let mut parent: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
        parent[0] = Some(n - 1);
        cut_cycles(&mut parent);
        assert_eq!(parent[0], None);
        assert!(parent[1..].iter().enumerate().all(|(i, p)| *p == Some(i)));
    }
}
