//! The search engine as a Rust program embeds it: `Rowsearch::open` on a
//! store and `searcher().search(..)` in process, no HTTP. Driven by
//! `bench/engine_vs_fts5.py`, which times SQLite FTS5 in process on the
//! same queries.
//!
//! `ROWSEARCH_BENCH_STORE=DIR`: an ingested and indexed store (required).
//! `ROWSEARCH_BENCH_QUERIES=FILE`: JSON lines `{"name", "query", "user"}`
//! (`user` given: that mailbox's newest, else by relevance).
//! `ROWSEARCH_BENCH_ITERATIONS` (default 500) timed searches per query,
//! after 50 untimed. Each search asks the top 10 with the subject and the
//! sender and counts every match (the totals are exact). Prints one JSON
//! line per query: name, total, p50 and p99 in microseconds, and the p50
//! of each step (`snapshot_us`, `query_us`, `rows_us`: the search's own
//! `SearchSteps`).
//!
//! `ROWSEARCH_BENCH_DISPLAY=1`: documents with every display field (what
//! an HTTP search without `fields=` returns) instead of subject and sender.
//! `ROWSEARCH_BENCH_ROWS=N`: also times the store's read of each query's
//! ten rows alone (whole rows, family `m`, the two asked columns), N times
//! each (plain text lines), and opening a read transaction.

use std::io::BufRead;
use std::time::Instant;

use rowsearch::indexer::SortBy;
use rowsearch::store::Column;
use rowsearch::{Rowsearch, SearchRequest};

/// The allocator the `rowsearch` binary runs the engine with (`src/main.rs`),
/// as a program embedding the library would choose it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (Some(store), Some(queries)) =
        (std::env::var_os("ROWSEARCH_BENCH_STORE"), std::env::var_os("ROWSEARCH_BENCH_QUERIES"))
    else {
        eprintln!(
            "engine bench: set ROWSEARCH_BENCH_STORE and ROWSEARCH_BENCH_QUERIES (bench/engine_vs_fts5.py does)"
        );
        return;
    };
    let iterations: usize =
        std::env::var("ROWSEARCH_BENCH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let rs = Rowsearch::open(store).expect("open the store");
    let searcher = rs.searcher();
    let file = std::fs::File::open(queries).expect("the queries file");
    for line in std::io::BufReader::new(file).lines() {
        let line = line.expect("read a query");
        let q: serde_json::Value = serde_json::from_str(&line).expect("a JSON query line");
        let user = q["user"].as_str();
        let request = SearchRequest {
            query: q["query"].as_str().expect("query").into(),
            partition: user.map(|u| u.as_bytes().to_vec()),
            sort: if user.is_some() { SortBy::Newest } else { SortBy::Relevance },
            limit: Some(10),
            columns: vec![Column::parse(b"m:subject"), Column::parse(b"m:from")],
            fields: if std::env::var_os("ROWSEARCH_BENCH_DISPLAY").is_some() {
                None
            } else {
                Some(vec!["subject".into(), "from".into()])
            },
            ..SearchRequest::default()
        };
        let mut total = 0;
        for _ in 0..50 {
            total = searcher.search("mail", &request).expect("search").total;
        }
        let mut us = Vec::with_capacity(iterations);
        let mut steps = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..iterations {
            let t = Instant::now();
            let found = searcher.search("mail", &request).expect("search");
            us.push(t.elapsed().as_secs_f64() * 1e6);
            steps[0].push(found.steps.snapshot_ms * 1e3);
            steps[1].push(found.steps.query_ms * 1e3);
            steps[2].push(found.steps.rows_ms * 1e3);
            std::hint::black_box(found);
        }
        if std::env::var_os("ROWSEARCH_BENCH_ROWS").is_some() {
            use rowsearch::store::{ReadOptions, RowSource};
            let found = searcher.search("mail", &request).expect("search");
            let keys: Vec<&[u8]> = found.hits.iter().map(|h| h.row.key.as_slice()).collect();
            let reads = [
                ("all", ReadOptions::default()),
                ("m", ReadOptions { columns: vec![Column::parse(b"m")], ..ReadOptions::default() }),
                ("two", ReadOptions { columns: request.columns.clone(), ..ReadOptions::default() }),
            ];
            let n: u32 =
                std::env::var("ROWSEARCH_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
            for (name, read) in &reads {
                let t = Instant::now();
                for _ in 0..n {
                    std::hint::black_box(RowSource::rows(&**rs.store(), "mail", &keys, read).expect("rows"));
                }
                println!("rows {name}: {:.1} us per 10", t.elapsed().as_secs_f64() * 1e6 / f64::from(n));
                let t = Instant::now();
                for _ in 0..1000 {
                    let txn = rs.store().begin_read().expect("txn");
                    std::hint::black_box(txn);
                }
                println!("begin_read: {:.2} us", t.elapsed().as_secs_f64() * 1e3);
            }
        }
        for s in &mut steps {
            s.sort_by(f64::total_cmp);
        }
        us.sort_by(f64::total_cmp);
        let at = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
        println!(
            "{}",
            serde_json::json!({"name": q["name"], "total": total, "p50_us": at(0.5), "p99_us": at(0.99),
                "snapshot_us": steps[0][iterations / 2], "query_us": steps[1][iterations / 2],
                "rows_us": steps[2][iterations / 2]})
        );
    }
}
