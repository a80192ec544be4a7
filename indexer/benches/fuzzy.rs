//! Fuzzy words (`field:word~N`) as rowsearch runs them (its parser's
//! query, whose terms are found by `term_walk.rs`) against tantivy's own
//! `FuzzyTermQuery` for the same word, distance and field, on the same
//! tantivy searcher of the current index generation, in one process.
//! Both count every match and take the top 10, as a search does; the two
//! totals must agree.
//!
//! `ROWSEARCH_BENCH_DATA=DIR` names a data directory holding the mail
//! table with its index (`bench/search_features.py` makes one of the full
//! corpus at /tmp/rowsearch-bench/features); without it the bench ingests
//! the repository's fixture into a temporary store and indexes it.
//! `ROWSEARCH_BENCH_RUNS` (default 300) timed runs of each side per query,
//! interleaved, after 20 untimed; p50 in ms and the ratio are printed.

use std::path::PathBuf;
use std::time::Instant;

use rowsearch_indexer::{IngestOptions, ReindexOptions, TableIndex, ingest, open_store, reindex};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{FuzzyTermQuery, Query};
use tantivy::{Index, Term};

/// (field, word, edits)
const QUERIES: &[(&str, &str, u8)] = &[
    ("body", "powr", 2),
    ("body", "informatoin", 2),
    ("body", "conferance", 2),
    ("body", "enrn", 1),
    ("subject", "meetign", 1),
];

fn main() {
    let runs: usize = std::env::var("ROWSEARCH_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let _fixture;
    let data = match std::env::var_os("ROWSEARCH_BENCH_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = tempfile::tempdir().unwrap();
            let store = open_store(dir.path()).unwrap();
            let mail = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
            ingest(&store, &[mail], &IngestOptions::default(), &mut |_| {}).unwrap();
            reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {}).unwrap();
            drop(store);
            let path = dir.path().to_owned();
            _fixture = dir;
            path
        }
    };
    let store = open_store(&data).unwrap();
    let table = TableIndex::open(&store, "mail").unwrap();
    let generation = table.generation().unwrap();
    let current = table.dir().current().unwrap().expect("the mail table has an index");
    let index = Index::open_in_dir(table.dir().generation_path(current)).unwrap();
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    let schema = index.schema();
    let collector = (Count, TopDocs::with_limit(10).order_by_score());

    println!("# {runs} runs of each, interleaved; p50 of count + top 10 on one tantivy searcher");
    println!("{:<28} {:>12} {:>12} {:>8} {:>8}", "query", "tantivy ms", "rowsearch ms", "ratio", "total");
    for &(field_name, word, edits) in QUERIES {
        let field = schema.get_field(field_name).unwrap();
        let text = format!("{field_name}:{word}~{edits}");
        let ours = generation.parse(&text, &[]).unwrap();
        let theirs: Box<dyn Query> =
            Box::new(FuzzyTermQuery::new(Term::from_field_text(field, word), edits, true));
        let (ours_total, _) = searcher.search(&*ours, &collector).unwrap();
        let (theirs_total, _) = searcher.search(&*theirs, &collector).unwrap();
        assert_eq!(ours_total, theirs_total, "{text}: the two find different documents");
        let mut times = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
        for i in 0..runs + 20 {
            for (side, query) in [&theirs, &ours].into_iter().enumerate() {
                let start = Instant::now();
                std::hint::black_box(searcher.search(&**query, &collector).unwrap());
                if i >= 20 {
                    times[side].push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let [theirs_ms, ours_ms] = times.map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        });
        println!(
            "{text:<28} {theirs_ms:>12.3} {ours_ms:>12.3} {:>7.2}x {ours_total:>8}",
            theirs_ms / ours_ms
        );
    }
}
