//! The in-process `Searcher` on the queries of `bench/search_load.py`:
//! p50 and p99 latency of whole searches (index, one multi-get of the hits'
//! rows, JSON-ready results), single thread.
//!
//! `ROWSEARCH_BENCH_STORE=DIR` names an ingested and indexed store; without
//! it the bench uses the repository's fixture. `ROWSEARCH_BENCH_ITERATIONS`
//! (default 2000) searches per query. `ROWSEARCH_BENCH_PAUSE_US=N` sleeps N
//! microseconds before each timed search, as a server thread does between
//! the requests of one client: on a virtual machine a search right after
//! its thread slept runs slower than back to back. With
//! `ROWSEARCH_BENCH_PAUSE_BUSY=1` the pause is a busy wait instead.

use std::path::Path;
use std::time::Instant;

use rowsearch::indexer::SortBy;
use rowsearch::store::Column;
use rowsearch::{Rowsearch, SearchRequest};

/// (name, query, user, sort): the same four as the HTTP load test.
pub const QUERIES: [(&str, &str, Option<&str>, SortBy); 4] = [
    ("term", "energy", None, SortBy::Relevance),
    ("and", "gas price", None, SortBy::Relevance),
    ("phrase", "\"natural gas\"", None, SortBy::Relevance),
    ("mailbox_newest", "meeting", Some("kaminski-v"), SortBy::Newest),
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let iterations: usize =
        std::env::var("ROWSEARCH_BENCH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let pause = std::time::Duration::from_micros(
        std::env::var("ROWSEARCH_BENCH_PAUSE_US").ok().and_then(|v| v.parse().ok()).unwrap_or(0),
    );
    let _tmp;
    let rs = match std::env::var_os("ROWSEARCH_BENCH_STORE") {
        Some(dir) => Rowsearch::open(dir).unwrap(),
        None => {
            _tmp = tempfile::tempdir().unwrap();
            let rs = Rowsearch::open(_tmp.path()).unwrap();
            rs.ingest(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir")])
                .unwrap();
            rs.reindex("mail").unwrap();
            rs
        }
    };
    // ROWSEARCH_BENCH_COLUMNS: comma-separated projection (empty: whole rows).
    let columns: Vec<Column> = std::env::var("ROWSEARCH_BENCH_COLUMNS")
        .unwrap_or_default()
        .split(',')
        .filter(|c| !c.is_empty())
        .map(|c| Column::parse(c.as_bytes()))
        .collect();
    let schema = rs.store().schema("mail").unwrap();
    let busy = std::env::var_os("ROWSEARCH_BENCH_PAUSE_BUSY").is_some();
    if !pause.is_zero() {
        let how = if busy { "busy wait" } else { "sleep" };
        println!("each timed search after a {} us {how}", pause.as_micros());
    }
    for (name, query, user, sort) in QUERIES {
        let request = SearchRequest {
            query: query.into(),
            partition: user.map(|u| u.as_bytes().to_vec()),
            sort,
            limit: Some(10),
            columns: columns.clone(),
            ..SearchRequest::default()
        };
        // Warm up.
        for _ in 0..50 {
            rs.searcher().search("mail", &request).unwrap();
        }
        let mut ms = Vec::with_capacity(iterations);
        let mut total = 0;
        for _ in 0..iterations {
            if busy {
                let started = Instant::now();
                while started.elapsed() < pause {
                    std::hint::spin_loop();
                }
            } else if !pause.is_zero() {
                std::thread::sleep(pause);
            }
            let t = Instant::now();
            let found = rs.searcher().search("mail", &request).unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            total = found.total;
        }
        ms.sort_by(f64::total_cmp);
        // The same plus the response JSON, as the HTTP layer builds it.
        let mut with_json = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            let found = rs.searcher().search("mail", &request).unwrap();
            let body = rowsearch::json::SearchBody::new(
                &found,
                schema.row_key.as_ref(),
                false,
                Default::default(),
                Default::default(),
            );
            let text = serde_json::to_vec(&body).expect("serialize");
            std::hint::black_box(text);
            with_json.push(t.elapsed().as_secs_f64() * 1e3);
        }
        with_json.sort_by(f64::total_cmp);
        println!(
            "in-process {name}: p50 {:.3} ms, p99 {:.3} ms, {:.0} searches/s (1 thread), {total} matches; \
             with the response JSON p50 {:.3} ms",
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            1e3 * iterations as f64 / ms.iter().sum::<f64>(),
            percentile(&with_json, 0.5)
        );
    }
}
