//! Threads against a model: rows carrying ids (one, or two for a folded
//! copy), naming others (parents, some never seen: ghosts), with subjects
//! and dates, in two partitions. Put in any order and batches (prepared
//! ahead or not, some put twice, some deleted), each row's thread column
//! groups the rows exactly as the model's connected components do (ids
//! and references linked, as notmuch does; a reply without references
//! joined to the same subject within the window), the thread ids equal
//! those of putting them one by one in order, every member is listed, and
//! a keyword lookup of `thread:ID` finds exactly the thread's rows.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use rowsearch_store::{
    Analyzer, Batch, Delete, FamilySchema, KeyField, KeyOrder, KeyType, KeyValue, KeywordCell, KeywordQuery,
    PutCell, ReadOptions, RowKeySchema, SearchField, SearchSchema, Store, TableSchema, ThreadSchema,
    normalize_subject, parse_thread_id,
};

/// Splits on spaces; dates are decimal milliseconds.
#[derive(Debug)]
pub(crate) struct Words;

impl Analyzer for Words {
    fn terms(&self, _: &SearchField, text: &str, sink: &mut dyn FnMut(&str, u32)) {
        for (i, w) in text.split(' ').filter(|w| !w.is_empty()).enumerate() {
            sink(w, i as u32);
        }
    }

    fn date_ms(&self, value: &[u8]) -> Option<u64> {
        std::str::from_utf8(value).ok()?.parse().ok()
    }
}

const WINDOW: u64 = 100;
pub(crate) const USERS: [&str; 2] = ["ann", "bob"];
const SUBJECTS: [&str; 4] = ["gas deal", "Re: gas deal", "RE: Fwd: power", "power"];

pub(crate) fn schema() -> TableSchema {
    let mut threads = ThreadSchema::new("m:message_id", ["m:in_reply_to", "m:references"], "m:thread")
        .by_subject("m:subject");
    threads.subject_window_ms = WINDOW;
    TableSchema::new([FamilySchema::new("m")])
        .row_key(RowKeySchema::new([
            KeyField::new("user", KeyType::String, KeyOrder::Asc),
            KeyField::new("id", KeyType::U16, KeyOrder::Asc),
        ]))
        .search(
            SearchSchema::new([
                SearchField::text("subject", "m:subject"),
                SearchField::keyword("thread", "m:thread"),
            ])
            .partition("user")
            .date_column("m:date"),
        )
        .threads(threads)
}

pub(crate) fn key(user: usize, n: u16) -> Vec<u8> {
    schema().row_key.unwrap().encode(&[KeyValue::String(USERS[user].into()), KeyValue::U16(n)]).unwrap()
}

/// One message row.
#[derive(Debug, Clone)]
pub(crate) struct Msg {
    pub(crate) user: usize,
    /// Its ids: `m<n>@x`, and a second one for a folded copy.
    ids: Vec<u32>,
    /// Ids it names, in In-Reply-To (the first) and References.
    refs: Vec<u32>,
    subject: usize,
    date: u64,
}

fn id_text(n: u32) -> String {
    format!("m{n}@x")
}

impl Msg {
    pub(crate) fn cells(&self) -> Vec<PutCell> {
        let ids: Vec<String> = self.ids.iter().map(|&n| format!("<{}>", id_text(n))).collect();
        let mut cells = vec![
            PutCell::new("m", "message_id", ids.join("\n")).at(self.date),
            PutCell::new("m", "subject", SUBJECTS[self.subject]).at(self.date),
            PutCell::new("m", "date", self.date.to_string()).at(self.date),
        ];
        if let Some(first) = self.refs.first() {
            cells.push(PutCell::new("m", "in_reply_to", format!("<{}>", id_text(*first))).at(self.date));
        }
        if self.refs.len() > 1 {
            let all: Vec<String> = self.refs.iter().map(|&n| format!("<{}>", id_text(n))).collect();
            cells.push(PutCell::new("m", "references", all.join(" ")).at(self.date));
        }
        cells
    }
}

/// Messages: ids from a pool of 40 per user (ids 1000+ never carried:
/// ghosts), each row's ids distinct from every other row's.
pub(crate) fn messages() -> impl Strategy<Value = Vec<Msg>> {
    prop::collection::vec(
        (0..2usize, any::<bool>(), prop::collection::vec(0..48u32, 0..4), 0..4usize, 0..400u64),
        1..40,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (user, copy, refs, subject, date))| {
                let own = i as u32;
                let mut ids = vec![own];
                if copy {
                    ids.push(500 + own);
                }
                // Refs past the row count are ghosts.
                let refs = refs
                    .into_iter()
                    .map(|r| if r >= 40 { 1000 + r } else { r })
                    .filter(|r| *r != own)
                    .collect();
                Msg { user, ids, refs, subject, date }
            })
            .collect()
    })
}

/// The model's threads: rows grouped by connected component (per user).
fn model(msgs: &[Msg]) -> BTreeSet<BTreeSet<usize>> {
    let n = msgs.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut x = x;
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let union = |p: &mut Vec<usize>, a: usize, b: usize| {
        let (a, b) = (find(p, a), find(p, b));
        p[a] = b;
    };
    // Ids to rows; ghosts get a node of their own per user.
    let mut owner: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (i, m) in msgs.iter().enumerate() {
        for &id in &m.ids {
            owner.insert((m.user, id), i);
        }
    }
    let mut ghosts: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (i, m) in msgs.iter().enumerate() {
        for &r in &m.refs {
            let node = match owner.get(&(m.user, r)) {
                Some(&o) => o,
                None => *ghosts.entry((m.user, r)).or_insert_with(|| {
                    parent.push(parent.len());
                    parent.len() - 1
                }),
            };
            union(&mut parent, i, node);
        }
    }
    for (i, a) in msgs.iter().enumerate() {
        for (j, b) in msgs.iter().enumerate().skip(i + 1) {
            let (sa, ra) = normalize_subject(SUBJECTS[a.subject]);
            let (sb, rb) = normalize_subject(SUBJECTS[b.subject]);
            let reply_a = ra && a.refs.is_empty();
            let reply_b = rb && b.refs.is_empty();
            if a.user == b.user && sa == sb && a.date.abs_diff(b.date) <= WINDOW && (reply_a || reply_b) {
                union(&mut parent, i, j);
            }
        }
    }
    let mut groups: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for i in 0..n {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().insert(i);
    }
    groups.into_values().collect()
}

pub(crate) fn open(dir: &std::path::Path) -> Store {
    let store = Store::builder().analyzer(Arc::new(Words)).open(dir).unwrap();
    store.create_table("t", &schema()).unwrap();
    store
}

/// Each row's thread id.
pub(crate) fn threads_of(store: &Store, msgs: &[Msg]) -> Vec<String> {
    let read = ReadOptions::default();
    msgs.iter()
        .enumerate()
        .map(|(i, m)| {
            let row = store.get("t", &key(m.user, i as u16), &read).unwrap().expect("row stored");
            String::from_utf8(row.value("m", b"thread").expect("a thread column").to_vec()).unwrap()
        })
        .collect()
}

/// Every keyword cell the store keeps for table `t`.
fn stored_cells(store: &Store) -> Vec<KeywordCell> {
    let mut out = Vec::new();
    store
        .begin_read()
        .unwrap()
        .for_each_keyword_cell("t", None, &mut |c| {
            out.push(c.to_cell());
            Ok(())
        })
        .unwrap();
    sorted(out)
}

/// The keyword cells each row's values make (as for a row that lives
/// elsewhere).
fn expected_cells(store: &Store) -> Vec<KeywordCell> {
    let rtxn = store.begin_read().unwrap();
    let mut out = Vec::new();
    for row in rtxn.scan_page("t", &rowsearch_store::Scan::new()).unwrap().rows {
        out.extend(rowsearch_store::keyword_cells_of("t", &schema(), &Words, &row).unwrap());
    }
    sorted(out)
}

fn sorted(mut cells: Vec<KeywordCell>) -> Vec<KeywordCell> {
    cells.sort_by(|a, b| {
        (&a.partition, &a.field, &a.term, a.date_ms, &a.key).cmp(&(
            &b.partition,
            &b.field,
            &b.term,
            b.date_ms,
            &b.key,
        ))
    });
    cells
}

/// Puts `msgs` in `order`, in batches of `cuts`; with `stale`, every third
/// message carries a thread cell of its own (as an import of rows exported
/// elsewhere would), which the thread computed replaces.
pub(crate) fn put_in(
    store: &Store,
    msgs: &[Msg],
    order: &[usize],
    cuts: &[usize],
    prepared: bool,
    stale: bool,
) {
    let mut at = 0;
    let mut cuts = cuts.iter().copied().peekable();
    while at < order.len() {
        let size = cuts.next().unwrap_or(order.len()).clamp(1, order.len() - at);
        let mut batch = Batch::new();
        for &i in &order[at..at + size] {
            let mut cells = msgs[i].cells();
            if stale && i % 3 == 0 {
                cells.push(PutCell::new("m", "thread", "stale").at(msgs[i].date));
            }
            batch.put("t", key(msgs[i].user, i as u16), cells);
        }
        if prepared {
            store.apply_prepared(&store.prepare(batch)).unwrap();
        } else {
            store.apply(&batch).unwrap();
        }
        at += size;
    }
}

/// `0..n` shuffled by `seed`.
pub(crate) fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed | 1;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn threads_equal_the_model_whatever_the_order_and_batches(
        msgs in messages(),
        seed in any::<u64>(),
        cuts in prop::collection::vec(1..8usize, 0..12),
        prepared in any::<bool>(),
        again in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let in_order = tempfile::tempdir().unwrap();
        let in_order = open(in_order.path());
        let order: Vec<usize> = (0..msgs.len()).collect();
        put_in(&in_order, &msgs, &order, &[1; 64], false, false);
        let expected = threads_of(&in_order, &msgs);

        let shuffled_dir = tempfile::tempdir().unwrap();
        let store = open(shuffled_dir.path());
        let order = shuffled(msgs.len(), seed);
        put_in(&store, &msgs, &order, &cuts, prepared, seed % 2 == 0);
        // Some rows put again (an ingest run twice) change nothing.
        for index in &again {
            let i = index.index(msgs.len());
            put_in(&store, &msgs, &[i], &[], prepared, false);
        }
        let got = threads_of(&store, &msgs);
        prop_assert_eq!(&got, &expected);

        // The rows grouped by thread are the model's components.
        let mut by_thread: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
        for (i, t) in got.iter().enumerate() {
            by_thread.entry(t.as_str()).or_default().insert(i);
        }
        let grouped: BTreeSet<BTreeSet<usize>> = by_thread.values().cloned().collect();
        prop_assert_eq!(grouped, model(&msgs));

        // Every thread lists its rows; `thread:ID` finds exactly them.
        let rtxn = store.begin_read().unwrap();
        for (thread, rows) in &by_thread {
            let members = rtxn.thread_members("t", parse_thread_id(thread).unwrap()).unwrap();
            let listed: BTreeSet<Vec<u8>> = members.iter().filter_map(|m| m.row.clone()).collect();
            let wanted: BTreeSet<Vec<u8>> = rows.iter().map(|&i| key(msgs[i].user, i as u16)).collect();
            prop_assert_eq!(&listed, &wanted);
            let user = msgs[*rows.iter().next().unwrap()].user;
            let query = KeywordQuery {
                partition: USERS[user].as_bytes().to_vec(),
                terms: vec![format!("thread:{thread}")],
                limit: None,
                cursor: None,
            };
            let found: BTreeSet<Vec<u8>> =
                store.keyword_lookup("t", &query).unwrap().hits.into_iter().map(|h| h.key).collect();
            prop_assert_eq!(&found, &wanted);
        }
        drop(rtxn);

        // Rows threaded ahead of their keyword cells, or written again as
        // their threads merge: every keyword cell the store keeps is one its
        // row's values make, and every row keeps its number.
        prop_assert_eq!(stored_cells(&store), expected_cells(&store));
        let problems = store.begin_read().unwrap().check_keyword_numbers("t").unwrap();
        prop_assert!(problems.is_empty(), "{:?}", problems);

        // A deleted row leaves its ids as ghosts: the others keep their thread.
        let victim = seed as usize % msgs.len();
        let mut batch = Batch::new();
        batch.delete("t", key(msgs[victim].user, victim as u16), Delete::Row { up_to: None });
        store.apply(&batch).unwrap();
        let read = ReadOptions::default();
        for (i, m) in msgs.iter().enumerate().filter(|(i, _)| *i != victim) {
            let row = store.get("t", &key(m.user, i as u16), &read).unwrap().unwrap();
            prop_assert_eq!(row.value("m", b"thread").unwrap(), expected[i].as_bytes());
        }
        // Its thread lists the others' rows, not its own.
        let thread = &expected[victim];
        let members = store.begin_read().unwrap().thread_members("t", parse_thread_id(thread).unwrap()).unwrap();
        let listed: BTreeSet<Vec<u8>> = members.iter().filter_map(|m| m.row.clone()).collect();
        let wanted: BTreeSet<Vec<u8>> = by_thread[thread.as_str()]
            .iter()
            .filter(|&&i| i != victim)
            .map(|&i| key(msgs[i].user, i as u16))
            .collect();
        prop_assert_eq!(listed, wanted);
    }
}
