//! `rowsearch backup` and `rowsearch restore`: a backup taken while two
//! processes write holds exactly the writes acknowledged up to its
//! sequence; a backup killed at any moment never looks finished and the
//! next one starts clean; a partial, corrupt or newer-format backup is
//! refused and nothing is written.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rowsearch_tests::{Rng, TestDir, bin, stderr, stdout, time_seed};

/// The project's small Maildir fixture ingested and indexed.
fn indexed_mail() -> TestDir {
    let t = TestDir::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    t
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn run_on(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin()).arg("--data").arg(data).args(args).output().unwrap()
}

/// Hits of `query` in the mail table of the store at `data`.
fn total(data: &Path, query: &str) -> u64 {
    let out = run_on(data, &["search", query, "--json", "--limit", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["total"].as_u64().unwrap_or_else(|| panic!("{v}"))
}

/// The `id`s of the rows of mailbox `user` in the store at `data`.
fn ids(data: &Path, user: &str) -> Vec<u64> {
    let prefix = format!(r#"{{"user":"{user}"}}"#);
    let out = run_on(data, &["scan", "mail", "--prefix-fields", &prefix, "--keys-only"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ids: Vec<u64> = stdout(&out)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["key_fields"]["id"].as_u64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn cli_a_backup_taken_under_writes_from_two_processes_restores_exactly_the_writes_up_to_its_sequence() {
    let t = indexed_mail();
    let fixture_hits = total(&t.data(), "gas");
    let server = t.serve(&["serve"]);
    let stop = AtomicBool::new(false);
    let written = [AtomicUsize::new(0), AtomicUsize::new(0)];
    // Until each writer has acknowledged `n` more writes than `from`.
    let wait_for = |from: [usize; 2], n: usize| {
        while written.iter().zip(from).any(|(w, f)| w.load(Ordering::SeqCst) < f + n) {
            std::thread::yield_now();
        }
    };
    // Writes acknowledged (id, seq): over HTTP (the server's process) and
    // through the library (this process), at once.
    let (http_acks, library_acks) = std::thread::scope(|scope| {
        let http = scope.spawn(|| {
            let mut acks = Vec::new();
            for id in 1u64.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let fields = format!(r#"{{"user":"writer-http","date":1000000000000,"id":{id}}}"#);
                let fields: String = url::form_urlencoded::byte_serialize(fields.as_bytes()).collect();
                let body =
                    format!(r#"{{"cells":[{{"column":"m:subject","value":"backupword http {id}"}}]}}"#);
                let (status, answer) =
                    server.request("PUT", &format!("/tables/mail/rows?key_fields={fields}"), Some(&body));
                assert_eq!(status, 200, "{answer}");
                let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
                acks.push((id, v["seq"].as_u64().unwrap()));
                written[0].fetch_add(1, Ordering::SeqCst);
            }
            acks
        });
        let library = scope.spawn(|| {
            let store = rowsearch::indexer::open_store(t.data()).unwrap();
            let key = store.schema("mail").unwrap().row_key.unwrap();
            let mut acks = Vec::new();
            for id in 1u64.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let fields =
                    serde_json::json!({"user": "writer-lib", "date": 1_000_000_000_000u64, "id": id});
                let row = key.encode_json(&fields).unwrap();
                let cell = rowsearch::store::PutCell::new(
                    "m",
                    b"subject",
                    format!("backupword lib {id}").into_bytes(),
                );
                let info = store.put("mail", &row, vec![cell]).unwrap();
                acks.push((id, info.last_seq.unwrap()));
                written[1].fetch_add(1, Ordering::SeqCst);
            }
            acks
        });
        // Writes before, during and after the backup.
        wait_for([0, 0], 20);
        let out = t.run(&["backup", t.dir.path().join("b").to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        wait_for(written.each_ref().map(|w| w.load(Ordering::SeqCst)), 20);
        stop.store(true, Ordering::Relaxed);
        (http.join().unwrap(), library.join().unwrap())
    });
    assert!(server.terminate().success());
    let backup = t.dir.path().join("b");
    let sequence = manifest(&backup)["sequence"].as_u64().unwrap();
    let before = |acks: &[(u64, u64)]| {
        acks.iter().filter(|(_, seq)| *seq <= sequence).map(|(id, _)| *id).collect::<Vec<_>>()
    };
    let (http_before, library_before) = (before(&http_acks), before(&library_acks));
    // The backup came in the middle of both writers' runs.
    assert!(!http_before.is_empty() && http_before.len() < http_acks.len(), "{sequence} {http_acks:?}");
    assert!(!library_before.is_empty() && library_before.len() < library_acks.len(), "{sequence}");

    let restored = t.dir.path().join("restored");
    let out = run_on(&restored, &["restore", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["sequence"].as_u64(), Some(sequence), "{report}");
    // Exactly the acknowledged writes up to the sequence, every one.
    assert_eq!(ids(&restored, "writer-http"), http_before);
    assert_eq!(ids(&restored, "writer-lib"), library_before);
    // Searches answer as the source did at that sequence: the fixture's
    // hits and every backed-up write (the index catches up from the
    // restored change feed).
    assert_eq!(total(&restored, "backupword"), (http_before.len() + library_before.len()) as u64);
    assert_eq!(total(&restored, "gas"), fixture_hits);
    let out = run_on(&restored, &["verify"]);
    assert!(out.status.success(), "verify: {} {}", stdout(&out), stderr(&out));
    let out = run_on(&restored, &["keys", "list"]);
    assert!(out.status.success() || stderr(&out).contains("keys"), "{}", stderr(&out));
}

#[test]
fn cli_a_backup_killed_at_any_moment_never_looks_finished_and_the_next_one_starts_clean() {
    let seed = time_seed();
    let mut rng = Rng(seed);
    let t = indexed_mail();
    let full = t.dir.path().join("full");
    let out = t.run(&["backup", full.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits = total(&t.data(), "gas");
    for round in 0..6 {
        let dest = t.dir.path().join(format!("b{round}"));
        let mut child = Command::new(bin())
            .arg("--data")
            .arg(t.data())
            .arg("backup")
            .arg(&dest)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(35_000) as u64));
        child.kill().unwrap();
        let finished = child.wait().unwrap().success();
        let restored = t.dir.path().join(format!("r{round}"));
        let out = run_on(&restored, &["restore", dest.to_str().unwrap()]);
        if dest.join("manifest.json").try_exists().unwrap() {
            // Finished before the kill: a whole backup.
            assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
            assert_eq!(total(&restored, "gas"), hits);
        } else {
            assert!(!finished, "seed {seed}: a backup that exited 0 has a manifest");
            assert_eq!(out.status.code(), Some(2), "seed {seed}: {}", stderr(&out));
            let said = stderr(&out);
            assert!(said.contains("did not finish") || said.contains("not a rowsearch backup"), "{said}");
            assert!(!restored.try_exists().unwrap(), "seed {seed}: nothing written on a refusal");
            // The next backup into the same place clears it and finishes.
            let out = t.run(&["backup", dest.to_str().unwrap()]);
            assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
            let out = run_on(&restored, &["restore", dest.to_str().unwrap()]);
            assert!(out.status.success(), "seed {seed}: {}", stderr(&out));
            assert_eq!(total(&restored, "gas"), hits);
        }
        let out = run_on(&restored, &["verify"]);
        assert!(out.status.success(), "seed {seed}: {}", stdout(&out));
    }
}

#[test]
fn cli_a_restore_refuses_partial_corrupt_newer_and_occupied_and_writes_nothing() {
    let t = indexed_mail();
    let good = t.dir.path().join("good");
    let out = t.run(&["backup", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let copy = |name: &str| {
        let dest = t.dir.path().join(name);
        let out = Command::new("cp").arg("-r").arg(&good).arg(&dest).output().unwrap();
        assert!(out.status.success());
        dest
    };
    let refused = |src: &Path, want: &str| {
        let target = t.dir.path().join("target");
        let out = run_on(&target, &["restore", src.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}: {}", src.display(), stderr(&out));
        assert!(stderr(&out).contains(want), "{}: {}", src.display(), stderr(&out));
        assert!(!target.try_exists().unwrap(), "nothing written for {}", src.display());
        let parent: Vec<_> =
            std::fs::read_dir(t.dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(!parent.iter().any(|n| n.to_string_lossy().contains("restoring")), "{parent:?}");
    };
    // One byte changed in the store's file.
    let corrupt = copy("corrupt");
    let mut bytes = std::fs::read(corrupt.join("data.mdb")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(corrupt.join("data.mdb"), bytes).unwrap();
    refused(&corrupt, "is corrupt: data.mdb");
    // An index file cut short.
    let short = copy("short");
    let m = manifest(&short);
    let index_file = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(".idx"))
        .unwrap();
    let path = short.join(index_file["path"].as_str().unwrap());
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 1).unwrap();
    refused(&short, "is corrupt");
    // A file missing.
    let missing = copy("missing");
    std::fs::remove_file(missing.join("data.mdb")).unwrap();
    refused(&missing, "is missing data.mdb");
    // No manifest: not finished.
    let partial = copy("partial");
    std::fs::remove_file(partial.join("manifest.json")).unwrap();
    std::fs::write(partial.join("backup.partial"), "").unwrap();
    refused(&partial, "did not finish");
    // A newer build's format.
    let newer = copy("newer");
    let text = std::fs::read_to_string(newer.join("manifest.json")).unwrap();
    let format = rowsearch::store::FORMAT;
    let next: u32 = format.rsplit('/').next().unwrap().parse().unwrap();
    std::fs::write(
        newer.join("manifest.json"),
        text.replace(format, &format!("rowsearch-store/{}", next + 1)),
    )
    .unwrap();
    refused(&newer, "a newer build wrote it");
    // A manifest naming a file outside the backup.
    let escape = copy("escape");
    let text = std::fs::read_to_string(escape.join("manifest.json")).unwrap();
    std::fs::write(escape.join("manifest.json"), text.replacen("\"data.mdb\"", "\"../good/data.mdb\"", 1))
        .unwrap();
    refused(&escape, "outside the backup");
    // A manifest that lists no data.mdb (its file there or not): nothing
    // is left at the target.
    let no_store = copy("no-store");
    let mut m = manifest(&no_store);
    m["files"].as_array_mut().unwrap().retain(|f| f["path"] != "data.mdb");
    std::fs::write(no_store.join("manifest.json"), m.to_string()).unwrap();
    refused(&no_store, "lists no data.mdb");
    // A file is no place to restore into: a usage error (2), the file kept.
    let file = t.dir.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    let out = run_on(&file, &["restore", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a file"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // A target that holds something is left alone.
    let out = run_on(&t.data(), &["restore", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is not empty"), "{}", stderr(&out));
    // A backup is refused where one is already, or inside the store.
    let out = t.run(&["backup", good.to_str().unwrap()]);
    assert!(stderr(&out).contains("already holds a finished backup"), "{}", stderr(&out));
    let inside = t.data().join("backup");
    let out = t.run(&["backup", inside.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!inside.try_exists().unwrap(), "nothing made inside the store");
    // And the good one restores.
    let target = t.dir.path().join("target");
    let out = run_on(&target, &["restore", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Polls `/jobs/{id}` until it is done or failed (at most a minute).
fn finished_job(server: &rowsearch_tests::Server, id: &str) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, state) = server.get_json(&format!("/jobs/{id}"));
        if state["state"] == "done" || state["state"] == "failed" || std::time::Instant::now() > deadline {
            return state;
        }
        std::thread::yield_now();
    }
}

#[test]
fn http_backups_are_jobs_into_the_backup_dir_and_scheduled_ones_keep_the_newest() {
    let t = indexed_mail();
    let hits = total(&t.data(), "gas");
    // Without --backup-dir the server takes none, and says how.
    let server = t.serve(&["serve"]);
    let (status, body) = server.request("POST", "/backups", None);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("no_backup_dir") && body.contains("--backup-dir"), "{body}");
    assert!(server.terminate().success());
    // --backup-dir inside --data is refused at the start.
    let out = t.run(&["serve", "--backup-dir", t.data().join("b").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("lies inside --data"), "{}", stderr(&out));

    let dir = t.dir.path().join("backups");
    let server = t.serve(&["serve", "--backup-dir", dir.to_str().unwrap(), "--backup-keep", "2"]);
    let mut names = Vec::new();
    for _ in 0..3 {
        let (status, body) = server.request("POST", "/backups", None);
        assert_eq!(status, 202, "{body}");
        let job: serde_json::Value = serde_json::from_str(&body).unwrap();
        let state = finished_job(&server, job["job"].as_str().unwrap());
        assert_eq!(state["state"], "done", "{state}");
        assert_eq!(state["kind"], "backup", "{state}");
        names.push(state["report"]["backup"].as_str().unwrap().to_owned());
    }
    let (status, list) = server.get_json("/backups");
    assert_eq!(status, 200, "{list}");
    let listed: Vec<&str> =
        list["backups"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    // --backup-keep 2: the two newest, complete, oldest first.
    assert_eq!(listed, names[1..].iter().map(String::as_str).collect::<Vec<_>>(), "{list}");
    assert!(list["backups"].as_array().unwrap().iter().all(|b| b["complete"] == true), "{list}");
    assert!(server.terminate().success());
    let restored = t.dir.path().join("restored");
    let out = run_on(&restored, &["restore", dir.join(&names[2]).to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(total(&restored, "gas"), hits);

    // Scheduled: every second, the newest two kept.
    let server = t.serve(&[
        "serve",
        "--backup-dir",
        dir.to_str().unwrap(),
        "--backup-every",
        "1s",
        "--backup-keep",
        "2",
    ]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, list) = server.get_json("/backups");
        let listed: Vec<String> = list["backups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap().to_owned())
            .collect();
        // Both earlier backups replaced by scheduled ones.
        if listed.len() == 2 && listed.iter().all(|n| !names.contains(n)) {
            break;
        }
        assert!(listed.len() <= 3, "never more than keep (and one being written): {listed:?}");
        assert!(std::time::Instant::now() < deadline, "no scheduled backups: {listed:?}");
        std::thread::yield_now();
    }
    assert!(server.terminate().success());
}

#[test]
fn cli_a_table_without_an_index_is_marked_in_the_backup_and_reindexed_by_the_restore() {
    let t = TestDir::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let backup = t.dir.path().join("b");
    let out = t.run(&["backup", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["tables_to_reindex"], serde_json::json!(["mail"]), "{report}");
    assert_eq!(manifest(&backup)["tables"][0]["generation"], serde_json::Value::Null);
    let restored = t.dir.path().join("restored");
    let out = run_on(&restored, &["restore", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["reindexed"], serde_json::json!(["mail"]), "{report}");
    // The restored store searches at once, as the source would once indexed.
    let out = t.run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(total(&restored, "gas"), total(&t.data(), "gas"));
    let out = run_on(&restored, &["verify"]);
    assert!(out.status.success(), "{}", stdout(&out));
}
