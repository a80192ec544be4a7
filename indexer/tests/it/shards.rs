//! A table's index split into shards by mailbox (`ShardSource`), each
//! shard scored with the sums of every shard's BM25 statistics
//! (`ShardStats`), against one index of the whole table: for random
//! queries over the fixture's words, the union of the shards' best hits
//! sorted by (score, key) is the one index's page, scores equal to 1e-6,
//! totals and facet counts adding up; with rows written after the builds
//! (each index's overlay) as well as without.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rowsearch_indexer::store::{RowSource, SearchSchema, Store};
use rowsearch_indexer::{
    Consistency, Home, IngestOptions, LiveIndex, LiveIndexes, ShardSource, ShardStats, Snapshot, SortBy,
    Want, ingest, open_store,
};

const SHARDS: u32 = 3;

struct Fixture {
    _dir: tempfile::TempDir,
    one: (LiveIndexes, Arc<LiveIndex>),
    shards: Vec<(LiveIndexes, Arc<LiveIndex>)>,
    words: Vec<String>,
}

fn want() -> Want {
    Want {
        consistency: Consistency::Snapshot,
        min_seq: None,
        deadline: Instant::now() + Duration::from_secs(120),
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail")
}

/// The fixture mail, one index of it and one per shard (each built by its
/// first snapshot), then a few more messages written (found through
/// each index's overlay).
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<Store> = Arc::new(open_store(dir.path().join("store")).unwrap());
        ingest(&*store, &[fixtures().join("maildir")], &IngestOptions::default(), &mut |_| {}).unwrap();
        let open = |live: LiveIndexes| {
            let table = live.current("mail").unwrap();
            live.snapshot(&table, &want()).unwrap();
            (live, table)
        };
        // Each index in a directory of its own, read through a shard
        // source (the one index: the one shard of one), which leaves the
        // store's change feed to the others.
        let index = |k: u32, of: u32| {
            let home = Home::new(store.clone(), dir.path().join(format!("shard{k}of{of}")));
            let source = Arc::new(ShardSource::new(store.clone() as Arc<dyn RowSource>, "mail", k, of));
            open(LiveIndexes::with_source(home, source, rowsearch_indexer::DEFAULT_OVERLAY_MAX_ROWS))
        };
        let one = index(0, 1);
        let shards: Vec<_> = (0..SHARDS).map(|k| index(k, SHARDS)).collect();
        // Rows written after the builds, in two mailboxes.
        let more = dir.path().join("more");
        for (user, n) in [("cash-m", 3), ("zoe-z", 2)] {
            let boxdir = more.join(user).join("inbox");
            std::fs::create_dir_all(&boxdir).unwrap();
            for i in 0..n {
                std::fs::write(
                    boxdir.join(format!("{i}.")),
                    format!(
                        "Message-ID: <more-{user}-{i}@x>\nDate: Tue, 1 May 2001 10:0{i}:00 -0700\nFrom: a@enron.com\n\
                         To: b@enron.com\nSubject: gas price meeting {i}\n\nnatural gas price for the meeting, power deal {i}\n"
                    ),
                )
                .unwrap();
            }
        }
        ingest(&*store, &[more], &IngestOptions::default(), &mut |_| {}).unwrap();
        let mut words: Vec<String> = Vec::new();
        store
            .begin_read()
            .unwrap()
            .for_each_keyword_cell("mail", None, &mut |c| {
                if c.field == "body" && c.term.len() > 2 && c.term.chars().all(|ch| ch.is_ascii_lowercase()) {
                    words.push(c.term.to_owned());
                }
                Ok(())
            })
            .unwrap();
        words.sort();
        words.dedup();
        words.truncate(400);
        Fixture { _dir: dir, one, shards, words }
    })
}

fn snapshot((live, table): &(LiveIndexes, Arc<LiveIndex>)) -> Snapshot {
    live.snapshot(table, &want()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn shards_scored_with_summed_statistics_answer_as_one_index(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        or in any::<bool>(),
        by_date in any::<bool>(),
        common in prop::sample::select(vec!["gas", "price", "meeting", "enron", "power"]),
    ) {
        let f = fixture();
        let mut words: Vec<&str> = picks.iter().map(|i| f.words[i.index(f.words.len())].as_str()).collect();
        words.push(common);
        let query = words.join(if or { " OR " } else { " " });
        let sort = if by_date { SortBy::Newest } else { SortBy::Relevance };
        let options = rowsearch_indexer::query::ParseOptions::default();
        let facets_of = |s: &Snapshot| {
            rowsearch_indexer::facets::resolve(&s.generation().schema, Some("user"), true, &["user".to_owned()]).unwrap()
        };
        let one = snapshot(&f.one);
        let parsed = one.parse(&query, &[], &options).unwrap();
        let want = one.search(&parsed, &facets_of(&one), &[], sort, 0, 20, None).unwrap();

        let shards: Vec<Snapshot> = f.shards.iter().map(snapshot).collect();
        let parsed: Vec<_> = shards.iter().map(|s| s.parse(&query, &[], &options).unwrap()).collect();
        let mut sums = ShardStats::default();
        for (s, p) in shards.iter().zip(&parsed) {
            sums.add(&s.bm25_stats(p, &[]).unwrap());
        }
        let mut hits = Vec::new();
        let mut total = 0;
        let mut users: HashMap<String, u64> = HashMap::new();
        for (s, p) in shards.iter().zip(&parsed) {
            let found = s.search_with_stats(p, &facets_of(s), &[], sort, 0, 20, None, &sums).unwrap();
            total += found.total;
            for (user, n) in &found.facets[0] {
                // A mailbox is in one shard only.
                prop_assert!(users.insert(user.clone(), *n).is_none(), "{user} in two shards");
            }
            for (key, value) in found.keys {
                hits.push((value, key));
            }
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        hits.truncate(20);
        prop_assert_eq!(total, want.total, "{}", query);
        prop_assert_eq!(&users, &want.facets[0], "{}", query);
        let keys: Vec<&Vec<u8>> = hits.iter().map(|(_, k)| k).collect();
        let want_keys: Vec<&Vec<u8>> = want.keys.iter().map(|(k, _)| k).collect();
        prop_assert_eq!(keys, want_keys, "{}", query);
        for ((got, _), (_, value)) in hits.iter().zip(&want.keys) {
            prop_assert!((got - value).abs() < 1e-6, "{query}: score {got} against {value}");
        }
    }
}

/// Every mailbox's rows are in exactly one shard's index, the one its
/// name hashes to.
#[test]
fn each_mailbox_is_in_its_own_shard_only() {
    let f = fixture();
    let options = rowsearch_indexer::query::ParseOptions::default();
    let one = snapshot(&f.one);
    let all = one.parse("*", &[], &options).unwrap();
    let facets = rowsearch_indexer::facets::resolve(
        &one.generation().schema,
        Some("user"),
        true,
        &["user".to_owned()],
    )
    .unwrap();
    let counted = one.search(&all, &facets, &[], SortBy::Newest, 0, 1, None).unwrap();
    assert!(counted.facets[0].len() >= 5, "{:?}", counted.facets);
    for (k, shard) in f.shards.iter().enumerate() {
        let s = snapshot(shard);
        let found = s
            .search(&s.parse("*", &[], &options).unwrap(), &facets, &[], SortBy::Newest, 0, 1, None)
            .unwrap();
        for (user, n) in &found.facets[0] {
            assert_eq!(SearchSchema::shard_of(user.as_bytes(), SHARDS), k as u32, "{user} in shard {k}");
            assert_eq!(counted.facets[0].get(user), Some(n), "{user}'s documents");
        }
    }
}
