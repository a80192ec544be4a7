//! Keyword lookup and single-row put/delete latency on an ingested mail
//! store: what issue 21 compares between the keyword layouts (format 3,
//! one LMDB entry per cell, against format 4, blocks). It uses only API
//! both builds have, so `bench/keyword_vs_before.sh` runs this same file
//! against the previous build too.
//!
//! Usage: `cargo run --release -p rowsearch-indexer --example keyword_latency -- DIR [ROUNDS]`
//! on a store holding the mail table (`rowsearch ingest`). The store is
//! left as it was: every row put is deleted again.
//!
//! - lookups: the newest 10 keys of a mailbox for 1, 2 and 3 terms, each
//!   query `ROUNDS` x 200 times, one read transaction each; p50 and p99.
//! - put / delete: 200 rows copied from existing mail under a new id (a
//!   new row with ~170 keyword cells), one durable commit each, then each
//!   deleted (its keyword cells removed); p50 and p99 per operation.
//!
//! `ROWSEARCH_BENCH_ONLY=lookups` runs the lookups alone (for profiling).

use std::time::Instant;

use rowsearch_indexer::open_store;
use rowsearch_indexer::store::{Delete, KeywordQuery, PutCell, Scan};

const QUERIES: [(&str, &[&str]); 6] = [
    ("kaminski-v", &["meeting"]),
    ("dasovich-j", &["california"]),
    ("kaminski-v", &["energy", "price"]),
    ("dasovich-j", &["power", "gas"]),
    ("kaminski-v", &["research", "group", "model"]),
    ("dasovich-j", &["state", "power", "commission"]),
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut us: Vec<f64>) {
    us.sort_by(f64::total_cmp);
    println!(
        "{name:<40} p50 {:>8.1} us  p99 {:>8.1} us  (n={})",
        percentile(&us, 0.5),
        percentile(&us, 0.99),
        us.len()
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: keyword_latency DIR [ROUNDS]");
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let store = open_store(&dir).expect("open store");

    let mut lookups: Vec<Vec<f64>> = vec![Vec::new(); QUERIES.len()];
    for _ in 0..rounds {
        for (q, (user, terms)) in QUERIES.iter().enumerate() {
            let query = KeywordQuery {
                partition: user.as_bytes().to_vec(),
                terms: terms.iter().map(|t| (*t).to_owned()).collect(),
                limit: Some(10),
                cursor: None,
            };
            for _ in 0..200 {
                let started = Instant::now();
                let rtxn = store.begin_read().expect("read");
                let page = rtxn.keyword_lookup("mail", &query).expect("lookup");
                std::hint::black_box(&page);
                lookups[q].push(started.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    for ((user, terms), us) in QUERIES.iter().zip(lookups) {
        report(&format!("lookup {user} {}", terms.join(" ")), us);
    }

    if std::env::var("ROWSEARCH_BENCH_ONLY").is_ok_and(|v| v == "lookups") {
        return;
    }
    // 200 rows spread over the table, copied under a new id.
    let rk = store.schema("mail").expect("schema").row_key.expect("typed key");
    let rtxn = store.begin_read().expect("read");
    let rows: Vec<_> = rtxn.scan("mail", &Scan::new()).expect("scan").step_by(300).take(200).collect();
    drop(rtxn);
    let mut copies = Vec::new();
    for row in rows {
        let row = row.expect("row");
        let mut fields = rk.decode_json(&row.key).expect("key");
        let id = fields["id"].as_u64().unwrap_or(0);
        fields["id"] = serde_json::json!(id ^ (1 << 62));
        let key = rk.encode_json(&fields).expect("key");
        let cells: Vec<PutCell> = row
            .cells
            .iter()
            .map(|c| PutCell::new(&*c.family, c.qualifier.clone(), c.value.clone()).at(c.timestamp))
            .collect();
        copies.push((key, cells));
    }
    let mut puts = Vec::new();
    for (key, cells) in &copies {
        let started = Instant::now();
        store.put("mail", key, cells.clone()).expect("put");
        puts.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let mut deletes = Vec::new();
    for (key, _) in &copies {
        let started = Instant::now();
        store.delete("mail", key, Delete::Row { up_to: None }).expect("delete");
        deletes.push(started.elapsed().as_secs_f64() * 1e6);
    }
    report("put of a new mail row", puts);
    report("delete of that row", deletes);
}
