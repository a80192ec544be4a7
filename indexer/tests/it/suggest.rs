//! Completions of short prefixes from the cache (kept per reader state and
//! per segment) equal a full read of every segment's dictionary, on an
//! index of several segments, each holding more completions than the cache
//! keeps, across commits that add segments and raise rare words past
//! frequent ones.

use proptest::prelude::*;
use rowsearch_indexer::store::{PutCell, Store};
use rowsearch_indexer::{
    CACHED_TERMS, ReindexMode, ReindexOptions, TableIndex, mail_schema, open_store, reindex,
};

/// Words from a small alphabet behind `c`: thousands of distinct `c` terms.
fn word(n: u32) -> String {
    let letters = b"abdefgho";
    let mut w = String::from("c");
    let mut n = n;
    for _ in 0..4 {
        w.push(letters[(n % 8) as usize] as char);
        n /= 8;
    }
    w
}

fn put(store: &Store, id: u64, words: &[u32]) {
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    let key =
        rk.encode_json(&serde_json::json!({"user": "u", "date": 990_000_000_000u64 + id, "id": id})).unwrap();
    let subject: Vec<String> = words.iter().map(|&n| word(n)).collect();
    store.put("mail", &key, vec![PutCell::new("m", "subject", subject.join(" "))]).unwrap();
}

/// How many segments the index's current generation has.
fn segments(index: &TableIndex) -> usize {
    let current = index.dir().current().unwrap().unwrap();
    let tantivy = tantivy::Index::open_in_dir(index.dir().generation_path(current)).unwrap();
    tantivy.searchable_segment_ids().unwrap().len()
}

/// The cache's answer and the full read's agree for every prefix and size
/// asked, computed and then cached.
fn check(index: &TableIndex, what: &str) -> Result<(), TestCaseError> {
    let generation = index.generation().unwrap();
    let field = generation.schema.fields[generation.schema.field_index("subject").unwrap()];
    let segments = segments(index);
    for prefix in ["c", "ca", "cab", "cz"] {
        let all = generation.completions(field, prefix, None).unwrap();
        for want in [1, 5, 20] {
            for round in 0..2 {
                let top = generation.top_completions(field, prefix, None, want).unwrap();
                prop_assert_eq!(
                    &top[..],
                    &all[..want.min(all.len())],
                    "{}: {} segments, prefix {}, want {}, round {}",
                    what,
                    segments,
                    prefix,
                    want,
                    round
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn cached_completions_equal_a_full_read_across_commits(
        seed_rows in proptest::collection::vec(proptest::collection::vec(0u32..4096, 12..24), 120..160),
        batches in proptest::collection::vec(
            (proptest::collection::vec(proptest::collection::vec(0u32..4096, 1..6), 1..40), 0u32..4096),
            1..4,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path()).unwrap();
        store.create_table("mail", &mail_schema()).unwrap();
        // Half the rows in a full build, half in an incremental one: two
        // segments, each with more `c` terms than the cache keeps of a
        // segment.
        let half = seed_rows.len() / 2;
        for (id, words) in seed_rows.iter().enumerate().take(half) {
            put(&store, id as u64, words);
        }
        let full = ReindexOptions { mode: ReindexMode::Full, ..ReindexOptions::default() };
        reindex(&store, "mail", &full, &mut |_| {}).unwrap();
        for (id, words) in seed_rows.iter().enumerate().skip(half) {
            put(&store, id as u64, words);
        }
        let incremental = ReindexOptions { mode: ReindexMode::Incremental, threads: 1, ..ReindexOptions::default() };
        reindex(&store, "mail", &incremental, &mut |_| {}).unwrap();
        let index = TableIndex::open(&store, "mail").unwrap();
        let generation = index.generation().unwrap();
        let field = generation.schema.fields[generation.schema.field_index("subject").unwrap()];
        prop_assume!(generation.completions(field, "c", None).unwrap().len() > 2 * CACHED_TERMS);
        prop_assert_eq!(segments(&index), 2);
        check(&index, "full build")?;
        let mut id = seed_rows.len() as u64;
        for (round, (rows, lifted)) in batches.iter().enumerate() {
            for words in rows {
                put(&store, id, words);
                id += 1;
            }
            // One word (likely rare in the build) in many new rows, so a
            // term outside every segment's kept ones ranks first.
            for _ in 0..40 {
                put(&store, id, &[*lifted]);
                id += 1;
            }
            let incremental = ReindexOptions { mode: ReindexMode::Incremental, ..ReindexOptions::default() };
            reindex(&store, "mail", &incremental, &mut |_| {}).unwrap();
            check(&index, &format!("commit {round}"))?;
        }
    }
}

/// A term each of two segments leaves out of the completions it keeps
/// (ties at the cut go by term, and it is the last term) can still outrank
/// every kept one over both: the cache must know it may and read in full.
#[test]
fn a_term_no_segment_keeps_can_still_rank_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    store.create_table("mail", &mail_schema()).unwrap();
    let last = 4095; // `coooo`, the last word
    let kept = 7; // a word in three rows of the first segment
    let mut id = 0;
    let mut rows = |words: &[u32]| {
        put(&store, id, words);
        id += 1;
    };
    // Each segment: more words than the cache keeps, each in two rows.
    let first: Vec<u32> = (100..100 + 2 * CACHED_TERMS as u32).collect();
    let second: Vec<u32> = (2000..2000 + 2 * CACHED_TERMS as u32).collect();
    for _ in 0..2 {
        for chunk in first.chunks(10) {
            rows(chunk);
        }
        rows(&[last]);
    }
    for _ in 0..3 {
        rows(&[kept]);
    }
    let full = ReindexOptions { mode: ReindexMode::Full, threads: 1, ..ReindexOptions::default() };
    reindex(&store, "mail", &full, &mut |_| {}).unwrap();
    for _ in 0..2 {
        for chunk in second.chunks(10) {
            rows(chunk);
        }
        rows(&[last]);
    }
    let incremental =
        ReindexOptions { mode: ReindexMode::Incremental, threads: 1, ..ReindexOptions::default() };
    reindex(&store, "mail", &incremental, &mut |_| {}).unwrap();
    let index = TableIndex::open(&store, "mail").unwrap();
    assert_eq!(segments(&index), 2);
    let generation = index.generation().unwrap();
    let field = generation.schema.fields[generation.schema.field_index("subject").unwrap()];
    let want = [(word(last), 4), (word(kept), 3)];
    assert_eq!(generation.completions(field, "c", None).unwrap()[..2], want[..]);
    for round in 0..2 {
        for n in 1..=2 {
            assert_eq!(generation.top_completions(field, "c", None, n).unwrap(), want[..n], "round {round}");
        }
    }
}
