//! A store written by the previous on-disk format (`rowsearch-store/3`,
//! one keyword cell per LMDB entry; `tests/fixtures/format3`) opens with
//! this build: its keyword cells are rewritten as blocks in the opening
//! transaction, lookups answer what the old build answered, and the store
//! then reindexes and verifies clean.

use std::process::{Command, Stdio};
use std::time::Duration;

use rowsearch_tests::{Rng, TestDir, bin, stderr, stdout};

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

/// Keyword cells of the fixture's mail table (what the upgrade reports).
const FIXTURE_CELLS: u64 = 6422;

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
    assert!(stdout(&out).contains("from rowsearch-store/3 to rowsearch-store/4"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("table mail, {FIXTURE_CELLS} keyword cells")),
        "progress names the table and its cells: {}",
        stderr(&out)
    );
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("already rowsearch-store/4"), "{}", stdout(&out));
    assert!(!stderr(&out).contains("upgrading"), "{}", stderr(&out));
    assert_lookups_as_before(&t);
}

/// Runs `rowsearch upgrade` aborting (as kill -9 would: no unwinding, no
/// commit) once `cells` keyword cells are rewritten.
fn upgrade_aborted_after(t: &TestDir, cells: u64) {
    let out = Command::new(bin())
        .arg("--data")
        .arg(t.data())
        .arg("upgrade")
        .env("ROWSEARCH_FAIL_UPGRADE_AFTER_CELLS", cells.to_string())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the fail point at {cells} cells fired: {}", stdout(&out));
    assert!(stderr(&out).contains("upgrading the store"), "{}", stderr(&out));
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
    }
    // At random moments: kill -9 of `upgrade` runs on one store, then the
    // store either still upgrades or is already upgraded, and answers as
    // before.
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("seed {seed}");
    let mut rng = Rng(seed);
    let t = format3_store();
    for _ in 0..12 {
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(t.data())
            .arg("upgrade")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A random moment: the kill may land before, during or after the
        // upgrade; whichever, what follows must hold.
        std::thread::sleep(Duration::from_micros(rng.below(40_000) as u64));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert_lookups_as_before(&t);
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "seed {seed}: verify: {} {}", stdout(&out), stderr(&out));
}
