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
//! line per query: name, total, p50 and p99 in microseconds.

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
            fields: Some(vec!["subject".into(), "from".into()]),
            ..SearchRequest::default()
        };
        let mut total = 0;
        for _ in 0..50 {
            total = searcher.search("mail", &request).expect("search").total;
        }
        let mut us = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            let found = searcher.search("mail", &request).expect("search");
            us.push(t.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(found);
        }
        us.sort_by(f64::total_cmp);
        let at = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
        println!(
            "{}",
            serde_json::json!({"name": q["name"], "total": total, "p50_us": at(0.5), "p99_us": at(0.99)})
        );
    }
}
