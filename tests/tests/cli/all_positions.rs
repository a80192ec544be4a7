//! An index built before `_all` went without positions (the format 9
//! sample's, written by 53d1bea): it serves as it is, its bare phrases
//! matched in `_all`'s own positions; `upgrade` rebuilds it smaller, and
//! every bare phrase (exact, sloppy, ending in a prefix) then finds the
//! same rows with the same scores from the fields' positions.

use rowsearch_tests::{TestDir, stderr, stdout};

use super::upgrade::{Sample, assert_answers_as_before, sample_store};

/// Bare phrases the sample mail holds, in one field or several.
const PHRASES: [&str; 8] = [
    r#""natural gas""#,
    r#""conference call""#,
    r#""gas price""#,
    r#""please let me know""#,
    r#""natural ga"*"#,
    r#""let me kn"*"#,
    r#""gas pipeline"~3"#,
    r#""meeting tomorrow"~2"#,
];

/// Per phrase: its total and each hit's key with its score.
fn answers(t: &TestDir) -> Vec<(u64, Vec<(String, f64)>)> {
    PHRASES
        .iter()
        .map(|phrase| {
            let out = t.run(&["search", phrase, "--json", "--limit", "200"]);
            assert!(out.status.success(), "{phrase}: {}", stderr(&out));
            let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            let hits = got["hits"].as_array().unwrap();
            let mut hits: Vec<(String, f64)> = hits
                .iter()
                .map(|h| (h["key"].as_str().unwrap().to_owned(), h["score"].as_f64().unwrap()))
                .collect();
            hits.sort_by(|a, b| a.0.cmp(&b.0));
            (got["total"].as_u64().unwrap(), hits)
        })
        .collect()
}

fn index_bytes(t: &TestDir) -> u64 {
    fn walk(path: &std::path::Path) -> u64 {
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() { walk(&e.path()) } else { e.metadata().unwrap().len() }
            })
            .sum()
    }
    walk(&t.data().join("index"))
}

#[test]
fn cli_an_index_whose_all_kept_positions_serves_and_upgrade_rebuilds_it_smaller_answering_the_same() {
    let t = sample_store(Sample::Format9);
    // The first command upgrades the store; the index stays as built.
    let before = answers(&t);
    let found = before.iter().filter(|(total, _)| *total > 0).count();
    assert!(found >= 6, "the phrases find rows: {before:?}");
    assert!(before.iter().any(|(total, _)| *total > 1), "{before:?}");
    assert_answers_as_before(&t, Sample::Format9);
    let bytes = index_bytes(&t);
    // `upgrade` has no store left to upgrade, and rebuilds the index.
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(!said.contains("upgraded"), "{said}");
    assert!(said.contains("rebuilt the search index of table mail"), "{said}");
    let rebuilt = index_bytes(&t);
    assert!(rebuilt < bytes, "the index is smaller: {bytes} -> {rebuilt}");
    let after = answers(&t);
    for ((phrase, (total, hits)), (want_total, want_hits)) in PHRASES.iter().zip(&after).zip(&before) {
        assert_eq!(total, want_total, "{phrase}");
        assert_eq!(hits.len(), want_hits.len(), "{phrase}");
        for ((key, score), (want_key, want_score)) in hits.iter().zip(want_hits) {
            assert_eq!(key, want_key, "{phrase}");
            assert!((score - want_score).abs() < 1e-4, "{phrase}: {key} scored {score} against {want_score}");
        }
    }
    assert_answers_as_before(&t, Sample::Format9);
    let out = t.run(&["upgrade"]);
    assert!(stdout(&out).contains("already rowsearch-store/10: nothing to do"), "{}", stdout(&out));
}
