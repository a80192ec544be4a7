//! A store written by the previous on-disk format (`rowsearch-store/3`,
//! one keyword cell per LMDB entry; `tests/fixtures/format3` and
//! `tests/fixtures/format3-sample`) opens with this build: its keyword cells
//! are rewritten as blocks in the opening transaction, every index lookup,
//! keyword lookup and search answers what the old build answered, `index
//! verify` is clean, and the store then reindexes and verifies clean. A
//! store the build before the fix upgraded (its index runs moved into the
//! main index as they were) is repaired on open.

use std::process::{Command, Stdio};
use std::time::Duration;

use rowsearch_tests::{Rng, TestDir, bin, stderr, stdout, time_seed};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/format3").join(name)
}

/// A test directory holding a copy of the format 3 fixture store.
fn format3_store() -> TestDir {
    let t = TestDir::new();
    std::fs::create_dir_all(t.data()).unwrap();
    let packed = std::fs::read(fixture("data.mdb.zst")).unwrap();
    let bytes = zstd::decode_all(packed.as_slice()).unwrap();
    std::fs::write(t.data().join("data.mdb"), bytes).unwrap();
    t
}

/// The indexes of the fixtures' tables.
const INDEXES: [(&str, &str); 3] = [("mail", "by_from"), ("mail", "by_from_date"), ("notes", "by_tag")];

/// `index verify` is clean for every index.
pub(super) fn assert_indexes_verify(t: &TestDir) {
    for (table, index) in INDEXES {
        let out = t.run(&["index", "verify", table, index]);
        assert!(out.status.success(), "index verify {table} {index}: {} {}", stdout(&out), stderr(&out));
        let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["clean"], true, "{report}");
        assert!(report["entries"].as_u64().unwrap() > 0, "{report}");
    }
}

/// The small fixture's index lookups answer what the format 3 build did
/// (its README: note1 is red, note2 blue; the mail index holds every
/// message of the two mailboxes but the one deleted).
fn assert_small_fixture_indexes(t: &TestDir) {
    for (tag, key) in [("red", "note1"), ("blue", "note2")] {
        let out = t.run(&["index", "lookup", "notes", "by_tag", "--eq", tag]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out).trim(), format!(r#"{{"key":"{key}","values":["{tag}"]}}"#));
    }
    let out = t.run(&["index", "lookup", "mail", "by_from", "--prefix", "a"]);
    assert!(out.status.success(), "a prefix lookup: {}", stderr(&out));
    assert!(stdout(&out).contains("amanda.rybarski@enron.com"), "{}", stdout(&out));
    let out = t.run(&["index", "lookup", "mail", "by_from"]);
    assert_eq!(stdout(&out).lines().count(), 28, "{}", stdout(&out));
    assert_indexes_verify(t);
}

/// Keyword cells of the fixture's mail table (what the upgrade reports).
const FIXTURE_CELLS: u64 = 6422;
/// Keyword cells of the format 4 sample (`tests/fixtures/format4-sample`).
const FORMAT4_SAMPLE_CELLS: u64 = 77_364;

/// The lookups the previous build answered on the fixture give the same
/// keys.
fn assert_lookups_as_before(t: &TestDir) {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("lookups.json")).unwrap()).unwrap();
    let lookups = expected.as_array().unwrap();
    assert!(lookups.iter().any(|l| l["keys"].as_array().unwrap().len() > 5), "the fixture finds rows");
    for lookup in lookups {
        let user = lookup["user"].as_str().unwrap();
        let mut args = vec!["keywords", "--user", user];
        args.extend(lookup["terms"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()));
        let out = t.run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let keys: Vec<serde_json::Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].clone())
            .collect();
        assert_eq!(&keys, lookup["keys"].as_array().unwrap(), "{args:?}");
    }
}

#[test]
fn cli_a_format_3_store_is_upgraded_on_open_and_answers_as_before() {
    let t = format3_store();
    assert_lookups_as_before(&t);
    assert_small_fixture_indexes(&t);
    // The other table and its index came through too.
    let out = t.run(&["get", "notes", "note1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello"));
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
}

#[test]
fn cli_upgrade_says_what_it_did_with_progress_and_then_that_nothing_is_left() {
    let t = format3_store();
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/3 to rowsearch-store/10"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("table mail, {FIXTURE_CELLS} keyword cells")),
        "progress names the table and its cells: {}",
        stderr(&out)
    );
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("already rowsearch-store/10"), "{}", stdout(&out));
    assert!(!stderr(&out).contains("upgrading"), "{}", stderr(&out));
    assert_lookups_as_before(&t);
}

/// Runs `rowsearch upgrade` aborting (as kill -9 would: no unwinding, no
/// commit) once `cells` keyword cells are rewritten.
pub(super) fn upgrade_aborted_after(t: &TestDir, cells: u64) {
    upgrade_aborted_after_of(t, cells, None)
}

/// [`upgrade_aborted_after`], also checking that the upgrade announced
/// `total` keyword cells (a fail point past the total would never fire).
fn upgrade_aborted_after_of(t: &TestDir, cells: u64, total: Option<u64>) {
    let out = Command::new(bin())
        .arg("--data")
        .arg(t.data())
        .arg("upgrade")
        .env("ROWSEARCH_FAIL_UPGRADE_AFTER_CELLS", cells.to_string())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the fail point at {cells} cells fired: {}", stdout(&out));
    assert!(stderr(&out).contains("upgrading the store"), "{}", stderr(&out));
    if let Some(total) = total {
        assert!(stderr(&out).contains(&format!(", {total} keyword cells")), "{}", stderr(&out));
    }
}

/// Runs `rowsearch upgrade` `times` times, each killed (kill -9) at a
/// random moment up to `max_us` after it starts: before, during or after
/// the upgrade; whichever, what the caller checks next must hold.
pub(super) fn kill_upgrades(t: &TestDir, rng: &mut Rng, times: usize, max_us: usize) {
    kill_runs(t, "upgrade", rng, times, max_us);
}

/// Runs `rowsearch COMMAND` `times` times, each killed (kill -9) at a
/// random moment up to `max_us` after it starts.
pub(super) fn kill_runs(t: &TestDir, command: &str, rng: &mut Rng, times: usize, max_us: usize) {
    for _ in 0..times {
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(t.data())
            .arg(command)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(max_us) as u64));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn cli_an_upgrade_killed_at_any_point_leaves_a_store_that_upgrades_again() {
    // At fixed points: the first progress report, mid-table, and after
    // every cell is rewritten but before the commit.
    for cells in [0, 1024, 4096, FIXTURE_CELLS] {
        let t = format3_store();
        upgrade_aborted_after(&t, cells);
        upgrade_aborted_after(&t, cells);
        let out = t.run(&["upgrade"]);
        assert!(out.status.success(), "after an abort at {cells}: {}", stderr(&out));
        assert!(stdout(&out).contains("from rowsearch-store/3"), "nothing was committed: {}", stdout(&out));
        assert_lookups_as_before(&t);
        assert_small_fixture_indexes(&t);
    }
    // At random moments: kill -9 of `upgrade` runs on one store, then the
    // store either still upgrades or is already upgraded, and answers as
    // before.
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = format3_store();
    kill_upgrades(&t, &mut rng, 12, 40_000);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_lookups_as_before(&t);
    assert_small_fixture_indexes(&t);
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
}

/// The sample mail fixtures: as the last build of each format wrote it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Sample {
    Format3,
    Format4,
    Format5,
    Format6,
    Format7,
    Format8,
    Format9,
}

fn sample_fixture(sample: Sample, name: &str) -> std::path::PathBuf {
    let dir = match sample {
        Sample::Format3 => "fixtures/format3-sample",
        Sample::Format4 => "fixtures/format4-sample",
        Sample::Format5 => "fixtures/format5-sample",
        Sample::Format6 => "fixtures/format6-sample",
        Sample::Format7 => "fixtures/format7-sample",
        Sample::Format8 => "fixtures/format8-sample",
        Sample::Format9 => "fixtures/format9-sample",
    };
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name)
}

/// A test directory holding the sample mail as the format 3 build wrote
/// it: the store and its search index directory.
pub(super) fn format3_sample_store() -> TestDir {
    sample_store(Sample::Format3)
}

/// A test directory holding a sample fixture: the store and its search
/// index directory.
pub(super) fn sample_store(sample: Sample) -> TestDir {
    let t = TestDir::new();
    std::fs::create_dir_all(t.data()).unwrap();
    let packed = std::fs::read(sample_fixture(sample, "data.mdb.zst")).unwrap();
    std::fs::write(t.data().join("data.mdb"), zstd::decode_all(packed.as_slice()).unwrap()).unwrap();
    let tar =
        zstd::decode_all(std::fs::read(sample_fixture(sample, "index.tar.zst")).unwrap().as_slice()).unwrap();
    let mut untar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(t.data())
        .stdin(Stdio::piped())
        .spawn()
        .expect("tar runs");
    std::io::Write::write_all(&mut untar.stdin.take().unwrap(), &tar).unwrap();
    assert!(untar.wait().unwrap().success());
    t
}

/// Every command of the format 3 sample's `commands.txt` answers what the
/// format 3 build answered.
pub(super) fn assert_sample_as_before(t: &TestDir) {
    assert_answers_as_before(t, Sample::Format3);
}

/// Every command of a sample fixture's `commands.txt` answers what the
/// build that wrote it answered (searches: total, keys and scores).
pub(super) fn assert_answers_as_before(t: &TestDir, sample: Sample) {
    assert_answers_of(t, &sample_fixture(sample, "expected.json"), &format!("{sample:?}"));
}

/// Every command of `expected` (a fixture's `expected.json`) answers what
/// the build that wrote it answered (searches: total, keys and scores);
/// `sample` names the fixture in failures.
pub(crate) fn assert_answers_of(t: &TestDir, expected: &std::path::Path, sample: &str) {
    let expected: serde_json::Value = serde_json::from_slice(&std::fs::read(expected).unwrap()).unwrap();
    let expected = expected.as_array().unwrap();
    assert!(expected.len() >= 15, "the fixture lists its commands");
    for case in expected {
        let args: Vec<&str> = case["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let out = t.run(&args);
        assert!(out.status.success(), "{sample} {args:?}: {}", stderr(&out));
        let want = case["stdout"].as_str().unwrap();
        if args[0] == "search" {
            let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            let want: serde_json::Value = serde_json::from_str(want).unwrap();
            assert_eq!(got["total"], want["total"], "{args:?}");
            let hits = got["hits"].as_array().unwrap();
            let want_hits = want["hits"].as_array().unwrap();
            assert!(!want_hits.is_empty(), "{args:?} finds something");
            // Hits of equal scores may come in either order (an index
            // built again, by regions in parallel, lays documents out in
            // another order, and its scores may differ in the last float
            // bits): the same scores position by position (below), the
            // same keys, and each key with the score it had. A tie the
            // page's end cuts may keep other hits of it (the builds that
            // wrote these fixtures cut ties by address, this one by key).
            let scored = |hits: &[serde_json::Value]| -> std::collections::BTreeMap<String, Option<f64>> {
                hits.iter().map(|h| (h["key"].as_str().unwrap().to_owned(), h["score"].as_f64())).collect()
            };
            let (got_keys, want_keys) = (scored(hits), scored(want_hits));
            let cut = want["total"].as_u64().is_some_and(|t| t > want_hits.len() as u64);
            let last = want_hits.last().and_then(|h| h["score"].as_f64());
            for (key, score) in &want_keys {
                let in_cut_tie = cut && matches!((score, last), (Some(s), Some(l)) if (s - l).abs() < 1e-4);
                if !in_cut_tie {
                    assert!(got_keys.contains_key(key), "{args:?}: {key} missing");
                }
            }
            if !cut {
                assert_eq!(got_keys.len(), want_keys.len(), "{args:?}");
            }
            for (key, score) in &got_keys {
                if let (Some(Some(w)), Some(g)) = (want_keys.get(key), score) {
                    assert!((g - w).abs() < 1e-4, "{args:?}: {key} scored {g} against {w}");
                }
            }
            if want_hits.iter().all(|h| h["score"].is_null()) {
                // Date sorts: exactly the order.
                assert_eq!(tied_runs(hits), tied_runs(want_hits), "{args:?}");
            }
            for (g, w) in hits.iter().zip(want_hits) {
                if let (Some(g), Some(w)) = (g["score"].as_f64(), w["score"].as_f64()) {
                    assert!((g - w).abs() < 1e-4, "{args:?}: score {g} against {w}");
                }
            }
            // Collapsed: each thread as that build summed it up (a fixture
            // that kept them), in any order.
            let threads = |hits: &[serde_json::Value]| -> Vec<String> {
                let mut out: Vec<String> =
                    hits.iter().filter_map(|h| h.get("thread")).map(|t| t.to_string()).collect();
                out.sort();
                out
            };
            if want_hits.iter().any(|h| h.get("thread").is_some()) {
                assert_eq!(threads(hits), threads(want_hits), "{args:?}");
            }
        } else {
            assert!(!want.is_empty() || args.contains(&"--rows"), "{args:?} finds something");
            assert_eq!(stdout(&out), want, "{sample} {args:?}");
        }
    }
}

/// Search hits as runs of equal scores (within 1e-4; each run's keys as a
/// set), in order; hits without scores (date sorts) one to a run.
fn tied_runs(hits: &[serde_json::Value]) -> Vec<std::collections::BTreeSet<String>> {
    let mut runs: Vec<(Option<f64>, std::collections::BTreeSet<String>)> = Vec::new();
    for hit in hits {
        let score = hit["score"].as_f64();
        let key = hit["key"].as_str().unwrap().to_owned();
        match runs.last_mut() {
            Some((Some(last), run)) if score.is_some_and(|s| (s - *last).abs() < 1e-4) => {
                run.insert(key);
            }
            _ => runs.push((score, [key].into())),
        }
    }
    runs.into_iter().map(|(_, run)| run).collect()
}

#[test]
fn cli_the_sample_mail_written_by_format_3_answers_every_lookup_and_search_as_before() {
    let t = format3_sample_store();
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/3"), "{}", stdout(&out));
    assert_sample_as_before(&t);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
}

#[test]
fn cli_the_sample_mail_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = format3_sample_store();
    // Aborted at a random point of the conversion (77,017 keyword cells)...
    upgrade_aborted_after(&t, rng.below(77_000) as u64);
    // ...and killed at random moments.
    kill_upgrades(&t, &mut rng, 6, 150_000);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_sample_as_before(&t);
    assert_indexes_verify(&t);
}

#[test]
fn cli_a_store_upgraded_by_the_build_before_the_fix_has_its_indexes_repaired_on_open() {
    // The small fixture as `rowsearch upgrade` of commit 82a1b56 left it:
    // every index's runs moved into its main database as they were.
    let t = TestDir::new();
    std::fs::create_dir_all(t.data()).unwrap();
    let packed = std::fs::read(fixture("upgraded-by-82a1b56.mdb.zst")).unwrap();
    std::fs::write(t.data().join("data.mdb"), zstd::decode_all(packed.as_slice()).unwrap()).unwrap();
    let out = t.run(&["index", "lookup", "notes", "by_tag", "--eq", "red"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for index in ["mail.by_from", "mail.by_from_date", "notes.by_tag"] {
        assert!(stderr(&out).contains(&format!("repaired index {index}:")), "said so: {}", stderr(&out));
    }
    assert_eq!(stdout(&out).trim(), r#"{"key":"note1","values":["red"]}"#);
    assert_small_fixture_indexes(&t);
    // Repaired once: the next open has nothing to say.
    let out = t.run(&["index", "lookup", "notes", "by_tag", "--eq", "blue"]);
    assert!(!stderr(&out).contains("repaired"), "{}", stderr(&out));
    assert_lookups_as_before(&t);
}

#[test]
fn cli_the_sample_mail_written_by_format_5_answers_every_lookup_and_search_as_before() {
    let t = sample_store(Sample::Format5);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/5 to rowsearch-store/10"), "{}", stdout(&out));
    assert_answers_as_before(&t, Sample::Format5);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    // Writes after the upgrade go into pending keyword runs: a message
    // put and deleted again leaves every answer as it was.
    let key = r"badeer-r\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01zzzzzzzz";
    let out = t.run(&["put", "mail", key, "m:subject=zyzzyva pending run", "m:date=2001-05-01"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["keywords", "--user", "badeer-r", "zyzzyva"]);
    assert!(stdout(&out).contains("zzzzzzzz"), "the pending run answers: {} {}", stdout(&out), stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify with a run pending: {} {}", stdout(&out), stderr(&out));
    let out = t.run(&["delete", "mail", key]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format5);
}

#[test]
fn cli_the_sample_mail_written_by_format_4_answers_every_lookup_and_search_as_before() {
    let t = sample_store(Sample::Format4);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/4 to rowsearch-store/10"), "{}", stdout(&out));
    assert!(stderr(&out).contains("table mail, "), "progress names the table: {}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format4);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    // The blocks no longer hold row keys: the store's keyword rows are
    // smaller, and a repack shows it in the file.
    let out = t.run(&["repack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format4);
}

#[test]
fn cli_the_sample_mail_format_4_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = sample_store(Sample::Format4);
    // Aborted at a random point of the conversion...
    let cells = rng.below(FORMAT4_SAMPLE_CELLS as usize) as u64;
    upgrade_aborted_after_of(&t, cells, Some(FORMAT4_SAMPLE_CELLS));
    // ...and killed at random moments.
    kill_upgrades(&t, &mut rng, 6, 150_000);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format4);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
}

/// Lucene's ASCII folding for the letters the accented fixture writes (a
/// model of the analyzer's, kept small), and lowercase.
fn fold_model(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        match c {
            'à' | 'â' | 'ä' => out.push('a'),
            'é' | 'è' | 'ê' | 'ë' => out.push('e'),
            'î' | 'ï' => out.push('i'),
            'ô' | 'ö' | 'ø' => out.push('o'),
            'û' | 'ü' | 'ù' => out.push('u'),
            'ç' => out.push('c'),
            'ß' => out.push_str("ss"),
            'æ' => out.push_str("ae"),
            c => out.push(c),
        }
    }
    out
}

/// The rows of mailbox `user` whose subject, body, sender or recipients
/// hold `word` (folded) as a word: by reading every row.
fn rows_saying(t: &TestDir, user: &str, word: &str) -> std::collections::BTreeSet<String> {
    let out = t.run(&["scan", "mail", "--prefix-fields", &format!(r#"{{"user":"{user}"}}"#)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut found = std::collections::BTreeSet::new();
    for line in stdout(&out).lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let says = row["cells"].as_array().unwrap().iter().any(|c| {
            ["m:subject", "b:text", "m:from", "m:to"].contains(&c["column"].as_str().unwrap())
                && fold_model(c["value"].as_str().unwrap())
                    .split(|ch: char| !ch.is_alphanumeric())
                    .any(|w| w == word)
        });
        if says {
            found.insert(row["key"].as_str().unwrap().to_owned());
        }
    }
    found
}

/// The keys `rowsearch ARGS` prints: a search's hits (`--json`) or a
/// keyword lookup's lines.
fn keys_of(t: &TestDir, args: &[&str]) -> std::collections::BTreeSet<String> {
    let out = t.run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    if args[0] == "search" {
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
        answer["hits"].as_array().unwrap().iter().map(|h| h["key"].as_str().unwrap().to_owned()).collect()
    } else {
        text.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].as_str().unwrap().to_owned()
            })
            .collect()
    }
}

/// Accented words are found by their unaccented spelling and the other way
/// round, in the store's keyword rows and in the rebuilt index alike: each
/// word's rows equal those a model of the folding finds reading every row.
fn assert_accents_fold(t: &TestDir) {
    let pairs = [
        ("creme", "crème"),
        ("brulee", "BRÛLÉE"),
        ("zurich", "Zürich"),
        ("grusse", "grüße"),
        ("naive", "naïve"),
        ("reunion", "réunion"),
        ("facade", "façade"),
        ("aero", "Ærø"),
    ];
    for (plain, accented) in pairs {
        let expected = rows_saying(t, "dupont-j", plain);
        assert!(!expected.is_empty(), "the fixture says {plain}");
        for word in [plain, accented] {
            let search = ["search", word, "--user", "dupont-j", "--json", "--limit", "100"];
            assert_eq!(keys_of(t, &search), expected, "search {word}");
            let lookup = ["keywords", "--user", "dupont-j", word];
            assert_eq!(keys_of(t, &lookup), expected, "keywords {word}");
        }
    }
    // Keyword fields fold too: the folder `boîte de réception`.
    let folder = keys_of(t, &["search", r#"folder:"boite de reception""#, "--json"]);
    assert_eq!(folder, keys_of(t, &["search", r#"folder:"Boîte de Réception""#, "--json"]));
    assert_eq!(folder.len(), 1, "{folder:?}");
}

#[test]
fn cli_the_sample_mail_written_by_format_6_answers_as_before_and_finds_accents_folded() {
    // Its keyword rows and index hold `crème` unfolded: the format 6 build
    // found only the plain-ASCII message for `creme` (the fixture's
    // README); any command of this build upgrades the store first.
    let t = sample_store(Sample::Format6);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/6 to rowsearch-store/10"), "{}", stdout(&out));
    assert!(stdout(&out).contains("rebuilt the search index of table mail"), "{}", stdout(&out));
    assert!(stderr(&out).contains("table mail, 292 rows analysed"), "progress: {}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format6);
    assert_accents_fold(&t);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    let out = t.run(&["upgrade"]);
    assert!(stdout(&out).contains("already rowsearch-store/10: nothing to do"), "{}", stdout(&out));
}

#[test]
fn cli_the_format_6_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = sample_store(Sample::Format6);
    // Aborted at a random row of the analysis (292 rows)...
    upgrade_aborted_after(&t, rng.below(292) as u64);
    // ...and killed at random moments: before, during, after the store's
    // commit (then during the index's rebuild).
    kill_upgrades(&t, &mut rng, 6, 600_000);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_answers_as_before(&t, Sample::Format6);
    assert_accents_fold(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
}

/// The keys of every row of `table`.
fn row_keys(t: &TestDir, table: &str) -> std::collections::BTreeSet<String> {
    let out = t.run(&["scan", table, "--keys-only"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn cli_mail_an_earlier_build_keyed_by_message_id_moves_to_content_keys_when_ingested_again() {
    // The format 5 build keyed a message by its Message-ID and kept each
    // copy apart; this build keys it by content and folds the copies.
    let mail = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/mail/maildir");
    let t = sample_store(Sample::Format5);
    let before = row_keys(&t, "mail");
    let fresh = TestDir::new();
    for store in [&t, &fresh] {
        let out = store.run(&["ingest", mail]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let after = row_keys(&t, "mail");
    assert_eq!(after, row_keys(&fresh, "mail"), "the rows a fresh store's ingest makes, no more");
    assert!(after.len() < before.len(), "copies folded: {} rows from {}", after.len(), before.len());
    assert!(before.is_disjoint(&after), "no row keyed by Message-ID is left");
    // Again: nothing changes.
    let out = t.run(&["ingest", mail]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(row_keys(&t, "mail"), after);
    // Searched as the fresh store is, conversations included.
    for store in [&t, &fresh] {
        let out = store.run(&["reindex"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    for args in [
        &["search", "enron", "--json", "--limit", "1000"][..],
        &["search", "gas price", "--user", "cuilla-m", "--json", "--limit", "1000"],
        &["search", "folder:inbox", "--json", "--limit", "1000"],
        &["search", "subject:re", "--collapse", "thread", "--json", "--limit", "1000"],
    ] {
        let answer = |store: &TestDir| -> (serde_json::Value, std::collections::BTreeSet<String>) {
            let out = store.run(args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            // Collapsed, a hit is its thread (with its matches): which of a
            // thread's messages of equal score stands for it follows each
            // index's document order.
            let keys = v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| match h.get("thread") {
                    Some(thread) => format!("{}/{}", thread["id"], thread["matched"]),
                    None => h["key"].as_str().unwrap().to_owned(),
                })
                .collect();
            (v["total"].clone(), keys)
        };
        let (total, keys) = answer(&t);
        assert!(!keys.is_empty(), "{args:?}");
        assert_eq!((total, keys), answer(&fresh), "{args:?}");
    }
}

#[test]
fn cli_the_sample_mail_written_by_format_7_keeps_its_conversations_and_its_keyword_cells() {
    // Format 8 keeps a thread member's row in its member entry: the
    // upgrade copies them in from the id entries, and nothing else (the
    // keyword cells stay; the search index is rebuilt only because its
    // `_all` kept positions, `cli::all_positions`).
    let t = sample_store(Sample::Format7);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/7 to rowsearch-store/10"), "{}", stdout(&out));
    assert!(stderr(&out).contains("table mail, 357 thread members"), "progress: {}", stderr(&out));
    // No row analysed again; the blocks only rewritten as format 10's.
    assert!(!stderr(&out).contains("rows analysed"), "no keyword cell is written again: {}", stderr(&out));
    assert!(stderr(&out).contains("keyword blocks"), "{}", stderr(&out));
    assert!(stdout(&out).contains("rebuilt the search index of table mail"), "{}", stdout(&out));
    assert_answers_as_before(&t, Sample::Format7);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    let out = t.run(&["upgrade"]);
    assert!(stdout(&out).contains("already rowsearch-store/10: nothing to do"), "{}", stdout(&out));
    // Threads go on growing after it: a late reply joins the chain.
    let reply = t.dir.path().join("late");
    std::fs::create_dir_all(reply.join("lee-r/inbox")).unwrap();
    std::fs::write(
        reply.join("lee-r/inbox/1."),
        "Message-ID: <plan.4@refs.example>\nDate: Tue, 5 Mar 2024 12:00:00 +0000\n\
         From: Robin Lee <robin.lee@refs.example>\nSubject: Re: Pipeline plan\n\
         In-Reply-To: <plan.3@refs.example>\nReferences: <plan.1@refs.example> <plan.3@refs.example>\n\n\
         Friday works.\n",
    )
    .unwrap();
    let out = t.run(&["ingest", reply.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["thread", "7297eaa59e806a5a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let view: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(view["count"], 4, "{view}");
    assert_eq!(view["messages"][3]["depth"], 3, "{view}");
}

#[test]
fn cli_the_format_7_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = sample_store(Sample::Format7);
    // Aborted once every member entry is written, before the commit...
    upgrade_aborted_after(&t, 1);
    // ...and killed at random moments.
    kill_upgrades(&t, &mut rng, 6, 300_000);
    finish_killed_upgrade(&t, Sample::Format7, seed);
}

#[test]
fn cli_the_sample_mail_written_by_format_8_answers_as_before_and_compresses_new_mail_with_a_dictionary() {
    // Format 9 only adds values made with a family's dictionary: the
    // upgrade marks the store, and every value reads as before.
    let t = sample_store(Sample::Format8);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/8 to rowsearch-store/10"), "{}", stdout(&out));
    // The index is rebuilt as its `_all` kept positions (`cli::all_positions`).
    assert!(stdout(&out).contains("rebuilt the search index of table mail"), "{}", stdout(&out));
    assert_answers_as_before(&t, Sample::Format8);
    assert_indexes_verify(&t);
    let before = stdout(&t.run(&["scan", "mail"]));
    // Mail ingested after it: its bodies take a dictionary trained from its
    // first batch; the rows written before read as they did.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let stats = |t: &TestDir| -> serde_json::Value {
        serde_json::from_str(&stdout(&t.run(&["stats", "mail"]))).unwrap()
    };
    assert_eq!(stats(&t)["dictionaries"], serde_json::json!([]));
    let out = t.run(&["ingest", fixture.to_str().unwrap(), "--user", "again", "--no-pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The body family's (format 8's mail table keeps its headers plain).
    assert_eq!(stats(&t)["dictionaries"], serde_json::json!(["b"]));
    let after = stdout(&t.run(&["scan", "mail"]));
    let old_rows: Vec<&str> = after.lines().filter(|l| !l.starts_with(r#"{"key":"again"#)).collect();
    assert_eq!(old_rows, before.lines().collect::<Vec<_>>());
    let again: Vec<String> = after
        .lines()
        .filter(|l| l.starts_with(r#"{"key":"again"#))
        .map(|l| {
            // The same messages as the fixture's first mailbox holds them:
            // the same cells but the mailbox's name.
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            serde_json::to_string(&v["cells"].as_array().unwrap().iter().find(|c| c["column"] == "b:text"))
                .unwrap()
        })
        .collect();
    assert!(again.len() > 256, "{} rows", again.len());
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    let out = t.run(&["search", "gas", "--user", "again", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["total"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn cli_the_format_8_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = sample_store(Sample::Format8);
    kill_upgrades(&t, &mut rng, 6, 300_000);
    finish_killed_upgrade(&t, Sample::Format8, seed);
}

#[test]
fn cli_the_sample_mail_written_by_format_9_answers_as_before_with_its_blocks_rewritten() {
    // Format 10 keeps keyword blocks' Δdates in seconds: every block and
    // pending run is rewritten, the rows stay (the search index is rebuilt
    // as its `_all` kept positions, `cli::all_positions`).
    let t = sample_store(Sample::Format9);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("from rowsearch-store/9 to rowsearch-store/10"), "{said}");
    assert!(stderr(&out).contains("keyword blocks"), "the blocks' progress is shown: {}", stderr(&out));
    assert!(!stderr(&out).contains("rows analysed"), "no row analysed again: {}", stderr(&out));
    assert!(said.contains("rebuilt the search index of table mail"), "{said}");
    assert_answers_as_before(&t, Sample::Format9);
    assert_indexes_verify(&t);
    let out = t.run(&["upgrade"]);
    assert!(stdout(&out).contains("already rowsearch-store/10: nothing to do"), "{}", stdout(&out));
    // Writes after it read the rewritten blocks and write new ones.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap(), "--user", "again", "--no-pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    assert!(!keys_of(&t, &["keywords", "--user", "again", "gas"]).is_empty());
}

#[test]
fn cli_the_format_9_upgrade_killed_at_random_points_still_answers_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = sample_store(Sample::Format9);
    kill_upgrades(&t, &mut rng, 6, 300_000);
    finish_killed_upgrade(&t, Sample::Format9, seed);
}

/// After upgrades killed or aborted: the next `upgrade` finishes, every
/// command answers what the build that wrote `sample` answered, and
/// `verify` is clean (`seed` named in failures).
fn finish_killed_upgrade(t: &TestDir, sample: Sample, seed: u64) {
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_answers_as_before(t, sample);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
}
