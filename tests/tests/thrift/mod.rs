//! HBase's Thrift API through the real binary (`serve --thrift`): rows
//! written over Thrift are searchable at once over HTTP, Thrift scans
//! with a filter equal HTTP's, counters from several clients lose no
//! increment, and the gateway refuses to open where it would be an open
//! door. happybase's own suite runs in `tests/thrift/happybase_suite.sh`.

mod client;
mod cluster;
mod cluster_search;
mod copy_table;
mod differential;
mod differential2;
mod doors;
mod feed_over_hbase;
mod hbase_client;
mod hbase_faults;
mod indexes_over_hbase;
mod java_client;
mod keyword_upgrade;
mod over_hbase;
mod over_hbase_routes;
mod over_hbase_sample;
mod replication;

use client::{A, Client, V};
use rowsearch_tests::{Server, TestDir, stderr};
use serde_json::{Value, json};

/// A server with the Thrift gateway on; its Thrift address.
fn thrift_server() -> (TestDir, Server, String) {
    let t = TestDir::new();
    let mut server = t.serve(&["serve", "--create", "--thrift", "127.0.0.1:0"]);
    let lines = server.read_lines(2);
    let thrift = lines
        .iter()
        .find_map(|l| l.strip_prefix("thrift listening on "))
        .unwrap_or_else(|| panic!("no thrift address in {lines:?}"))
        .to_owned();
    (t, server, thrift)
}

/// A server with the Thrift2 gateway on; its Thrift2 address.
pub(crate) fn thrift2_server() -> (TestDir, Server, String) {
    let t = TestDir::new();
    let mut server = t.serve(&["serve", "--create", "--thrift2", "127.0.0.1:0"]);
    let lines = server.read_lines(2);
    let thrift2 = lines
        .iter()
        .find_map(|l| l.strip_prefix("thrift2 listening on "))
        .unwrap_or_else(|| panic!("no thrift2 address in {lines:?}"))
        .to_owned();
    (t, server, thrift2)
}

/// The searchable `notes` table (family `n`, its `n:text` searched).
pub(crate) fn create_notes(s: &Server) {
    let schema = json!({"families": [{"name": "n"}],
        "search": {"fields": [{"column": "n:text", "name": "text", "type": "text"}]}});
    let (status, body) = s.request("PUT", "/tables/notes", Some(&schema.to_string()));
    assert_eq!(status, 201, "{body}");
}

fn put_cells(c: &mut Client, table: &str, row: &[u8], cells: &[(&str, &str)]) {
    let mutations = cells
        .iter()
        .map(|(column, value)| vec![(2, A::Bytes(column.as_bytes())), (3, A::Bytes(value.as_bytes()))])
        .collect();
    let reply = c
        .call("mutateRow", &[(1, A::Bytes(table.as_bytes())), (2, A::Bytes(row)), (3, A::Structs(mutations))])
        .unwrap();
    assert_eq!(reply, V::Struct(vec![]), "mutateRow answered an exception");
}

/// The values of a reply's list of `TCell`s.
fn cell_values(reply: &V) -> Vec<Vec<u8>> {
    reply.field(0).unwrap().items().iter().map(|cell| cell.field(1).unwrap().bytes().to_vec()).collect()
}

/// A scanned row: its key and its (column, value) cells.
type ScannedRow = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

/// Rows of a scanner opened with `scan` (a TScan's fields), read 2 at a
/// time: (key, [(column, value)]).
fn scan_rows(c: &mut Client, table: &str, scan: Vec<(i16, A)>) -> Vec<ScannedRow> {
    let id = c.call("scannerOpenWithScan", &[(1, A::Bytes(table.as_bytes())), (2, A::Struct(scan))]).unwrap();
    let Some(V::Int(id)) = id.field(0).cloned() else { panic!("scannerOpenWithScan: {id:?}") };
    let mut out = Vec::new();
    loop {
        let page = c.call("scannerGetList", &[(1, A::I32(id as i32)), (2, A::I32(2))]).unwrap();
        let rows = page.field(0).map(|v| v.items().to_vec()).unwrap_or_default();
        if rows.is_empty() {
            break;
        }
        for row in rows {
            let V::Map(columns) = row.field(2).cloned().unwrap_or(V::Map(vec![])) else { panic!() };
            let cells = columns
                .iter()
                .map(|(k, cell)| (k.bytes().to_vec(), cell.field(1).unwrap().bytes().to_vec()))
                .collect();
            out.push((row.field(1).unwrap().bytes().to_vec(), cells));
        }
    }
    assert_eq!(c.call("scannerClose", &[(1, A::I32(id as i32))]).unwrap(), V::Struct(vec![]));
    out
}

#[test]
fn thrift_writes_are_searchable_at_once_and_thrift_scans_equal_http_scans() {
    let (_t, s, thrift) = thrift_server();
    create_notes(&s);
    let mut c = Client::connect(&thrift);
    let tables = c.call("getTableNames", &[]).unwrap();
    assert_eq!(tables.field(0).map(|v| v.items().to_vec()), Some(vec![V::Bytes(b"notes".to_vec())]));
    for (i, text) in ["walrus season opens", "the walrus sleeps", "penguins only"].iter().enumerate() {
        put_cells(&mut c, "notes", format!("r{i}").as_bytes(), &[("n:text", text), ("n:tag", "t")]);
    }
    // Searchable at once (snapshot consistency), with no reindex run.
    let (status, v) = s.get_json("/tables/notes/search?q=walrus");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["total"], 2, "{v}");
    // And found by a keyword lookup, from the keyword rows the same write
    // made.
    let (status, v) = s.get_json("/tables/notes/keywords?terms=walrus");
    assert_eq!(status, 200, "{v}");
    let keys: Vec<&str> = v["keys"].as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(keys.iter().copied().collect::<std::collections::BTreeSet<_>>(), ["r0", "r1"].into(), "{v}");
    // A Thrift scan with a filter string equals the HTTP scan with it.
    let filter = "SingleColumnValueFilter('n', 'text', =, 'substring:walrus', true, true)";
    let over_thrift = scan_rows(&mut c, "notes", vec![(6, A::Bytes(filter.as_bytes()))]);
    let (status, v) = s.get_json(&format!("/tables/notes/scan?filter={}", url_encode(filter)));
    assert_eq!(status, 200, "{v}");
    let over_http: Vec<ScannedRow> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let cells = row["cells"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["column"].as_str().unwrap().as_bytes().to_vec(),
                        c["value"].as_str().unwrap().as_bytes().to_vec(),
                    )
                })
                .collect();
            (row["key"].as_str().unwrap().as_bytes().to_vec(), cells)
        })
        .collect();
    assert_eq!(over_thrift.len(), 2);
    assert_eq!(over_thrift, over_http);
    // The table's regions: the same over Thrift (TRegionInfo) and HTTP.
    let (status, v) = s.get_json("/tables/notes/regions");
    assert_eq!(status, 200, "{v}");
    let over_http = v["regions"].as_array().unwrap().clone();
    let over_thrift = c.call("getTableRegions", &[(1, A::Bytes(b"notes"))]).unwrap();
    let over_thrift = over_thrift.field(0).unwrap().items().to_vec();
    assert!(!over_http.is_empty());
    assert_eq!(over_thrift.len(), over_http.len());
    for (t, h) in over_thrift.iter().zip(&over_http) {
        assert_eq!(t.field(1).unwrap().bytes(), h["start"].as_str().unwrap_or("").as_bytes(), "{h}");
        assert_eq!(t.field(2).unwrap().bytes(), h["end"].as_str().unwrap_or("").as_bytes(), "{h}");
        assert_eq!(t.field(3), Some(&V::Int(h["index"].as_i64().unwrap())), "{h}");
    }
    // getRowOrBefore: the row at or else before the one asked.
    let before = |c: &mut Client, row: &'static [u8]| {
        let reply = c
            .call("getRowOrBefore", &[(1, A::Bytes(b"notes")), (2, A::Bytes(row)), (3, A::Bytes(b"n"))])
            .unwrap();
        cell_values(&reply)
    };
    assert_eq!(before(&mut c, b"r1"), vec![b"t".to_vec(), b"the walrus sleeps".to_vec()]);
    assert_eq!(before(&mut c, b"r1x"), vec![b"t".to_vec(), b"the walrus sleeps".to_vec()]);
    assert_eq!(before(&mut c, b"a"), Vec::<Vec<u8>>::new());
    // Deleted over Thrift: gone from the search at once.
    let reply = c.call("deleteAllRow", &[(1, A::Bytes(b"notes")), (2, A::Bytes(b"r0"))]).unwrap();
    assert_eq!(reply, V::Struct(vec![]));
    assert_eq!(s.get_json("/tables/notes/search?q=walrus").1["total"], 1);
    // A bad filter is HBase's IOError naming the position; an unknown
    // method a TApplicationException; neither closes the connection.
    let bad = c.call(
        "scannerOpenWithScan",
        &[(1, A::Bytes(b"notes")), (2, A::Struct(vec![(6, A::Bytes(b"PrefixFilter("))]))],
    );
    let io = bad
        .unwrap()
        .field(1)
        .and_then(|e| e.field(1))
        .map(|m| String::from_utf8_lossy(m.bytes()).into_owned());
    assert!(io.as_deref().is_some_and(|m| m.contains("byte")), "{io:?}");
    let unknown = c.call("getRegionInfoz", &[(1, A::Bytes(b"x"))]).unwrap_err();
    assert!(unknown.contains("getRegionInfoz"), "{unknown}");
    assert!(c.call("getTableNames", &[]).is_ok());
    // Counted per method and outcome; a method it does not serve is
    // "unknown" (clients' names do not grow the label set).
    let (status, metrics) = s.request("GET", "/metrics", None);
    assert_eq!(status, 200);
    for line in [
        r#"rowsearch_thrift_calls_total{method="mutateRow",outcome="ok"} 3"#,
        r#"rowsearch_thrift_calls_total{method="getTableNames",outcome="ok"} 2"#,
        r#"rowsearch_thrift_calls_total{method="scannerOpenWithScan",outcome="io_error"} 1"#,
        r#"rowsearch_thrift_calls_total{method="unknown",outcome="application"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} not in /metrics:\n{metrics}");
    }
    assert!(!metrics.contains("getRegionInfoz"), "{metrics}");
}

/// HBase's disable and enable are the store's: a table disabled over
/// Thrift refuses reads, writes and searches over HTTP too (409
/// `table_disabled`), one disabled over HTTP is disabled over Thrift, and
/// HBase's delete takes only a disabled table.
#[test]
fn a_disabled_table_refuses_rows_over_thrift_and_http_alike() {
    let (_t, s, thrift) = thrift_server();
    create_notes(&s);
    let mut c = Client::connect(&thrift);
    put_cells(&mut c, "notes", b"r0", &[("n:text", "walrus")]);
    let enabled =
        |c: &mut Client| c.call("isTableEnabled", &[(1, A::Bytes(b"notes"))]).unwrap().field(0).cloned();
    let io_error = |reply: V| {
        let message =
            reply.field(1).and_then(|e| e.field(1)).map(|m| String::from_utf8_lossy(m.bytes()).into_owned());
        message.unwrap_or_else(|| panic!("no IOError in {reply:?}"))
    };
    assert_eq!(enabled(&mut c), Some(V::Bool(true)));
    let refused = io_error(c.call("deleteTable", &[(1, A::Bytes(b"notes"))]).unwrap());
    assert!(refused.contains("TableNotDisabledException"), "{refused}");

    assert_eq!(c.call("disableTable", &[(1, A::Bytes(b"notes"))]).unwrap(), V::Struct(vec![]));
    assert_eq!(enabled(&mut c), Some(V::Bool(false)));
    for (method, path, body) in [
        ("GET", "/tables/notes/rows/r0", None),
        ("GET", "/tables/notes/scan", None),
        ("GET", "/tables/notes/search?q=walrus", None),
        ("GET", "/tables/notes/search?q=nothinglikethis", None),
        ("PUT", "/tables/notes/rows/r1", Some(r#"{"cells":[{"column":"n:text","value":"x"}]}"#)),
    ] {
        let (status, v) = s.request(method, path, body);
        assert_eq!(status, 409, "{method} {path}: {v}");
        assert!(v.contains("table_disabled"), "{method} {path}: {v}");
    }
    let (status, v) = s.get_json("/tables/notes");
    assert_eq!((status, &v["enabled"], &v["stats"]["rows"]), (200, &json!(false), &Value::Null), "{v}");
    let refused = c.call("getRow", &[(1, A::Bytes(b"notes")), (2, A::Bytes(b"r0"))]).unwrap();
    assert!(io_error(refused).contains("TableNotEnabledException"));

    // Enabled over HTTP: Thrift sees it, and the rows are as they were.
    let (status, v) = s.request("POST", "/tables/notes/enable", None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(enabled(&mut c), Some(V::Bool(true)));
    assert_eq!(s.get_json("/tables/notes/search?q=walrus").1["total"], 1);
    let (status, v) = s.request("POST", "/tables/notes/disable", None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(c.call("deleteTable", &[(1, A::Bytes(b"notes"))]).unwrap(), V::Struct(vec![]));
    assert_eq!(s.get_json("/tables/notes").0, 404);
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// Four clients incrementing one counter at once lose no increment.
#[test]
fn thrift_counters_from_several_clients_lose_no_increment() {
    let (_t, s, thrift) = thrift_server();
    let (status, body) = s.request("PUT", "/tables/c", Some(r#"{"families":[{"name":"f"}]}"#));
    assert_eq!(status, 201, "{body}");
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let thrift = thrift.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&thrift);
                for _ in 0..25 {
                    let reply = c
                        .call(
                            "atomicIncrement",
                            &[
                                (1, A::Bytes(b"c")),
                                (2, A::Bytes(b"hits")),
                                (3, A::Bytes(b"f:n")),
                                (4, A::I64(3)),
                            ],
                        )
                        .unwrap();
                    assert!(matches!(reply.field(0), Some(V::Int(_))), "{reply:?}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let mut c = Client::connect(&thrift);
    let reply = c
        .call(
            "atomicIncrement",
            &[(1, A::Bytes(b"c")), (2, A::Bytes(b"hits")), (3, A::Bytes(b"f:n")), (4, A::I64(0))],
        )
        .unwrap();
    assert_eq!(reply.field(0), Some(&V::Int(300)));
    // checkAndPut: applied only while the column holds the value expected
    // (absent: the column must hold none); append: onto the newest value.
    let put_tag = |value: &'static [u8]| A::Struct(vec![(2, A::Bytes(b"f:tag")), (3, A::Bytes(value))]);
    let check = |c: &mut Client, expected: Option<&'static [u8]>, value: &'static [u8]| {
        let mut args =
            vec![(1, A::Bytes(b"c")), (2, A::Bytes(b"r")), (3, A::Bytes(b"f:tag")), (6, put_tag(value))];
        if let Some(e) = expected {
            args.push((5, A::Bytes(e)));
        }
        c.call("checkAndPut", &args).unwrap().field(0).cloned()
    };
    assert_eq!(check(&mut c, None, b"one"), Some(V::Bool(true)));
    assert_eq!(check(&mut c, None, b"two"), Some(V::Bool(false)));
    assert_eq!(check(&mut c, Some(b"nope"), b"two"), Some(V::Bool(false)));
    assert_eq!(check(&mut c, Some(b"one"), b"two"), Some(V::Bool(true)));
    let appended = c
        .call(
            "append",
            &[(1, A::Struct(vec![(1, A::Bytes(b"c")), (2, A::Bytes(b"r")), (3, A::Structs(vec![]))]))],
        )
        .unwrap();
    assert!(appended.field(1).is_some(), "an append without columns is an IOError: {appended:?}");
    let append = |c: &mut Client, suffix: &'static [u8]| {
        let reply = c
            .call(
                "append",
                &[(
                    1,
                    A::Struct(vec![
                        (1, A::Bytes(b"c")),
                        (2, A::Bytes(b"r")),
                        (3, A::BytesList(vec![b"f:tag", b"f:log"])),
                        (4, A::BytesList(vec![suffix, suffix])),
                    ]),
                )],
            )
            .unwrap();
        cell_values(&reply)
    };
    assert_eq!(append(&mut c, b"+a"), vec![b"two+a".to_vec(), b"+a".to_vec()]);
    assert_eq!(append(&mut c, b"+b"), vec![b"two+a+b".to_vec(), b"+a+b".to_vec()]);
    let (_, row) = s.get_json("/tables/c/rows/r");
    assert_eq!(row["cells"][1]["value"], "two+a+b", "{row}");
    // The counter is 8 big-endian bytes over HTTP too.
    let (_, v): (u16, Value) = s.get_json("/tables/c/rows/hits?encoding=hex");
    assert_eq!(v["cells"][0]["value"], "000000000000012c", "{v}");
}

/// No authentication, so: loopback only, and never beside a master key.
#[test]
fn thrift_refuses_to_open_where_it_would_be_an_open_door() {
    let t = TestDir::new();
    let out = t.run(&["serve", "--create", "--listen", "127.0.0.1:0", "--thrift", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("loopback only"), "{}", stderr(&out));
    let out = t.run(&[
        "serve",
        "--create",
        "--listen",
        "127.0.0.1:0",
        "--thrift",
        "127.0.0.1:0",
        "--master-key",
        "0123456789abcdef0123",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no authentication"), "{}", stderr(&out));
    // Thrift2 alike; and with the explicit flag, the network is allowed,
    // with a warning (but never beside a master key).
    let out = t.run(&["serve", "--create", "--listen", "127.0.0.1:0", "--thrift2", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--thrift-open-network"), "{}", stderr(&out));
    let open = TestDir::new();
    let mut server = open.serve(&["serve", "--create", "--thrift2", "0.0.0.0:0", "--thrift-open-network"]);
    let lines = server.read_lines(2);
    assert!(lines.iter().any(|l| l.starts_with("thrift2 listening on 0.0.0.0:")), "{lines:?}");
    drop(server);
    let out = t.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--thrift",
        "0.0.0.0:0",
        "--thrift-open-network",
        "--master-key",
        "0123456789abcdef0123",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// kill -9 of the server while four clients write batches at once
/// (`mutateRows`, 20 rows each; their commits are shared, the group
/// commit): every batch a client had acknowledged is there whole after a
/// restart, and the one each had in flight is there whole or not at all.
#[test]
fn thrift_kill_9_during_batches_loses_no_acknowledged_batch() {
    kill_9_during_batches(&[]);
}

/// The same with `--durability process` and no background sync in the
/// test's time: an acknowledged batch is in the page cache, which a killed
/// process does not take with it.
#[test]
fn thrift_kill_9_with_process_durability_loses_no_acknowledged_batch() {
    kill_9_during_batches(&["--durability", "process", "--sync-interval-ms", "3600000"]);
}

fn kill_9_during_batches(durability: &[&str]) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let t = TestDir::new();
    let out = t.run(&["create-table", "k", "--schema", r#"{"families":[{"name":"f"}]}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    const ROWS: usize = 20;
    const CLIENTS: usize = 4;
    let mut rng = rowsearch_tests::Rng(0x5eed_u64 | 1);
    for round in 0..4 {
        let mut server = t.serve(&[&["serve", "--thrift", "127.0.0.1:0"], durability].concat());
        let thrift = server
            .read_lines(2)
            .iter()
            .find_map(|l| l.strip_prefix("thrift listening on ").map(str::to_owned))
            .expect("thrift address");
        let acked: Arc<Vec<AtomicUsize>> = Arc::new((0..CLIENTS).map(|_| AtomicUsize::new(0)).collect());
        let writers: Vec<_> = (0..CLIENTS)
            .map(|w| {
                let acked = Arc::clone(&acked);
                let thrift = thrift.clone();
                std::thread::spawn(move || {
                    let mut c = Client::connect(&thrift);
                    for n in 1.. {
                        let keys: Vec<String> =
                            (0..ROWS).map(|i| format!("b{round}-{w}-{n:06}-{i:02}")).collect();
                        let batches = keys
                            .iter()
                            .map(|k| {
                                vec![
                                    (1, A::Bytes(k.as_bytes())),
                                    (
                                        2,
                                        A::Structs(vec![vec![
                                            (2, A::Bytes(b"f:v")),
                                            (3, A::Bytes(k.as_bytes())),
                                        ]]),
                                    ),
                                ]
                            })
                            .collect();
                        match c.try_call("mutateRows", &[(1, A::Bytes(b"k")), (2, A::Structs(batches))]) {
                            Some(Ok(reply)) if reply == V::Struct(vec![]) => {
                                acked[w].store(n, Ordering::SeqCst)
                            }
                            Some(other) => panic!("mutateRows: {other:?}"),
                            None => return,
                        }
                    }
                })
            })
            .collect();
        // Let some batches land, then kill at a random moment.
        while acked.iter().any(|a| a.load(Ordering::SeqCst) < 3) {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_micros(rng.next_u64() % 20_000));
        let status = std::process::Command::new("kill").args(["-9", &server.pid().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()));
        for w in writers {
            w.join().expect("writer");
        }
        drop(server);
        let out = t.run(&["scan", "k", "--prefix", &format!("b{round}-"), "--keys-only"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let mut per_batch = std::collections::BTreeMap::<(usize, usize), usize>::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let row: Value = serde_json::from_str(line).unwrap();
            let key = row["key"].as_str().unwrap();
            let mut parts = key.split('-').skip(1);
            let w: usize = parts.next().unwrap().parse().unwrap();
            let n: usize = parts.next().unwrap().parse().unwrap();
            *per_batch.entry((w, n)).or_default() += 1;
        }
        for (w, acked) in acked.iter().enumerate() {
            let acked = acked.load(Ordering::SeqCst);
            for n in 1..=acked {
                let rows = per_batch.get(&(w, n));
                assert_eq!(rows, Some(&ROWS), "round {round}: client {w}'s acknowledged batch {n} lost rows");
            }
            for ((_, n), rows) in per_batch.iter().filter(|((pw, _), _)| *pw == w) {
                assert!(*n <= acked + 1, "round {round}: client {w}'s batch {n} was never sent");
                assert_eq!(*rows, ROWS, "round {round}: client {w}'s batch {n} is there in part");
            }
        }
    }
}

/// A gauge's value in `/metrics`.
fn metric(s: &Server, name: &str) -> u64 {
    let (status, text) = s.request("GET", "/metrics", None);
    assert_eq!(status, 200);
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

/// With `--durability process`, a Thrift2 put is answered from the page
/// cache (its commit counted as unsynced), and a put asking HBase's
/// `FSYNC_WAL` (TPut field 6 = 4) is on disk before its answer, as is every
/// commit before it.
#[test]
fn thrift2_fsync_wal_is_synced_before_the_answer_with_process_durability() {
    let t = TestDir::new();
    let mut server = t.serve(&[
        "serve",
        "--create",
        "--thrift2",
        "127.0.0.1:0",
        "--durability",
        "process",
        "--sync-interval-ms",
        "3600000",
    ]);
    let thrift2 = server
        .read_lines(2)
        .iter()
        .find_map(|l| l.strip_prefix("thrift2 listening on ").map(str::to_owned))
        .expect("thrift2 address");
    let (status, body) = server.request("PUT", "/tables/d", Some(r#"{"families":[{"name":"f"}]}"#));
    assert!(status < 300, "{body}");
    let mut c = Client::connect(&thrift2);
    let put = |row: &'static [u8], durability: Option<i32>| {
        let mut tput = vec![
            (1, A::Bytes(row)),
            (2, A::Structs(vec![vec![(1, A::Bytes(b"f")), (2, A::Bytes(b"q")), (3, A::Bytes(b"v"))]])),
        ];
        if let Some(d) = durability {
            tput.push((6, A::I32(d)));
        }
        vec![(1, A::Bytes(b"d")), (2, A::Struct(tput))]
    };
    // SYNC_WAL (3), HBase's default, is the process durability's promise.
    for (row, durability) in [(&b"a"[..], None), (b"b", Some(3))] {
        c.call("put", &put(row, durability)).expect("put");
    }
    assert_eq!(metric(&server, "rowsearch_store_syncs"), 0);
    assert!(metric(&server, "rowsearch_store_unsynced_commits") >= 2);
    c.call("put", &put(b"c", Some(4))).expect("put FSYNC_WAL");
    assert_eq!(metric(&server, "rowsearch_store_unsynced_commits"), 0);
    assert_eq!(metric(&server, "rowsearch_store_syncs"), 1);
}
