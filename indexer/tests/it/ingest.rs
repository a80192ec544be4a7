//! Ingest of the committed mail fixture (tests/fixtures/mail): fields
//! against Python's email package, idempotent re-ingest, keyword lookups
//! against brute force, and malformed inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::foreign::Foreign;
use rowsearch_indexer::store::{KeywordQuery, Row, Scan, Store};
use rowsearch_indexer::{Format, IngestOptions, IngestReport, TextAnalyzer, ingest, open_store};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail")
}

fn run(store: &Store, paths: &[PathBuf], options: &IngestOptions) -> IngestReport {
    ingest(store, paths, options, &mut |_| {}).unwrap()
}

fn all_rows(store: &Store) -> Vec<Row> {
    store.scan("mail", &Scan::new()).unwrap().rows
}

fn text(row: &Row, family: &str, qualifier: &str) -> String {
    String::from_utf8(row.value(family, qualifier.as_bytes()).unwrap_or_default().to_vec()).unwrap()
}

fn words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The addresses in a decoded address header (`Name <a@b>, c@d`).
fn addresses(header: &str) -> Vec<String> {
    let mut out: Vec<String> = header
        .split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | ',' | '"'))
        .filter(|w| w.contains('@'))
        .map(str::to_lowercase)
        .collect();
    out.sort();
    out
}

#[test]
fn fixture_fields_match_pythons_email_package() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let report =
        run(&store, &[fixtures().join("maildir"), fixtures().join("crafted")], &IngestOptions::default());
    // 353 messages; 59 are copies of another (the same sender, date,
    // subject and body in another folder), folded: 294 rows. Python's email
    // package groups the fixture's messages the same way.
    assert_eq!((report.files_seen, report.stored, report.skipped.len()), (353, 294, 0), "{report:?}");
    assert_eq!((report.duplicates, report.folded), (59, 59), "{report:?}");
    // A folded row carries every copy's path, folder and Message-ID, a line each.
    let by_path: BTreeMap<String, Row> = all_rows(&store)
        .into_iter()
        .flat_map(|r| text(&r, "m", "path").lines().map(|p| (p.to_owned(), r.clone())).collect::<Vec<_>>())
        .collect();
    let expected: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap()).unwrap();
    assert!(expected.len() >= 20);
    for want in &expected {
        let path = want["path"].as_str().unwrap();
        // Paths are stored relative to the ingested root (maildir/, crafted/).
        let relative = path.split_once('/').unwrap().1;
        let row = by_path.get(relative).unwrap_or_else(|| panic!("{relative} not stored"));
        let s = |k: &str| want[k].as_str().unwrap().to_owned();
        let list = |k: &str| -> Vec<String> {
            want[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
        };
        assert!(text(row, "m", "message_id").lines().any(|id| id == s("message_id")), "{path}");
        assert_eq!(text(row, "m", "date"), s("date"), "{path}");
        assert_eq!(text(row, "m", "subject"), s("subject"), "{path}");
        assert_eq!(addresses(&text(row, "m", "from")), list("from"), "{path}");
        assert_eq!(addresses(&text(row, "m", "to")), list("to"), "{path}");
        let body = text(row, "b", "text");
        let got_words: Vec<String> = words(&body).into_iter().take(400).collect();
        assert_eq!(got_words, list("words"), "{path}: body words");
        if !relative.ends_with("inbox/4.") {
            // Not HTML: the text itself, whitespace aside.
            let start: String =
                body.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(200).collect();
            assert_eq!(start, s("body_start"), "{path}");
        }
        // The key: user from the path, date from the Date header.
        let key = store.schema("mail").unwrap().row_key.unwrap().decode_json(&row.key).unwrap();
        assert_eq!(key["user"], relative.split('/').next().unwrap(), "{path}");
    }
    // What the crafted messages are there for.
    let crafted = |n: &str| &by_path[&format!("tester/inbox/{n}.")];
    assert_eq!(text(crafted("1"), "m", "from"), "André Müller <andre.muller@example.com>");
    assert!(!text(crafted("2"), "b", "text").contains("secretattachmentword"), "attachments are skipped");
    assert!(text(crafted("3"), "b", "text").contains("5 € per unit"), "windows-1252 decoded");
    assert!(text(crafted("5"), "b", "text").contains("Plain words despite the label"));
}

/// Every row and every keyword cell, as text.
fn dump(store: &Store) -> (Vec<Row>, usize, String) {
    let mut cells = String::new();
    let mut n = 0;
    store
        .begin_read()
        .unwrap()
        .for_each_keyword_cell("mail", None, &mut |c| {
            n += 1;
            cells.push_str(&format!("{:?}\n", c.to_cell()));
            Ok(())
        })
        .unwrap();
    (all_rows(store), n, cells)
}

#[test]
fn ingesting_the_same_tree_again_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let paths = [fixtures().join("maildir")];
    let first = run(&store, &paths, &IngestOptions::default());
    // 347 messages, 288 once copies fold.
    assert_eq!((first.stored, first.duplicates, first.folded), (288, 59, 59));
    let before = dump(&store);
    assert!(before.1 > 10_000, "keyword cells: {}", before.1);
    let seq = store.next_seq().unwrap();
    // Smaller batches, so duplicates are found across batches too.
    let second = run(&store, &paths, &IngestOptions { batch_rows: 10, ..Default::default() });
    assert_eq!((second.files_seen, second.stored, second.duplicates, second.folded), (347, 0, 347, 0));
    assert_eq!(store.next_seq().unwrap(), seq, "nothing was written");
    assert!(dump(&store) == before, "store contents changed");
    // A fresh store given the same files ends up identical.
    let other_dir = tempfile::tempdir().unwrap();
    let other = open_store(other_dir.path()).unwrap();
    run(&other, &paths, &IngestOptions { batch_rows: 7, ..Default::default() });
    assert!(dump(&other) == before, "a second store differs");
}

/// A small deterministic generator (xorshift), so the 100 queries repeat.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn keyword_lookups_equal_a_brute_force_scan() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    run(&store, &[fixtures().join("maildir")], &IngestOptions::default());
    let rk = store.schema("mail").unwrap().row_key.unwrap();
    // Each row's terms per search field, analysed independently of the
    // keyword rows.
    let fields = [("m", "subject"), ("b", "text"), ("m", "from"), ("m", "to")];
    // (user, date, key, terms per field)
    type Analysed = (String, u64, Vec<u8>, Vec<BTreeSet<String>>);
    let mut rows: Vec<Analysed> = Vec::new();
    let mut vocabulary: BTreeSet<String> = BTreeSet::new();
    for row in all_rows(&store) {
        let key = rk.decode_json(&row.key).unwrap();
        let terms: Vec<BTreeSet<String>> = fields
            .iter()
            .map(|(f, q)| TextAnalyzer.tokens(&text(&row, f, q)).into_iter().map(|(t, _)| t).collect())
            .collect();
        vocabulary.extend(terms.iter().flatten().cloned());
        rows.push((key["user"].as_str().unwrap().to_owned(), key["date"].as_u64().unwrap(), row.key, terms));
    }
    let vocabulary: Vec<String> = vocabulary.into_iter().collect();
    let users: Vec<String> = rows.iter().map(|r| r.0.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut nonempty = 0;
    for q in 0..100 {
        // Half single terms, half pairs; terms drawn from the rows
        // themselves half of the time, so many queries match.
        let user = &users[rng.below(users.len())];
        let pick = |rng: &mut Rng| -> String {
            if rng.below(2) == 0 {
                vocabulary[rng.below(vocabulary.len())].clone()
            } else {
                let own: Vec<&Analysed> = rows.iter().filter(|r| r.0 == *user).collect();
                let r = own[rng.below(own.len())];
                let all: Vec<&String> = r.3.iter().flatten().collect();
                all[rng.below(all.len())].clone()
            }
        };
        let mut terms = vec![pick(&mut rng)];
        if q % 2 == 1 {
            terms.push(pick(&mut rng));
        }
        let mut expected: Vec<(u64, Vec<u8>)> = rows
            .iter()
            .filter(|r| r.0 == *user && terms.iter().all(|t| r.3.iter().any(|f| f.contains(t))))
            .map(|r| (r.1, r.2.clone()))
            .collect();
        expected.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        // Paged by 3 through cursors.
        let got = crate::keyword_keys(&store, user, &terms, 3);
        assert_eq!(got, expected, "{user} {terms:?}");
        nonempty += usize::from(!expected.is_empty());
    }
    assert!(nonempty >= 40, "only {nonempty} of 100 queries matched anything");
}

#[test]
fn malformed_inputs_are_skipped_and_named_and_the_rest_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in/ann/inbox");
    std::fs::create_dir_all(&input).unwrap();
    let good = std::fs::read(fixtures().join("crafted/tester/inbox/6.")).unwrap();
    std::fs::write(input.join("1."), &good).unwrap();
    // Truncated in the middle of the body: stored with what is there.
    let real = std::fs::read(fixtures().join("maildir/cash-m/inbox/1.")).unwrap();
    std::fs::write(input.join("2."), &real[..real.len() * 2 / 3]).unwrap();
    // Truncated inside the headers: still headers, stored without a body.
    std::fs::write(input.join("3."), b"Message-ID: <cut@x>\nSubject: cut her").unwrap();
    // Binary garbage, no headers, empty.
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(input.join("4."), garbage).unwrap();
    std::fs::write(input.join("5."), b"Dear all,\nno headers here.\n").unwrap();
    std::fs::write(input.join("6."), b"").unwrap();
    // An invalid charset label: stored, read as UTF-8.
    std::fs::write(input.join("7."), std::fs::read(fixtures().join("crafted/tester/inbox/5.")).unwrap())
        .unwrap();
    // Unreadable: a link to nowhere.
    std::os::unix::fs::symlink(dir.path().join("missing"), input.join("8.")).unwrap();
    // 50 MB: over the 25 MiB default.
    let mut big = b"Message-ID: <big@x>\nSubject: big\n\n".to_vec();
    big.resize(50 * 1024 * 1024, b'a');
    std::fs::write(input.join("9."), big).unwrap();

    let store = open_store(dir.path().join("data")).unwrap();
    let report = run(&store, &[dir.path().join("in")], &IngestOptions::default());
    let reasons: BTreeMap<String, String> = report
        .skipped
        .iter()
        .map(|s| (s.source.rsplit('/').next().unwrap().to_owned(), s.reason.clone()))
        .collect();
    assert_eq!(report.stored, 4, "{report:?}");
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(reasons["4."].contains("no header lines"), "{reasons:?}");
    assert!(reasons["5."].contains("no header lines"));
    assert!(reasons["6."].contains("no header lines"));
    assert!(reasons["8."].contains("cannot list") || reasons["8."].contains("cannot read"), "{reasons:?}");
    assert!(reasons["9."].contains("too large: 52428800 bytes, max 26214400"), "{reasons:?}");
    let summary = report.summary(10);
    assert!(summary.contains("4 stored, 0 duplicates, 5 skipped"), "{summary}");
    assert!(summary.contains("9.: message too large"), "{summary}");
    let subjects: BTreeSet<String> = all_rows(&store).iter().map(|r| text(r, "m", "subject")).collect();
    assert!(subjects.contains("cut her") && subjects.contains("Unknown charset label"), "{subjects:?}");
    // The report file lists every skipped file.
    let report_file = dir.path().join("skipped.tsv");
    report.write_skipped(&report_file).unwrap();
    assert_eq!(std::fs::read_to_string(&report_file).unwrap().lines().count(), 5);
}

#[test]
fn mbox_and_json_lines_are_read_and_bad_entries_named() {
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("archive.mbox");
    let m = |id: &str, subject: &str| {
        format!(
            "From someone@x Mon May 14 16:39:00 2001\nMessage-ID: <{id}>\nDate: Mon, 14 May 2001 16:39:00 -0700\nSubject: {subject}\n\nbody of {id}\n\n"
        )
    };
    std::fs::write(
        &mbox,
        format!("{}{}{}", m("a@x", "first"), "From x\nno headers at all\n\n", m("b@x", "second")),
    )
    .unwrap();
    let store = open_store(dir.path().join("data")).unwrap();
    let report = run(
        &store,
        std::slice::from_ref(&mbox),
        &IngestOptions { user: Some("bob".into()), ..Default::default() },
    );
    assert_eq!((report.messages_seen, report.stored), (3, 2), "{report:?}");
    assert!(report.skipped[0].source.ends_with("archive.mbox#2"), "{report:?}");
    let rows = all_rows(&store);
    assert_eq!(text(&rows[0], "m", "folder"), "archive");
    assert!(rows.iter().all(|r| text(r, "m", "path").starts_with("archive.mbox#")));

    let jsonl = dir.path().join("rows.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"key_fields": {"user": "carl", "date": 5, "id": 1}, "cells": [{"column": "m:subject", "value": "gas deal"}]}"#,
            "\n",
            "not json\n",
            r#"{"key_fields": {"user": "carl"}, "cells": []}"#,
            "\n",
            r#"{"key_fields": {"user": "carl", "date": 6, "id": 2}, "cells": [{"column": "zz:q", "value": "v"}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let report = run(&store, &[jsonl], &IngestOptions { format: Format::Jsonl, ..Default::default() });
    assert_eq!(report.stored, 1, "{report:?}");
    let lines: Vec<&str> = report.skipped.iter().map(|s| s.source.rsplit(':').next().unwrap()).collect();
    assert_eq!(lines, ["2", "3", "4"], "{report:?}");
    assert!(report.skipped[2].reason.contains("unknown family"), "{report:?}");
    let hits = store
        .keyword_lookup(
            "mail",
            &KeywordQuery { partition: b"carl".to_vec(), terms: vec!["deal".into()], ..Default::default() },
        )
        .unwrap();
    assert_eq!(hits.hits.len(), 1);
}

/// A place that fails mid-ingest (the rows of a batch cannot be looked up:
/// HBase gone): the ingest ends with the error, and its reader, a batch or
/// more ahead, is let go (before, it stayed blocked handing over files
/// nobody took, and the ingest never returned).
#[test]
fn an_ingest_whose_place_fails_midway_returns_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let place = Foreign::failing_after(&store, 2);
    let options = IngestOptions { batch_rows: 2, ..IngestOptions::default() };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let paths = [fixtures().join("maildir")];
            let _ = tx.send(ingest(&place, &paths, &options, &mut |_| {}).map(|r| r.stored));
        });
        // A deadline for a hang, not a measure: the run takes milliseconds.
        let outcome = rx.recv_timeout(std::time::Duration::from_secs(120));
        let Ok(result) = outcome else {
            // The scope would wait for the stuck ingest forever.
            eprintln!("the ingest did not return within 120 s");
            std::process::exit(1);
        };
        let err = result.expect_err("an ingest whose place fails succeeded");
        assert!(err.to_string().contains("the place went away"), "{err}");
    });
}

/// An mbox of several MiB is handed over in chunks (not held whole): every
/// message in it is stored once, with its place in the file, and a batch
/// boundary in the middle of the file loses nothing.
#[test]
fn a_large_mbox_is_read_in_chunks_and_every_message_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("big.mbox");
    let filler = "lorem ipsum dolor sit amet ".repeat(400); // ~10.8 KB
    let mut raw = String::new();
    for n in 0..400 {
        raw.push_str(&format!(
            "From someone@x Mon May 14 16:39:00 2001\nMessage-ID: <m{n}@x>\nDate: Mon, 14 May 2001 16:{:02}:{:02} -0700\nSubject: message number{n}\n\n{filler}\nword{n}\n\n",
            n / 60,
            n % 60
        ));
    }
    assert!(raw.len() > 4 << 20, "{} bytes: not past several chunks", raw.len());
    std::fs::write(&mbox, raw).unwrap();
    let store = open_store(dir.path().join("data")).unwrap();
    let options = IngestOptions { user: Some("bob".into()), batch_rows: 150, ..Default::default() };
    let report = run(&store, std::slice::from_ref(&mbox), &options);
    assert_eq!((report.messages_seen, report.stored, report.skipped.len()), (400, 400, 0), "{report:?}");
    let mut places: Vec<u32> = all_rows(&store)
        .iter()
        .map(|r| text(r, "m", "path").rsplit('#').next().unwrap().parse().unwrap())
        .collect();
    places.sort_unstable();
    assert_eq!(places, (1..=400).collect::<Vec<u32>>());
    for n in [0, 97, 199, 399] {
        let query = KeywordQuery {
            partition: b"bob".to_vec(),
            terms: vec![format!("word{n}")],
            ..Default::default()
        };
        assert_eq!(store.keyword_lookup("mail", &query).unwrap().hits.len(), 1, "word{n}");
    }
}
