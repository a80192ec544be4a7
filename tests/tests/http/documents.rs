//! Search hits as documents (issue 23): the search fields by name, the
//! partition, the date in RFC 3339 and the columns asked for, as plain
//! JSON text; `format=cells` keeps the HBase-shaped row.

use serde_json::{Value, json};

use super::{enc, mail_server, put};
use rowsearch_tests::stdout;

#[test]
fn http_hits_are_documents_with_plain_text_values() {
    let (t, s) = mail_server();
    let key_fields = enc(r#"{"user":"doc-d","date":990000000000,"id":1}"#);
    // A body with CR, LF and a tab; a subject that is not UTF-8 (binary
    // string escape \xe9 is the byte 0xE9).
    let row = json!({"cells": [
        {"column": "m:subject", "value": "numbat caf\\xe9"},
        {"column": "b:text", "value": "Line one\r\nLine\ttwo numbat"},
        {"column": "m:from", "value": "ann@example.com"},
        {"column": "m:folder", "value": "inbox"},
        {"column": "m:date", "value": "2001-05-14T16:39:00-07:00"},
    ]});
    let (status, v) = put(&s, &format!("/tables/mail/rows?key_fields={key_fields}"), &row);
    assert!(status == 200 || status == 201, "{status} {v}");

    // fields=*: every field (the mail table's documents leave the body out
    // unless asked; see the next test).
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&columns=m:folder&fields=*");
    assert_eq!(status, 200, "{v}");
    let hit = &v["hits"][0];
    assert!(hit.get("row").is_none(), "no cells by default: {hit}");
    let doc = &hit["document"];
    assert_eq!(doc["body"], "Line one\r\nLine\ttwo numbat", "{doc}");
    assert_eq!(doc["subject"], json!({"base64": "bnVtYmF0IGNhZuk="}), "{doc}");
    assert_eq!(doc["from"], "ann@example.com");
    assert_eq!(doc["user"], "doc-d");
    assert_eq!(doc["date"], "2001-05-14T23:39:00Z");
    assert_eq!(doc["m:folder"], "inbox", "a column asked for: {doc}");
    assert!(doc.get("to").is_none(), "a value the row lacks is absent: {doc}");
    // The raw JSON text has JSON's escapes, not binary-string ones.
    let (_, raw) = s.request("GET", "/tables/mail/search?q=numbat&fields=*", None);
    assert!(raw.contains(r#""body":"Line one\r\nLine\ttwo numbat""#), "{raw}");

    // fields: only the names asked for (a column by family:qualifier too),
    // highlights still from every search field; unknown names refused.
    let (status, v) =
        s.get_json("/tables/mail/search?q=numbat&fields=subject,user&fields=m:folder&highlight=true");
    assert_eq!(status, 200, "{v}");
    let hit = &v["hits"][0];
    let names: Vec<&str> = hit["document"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names, ["subject", "user", "m:folder"], "{hit}");
    assert_eq!(hit["document"]["m:folder"], "inbox");
    assert!(hit["highlights"]["body"].as_str().is_some_and(|b| b.contains("<em>numbat</em>")), "{hit}");
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&fields=date");
    assert_eq!(
        (status, v["hits"][0]["document"].clone()),
        (200, json!({"date": "2001-05-14T23:39:00Z"})),
        "{v}"
    );
    for bad in ["fields=subjet", "fields=subject,"] {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q=numbat&{bad}"));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{bad}: {v}");
    }
    let (_, v) = s.get_json("/tables/mail/search?q=numbat&fields=subjet");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("subject, body, from, to, folder, id, thread, user, date"),
        "{v}"
    );

    // format=cells with fields: the cells of the named fields' columns
    // (a 400 before issue 37: OpenAPI cannot state that one parameter
    // rules out another).
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&format=cells&fields=subject");
    assert_eq!(status, 200, "{v}");
    let columns: Vec<&str> = v["hits"][0]["row"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["column"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["m:subject"], "{v}");

    // format=cells: the row as before, binary strings, only the columns
    // asked for.
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&format=cells&columns=m:subject");
    assert_eq!(status, 200, "{v}");
    let hit = &v["hits"][0];
    assert!(hit.get("document").is_none(), "{hit}");
    assert_eq!(
        hit["row"]["cells"],
        json!([{"column": "m:subject", "timestamp": hit["row"]["cells"][0]["timestamp"], "value": "numbat caf\\xe9"}])
    );
    // Cells read only the columns asked for, but highlights still come
    // from every search field.
    let (status, v) =
        s.get_json("/tables/mail/search?q=numbat&format=cells&columns=m:subject&highlight=true");
    assert_eq!(status, 200, "{v}");
    let hit = &v["hits"][0];
    assert_eq!(hit["row"]["cells"].as_array().map(Vec::len), Some(1), "{hit}");
    assert!(hit["highlights"]["body"].as_str().is_some_and(|b| b.contains("<em>numbat</em>")), "{hit}");
    let (status, v) = s.get_json("/tables/mail/search?q=numbat&format=html");
    assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");

    // limit=0: the total alone (no hits, no cursor).
    let (_, all) = s.get_json("/tables/mail/search?q=enron&limit=5");
    let (status, v) = s.get_json("/tables/mail/search?q=enron&limit=0");
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["total"].clone(), v["hits"].as_array().map(Vec::len)),
        (all["total"].clone(), Some(0)),
        "{v}"
    );
    assert!(all["total"].as_u64().unwrap() > 5 && v["next_cursor"].is_null(), "{v}");

    // The CLI prints the same documents, and cells when asked.
    drop(s);
    let out = t.run(&["search", "numbat", "--json", "--fields", "*"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["hits"][0]["document"]["body"], "Line one\r\nLine\ttwo numbat", "{v}");
    let out = t.run(&["search", "numbat", "--json", "--crop", "body:2"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["hits"][0]["document"]["body"], "…two numbat", "{v}");
    assert!(v["hits"][0]["document"]["from"].is_string(), "and the display's fields: {v}");
    let out = t.run(&["search", "numbat", "--json", "--fields", "subject,from"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["hits"][0]["document"],
        json!({"subject": {"base64": "bnVtYmF0IGNhZuk="}, "from": "ann@example.com"})
    );
    let out = t.run(&["search", "numbta", "--typos", "--json", "--format", "cells"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["hits"][0]["row"]["cells"].is_array(), "{v}");
}

/// The query language over HTTP: prefixes and fuzzy words find what the
/// exact word finds (and more), a query that does not parse is a 400 with
/// the byte where, and an unsupported form is a 400, never a silent zero.
/// A page of mail documents without whole bodies: the mail table's
/// display (every field but the body), `crop` for the words around the
/// match, `fields=*` for everything, and the display changed by the CLI
/// on a running server.
#[test]
fn http_documents_carry_the_tables_display_and_crop_long_fields() {
    let (t, s) = mail_server();
    let key_fields = enc(r#"{"user":"crop-c","date":990000000000,"id":2}"#);
    let body = "one two three four five six seven wombat eight nine ten eleven twelve";
    let row = json!({"cells": [
        {"column": "m:subject", "value": "about the wombat"},
        {"column": "b:text", "value": body},
        {"column": "m:from", "value": "ann@example.com"},
        {"column": "m:date", "value": "2001-05-14T16:39:00-07:00"},
    ]});
    let (status, v) = put(&s, &format!("/tables/mail/rows?key_fields={key_fields}"), &row);
    assert!(status == 200 || status == 201, "{status} {v}");
    let doc = |query: &str| {
        let query = if query.starts_with("&q=") { query[1..].to_owned() } else { format!("q=wombat{query}") };
        let (status, v) = s.get_json(&format!("/tables/mail/search?{query}"));
        assert_eq!(status, 200, "{query}: {v}");
        v["hits"][0]["document"].clone()
    };
    let names = |d: &Value| d.as_object().unwrap().keys().cloned().collect::<Vec<_>>();

    // The table's display: no body; a column asked for still comes.
    let (_, tables) = s.get_json("/tables");
    let mail = tables["tables"].as_array().unwrap().iter().find(|t| t["name"] == "mail").unwrap().clone();
    assert_eq!(
        mail["search"]["display"],
        json!(["subject", "from", "to", "folder", "user", "date", "thread"]),
        "{mail}"
    );
    assert_eq!(mail["search"]["columns"]["body"], "b:text", "{mail}");
    assert_eq!(names(&doc("")), ["subject", "from", "user", "date"]);
    assert_eq!(names(&doc("&columns=m:subject")), ["subject", "from", "user", "date", "m:subject"]);
    // crop: the words around the first match, marked where cut.
    let cropped = doc("&crop=body:4");
    // The match a third of the way in, as highlights place it.
    assert_eq!(cropped["body"], "…seven wombat eight nine…", "{cropped}");
    assert_eq!(doc("&crop=body:100")["body"], body);
    assert_eq!(doc("&crop=body,subject:1")["subject"], "…wombat");
    assert_eq!(doc("&q=nine&crop=body:2")["body"], "…nine ten…", "the first match of any word");
    assert_eq!(names(&doc("&fields=subject&crop=body:3")), ["subject", "body"]);
    // fields=*: every field, the whole body.
    assert_eq!(doc("&fields=*")["body"], body);
    for bad in ["crop=bod:3", "crop=body:0", "crop=body:x", "crop=body:1001", "crop=user:3"] {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q=wombat&{bad}"));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{bad}: {v}");
    }

    // The CLI changes the display while the server runs.
    let out = t.run(&["display", "mail", "subject,body"]);
    assert!(out.status.success(), "{}", rowsearch_tests::stderr(&out));
    assert_eq!(stdout(&out).trim(), "mail: documents carry subject, body");
    // Over HBase another process's schema change reaches the server with
    // its catalog cache (kept 1 s, `hbase/tables.rs` CATALOG_CACHE).
    let settled = |want: &[&str]| {
        let wait = if super::over_hbase() { 3 } else { 0 };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait);
        while names(&doc("")) != want && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(names(&doc("")), want);
    };
    settled(&["subject", "body"]);
    let out = t.run(&["display", "mail", "bodie"]);
    assert_eq!(out.status.code(), Some(2), "an unknown name is refused: {}", stdout(&out));
    assert!(
        rowsearch_tests::stderr(&out).contains("subject, body, from, to, folder, id, thread, user, date")
    );
    let out = t.run(&["display", "mail", "--all"]);
    assert_eq!(stdout(&out).trim(), "mail: documents carry every field");
    settled(&["subject", "body", "from", "user", "date"]);

    // And over HTTP (an admin action), as Meilisearch's displayed attributes.
    let (status, v) = put(&s, "/tables/mail/display", &json!({"display": ["subject", "date"]}));
    assert_eq!((status, v["changed"].as_bool()), (200, Some(true)), "{v}");
    assert_eq!(names(&doc("")), ["subject", "date"]);
    for bad in [json!({"display": ["bodie"]}), json!({"display": []}), json!({"shown": ["subject"]})] {
        let (status, v) = put(&s, "/tables/mail/display", &bad);
        assert_eq!(status / 100, 4, "{bad}: {v}");
    }
    let (status, v) = put(&s, "/tables/mail/display", &json!({"display": ["*"]}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(names(&doc("")), ["subject", "body", "from", "user", "date"]);
}

#[test]
fn http_prefixes_typos_and_query_errors() {
    let (_t, s) = mail_server();
    let total = |q: &str| {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q={}&limit=0", enc(q)));
        assert_eq!(status, 200, "{q}: {v}");
        v["total"].as_u64().unwrap()
    };
    let exact = total("enron");
    assert!(exact > 100);
    assert!(total("enro*") >= exact && total("enrn~1") >= exact && total("body:enrn~1") > 0);
    assert_eq!(total("date:2001-01"), total("date:[2001-01-01 TO 2001-01-31]"));
    // typos=auto: a misspelt word of 5+ characters finds what the word does.
    let (_, v) = s.get_json("/tables/mail/search?q=meetign&typos=auto&limit=0");
    assert!(total("meetign") == 0 && v["total"].as_u64().unwrap() >= total("meeting"), "{v}");
    let (status, v) = s.get_json("/tables/mail/search?q=gas&typos=sometimes");
    assert_eq!(status, 400, "{v}");
    for (q, position) in [("gas)", 3), ("subject:(gas)", 8), ("gas~3", 3), ("e*", 0), ("nope:gas", 0)] {
        let (status, v) = s.get_json(&format!("/tables/mail/search?q={}", enc(q)));
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("invalid_query")), "{q}: {v}");
        assert_eq!(v["error"]["position"].as_u64(), Some(position), "{q}: {v}");
    }
}

/// Facets, suggestions and `did_you_mean` over HTTP, from the real binary:
/// the shapes of API.md, facet counts that add up to the total for a
/// one-value-per-row facet, and the errors for unknown names and
/// parameters (confinement is tested on the library, tests/facets.rs and
/// tests/suggest.rs of search-api).
#[test]
fn http_facets_suggestions_and_did_you_mean() {
    let (_t, s) = mail_server();
    let (status, v) =
        s.get_json("/tables/mail/search?q=gas&limit=0&facets=user,folder,from,month&facet_limit=3");
    assert_eq!(status, 200, "{v}");
    assert!(v["hits"].as_array().unwrap().is_empty());
    let names: Vec<&String> = v["facets"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["user", "folder", "from", "month"], "in the order asked");
    let users = v["facets"]["user"].as_object().unwrap();
    assert!(users.len() <= 3);
    let counts: Vec<u64> = users.values().map(|n| n.as_u64().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "most first: {counts:?}");
    // Every row has one user: with a limit above the users, they add up.
    let (_, v) = s.get_json("/tables/mail/search?q=gas&limit=0&facets=user,year&facet_limit=1000");
    let total = v["total"].as_u64().unwrap();
    for facet in ["user", "year"] {
        let sum: u64 = v["facets"][facet].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(sum, total, "{facet}: {v}");
    }
    for (path, says) in [
        ("/tables/mail/search?q=gas&facets=sender", "sender"),
        ("/tables/mail/search?q=gas&facets=user&facet_limit=0", "facet_limit"),
        ("/tables/mail/suggest?q=", "q"),
        ("/tables/mail/suggest?q=en&limt=3", "limt"),
    ] {
        let (status, v) = s.get_json(path);
        assert_eq!(status, 400, "{path}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(says), "{path}: {v}");
    }

    // After a word, completions are phrases that occur, each counted as
    // the phrase search counts it.
    let (status, v) = s.get_json("/tables/mail/suggest?q=natural%20ga&limit=3");
    assert_eq!(status, 200, "{v}");
    let suggestions = v["suggestions"].as_array().unwrap();
    assert_eq!(suggestions[0]["text"], "natural gas", "{v}");
    assert!(suggestions.len() <= 3, "{v}");
    for q in ["natural%20ga", "gas%20enr", "gas%20pri"] {
        let (_, v) = s.get_json(&format!("/tables/mail/suggest?q={q}&limit=5"));
        for suggestion in v["suggestions"].as_array().unwrap() {
            let phrase = suggestion["text"].as_str().unwrap().replace(' ', "%20");
            let (_, found) = s.get_json(&format!("/tables/mail/search?q=%22{phrase}%22&limit=0"));
            assert_eq!(suggestion["docs"], found["total"], "{q}: {suggestion}");
            assert!(found["total"].as_u64().unwrap() > 0, "{q}: {suggestion}");
        }
    }

    let (_, v) = s.get_json("/tables/mail/search?q=enrn&limit=0");
    assert_eq!((v["total"].as_u64(), v["did_you_mean"].as_str()), (Some(0), Some("enron")), "{v}");
    let (_, v) = s.get_json("/tables/mail/search?q=enron&limit=0");
    assert!(v.get("did_you_mean").is_none(), "{v}");
}
