//! Fuzzing the filter language: random bytes, random token soups and cut or
//! spliced valid filters never make the parser (or a scan with what it
//! accepts) panic. Runs for `ROWSEARCH_FUZZ_SECONDS` (default 3) in one
//! test; for the 10-minute run: `ROWSEARCH_FUZZ_SECONDS=600 cargo test
//! --release -p rowsearch-store --test filter_fuzz -- --nocapture`.

use crate::common;

use std::cell::Cell;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rowsearch_store::{FamilySchema, Filter, PutCell, Scan, Store, TableSchema};

const TOKENS: &[&str] = &[
    "RowFilter",
    "FamilyFilter",
    "QualifierFilter",
    "ValueFilter",
    "PrefixFilter",
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "RandomRowFilter",
    "SingleColumnValueFilter",
    "SingleColumnValueExcludeFilter",
    "ColumnCountGetFilter",
    "ColumnPaginationFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "ColumnRangeFilter",
    "TimestampsFilter",
    "PageFilter",
    "InclusiveStopFilter",
    "DependentColumnFilter",
    "(",
    ")",
    ",",
    "'",
    "''",
    "'a'",
    "'binary:a'",
    "'binaryprefix:'",
    "'regexstring:(a|b)*'",
    "'regexstring:['",
    "'substring:A'",
    "'nope:x'",
    "AND",
    "OR",
    "SKIP",
    "WHILE",
    "and",
    "<",
    "<=",
    "=",
    "!=",
    ">=",
    ">",
    "!",
    "0",
    "1",
    "-1",
    "0.5",
    "99999999999999999999999",
    "1.2.3",
    "true",
    "false",
    " ",
    "\t",
    "\u{e9}",
    "\u{0}",
];

const VALID: &[&str] = &[
    "PrefixFilter('row') AND (QualifierFilter(>=, 'binary:b') OR KeyOnlyFilter())",
    "SKIP ValueFilter(!=, 'binary:x') AND WHILE RowFilter(<, 'binary:z')",
    "SingleColumnValueFilter('a', 'c', =, 'regexstring:^v.$', true, false)",
    "ColumnRangeFilter('a', true, 'z', false) OR TimestampsFilter(1, 2, 3)",
    "DependentColumnFilter('a', 'c', true, =, 'substring:V') AND PageFilter(2)",
    "ColumnPaginationFilter(2, 1) AND ColumnCountGetFilter(3) AND RandomRowFilter(0.5)",
];

fn input() -> impl Strategy<Value = Vec<u8>> {
    let soup =
        prop::collection::vec(prop::sample::select(TOKENS), 0..24).prop_map(|t| t.concat().into_bytes());
    let spliced = (
        prop::sample::select(VALID),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        soup.clone(),
    )
        .prop_map(|(valid, cut, at, insert)| {
            let mut bytes = valid.as_bytes().to_vec();
            bytes.truncate(cut.index(bytes.len() + 1));
            let at = at.index(bytes.len() + 1);
            bytes.splice(at..at, insert);
            bytes
        });
    // Random filters written out, then cut or spliced.
    let printed = (common::filter_gen::filter(true), any::<prop::sample::Index>(), soup.clone(), 0u8..3)
        .prop_map(|(f, at, insert, how)| {
            let mut bytes = f.to_language();
            let at = at.index(bytes.len() + 1);
            match how {
                0 => {}
                1 => bytes.truncate(at),
                _ => {
                    bytes.splice(at..at, insert);
                }
            }
            bytes
        });
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..64),
        2 => soup,
        2 => spliced,
        3 => printed,
    ]
}

#[test]
fn parser_and_scans_never_panic() {
    let seconds: u64 = std::env::var("ROWSEARCH_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("a").max_versions(3)])).unwrap();
    for (row, q, v, ts) in [("a", "c", "v1", 1), ("a", "c", "v2", 2), ("b", "d", "x", 1), ("row", "", "", 3)]
    {
        store.put("t", row.as_bytes(), vec![PutCell::new("a", q, v).at(ts)]).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    // A fresh runner per batch (a runner counts its cases across runs), each
    // seeded from the printed base seed so a failure can be replayed.
    let base: u64 =
        std::env::var("ROWSEARCH_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_secs())
        });
    eprintln!("fuzz: base seed {base} (ROWSEARCH_FUZZ_SEED replays)");
    let mut batch = 0u64;
    let (inputs, parsed) = (Cell::new(0u64), Cell::new(0u64));
    while Instant::now() < deadline {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&base.to_le_bytes());
        seed[8..16].copy_from_slice(&batch.to_le_bytes());
        batch += 1;
        let config = Config { cases: 500, failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        runner
            .run(&input(), |bytes| {
                if let Ok(filter) = Filter::parse(&bytes) {
                    for reverse in [false, true] {
                        store.scan("t", &Scan::new().reverse(reverse).filter(filter.clone())).unwrap();
                    }
                    parsed.set(parsed.get() + 1);
                }
                inputs.set(inputs.get() + 1);
                Ok(())
            })
            .unwrap();
    }
    eprintln!("fuzz: {} inputs in {seconds} s, {} parsed and scanned, no panic", inputs.get(), parsed.get());
    assert!(parsed.get() > 0, "the generator must also produce valid filters");
}
