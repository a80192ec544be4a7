//! A store written by the previous on-disk format (`rowsearch-store/3`,
//! one keyword cell per LMDB entry; `tests/fixtures/format3`) opens with
//! this build: its keyword cells are rewritten as blocks in the opening
//! transaction, lookups answer what the old build answered, and the store
//! then reindexes and verifies clean.

use rowsearch_tests::{TestDir, stderr, stdout};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/format3").join(name)
}

#[test]
fn cli_a_format_3_store_is_upgraded_on_open_and_answers_as_before() {
    let t = TestDir::new();
    std::fs::create_dir_all(t.data()).unwrap();
    let packed = std::fs::read(fixture("data.mdb.zst")).unwrap();
    let bytes = zstd::decode_all(packed.as_slice()).unwrap();
    std::fs::write(t.data().join("data.mdb"), bytes).unwrap();
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
    // The other table and its index came through too.
    let out = t.run(&["get", "notes", "note1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello"));
    let out = t.run(&["reindex", "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
}
