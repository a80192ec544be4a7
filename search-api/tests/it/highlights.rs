//! Highlights mark what a query matched, not only the words typed: every
//! word a snippet marks is one the query looks for (a prefix's
//! completions, the terms within a fuzzy word's edits, `typos=auto`'s
//! variants, a phrase prefix's words), judged here by the test's own rules,
//! and every hit has a marked word.

use crate::common;

use std::sync::Arc;

use rowsearch::{SearchRequest, Searcher};

/// The words between `<em>` and `</em>` in `snippet`, lowercased.
fn marked(snippet: &str) -> Vec<String> {
    snippet
        .split("<em>")
        .skip(1)
        .filter_map(|part| part.split_once("</em>"))
        .map(|(word, _)| word.to_lowercase())
        .collect()
}

#[test]
fn highlights_mark_what_prefixes_fuzzy_words_and_typos_matched() {
    let (_dir, store) = common::fixture_store();
    let searcher = Searcher::new(Arc::clone(&store));
    type Rule = Box<dyn Fn(&str) -> bool>;
    let cases: Vec<(&str, bool, Rule)> = vec![
        ("enro*", false, Box::new(|w| w.starts_with("enro"))),
        ("subject:pri*", false, Box::new(|w| w.starts_with("pri"))),
        ("meetign~1", false, Box::new(|w| common::edits(w, "meetign") <= 1)),
        ("confrence~2", false, Box::new(|w| common::edits(w, "confrence") <= 2)),
        // typos=auto: one typo in a 7-letter word, the first letter kept.
        ("meetign", true, Box::new(|w| w.starts_with('m') && common::edits(w, "meetign") <= 1)),
        ("\"natural ga\"*", false, Box::new(|w| w == "natural" || w.starts_with("ga"))),
    ];
    for (query, typos, rule) in cases {
        let request = SearchRequest {
            query: query.into(),
            limit: Some(50),
            highlight: true,
            typos,
            ..SearchRequest::default()
        };
        let found = searcher.search("mail", &request).unwrap();
        assert!(!found.hits.is_empty(), "{query} finds something");
        for hit in &found.hits {
            let words: Vec<String> = hit.highlights.values().flat_map(|s| marked(s)).collect();
            assert!(!words.is_empty(), "{query}: nothing marked in {:?}", hit.highlights);
            for word in words {
                assert!(rule(&word), "{query} marked {word:?}");
            }
        }
    }
}
