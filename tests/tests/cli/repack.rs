//! `rowsearch repack`: every database rewritten in key order with full
//! pages. The sample mail (as the format 3 build wrote it, upgraded)
//! answers every lookup and search as before after a repack, after repacks
//! killed at random points, and verifies clean; a repack is refused while
//! a server has the store open, and the server is untouched.

use rowsearch_tests::{Rng, TestDir, stderr, stdout, time_seed};

use super::upgrade::{assert_indexes_verify, assert_sample_as_before, format3_sample_store, kill_runs};

fn data_bytes(t: &TestDir) -> u64 {
    std::fs::metadata(t.data().join("data.mdb")).unwrap().len()
}

#[test]
fn cli_a_repack_killed_at_random_points_leaves_the_store_answering_as_before() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = format3_sample_store();
    // Left loose (`upgrade` alone packs what it rewrote).
    let out = t.run(&["upgrade", "--no-pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = data_bytes(&t);
    for _ in 0..8 {
        kill_runs(&t, "repack", &mut rng, 1, 30_000);
        // Whatever the moment, the store opens and answers as before.
        let out = t.run(&["tables"]);
        assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    }
    let out = t.run(&["repack"]);
    assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
    assert!(stdout(&out).contains("data.mdb"), "{}", stdout(&out));
    assert!(stderr(&out).contains("repacked t/mail/kb:"), "progress per database: {}", stderr(&out));
    assert!(!t.data().join("repack.tmp").try_exists().unwrap(), "no leftover");
    let after = data_bytes(&t);
    assert!(after < before, "the upgraded store's pages are refilled: {before} -> {after} bytes");
    assert_sample_as_before(&t);
    assert_indexes_verify(&t);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
}

#[test]
fn cli_a_repack_is_refused_while_a_server_has_the_store_open() {
    let t = format3_sample_store();
    let server = t.serve(&["serve"]);
    let before = std::fs::read(t.data().join("data.mdb")).unwrap();
    let out = t.run(&["repack"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("store in use"), "{}", stderr(&out));
    assert!(stderr(&out).contains("stop it and repack again"), "{}", stderr(&out));
    assert_eq!(std::fs::read(t.data().join("data.mdb")).unwrap(), before, "nothing was written");
    // The server still serves.
    let (status, body) = server.get_json("/health");
    assert_eq!(status, 200, "{body}");
    assert!(server.terminate().success());
    let out = t.run(&["repack"]);
    assert!(out.status.success(), "once the server stopped: {}", stderr(&out));
}

#[test]
fn cli_a_mail_table_an_earlier_build_made_takes_the_mail_display_at_the_next_ingest() {
    // The format 3 build made this mail table: its schema has no display,
    // so its searches' documents carry the bodies.
    let t = format3_sample_store();
    let out = t.run(&["display", "mail"]);
    assert_eq!(stdout(&out).trim(), "mail: documents carry every field", "{}", stderr(&out));
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The mail table's display, as far as this older table's documents
    // have its names (that build had no folder field).
    let out = t.run(&["display", "mail"]);
    assert_eq!(stdout(&out).trim(), "mail: documents carry subject, from, to, folder, user, date, thread");
    let out = t.run(&["search", "gas", "--json", "--limit", "1"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let document = v["hits"][0]["document"].as_object().unwrap();
    assert!(!document.contains_key("body") && document.contains_key("subject"), "{v}");
    // A display the operator chose is kept by later ingests.
    let out = t.run(&["display", "mail", "subject,body"]);
    assert!(out.status.success(), "{}", stderr(&out));
    t.run(&["ingest", fixture.to_str().unwrap()]);
    let out = t.run(&["display", "mail"]);
    assert_eq!(stdout(&out).trim(), "mail: documents carry subject, body");
}
