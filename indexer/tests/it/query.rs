//! The query language against a brute force over the fixture mail: every
//! row's terms (per field) from its keyword cells, prefixes and fuzzy
//! terms matched here independently (the edit distance computed in this
//! file), phrases ending in a prefix against the cells' positions, every
//! date form against the rows' dates, and errors with the byte where they
//! are.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use rowsearch_indexer::store::{Scan, Store};
use rowsearch_indexer::{IngestOptions, ReindexOptions, SortBy, TableIndex, ingest, open_store, reindex};

/// Per row: its key, date (ms) and (field, term, positions).
type Rows = Vec<(Vec<u8>, u64, Vec<(String, String, Vec<u32>)>)>;

fn fixture_store() -> (tempfile::TempDir, Store, Rows) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let mail = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
    ingest(&store, &[mail], &IngestOptions::default(), &mut |_| {}).unwrap();
    reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {}).unwrap();
    let keys = store.scan("mail", &Scan { keys_only: true, ..Scan::new() }).unwrap().rows;
    let rtxn = store.begin_read().unwrap();
    let rows = keys
        .into_iter()
        .map(|row| {
            let cells = rtxn.row_keyword_cells("mail", &row.key).unwrap();
            let date = cells.first().map_or(0, |c| c.date_ms);
            (row.key, date, cells.into_iter().map(|c| (c.field, c.term, c.positions)).collect())
        })
        .collect();
    drop(rtxn);
    (dir, store, rows)
}

fn found(index: &TableIndex, query: &str) -> BTreeSet<Vec<u8>> {
    let generation = index.generation().unwrap();
    let hits = generation.search_keys(query, None, SortBy::Newest, 0, 10_000).unwrap();
    assert_eq!(hits.total as usize, hits.keys.len(), "{query}");
    hits.keys.into_iter().map(|(k, _)| k).collect()
}

fn brute(rows: &Rows, field: Option<&str>, matches: impl Fn(&str) -> bool) -> BTreeSet<Vec<u8>> {
    rows.iter()
        .filter(|(_, _, terms)| {
            terms.iter().any(|(f, t, _)| field.is_none_or(|want| want == f) && matches(t))
        })
        .map(|(k, _, _)| k.clone())
        .collect()
}

/// Optimal string alignment distance (insert, delete, substitute, swap of
/// two adjacent characters), over characters.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[test]
fn prefixes_fuzzy_terms_and_dates_equal_a_brute_force() {
    let (_dir, store, rows) = fixture_store();
    let index = TableIndex::open(&store, "mail").unwrap();
    assert!(rows.len() > 250, "{} rows", rows.len());

    for (field, prefix) in
        [(None, "enr"), (None, "gas"), (None, "mee"), (Some("subject"), "pri"), (Some("from"), "ka")]
    {
        let query = match field {
            Some(f) => format!("{f}:{prefix}*"),
            None => format!("{prefix}*"),
        };
        let want = brute(&rows, field, |t| t.starts_with(prefix));
        assert!(!want.is_empty(), "{query}");
        assert_eq!(found(&index, &query), want, "{query}");
    }

    for (field, word, n) in [
        (None, "enrn", 1),
        (None, "meetign", 1),
        (None, "powr", 2),
        (Some("body"), "gsa", 1),
        (None, "xqzv", 2),
    ] {
        let query = match field {
            Some(f) => format!("{f}:{word}~{n}"),
            None => format!("{word}~{n}"),
        };
        let want = brute(&rows, field, |t| edits(t, word) <= n);
        assert_eq!(found(&index, &query), want, "{query}");
    }
    // A fuzzy word ANDed with an exact one, and NOT.
    let want: BTreeSet<_> = brute(&rows, None, |t| edits(t, "enrn") <= 1)
        .intersection(&brute(&rows, None, |t| t == "gas"))
        .cloned()
        .collect();
    assert_eq!(found(&index, "enrn~1 gas"), want);

    // Every date form of January 2001 gives the same rows as the dates.
    let (from, to) = (978_307_200_000u64, 980_985_600_000u64);
    let want: BTreeSet<_> =
        rows.iter().filter(|(_, d, _)| (from..to).contains(d)).map(|(k, _, _)| k.clone()).collect();
    assert!(!want.is_empty());
    for query in [
        "date:2001-01",
        "date:[2001-01-01 TO 2001-01-31]",
        "date:[2001-01-01 TO 2001-02-01}",
        "date:2001-01-01..2001-01-31",
        "date:>=2001-01-01 date:<2001-02-01",
        "date:[2001-01-01T00:00:00Z TO 2001-02-01T00:00:00Z}",
        "date:{2000-12-31 TO 2001-01-31]",
        "date:>2000-12 date:<=2001-01",
    ] {
        assert_eq!(found(&index, query), want, "{query}");
    }
    let year: BTreeSet<_> = rows
        .iter()
        .filter(|(_, d, _)| (978_307_200_000..1_009_843_200_000).contains(d))
        .map(|(k, _, _)| k.clone())
        .collect();
    assert_eq!(found(&index, "date:2001"), year);
    // Open at both ends: every row (these panicked inside tantivy once).
    let every: BTreeSet<_> = rows.iter().map(|(k, _, _)| k.clone()).collect();
    for query in ["date:[* TO *]", "date:{* TO *}", "date:..", "gas OR date:.."] {
        assert_eq!(found(&index, query), every, "{query}");
    }
}

#[test]
fn queries_that_do_not_parse_say_where() {
    let (_dir, store, _rows) = fixture_store();
    let index = TableIndex::open(&store, "mail").unwrap();
    let generation = index.generation().unwrap();
    for (query, position, says) in [
        ("gas)", 3, "unexpected"),
        ("(gas power", 0, "not closed"),
        ("subject:(gas)", 8, "not supported"),
        ("gas nofield:x", 4, "no field \"nofield\""),
        ("\"natural gas", 0, "quote"),
        ("e*", 0, "at least 2"),
        ("gas~3", 3, "at most 2 edits"),
        ("gas~x", 3, "needs a number"),
        ("date:2001-13", 5, "not a date"),
        ("date:[2001 2002]", 5, "TO"),
        ("gas - power", 4, "negation"),
        ("gas OR", 6, "missing"),
        ("", 0, "empty"),
    ] {
        match generation.parse(query, &[]) {
            Err(rowsearch_indexer::Error::Query { position: Some(at), reason, .. }) => {
                assert_eq!(at, position, "{query}: {reason}");
                assert!(reason.contains(says), "{query}: {reason}");
            }
            other => panic!("{query}: {other:?}"),
        }
    }
}

/// `typos=auto`: words of 5+ characters match terms one typo away, 9+ two,
/// shorter ones only exactly, a typo on the first character counting as
/// two (a brute force over the rows' terms); exact matches rank above the
/// variants.
#[test]
fn typos_auto_follows_meilisearchs_rules_and_ranks_exact_matches_first() {
    let (_dir, store, rows) = fixture_store();
    let index = TableIndex::open(&store, "mail").unwrap();
    let generation = index.generation().unwrap();
    let options = rowsearch_indexer::query::ParseOptions { typos: true, ..Default::default() };
    let search = |q: &str, sort| {
        let parsed = generation.parse_with(q, &[], &options).unwrap();
        generation.search_parsed(q, &*parsed, sort, 0, 10_000).unwrap()
    };
    // Misspelt at the start too: `neeting` and `eeting` are one edit from
    // `meeting` but a first-character typo (two); `nformation` is one
    // such typo from `information` and `xnformatino` two plus.
    let words = ["enrn", "meetign", "enron", "conferance", "informatoin", "gas"];
    let mut first_typo_mattered = 0;
    for word in words.into_iter().chain(["neeting", "eeting", "nformation", "xnformatino", "onfirmation"]) {
        let n = match word.chars().count() {
            c if c >= 9 => 2,
            c if c >= 5 => 1,
            _ => 0,
        };
        let first = |t: &str| t.chars().next() == word.chars().next();
        let want = brute(&rows, None, |t| {
            let d = edits(t, word);
            // A changed first character is one of the d edits and counts two.
            if first(t) { d <= n } else { d < n }
        });
        let got: BTreeSet<Vec<u8>> = search(word, SortBy::Newest).keys.into_iter().map(|(k, _)| k).collect();
        assert_eq!(got, want, "{word} ({n} typos)");
        first_typo_mattered += usize::from(brute(&rows, None, |t| edits(t, word) <= n) != want);
    }
    assert!(first_typo_mattered >= 3, "only {first_typo_mattered} words tell the first-character rule apart");
    // Ranking: every row holding the exact word comes before every row
    // holding only a variant.
    let exact = brute(&rows, None, |t| t == "meeting");
    let hits = search("meeting", SortBy::Relevance).keys;
    assert!(hits.len() > exact.len(), "variants matched too");
    let first: BTreeSet<Vec<u8>> = hits.iter().take(exact.len()).map(|(k, _)| k.clone()).collect();
    assert_eq!(first, exact, "exact matches first");
}

/// Rows with `words` in order in one field (`field`, or any) followed by a
/// term starting with `prefix`, from the keyword cells' positions.
fn brute_phrase_prefix(rows: &Rows, field: Option<&str>, words: &[&str], prefix: &str) -> BTreeSet<Vec<u8>> {
    let mut out = BTreeSet::new();
    for (key, _, cells) in rows {
        // Per field: position -> terms there.
        let mut at: BTreeMap<&str, BTreeMap<u32, Vec<&str>>> = BTreeMap::new();
        for (f, t, positions) in cells {
            for &p in positions {
                at.entry(f.as_str()).or_default().entry(p).or_default().push(t.as_str());
            }
        }
        let holds = |f: &str| {
            let Some(positions) = at.get(f) else { return false };
            positions.keys().any(|&start| {
                let has = |i: usize, ok: &dyn Fn(&str) -> bool| {
                    positions.get(&(start + i as u32)).is_some_and(|ts| ts.iter().any(|t| ok(t)))
                };
                words.iter().enumerate().all(|(i, w)| has(i, &|t| t == *w))
                    && has(words.len(), &|t| t.starts_with(prefix))
            })
        };
        if at.keys().any(|f| field.is_none_or(|want| want == *f) && holds(f)) {
            out.insert(key.clone());
        }
    }
    out
}

/// `"a b"*` and `field:"a b c"*` against the brute force: phrases taken
/// from the rows (so most match), the last word cut to a prefix, or
/// swapped for another row's word's prefix (so some do not); every
/// completion of the prefix counts, however many there are.
#[test]
fn phrase_prefixes_equal_a_brute_force_over_positions() {
    let (_dir, store, rows) = fixture_store();
    let index = TableIndex::open(&store, "mail").unwrap();
    let plain = |t: &str| t.len() >= 2 && t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let mut runner = TestRunner::new(Config { cases: 96, ..Config::default() });
    let cases = (
        any::<Index>(),
        any::<Index>(),
        1usize..=2,
        2usize..=5,
        any::<bool>(),
        any::<bool>(),
        any::<Index>(),
    );
    let checked = std::cell::Cell::new(0);
    runner
        .run(&cases, |(row, start, fixed, cut, scoped, swap, other)| {
            let (_, _, cells) = &rows[row.index(rows.len())];
            let field = cells[start.index(cells.len())].0.clone();
            let mut line: BTreeMap<u32, &str> = BTreeMap::new();
            for (_, t, positions) in cells.iter().filter(|(f, _, _)| *f == field) {
                for &p in positions {
                    line.insert(p, t);
                }
            }
            // Runs of fixed + 1 consecutive plain words.
            let starts: Vec<u32> = line
                .keys()
                .copied()
                .filter(|&p| (0..=fixed as u32).all(|i| line.get(&(p + i)).is_some_and(|t| plain(t))))
                .collect();
            if starts.is_empty() {
                return Ok(());
            }
            let p = starts[start.index(starts.len())];
            let words: Vec<&str> = (0..fixed as u32).map(|i| line[&(p + i)]).collect();
            let last = if swap {
                let (_, _, cells) = &rows[other.index(rows.len())];
                let t = &cells[other.index(cells.len())].1;
                if !plain(t) {
                    return Ok(());
                }
                t.as_str()
            } else {
                line[&(p + fixed as u32)]
            };
            let prefix = &last[..cut.min(last.len())];
            let phrase = format!("\"{} {prefix}\"*", words.join(" "));
            let query = if scoped { format!("{field}:{phrase}") } else { phrase };
            let want = brute_phrase_prefix(&rows, scoped.then_some(field.as_str()), &words, prefix);
            prop_assert_eq!(found(&index, &query), want, "{}", query);
            checked.set(checked.get() + 1);
            Ok::<(), TestCaseError>(())
        })
        .unwrap();
    assert!(checked.get() > 48, "only {} phrases checked", checked.get());
}
