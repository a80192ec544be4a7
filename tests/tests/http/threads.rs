//! Conversations over HTTP: `collapse=thread` against a brute force over
//! the plain hits (one hit per thread, the best of its matches in every
//! sort, its matches and messages counted, `total` the threads, pages by
//! cursor covering each thread once), the thread view as a tree, and both
//! kept to a key's mailboxes. On `fixtures/threads` (a mailing list's reply
//! trees) and the Enron fixture (threads gathered by subject).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::keys::{MASTER, call, code, make_key};
use rowsearch_tests::stderr;

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name).to_str().unwrap().to_owned()
}

/// Every plain hit of `q` (limit 1000), newest first.
fn plain(s: &rowsearch_tests::Server, q: &str, extra: &str) -> Vec<Value> {
    let (status, v) =
        call(s, "GET", &format!("/tables/mail/search?q={q}&limit=1000&{extra}"), Some(MASTER), None);
    assert_eq!(status, 200, "{v}");
    v["hits"].as_array().unwrap().clone()
}

/// Every collapsed hit of `q`, page by page (`limit` each) through cursors.
fn collapsed(s: &rowsearch_tests::Server, q: &str, sort: &str, limit: usize) -> (u64, Vec<Value>) {
    let mut hits = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/tables/mail/search?q={q}&collapse=thread&sort={sort}&limit={limit}{cursor}");
        let (status, v) = call(s, "GET", &path, Some(MASTER), None);
        assert_eq!(status, 200, "{path}: {v}");
        hits.extend(v["hits"].as_array().unwrap().iter().cloned());
        match v["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return (v["total"].as_u64().unwrap(), hits),
        }
    }
}

#[test]
fn http_collapse_by_thread_equals_grouping_the_plain_hits_and_threads_read_as_trees() {
    let t = super::dir();
    for dir in [fixture("threads/maildir"), fixture("mail/maildir")] {
        let out = t.run(&["ingest", &dir]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let s = t.serve(&["serve", "--master-key", MASTER]);
    for q in ["topic", "re", "gas", "message", "enron"] {
        let all = plain(&s, q, "sort=newest");
        assert!(!all.is_empty(), "{q}");
        let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for hit in &all {
            let thread = hit["document"]["thread"].as_str().expect("every message has a thread");
            groups.entry(thread.to_owned()).or_default().push(hit);
        }
        for sort in ["newest", "oldest", "relevance"] {
            for limit in [3, 1000] {
                let (total, hits) = collapsed(&s, q, sort, limit);
                assert_eq!(total as usize, groups.len(), "{q} {sort}: total counts threads");
                let ids: Vec<&str> = hits.iter().map(|h| h["thread"]["id"].as_str().unwrap()).collect();
                let distinct: BTreeSet<&str> = ids.iter().copied().collect();
                assert_eq!(ids.len(), distinct.len(), "{q} {sort} {limit}: each thread once");
                assert_eq!(distinct.len(), groups.len(), "{q} {sort} {limit}: every thread");
                for hit in &hits {
                    let id = hit["thread"]["id"].as_str().unwrap();
                    let members = &groups[id];
                    assert_eq!(hit["document"]["thread"], id);
                    assert_eq!(
                        hit["thread"]["matched"].as_u64().unwrap() as usize,
                        members.len(),
                        "{q} {id}"
                    );
                    assert!(hit["thread"]["messages"].as_u64().unwrap() as usize >= members.len());
                    assert!(!hit["thread"]["participants"].as_array().unwrap().is_empty(), "{hit}");
                    // The best match of its thread in this order.
                    let date = |h: &Value| h["document"]["date"].as_str().unwrap_or("").to_owned();
                    match sort {
                        "newest" => assert_eq!(date(hit), members.iter().map(|m| date(m)).max().unwrap()),
                        "oldest" => assert_eq!(date(hit), members.iter().map(|m| date(m)).min().unwrap()),
                        _ => {}
                    }
                }
                // Threads in the asked order.
                if sort != "relevance" {
                    let dates: Vec<String> = hits
                        .iter()
                        .map(|h| h["document"]["date"].as_str().unwrap_or("").to_owned())
                        .collect();
                    let mut sorted = dates.clone();
                    sorted.sort();
                    if sort == "newest" {
                        sorted.reverse();
                    }
                    assert_eq!(dates, sorted, "{q} {sort}");
                }
            }
        }
    }

    // A thread of the list as a tree: every message once, each reply under
    // the message its In-Reply-To or References name.
    let (_, hits) = collapsed(&s, "topic", "newest", 1000);
    let biggest = hits.iter().max_by_key(|h| h["thread"]["messages"].as_u64().unwrap()).unwrap();
    let id = biggest["thread"]["id"].as_str().unwrap();
    let (status, view) = call(
        &s,
        "GET",
        &format!("/tables/mail/threads/{id}?fields=*&columns=m:in_reply_to&columns=m:references"),
        Some(MASTER),
        None,
    );
    assert_eq!(status, 200, "{view}");
    let messages = view["messages"].as_array().unwrap();
    assert_eq!(messages.len() as u64, biggest["thread"]["messages"].as_u64().unwrap());
    assert_eq!(view["count"], messages.len());
    assert!(messages.len() > 2, "{view}");
    assert_eq!((messages[0]["depth"].as_u64(), &messages[0]["parent"]), (Some(0), &Value::Null));
    let id_of = |m: &Value| m["document"]["id"].as_str().unwrap().to_owned();
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["document"]["thread"], id);
        if let Some(p) = m["parent"].as_u64() {
            let p = p as usize;
            assert!(p < i, "a reply after the message it answers");
            assert_eq!(m["depth"].as_u64().unwrap(), messages[p]["depth"].as_u64().unwrap() + 1);
            let parent_id = id_of(&messages[p]);
            let reply_to = m["document"]["m:in_reply_to"].as_str().unwrap_or("");
            let refs = m["document"]["m:references"].as_str().unwrap_or("");
            assert!(
                reply_to.contains(&format!("<{parent_id}>")) || refs.contains(&format!("<{parent_id}>")),
                "{m} answers {parent_id}"
            );
        }
    }
    // A thread gathered by subject on the Enron sample: a reply without
    // references shown under the message it answers.
    let (_, hits) = collapsed(&s, "re", "newest", 1000);
    let gathered = hits
        .iter()
        .filter(|h| h["thread"]["messages"].as_u64().unwrap() > 1)
        .filter_map(|h| {
            let id = h["thread"]["id"].as_str().unwrap();
            let path =
                format!("/tables/mail/threads/{id}?fields=*&columns=m:in_reply_to&columns=m:references");
            let (_, v) = call(&s, "GET", &path, Some(MASTER), None);
            let replies_without_refs = v["messages"].as_array().unwrap().iter().any(|m| {
                !m["parent"].is_null()
                    && m["document"].get("m:in_reply_to").is_none()
                    && m["document"].get("m:references").is_none()
            });
            (v["user"] != "list" && replies_without_refs).then_some(v)
        })
        .next();
    let view = gathered.expect("a conversation of the Enron sample gathered by subject");
    assert!(view["messages"].as_array().unwrap().len() > 1, "{view}");

    // Kept to a key's mailboxes: another mailbox's thread is no thread.
    let (_, other) = make_key(&s, json!({"actions": ["search"], "partitions": ["cash-m"]}));
    let (status, v) = call(&s, "GET", &format!("/tables/mail/threads/{id}"), Some(&other), None);
    assert_eq!((status, code(&v)), (404, "thread_not_found"), "{v}");
    let (status, v) = call(&s, "GET", "/tables/mail/search?q=re&collapse=thread", Some(&other), None);
    assert_eq!(status, 200, "{v}");
    assert!(!v["hits"].as_array().unwrap().is_empty(), "{v}");
    for hit in v["hits"].as_array().unwrap() {
        assert_eq!(hit["document"]["user"], "cash-m", "{hit}");
    }
    let (status, v) = call(&s, "GET", "/tables/mail/threads/nothex", Some(MASTER), None);
    assert_eq!((status, code(&v)), (400, "bad_request"), "{v}");
    let (status, v) = call(&s, "GET", "/tables/mail/search?q=x&collapse=folder", Some(MASTER), None);
    assert_eq!(status, 400, "{v}");
}
