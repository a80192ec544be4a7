//! The background refresher: a searchable table becomes searchable without
//! a reindex command, and writes from another store handle (as another
//! process would) reach the index when a waiter asks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rowsearch_indexer::store::{Delete, PutCell, RowSource, Store};
use rowsearch_indexer::{
    LiveIndexes, RefreshOptions, Refresher, SortBy, TableIndex, mail_schema, open_store,
};

fn keys(index: &TableIndex, query: &str) -> Vec<Vec<u8>> {
    let generation = index.generation().unwrap();
    generation
        .search_keys(query, None, SortBy::Newest, 0, 1000)
        .unwrap()
        .keys
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn mail_row(store: &rowsearch_indexer::store::Store, user: &str, id: u64, subject: &str) -> Vec<u8> {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let key = rk
        .encode_json(&serde_json::json!({"user": user, "date": 990_000_000_000u64 + id, "id": id}))
        .unwrap();
    store
        .put(
            "mail",
            &key,
            vec![
                PutCell::new("m", "subject", subject),
                PutCell::new("m", "date", "2001-05-16T08:00:00Z"),
                PutCell::new("b", "text", "body text"),
            ],
        )
        .unwrap();
    key
}

/// A store with the mail table, and a refresher on it with `interval`.
fn mail_store(interval: Option<Duration>) -> (tempfile::TempDir, Arc<Store>, Refresher) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(dir.path()).unwrap());
    store.create_table("mail", &mail_schema()).unwrap();
    let live = Arc::new(LiveIndexes::new(Arc::clone(&store), rowsearch_indexer::DEFAULT_OVERLAY_MAX_ROWS));
    let refresher = Refresher::start(live, RefreshOptions { interval, ..RefreshOptions::default() }).unwrap();
    (dir, store, refresher)
}

#[test]
fn writes_from_another_handle_are_indexed_when_a_waiter_asks() {
    // No interval: rounds run only when asked, so what follows is the
    // waiter's doing, not a tick's.
    let (dir, store, refresher) = mail_store(None);
    let deadline = || Instant::now() + Duration::from_secs(60);
    // The first round builds the empty table's index: searchable at once.
    assert!(refresher.wait_absorbed("mail", store.next_seq().unwrap(), deadline()));
    let index = TableIndex::open(&store, "mail").unwrap();
    assert!(keys(&index, "quokka").is_empty());

    // Another handle on the same directory writes, as another process.
    let other = open_store(dir.path()).unwrap();
    let first = mail_row(&other, "ann", 1, "quokka sighting");
    assert!(refresher.wait_absorbed("mail", other.next_seq().unwrap(), deadline()));
    assert_eq!(keys(&index, "quokka"), vec![first.clone()]);

    // A rewrite no longer matches its old words; a delete is gone.
    let second = mail_row(&other, "bob", 2, "wombat den");
    mail_row(&other, "ann", 1, "wombat burrow");
    assert!(refresher.wait_absorbed("mail", other.next_seq().unwrap(), deadline()));
    assert!(keys(&index, "quokka").is_empty());
    assert_eq!(keys(&index, "wombat").len(), 2);
    other.delete("mail", &second, Delete::Row { up_to: None }).unwrap();
    assert!(refresher.wait_absorbed("mail", other.next_seq().unwrap(), deadline()));
    assert_eq!(keys(&index, "wombat"), vec![first]);
    let status = refresher.status();
    assert!(status.reindexes >= 4, "{status:?}");
    assert_eq!(status.last_error, None);
}

/// A round reads what each index absorbed from the live index that holds
/// it open, reads the change feed once for every table, and opens no
/// index (a commit reloads the generation it holds): counted in its
/// status. Before the live indexes, a round with one changed table of
/// three opened 7 indexes (each table's to read what it absorbed, the
/// changed one's to reindex it, each again to trim the feed) and read the
/// feed 4 times.
#[test]
fn a_round_opens_no_index_and_reads_the_feed_once() {
    let (dir, store, refresher) = mail_store(None);
    for table in ["mail_b", "mail_c"] {
        store.create_table(table, &mail_schema()).unwrap();
    }
    let deadline = || Instant::now() + Duration::from_secs(60);
    // The first rounds build the three indexes and open them.
    for table in ["mail", "mail_b", "mail_c"] {
        assert!(refresher.wait_absorbed(table, store.next_seq().unwrap(), deadline()));
    }
    let index = TableIndex::open(&store, "mail").unwrap();
    for round in 0..3 {
        let before = refresher.status();
        let other = open_store(dir.path()).unwrap();
        let key = mail_row(&other, "ann", round, &format!("numbat{round} sighting"));
        assert!(refresher.wait_absorbed("mail", other.next_seq().unwrap(), deadline()));
        let after = refresher.status();
        let rounds = after.rounds - before.rounds;
        assert!(rounds >= 1, "{after:?}");
        assert_eq!(after.last_error, None);
        assert_eq!(after.index_opens - before.index_opens, 0, "index opens in {rounds} rounds: {after:?}");
        assert_eq!(after.feed_reads - before.feed_reads, rounds, "feed reads in {rounds} rounds: {after:?}");
        assert_eq!(keys(&index, &format!("numbat{round}")), vec![key]);
    }
}

#[test]
fn a_waiter_past_its_deadline_is_told_so() {
    let (_dir, store, refresher) = mail_store(None);
    // A sequence no write has reached yet cannot be absorbed.
    let far = store.next_seq().unwrap() + 1000;
    assert!(!refresher.wait_absorbed("mail", far, Instant::now() + Duration::from_millis(300)));
}

#[test]
fn a_bulk_load_gets_rounds_before_the_interval_is_up() {
    // An hour between rounds: only the early trigger can start the second.
    let (dir, store, refresher) = mail_store(Some(Duration::from_secs(3600)));
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !done() {
            assert!(Instant::now() < deadline, "{what} did not happen within two minutes");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    until("the first round", &|| refresher.status().rounds >= 1);
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let other = open_store(dir.path()).unwrap();
    let rows = rowsearch_indexer::EARLY_ROUND_WRITES + 10;
    // One commit, so the early round sees all of it at once.
    let mut batch = rowsearch_indexer::store::Batch::new();
    for id in 0..rows {
        let key = rk
            .encode_json(&serde_json::json!({"user": "ann", "date": 990_000_000_000u64 + id, "id": id}))
            .unwrap();
        batch.put("mail", key, vec![PutCell::new("m", "subject", format!("bulk {id}"))]);
    }
    other.apply(&batch).unwrap();
    let written = other.next_seq().unwrap();
    until("an early round absorbing the load", &|| refresher.absorbed("mail").is_some_and(|n| n >= written));
    let index = TableIndex::open(&store, "mail").unwrap();
    assert_eq!(
        index.generation().unwrap().search_keys("bulk", None, SortBy::Newest, 0, 1).unwrap().total,
        rows
    );
}

/// The refresher's thread runs at the nice value asked (10 by default), so
/// that writers keep the cores when they compete with it.
#[cfg(target_os = "linux")]
#[test]
fn the_refresher_thread_runs_at_a_lower_priority() {
    let nice_of_refresher = || -> Option<i64> {
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let path = task.ok()?.path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim() == "rowsearch-refre" || comm.trim() == "rowsearch-refresh" {
                let stat = std::fs::read_to_string(path.join("stat")).ok()?;
                // Fields after the command's closing parenthesis: state is
                // field 3, nice field 19.
                let rest = &stat[stat.rfind(')')? + 2..];
                return rest.split(' ').nth(16)?.parse().ok();
            }
        }
        None
    };
    let (_dir, _store, refresher) = mail_store(Some(Duration::from_secs(3600)));
    // The thread lowers its priority first thing; a round it ran says it
    // has started (the first runs at once).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while refresher.status().rounds == 0 {
        assert!(std::time::Instant::now() < deadline, "no round ran");
        std::thread::yield_now();
    }
    assert_eq!(nice_of_refresher(), Some(10));
}

/// A store with the mail table and a `notes` table beside it.
fn mail_and_notes() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(dir.path()).unwrap());
    store.create_table("mail", &mail_schema()).unwrap();
    let notes =
        rowsearch_indexer::store::TableSchema::new([rowsearch_indexer::store::FamilySchema::new("n")]);
    store.create_table("notes", &notes).unwrap();
    (dir, store)
}

/// A snapshot search's wants: current, within a minute.
fn snapshot_want() -> rowsearch_indexer::Want {
    rowsearch_indexer::Want {
        consistency: rowsearch_indexer::Consistency::Snapshot,
        min_seq: None,
        deadline: Instant::now() + Duration::from_secs(60),
    }
}

#[test]
fn a_search_remembers_that_other_tables_writes_leave_its_index_current() {
    // No refresher: what the live index knows, the searches told it.
    let (_dir, store) = mail_and_notes();
    let live = LiveIndexes::new(Arc::clone(&store), rowsearch_indexer::DEFAULT_OVERLAY_MAX_ROWS);
    let mail = live.current("mail").unwrap();
    let want = snapshot_want();
    live.snapshot(&mail, &want).unwrap();
    // Writes to another table only (an ingest into it): the next search
    // finds nothing of its table in them and remembers where it read to,
    // so the one after reads only what came since, not all of them again.
    for i in 0..100u32 {
        store.put("notes", &i.to_be_bytes(), vec![PutCell::new("n", "q", "v")]).unwrap();
    }
    let end = store.next_seq().unwrap();
    let snapshot = live.snapshot(&mail, &want).unwrap();
    assert_eq!(snapshot.seq(), end - 1);
    assert_eq!(mail.absorbed(), Some(end), "the mail index reflects the store up to the feed's end");
    // A write to the table itself is still found at once.
    let key = mail_row(&store, "ann", 1, "quokka");
    let snapshot = live.snapshot(&mail, &want).unwrap();
    assert_eq!(snapshot.overlay_rows(), 1, "matched directly: {key:?}");
    assert_eq!(mail.absorbed(), Some(end), "and not marked absorbed past it");
}

#[test]
fn a_search_reads_no_feed_while_nothing_is_committed_and_sees_every_commit_after() {
    // No refresher: each snapshot is brought current by the search itself.
    let (dir, store) = mail_and_notes();
    mail_row(&store, "ann", 1, "quokka");
    let live = LiveIndexes::new(Arc::clone(&store), rowsearch_indexer::DEFAULT_OVERLAY_MAX_ROWS);
    let mail = live.current("mail").unwrap();
    let want = snapshot_want();
    let feed_reads = || rowsearch_indexer::io_counts::counts().1;
    let first = live.snapshot(&mail, &want).unwrap();
    assert_eq!(first.overlay_rows(), 0);
    // Nothing committed since: the feed's answer stands, unread.
    let before = feed_reads();
    for _ in 0..3 {
        assert_eq!(live.snapshot(&mail, &want).unwrap().seq(), first.seq());
    }
    assert_eq!(feed_reads(), before, "feed reads with nothing committed");
    // A commit through another handle (another process, to this one):
    // read at once, to another table or to this one.
    let other = open_store(dir.path()).unwrap();
    other.put("notes", b"n1", vec![PutCell::new("n", "q", "v")]).unwrap();
    let end = other.next_seq().unwrap();
    let snapshot = live.snapshot(&mail, &want).unwrap();
    assert_eq!((snapshot.seq(), snapshot.overlay_rows()), (end - 1, 0));
    assert_eq!(feed_reads(), before + 1);
    let key = mail_row(&other, "bob", 2, "numbat");
    let snapshot = live.snapshot(&mail, &want).unwrap();
    assert_eq!(snapshot.overlay_rows(), 1, "matched directly: {key:?}");
    assert_eq!(snapshot.seq(), other.next_seq().unwrap() - 1);
    // What a search checks first, asked before and after a table is
    // dropped through the other handle: gone at once.
    assert!(RowSource::table_state(&*store, "mail").unwrap().2);
    other.drop_table("mail").unwrap();
    let gone = RowSource::table_state(&*store, "mail").unwrap_err();
    assert!(matches!(gone.kind(), rowsearch_indexer::store::ErrorKind::UnknownTable { .. }), "{gone}");
}
