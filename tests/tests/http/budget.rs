//! Bounded work (issue 36), through the real binary: queries that would
//! tie up a worker for seconds are refused before they run, with the limit
//! and the figure; open date ranges match everything instead of panicking;
//! `/health` reports the work pool's load.

use serde_json::Value;

use super::{enc, indexed_fixture, mail_server};

fn search(s: &rowsearch_tests::Server, q: &str) -> (u16, Value) {
    s.get_json(&format!("/tables/mail/search?q={}", enc(q)))
}

#[test]
fn http_queries_past_the_expansion_or_clause_budget_are_400_naming_both_figures() {
    let (_t, s) = mail_server();
    for (what, q, figure) in [
        ("800 phrase prefixes", vec!["\"the co\"*"; 800].join(" "), "3200 units"),
        ("1,638 fuzzy words", vec!["ab~2"; 1638].join(" "), "1638 units"),
        ("2,048 prefixes", vec!["th*"; 2048].join(" "), "2048 units"),
    ] {
        assert!(q.len() <= 8192, "{what}: within the query length limit");
        let (status, v) = search(&s, &q);
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query")), "{what}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(figure) && message.contains("at most 32"), "{what}: {message}");
    }
    let words: Vec<String> = (0..1100).map(|i| format!("w{i}")).collect();
    let (status, v) = search(&s, &words.join(" "));
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("1100 clauses; at most 1024"), "{v}");
    // Within the budget: answered.
    let (status, v) = search(&s, &vec!["ga*"; 32].join(" OR "));
    assert_eq!(status, 200, "{v}");
    assert!(v["total"].as_u64().unwrap() > 0);

    // The operator sets the budgets.
    let t = indexed_fixture();
    let s = t.serve(&["serve", "--max-expansions", "2", "--max-clauses", "3"]);
    let (status, v) = search(&s, "ga* po*");
    assert_eq!(status, 200, "{v}");
    let (status, v) = search(&s, "ga* po* en*");
    assert!(status == 400 && v["error"]["message"].as_str().unwrap().contains("at most 2"), "{v}");
    let (status, v) = search(&s, "gas power enron meeting");
    assert!(status == 400 && v["error"]["message"].as_str().unwrap().contains("at most 3"), "{v}");
}

#[test]
fn http_open_date_ranges_match_everything_and_health_reports_the_work_pool() {
    let (_t, s) = mail_server();
    let (_, all) = search(&s, "*");
    let total = all["total"].as_u64().unwrap();
    assert!(total > 300, "{all}");
    for q in ["date:[* TO *]", "date:{* TO *}", "date:.."] {
        let (status, v) = search(&s, q);
        assert_eq!(status, 200, "{q}: {v}");
        assert_eq!(v["total"].as_u64(), Some(total), "{q}");
    }
    let (status, health) = s.get_json("/health");
    assert_eq!(status, 200);
    assert!(health["work"]["threads"].as_u64().unwrap() >= 1, "{health}");
    assert_eq!(health["work"]["queued"].as_u64(), Some(0), "{health}");
}
