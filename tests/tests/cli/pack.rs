//! A store that packs itself: an ingest that leaves the store loose ends by
//! repacking it (when nothing else has it open), and the packed store
//! answers exactly what the unpacked one does; packs killed at random
//! points beside writers and readers in other processes (who wait for a
//! pack rather than fail) lose and change nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use rowsearch_tests::{TestDir, bin, stderr, stdout};

fn data_bytes(t: &TestDir) -> u64 {
    std::fs::metadata(t.data().join("data.mdb")).unwrap().len()
}

/// The sample mail (`../shared/corpus/sample.tar.zst`), unpacked into `dir`.
fn sample(dir: &Path) -> PathBuf {
    let archive = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/sample.tar.zst");
    let out = Command::new("tar").arg("--zstd").arg("-xf").arg(&archive).arg("-C").arg(dir).output().unwrap();
    assert!(out.status.success(), "tar {}: {}", archive.display(), stderr(&out));
    dir.join("mail")
}

/// What a store answers: searches (total, keys, scores), keyword lookups,
/// an index lookup and the table's rows.
fn answers(t: &TestDir) -> Vec<String> {
    let mut all = Vec::new();
    for q in ["gas", "power AND california", "\"natural gas\"", "subject:meeting", "enron -meeting"] {
        let out = t.run(&["search", q, "--json", "--limit", "20"]);
        assert!(out.status.success(), "{q}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        all.push(format!("{q}: {} {}", v["total"], serde_json::to_string(&v["hits"]).unwrap()));
    }
    for (user, term) in [("cash-m", "contract"), ("gay-r", "gas"), ("badeer-r", "price")] {
        let out = t.run(&["keywords", term, "--user", user]);
        assert!(out.status.success(), "{}", stderr(&out));
        all.push(stdout(&out));
    }
    let out = t.run(&["index", "lookup", "mail", "by_from", "--prefix", "a"]);
    all.push(stdout(&out));
    let out = t.run(&["scan", "mail"]);
    assert!(out.status.success(), "{}", stderr(&out));
    all.push(stdout(&out));
    all
}

#[test]
fn cli_an_ingest_packs_the_store_it_leaves_loose_and_it_answers_as_unpacked() {
    let corpus = tempfile::tempdir().unwrap();
    let mail = sample(corpus.path());
    let mail = mail.to_str().unwrap();
    let (packed, loose) = (TestDir::new(), TestDir::new());
    let out = packed.run(&["ingest", mail]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("packed the store: data.mdb"), "{}", stderr(&out));
    let out = loose.run(&["ingest", mail, "--no-pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("packed"), "{}", stderr(&out));
    let (packed_bytes, loose_bytes) = (data_bytes(&packed), data_bytes(&loose));
    assert!(packed_bytes * 100 < loose_bytes * 95, "packed {packed_bytes} bytes, loose {loose_bytes}");
    for t in [&packed, &loose] {
        let out = t.run(&["reindex", "--full"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(answers(&packed), answers(&loose));
    // Ingesting the same mail again adds nothing: the store stays tight,
    // and is not rewritten.
    let out = packed.run(&["ingest", mail]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("packed"), "{}", stderr(&out));
    // A server holding the store: the ingest beside it writes, and leaves
    // the pack for later, saying so.
    let server = packed.serve(&["serve"]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = packed.run(&["ingest", fixture.to_str().unwrap(), "--user", "fixture"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, _) = server.get_json("/health");
    assert_eq!(status, 200);
    assert!(server.terminate().success());
}

/// One write: the row `n` (of 5) gets the subject `packword{seq}x` and the
/// sender `writer{seq}@example.com` at timestamp `seq + 1`; `acked` once
/// the command answered.
#[derive(Debug, Clone)]
struct Write {
    n: u32,
    seq: u32,
    acked: bool,
}

impl Write {
    fn word(&self) -> String {
        format!("packword{}x", self.seq)
    }

    fn args(&self) -> Vec<String> {
        let date = 1_000_000_000_000u64 + u64::from(self.n) * 1000;
        vec![
            "put".into(),
            "mail".into(),
            "--key-fields".into(),
            format!(r#"{{"user":"packer","date":{date},"id":{}}}"#, self.n),
            format!("m:subject={} about packs", self.word()),
            format!("m:from=writer{}@example.com", self.seq),
            "--timestamp".into(),
            (self.seq + 1).to_string(),
        ]
    }

    fn get_args(&self) -> Vec<String> {
        let mut args = self.args();
        args.truncate(4);
        args[0] = "get".into();
        args
    }
}

fn run(data: &Path, args: &[String]) -> std::process::Output {
    Command::new(bin()).arg("--data").arg(data).args(args).output().unwrap()
}

/// Writers and readers in other processes while `rowsearch repack` runs
/// again and again, killed (`SIGKILL`) after `kills[i]` microseconds (0:
/// left to finish). Every acknowledged write is there afterwards, every
/// read saw the last acknowledged write of its row or a later one, and the
/// rows, keyword rows, indexes and searches equal those of the same writes
/// into a store never packed.
fn packs_beside_others(kills: &[u32], writes: u32) {
    let t = TestDir::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap(), "--no-pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let data = t.data();
    let done = Arc::new(AtomicBool::new(false));
    let log: Arc<Mutex<Vec<Write>>> = Arc::default();

    let writer = {
        let (data, log) = (data.clone(), log.clone());
        std::thread::spawn(move || {
            for seq in 0..writes {
                let write = Write { n: seq % 5, seq, acked: false };
                log.lock().unwrap().push(write.clone());
                let out = run(&data, &write.args());
                assert!(out.status.success(), "put {seq}: {}", stderr(&out));
                log.lock().unwrap()[seq as usize].acked = true;
            }
        })
    };
    let reader = {
        let (data, log, done) = (data.clone(), log.clone(), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !done.load(Ordering::Relaxed) {
                let n = reads % 5;
                // The row's writes from its last acknowledged one on: what
                // the read may see (later ones may land while it reads).
                let floor = {
                    let log = log.lock().unwrap();
                    log.iter().rposition(|w| w.n == n && w.acked)
                };
                let probe = Write { n, seq: 0, acked: false };
                let out = run(&data, &probe.get_args());
                let row = stdout(&out);
                let log = log.lock().unwrap();
                let allowed: Vec<String> =
                    log.iter().skip(floor.unwrap_or(0)).filter(|w| w.n == n).map(Write::word).collect();
                match floor {
                    Some(_) => {
                        assert!(out.status.success(), "get after an acknowledged write: {}", stderr(&out));
                        assert!(
                            allowed.iter().any(|w| row.contains(&format!("\"{w} about packs\""))),
                            "{row}"
                        );
                    }
                    None if out.status.success() => {
                        assert!(
                            allowed.iter().any(|w| row.contains(&format!("\"{w} about packs\""))),
                            "{row}"
                        );
                    }
                    None => assert!(stderr(&out).contains("row not found"), "{}", stderr(&out)),
                }
                reads += 1;
            }
            reads
        })
    };
    let mut packs = 0;
    for (i, &kill_us) in kills.iter().enumerate() {
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(&data)
            .arg("repack")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if kill_us > 0 {
            std::thread::sleep(Duration::from_micros(u64::from(kill_us)));
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        packs += usize::from(out.status.success());
        // Done, refused (another process has the store open) or killed.
        assert!(
            out.status.success() || out.status.code().is_none() || stderr(&out).contains("store in use"),
            "pack {i}: {}",
            stderr(&out)
        );
    }
    writer.join().unwrap();
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    // Finally packed alone, whatever the runs above did.
    let out = t.run(&["repack"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The same writes into a store never packed.
    let model = TestDir::new();
    let out = model.run(&["ingest", fixture.to_str().unwrap(), "--no-pack"]);
    assert!(out.status.success());
    let log = log.lock().unwrap().clone();
    for write in &log {
        assert!(write.acked);
        assert!(run(&model.data(), &write.args()).status.success());
    }
    for store in [&t, &model] {
        let out = store.run(&["reindex", "--full"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {}", stderr(&out));
    let look = |store: &TestDir| -> Vec<String> {
        let mut all = Vec::new();
        for write in log.iter().rev().take(5) {
            let out = store.run(&["keywords", &write.word(), "--user", "packer"]);
            assert_eq!(stdout(&out).lines().count(), 1, "{}: {}", write.word(), stdout(&out));
            all.push(stdout(&out));
        }
        for q in ["packs", "gas", "packword0x"] {
            let out = store.run(&["search", q, "--json", "--limit", "50"]);
            let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            all.push(format!("{q}: {} {}", v["total"], serde_json::to_string(&v["hits"]).unwrap()));
        }
        let out = store.run(&["index", "lookup", "mail", "by_from", "--prefix", "writer"]);
        all.push(stdout(&out));
        let out = store.run(&["scan", "mail"]);
        all.push(stdout(&out));
        all
    };
    assert_eq!(look(&t), look(&model), "kills {kills:?}, {packs} packs finished");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    #[test]
    fn cli_packs_killed_at_random_points_beside_writers_and_readers_lose_nothing(
        kills in proptest::collection::vec(prop_oneof![Just(0u32), 1_000u32..60_000], 6..10),
        writes in 10u32..25,
    ) {
        packs_beside_others(&kills, writes);
    }
}

#[test]
fn cli_an_upgrade_that_rewrote_the_keyword_blocks_packs_the_store_and_answers_as_before() {
    let corpus = tempfile::tempdir().unwrap();
    let mail = sample(corpus.path());
    let t = TestDir::new();
    for args in [&["ingest", mail.to_str().unwrap()][..], &["reindex", "--full"]] {
        let out = t.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let want = answers(&t);
    // The keyword blocks as format 9 wrote them (Δdates in milliseconds):
    // the upgrade rewrites every one, which leaves the file loose.
    rowsearch::indexer::open_store(t.data()).unwrap().write_format_9_for_tests().unwrap();
    let packed = data_bytes(&t);
    let out = t.run(&["upgrade"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from rowsearch-store/9"), "{}", stdout(&out));
    assert!(stderr(&out).contains("packed the store: data.mdb"), "{}", stderr(&out));
    assert!(data_bytes(&t) < packed, "smaller than format 9's: {} against {packed} bytes", data_bytes(&t));
    assert_eq!(answers(&t), want);
    let out = t.run(&["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
}
