//! Crash tests (kill -9).
//!
//! Store: a child process commits numbered batches and prints `acked N`
//! after each commit returns; the parent kills it with SIGKILL at a random
//! moment, reopens the store and checks that every acknowledged batch is
//! wholly there and that no batch is partly there. Repeats
//! `ROWSEARCH_CRASH_ITERATIONS` times (default 20).
//!
//! Reindex: a child runs full reindexes of the mail fixture one after
//! another; the parent kills it at a random moment within about two
//! builds, then checks that the pointer names a whole generation that
//! answers searches as before and verifies clean. After
//! `ROWSEARCH_CRASH_REINDEX_ITERATIONS` kills (default 10) one more
//! reindex must succeed and leave one generation.
//!
//! Keyword rows: as the store test, into a searchable table whose writes
//! leave at most two pending keyword runs (so kills land in run appends
//! and in merges alike), each batch also rewriting a row of the batch
//! before; after each kill every batch's keyword lookup answers exactly
//! its rows, the cell count and the row numbers hold.
//!
//! `ROWSEARCH_CRASH_SEED` replays a run.
//!
//! The child processes are this test binary itself, running the ignored
//! test [`crash_child`] alone with `ROWSEARCH_CRASH_ROLE` set (one
//! integration-test binary for the crate, no harness of its own).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rowsearch::store::{
    Batch, FamilySchema, KeywordQuery, PutCell, ReadOptions, Scan, SearchField, SearchSchema, Store,
    TableSchema,
};
use rowsearch_tests::Rng;

/// This test binary, to run `role` alone: the ignored test
/// [`crash_child`], with its output not captured (each line it prints is a
/// fact the parent reads; libtest's own lines are skipped by their form).
fn child(role: &str, dir: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("current_exe"));
    command
        .args(["crash::crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("ROWSEARCH_CRASH_ROLE", role)
        .env("ROWSEARCH_CRASH_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}

/// The number a child's line reports after `what` ("acked ", "switched
/// "): libtest may start that line with its own "test crash::crash_child
/// ... ".
fn fact(line: &str, what: &str) -> Option<u64> {
    line.rfind(what).and_then(|at| line[at + what.len()..].trim().parse().ok())
}

/// The child processes' entry: the writer or the reindexer, until killed.
/// Run only by the two crash tests (ignored otherwise: it writes forever).
#[test]
#[ignore = "a child of the crash tests: runs until killed"]
fn crash_child() {
    let dir = std::env::var("ROWSEARCH_CRASH_DIR").expect("ROWSEARCH_CRASH_DIR: run by the crash tests only");
    match std::env::var("ROWSEARCH_CRASH_ROLE").as_deref() {
        Ok("writer") => writer(Path::new(&dir)),
        Ok("reindexer") => reindexer(Path::new(&dir)),
        Ok("keywords") => keyword_writer(Path::new(&dir)),
        role => panic!("ROWSEARCH_CRASH_ROLE {role:?}: run by the crash tests only"),
    }
}

/// The run's seed: `ROWSEARCH_CRASH_SEED`, or the clock's.
fn seed() -> u64 {
    std::env::var("ROWSEARCH_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }) | 1
}

const TABLE: &str = "crash";

/// Rows in batch `n`: varies so batches span one or many pages.
fn batch_rows(n: u64) -> u64 {
    1 + (n * 7919) % 97
}

fn batch_prefix(n: u64) -> String {
    format!("b{n:010}/")
}

fn writer(dir: &Path) {
    let store = Store::builder().map_size_bytes(256 * 1024).open(dir).expect("writer: open");
    let schema = TableSchema::new([FamilySchema::new("f"), FamilySchema::new("g").max_versions(2)]);
    store.create_table(TABLE, &schema).expect("writer: create table");
    let mut n = last_batch(&store).map_or(1, |n| n + 1);
    let stdout = std::io::stdout();
    loop {
        let mut batch = Batch::new();
        for i in 0..batch_rows(n) {
            let value = format!("{n}:{i}:{}", "x".repeat((i % 13) as usize * 40));
            batch.put(
                TABLE,
                format!("{}{i:05}", batch_prefix(n)),
                vec![PutCell::new("f", "v", value.clone()), PutCell::new("g", "v", value)],
            );
        }
        batch.put(TABLE, "last", vec![PutCell::new("f", "n", n.to_be_bytes().to_vec())]);
        store.apply(&batch).expect("writer: apply");
        let mut out = stdout.lock();
        writeln!(out, "acked {n}").and_then(|()| out.flush()).expect("writer: stdout");
        n += 1;
    }
}

fn last_batch(store: &Store) -> Option<u64> {
    last_batch_of(store, TABLE)
}

fn last_batch_of(store: &Store, table: &str) -> Option<u64> {
    let row = store.get(table, b"last", &ReadOptions::default()).ok()??;
    Some(u64::from_be_bytes(row.cells[0].value.as_slice().try_into().ok()?))
}

/// Checks every batch in the store; returns the highest complete batch.
fn check(dir: &Path, acked: u64) -> Result<u64, String> {
    let store = Store::open(dir).map_err(|e| format!("reopen failed: {e}"))?;
    let last = last_batch(&store).unwrap_or(0);
    if last < acked {
        return Err(format!("acked batch {acked} but the store's last batch is {last}"));
    }
    for n in 1..=last + 1 {
        let page = store
            .scan(TABLE, &Scan::new().prefix(batch_prefix(n)))
            .map_err(|e| format!("scan of batch {n}: {e}"))?;
        let want = if n <= last { batch_rows(n) } else { 0 };
        if page.rows.len() as u64 != want {
            return Err(format!(
                "batch {n}: {} rows present, want {want} (acked up to {acked})",
                page.rows.len()
            ));
        }
        for (i, row) in page.rows.iter().enumerate() {
            let value = format!("{n}:{i}:{}", "x".repeat(i % 13 * 40));
            if row.cells.len() != 2 || row.cells.iter().any(|c| c.value != value.as_bytes()) {
                return Err(format!("batch {n} row {i}: wrong cells {:?}", row.cells));
            }
        }
    }
    Ok(last)
}

const KEYWORD_TABLE: &str = "crash_keywords";

/// The store of the keyword crash test: the indexer's analyzer, at most
/// two pending keyword runs.
fn keyword_store(dir: &Path) -> Result<Store, String> {
    rowsearch::indexer::store_builder().keyword_pending_runs(2).open(dir).map_err(|e| format!("open: {e}"))
}

/// A row's subject; a changed one moves every word (so each cell's
/// positions change: replaced where it is stored).
fn subject(n: u64, i: u64, changed: bool) -> String {
    format!("{}batch{n} row{i} every", if changed { "changed " } else { "" })
}

fn keyword_writer(dir: &Path) {
    let store = keyword_store(dir).expect("keyword writer: open");
    let search = SearchSchema::new([SearchField::text("subject", "m:subject")]);
    let schema = TableSchema::new([FamilySchema::new("m")]).search(search);
    store.create_table(KEYWORD_TABLE, &schema).expect("keyword writer: create table");
    let mut n = last_batch_of(&store, KEYWORD_TABLE).map_or(1, |n| n + 1);
    let stdout = std::io::stdout();
    loop {
        let mut batch = Batch::new();
        for i in 0..batch_rows(n) {
            let cells = vec![PutCell::new("m", "subject", subject(n, i, false))];
            batch.put(KEYWORD_TABLE, format!("{}{i:05}", batch_prefix(n)), cells);
        }
        if n > 1 {
            // A stored row's cells replaced: deletes where they are.
            let cells = vec![PutCell::new("m", "subject", subject(n - 1, 0, true))];
            batch.put(KEYWORD_TABLE, format!("{}{:05}", batch_prefix(n - 1), 0), cells);
        }
        batch.put(KEYWORD_TABLE, "last", vec![PutCell::new("m", "n", n.to_be_bytes().to_vec())]);
        store.apply(&batch).expect("keyword writer: apply");
        let mut out = stdout.lock();
        writeln!(out, "acked {n}").and_then(|()| out.flush()).expect("keyword writer: stdout");
        n += 1;
    }
}

/// Checks the keyword rows of every batch; returns the highest batch.
fn check_keywords(dir: &Path, acked: u64) -> Result<u64, String> {
    let store = keyword_store(dir)?;
    let last = last_batch_of(&store, KEYWORD_TABLE).unwrap_or(0);
    if last < acked {
        return Err(format!("acked batch {acked} but the store's last batch is {last}"));
    }
    let count = |term: &str| -> Result<u64, String> {
        let query = KeywordQuery { terms: vec![term.to_owned()], ..KeywordQuery::default() };
        let page = store.keyword_lookup(KEYWORD_TABLE, &query).map_err(|e| format!("lookup {term}: {e}"))?;
        Ok(page.hits.len() as u64)
    };
    let mut rows = 0;
    for n in 1..=last + 1 {
        let want = if n <= last { batch_rows(n) } else { 0 };
        rows += want;
        let got = count(&format!("batch{n}"))?;
        if got != want {
            return Err(format!("batch{n}: {got} keyword hits, want {want} (acked up to {acked})"));
        }
    }
    let changed = last.saturating_sub(1);
    for (term, want) in [("every", rows), ("changed", changed)] {
        let got = count(term)?;
        if got != want {
            return Err(format!("{term}: {got} keyword hits, want {want} (last batch {last})"));
        }
    }
    let read = store.begin_read().map_err(|e| e.to_string())?;
    let cells = read.keyword_cell_count(KEYWORD_TABLE).map_err(|e| e.to_string())?;
    if cells != 3 * rows + changed {
        return Err(format!("keyword cell count {cells}, want {}", 3 * rows + changed));
    }
    let problems = read.check_keyword_numbers(KEYWORD_TABLE).map_err(|e| e.to_string())?;
    if !problems.is_empty() {
        return Err(format!("row numbers: {problems:?}"));
    }
    Ok(last)
}

fn reindexer(dir: &Path) {
    let store = rowsearch::indexer::open_store(dir).expect("reindexer: open");
    let options = rowsearch::indexer::ReindexOptions {
        mode: rowsearch::indexer::ReindexMode::Full,
        ..Default::default()
    };
    let stdout = std::io::stdout();
    loop {
        let report =
            rowsearch::indexer::reindex(&store, "mail", &options, &mut |_| {}).expect("reindexer: reindex");
        let mut out = stdout.lock();
        writeln!(out, "switched {}", report.generation)
            .and_then(|()| out.flush())
            .expect("reindexer: stdout");
    }
}

/// What the serving generation answers: documents and hits of a fixed query.
fn answers(index: &rowsearch::indexer::TableIndex) -> Result<(u64, u64, u64), String> {
    let generation = index.generation().map_err(|e| format!("no serving generation: {e}"))?;
    let hits = generation
        .search_keys("enron energy", None, rowsearch::indexer::SortBy::Relevance, 0, 10)
        .map_err(|e| format!("search failed: {e}"))?;
    Ok((generation.number, generation.reader.searcher().num_docs(), hits.total))
}

fn reindex_crashes(rng: &mut Rng, iterations: u32) -> u32 {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let dir = tempfile::tempdir().expect("tempdir");
    let (docs, hits, build_time) = {
        let store = rowsearch::indexer::open_store(dir.path()).expect("open");
        rowsearch::indexer::ingest(&store, &[fixture], &Default::default(), &mut |_| {}).expect("ingest");
        let started = std::time::Instant::now();
        rowsearch::indexer::reindex(&store, "mail", &Default::default(), &mut |_| {}).expect("first reindex");
        let index = rowsearch::indexer::TableIndex::open(&store, "mail").expect("open index");
        let (_, docs, hits) = answers(&index).expect("first generation answers");
        (docs, hits, started.elapsed())
    };
    // One reader for the whole run, in this process: it must follow the
    // generations the other process switches to, without reopening.
    let reader = {
        let store = rowsearch::indexer::open_store(dir.path()).expect("open");
        rowsearch::indexer::TableIndex::open(&store, "mail").expect("open index")
    };
    let mut failed = 0;
    for iteration in 1..=iterations {
        let mut child = child("reindexer", dir.path()).spawn().expect("spawn reindexer");
        let delay = Duration::from_micros(rng.next_u64() % (2 * build_time.as_micros() as u64 + 1));
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL reindexer");
        let switched = child
            .stdout
            .take()
            .map(|out| {
                BufReader::new(out)
                    .lines()
                    .map_while(Result::ok)
                    .filter(|l| fact(l, "switched ").is_some())
                    .count()
            })
            .unwrap_or(0);
        let _ = child.wait();
        let store = rowsearch::indexer::open_store(dir.path()).expect("reopen");
        let serving = reader.dir().current().map_err(|e| e.to_string());
        let outcome = answers(&reader).and_then(|(generation, d, h)| {
            if (d, h) != (docs, hits) {
                return Err(format!(
                    "generation {generation} answers {d} docs, {h} hits; want {docs}, {hits}"
                ));
            }
            if serving != Ok(Some(generation)) {
                return Err(format!(
                    "the reader is on generation {generation}, the pointer names {serving:?}"
                ));
            }
            let report =
                rowsearch::indexer::verify(&store, "mail", &Default::default()).map_err(|e| e.to_string())?;
            if !report.is_clean() {
                return Err(report.summary());
            }
            Ok(generation)
        });
        match outcome {
            Ok(generation) => println!(
                "reindex iteration {iteration}: killed after {delay:?} ({switched} switches): generation {generation} serves: ok"
            ),
            Err(e) => {
                failed += 1;
                println!("reindex iteration {iteration}: FAILED after {delay:?}: {e}");
            }
        }
    }
    let store = rowsearch::indexer::open_store(dir.path()).expect("reopen");
    let dirs = rowsearch::indexer::IndexDir::new(store.path(), "mail");
    match rowsearch::indexer::reindex(&store, "mail", &Default::default(), &mut |_| {}) {
        Ok(report) if dirs.generations().map(|g| g == vec![report.generation]).unwrap_or(false) => {
            println!("reindex after the kills: generation {}, leftovers removed: ok", report.generation);
        }
        Ok(report) => {
            failed += 1;
            println!("reindex after the kills: FAILED: generations {:?} remain", dirs.generations());
            let _ = report;
        }
        Err(e) => {
            failed += 1;
            println!("reindex after the kills: FAILED: {e}");
        }
    }
    failed
}

/// kill -9 of a process committing batches loses no acknowledged batch and
/// leaves no batch in part.
#[test]
fn kill_9_during_commits_loses_no_acknowledged_batch_and_leaves_none_in_part() {
    kill_writes("writer", check);
}

#[test]
fn kill_9_during_keyword_runs_and_merges_leaves_every_lookup_exact() {
    kill_writes("keywords", check_keywords);
}

/// Kills the child `role` at random moments of its commits; `check` reads
/// the store after each kill.
fn kill_writes(role: &str, check: fn(&Path, u64) -> Result<u64, String>) {
    let iterations: u32 =
        std::env::var("ROWSEARCH_CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let seed = seed();
    println!("crash test: {iterations} iterations, ROWSEARCH_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut passed, mut failed) = (0, 0);
    let mut total_acked = 0u64;
    for iteration in 1..=iterations {
        let mut child = child(role, dir.path()).spawn().expect("spawn writer");
        let stdout = child.stdout.take().expect("child stdout");
        let mut acks =
            BufReader::new(stdout).lines().map_while(Result::ok).filter_map(|line| fact(&line, "acked "));
        let wait_for = 1 + rng.next_u64() % 40;
        let mut acked = 0;
        for _ in 0..wait_for {
            match acks.next() {
                Some(n) => acked = n,
                None => break,
            }
        }
        // Kill at a random moment inside the next commits, not only between them.
        std::thread::sleep(Duration::from_micros(rng.next_u64() % 3000));
        child.kill().expect("SIGKILL writer");
        // Acks printed before the kill landed count too.
        if let Some(n) = acks.last() {
            acked = n;
        }
        let _ = child.wait();
        total_acked = total_acked.max(acked);
        match check(dir.path(), total_acked) {
            Ok(last) => {
                passed += 1;
                println!("iteration {iteration}: acked {total_acked}, store holds batches 1..={last}: ok");
            }
            Err(e) => {
                failed += 1;
                println!("iteration {iteration}: FAILED: {e}");
            }
        }
    }
    println!("crash: {passed} passed, {failed} failed");
    assert!(total_acked > 0, "no writer ever acknowledged a batch");
    assert_eq!(
        failed, 0,
        "{failed} of {iterations} kills lost or split a batch (ROWSEARCH_CRASH_SEED={seed})"
    );
}

/// kill -9 of a reindex at any moment leaves the pointer on a whole
/// generation that answers as before, and the next reindex cleans up.
#[test]
fn kill_9_during_reindex_leaves_a_whole_generation_serving() {
    let iterations: u32 =
        std::env::var("ROWSEARCH_CRASH_REINDEX_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let seed = seed();
    println!("reindex crash test: {iterations} kills, ROWSEARCH_CRASH_SEED={seed}");
    let failed = reindex_crashes(&mut Rng(seed), iterations);
    println!("reindex crash: {} passed, {failed} failed", iterations + 1 - failed);
    assert_eq!(failed, 0, "{failed} reindex kills left the index broken (ROWSEARCH_CRASH_SEED={seed})");
}
