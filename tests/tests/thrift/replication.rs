//! rowsearch following HBase through HBase's own replication (issue 63):
//! `hbase/hbase.sh` starts HBase with the peer `rowsearch`
//! (hbase/replication/, `FeedEndpoint`), and rowsearch makes its tables'
//! families replicated, so what another client writes straight into HBase
//! reaches the change feed whatever its timestamp: a backfilled row (a
//! timestamp of 1970) is found, and rows, columns and single versions
//! another client deletes leave the totals exactly, without a reindex. The
//! time-range tailer sees none of these (its scans go by cell time, and a
//! delete leaves no cell to scan).

use std::time::{Duration, Instant};

use rowsearch::store::{Delete, PutCell};
use rowsearch::thrift::HbaseClient;
use rowsearch_tests::{Backend, Server, TestDir, stderr};

const TABLE: &str = "notes";

fn total(s: &Server, q: &str) -> u64 {
    let (status, answer) = s.get_json(&format!("/tables/{TABLE}/search?q={q}&consistency=eventual"));
    assert_eq!(status, 200, "{answer}");
    answer["total"].as_u64().unwrap_or_else(|| panic!("no total in {answer}"))
}

/// Polls until `q`'s eventual total (the index as the refresher keeps it,
/// no overlay) is `want`; how long that took. Fails past `limit`.
fn settles(s: &Server, q: &str, want: u64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let got = total(s, q);
        if got == want {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "{q}: total {got}, not {want}, after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn put(client: &mut HbaseClient, row: &str, body: &str, timestamp: Option<u64>) {
    let mut cell = PutCell::new("f", "body", body);
    cell.timestamp = timestamp;
    client.put_rows(TABLE, &[(row.as_bytes().to_vec(), vec![cell])]).unwrap();
}

#[test]
fn thrift_another_clients_backfills_and_deletes_reach_the_index_through_replication() {
    if rowsearch_tests::hbase("thrift::replication").is_none() {
        return;
    }
    let t = TestDir::on(Backend::Hbase);
    let schema = r#"{"families":[{"name":"f","max_versions":3}],
                     "search":{"fields":[{"name":"body","column":"f:body"}]}}"#;
    let out = t.run(&["create-table", TABLE, "--schema", schema]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut other = HbaseClient::new(t.hbase().unwrap(), Duration::from_secs(30));
    put(&mut other, "seed", "seedword", None);
    let out = t.run(&["reindex", "--table", TABLE, "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = t.serve(&["serve", "--refresh-ms", "200"]);
    let limit = Duration::from_secs(30);
    let mut took = Vec::new();

    // Backfills: timestamps long before anything the index absorbed.
    for (i, ts) in [1_000u64, 86_400_000, 1_000_000_000_000].into_iter().enumerate() {
        put(&mut other, &format!("old{i}"), "zebraword backfilled", Some(ts));
        took.push(settles(&s, "zebraword", i as u64 + 1, limit));
    }
    // Deletes: a row, a column, the newest version of a cell (the one
    // before shows again), a family.
    other.delete_row(TABLE, b"old0").unwrap();
    took.push(settles(&s, "zebraword", 2, limit));
    let column = Delete::Column { family: "f".into(), qualifier: b"body".to_vec(), up_to: None };
    other.delete_cells(TABLE, b"old1", &column).unwrap();
    took.push(settles(&s, "zebraword", 1, limit));
    put(&mut other, "versions", "alphaword", Some(5_000));
    put(&mut other, "versions", "betaword", Some(6_000));
    took.push(settles(&s, "betaword", 1, limit));
    assert_eq!(total(&s, "alphaword"), 0);
    let newest = Delete::Version { family: "f".into(), qualifier: b"body".to_vec(), timestamp: 6_000 };
    other.delete_cells(TABLE, b"versions", &newest).unwrap();
    took.push(settles(&s, "betaword", 0, limit));
    assert_eq!(total(&s, "alphaword"), 1);
    let family = Delete::Family { family: "f".into(), up_to: None };
    other.delete_cells(TABLE, b"old2", &family).unwrap();
    took.push(settles(&s, "zebraword", 0, limit));
    assert_eq!(total(&s, "seedword"), 1);
    eprintln!("each change searchable after {took:?}");

    // The server says how it follows: through the stream (its probes come
    // back), with the lag measured; /health is ok.
    let started = Instant::now();
    let following = loop {
        let (status, table) = s.get_json(&format!("/tables/{TABLE}"));
        assert_eq!(status, 200, "{table}");
        let following = table["guarantee"]["following"].clone();
        if following["by"] == "replication" || started.elapsed() > limit {
            break following;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(following["by"], "replication", "{following}");
    assert!(following["lag_ms"].as_u64().is_some() && following["trouble"].is_null(), "{following}");
    assert_eq!(s.get_json("/health").1["status"], "ok");

    // Another process's full reindex agrees with what the stream made.
    let out = t.run(&["reindex", "--table", TABLE, "--full"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (q, want) in [("zebraword", 0), ("alphaword", 1), ("betaword", 0), ("seedword", 1)] {
        assert_eq!(total(&s, q), want, "{q} after a full reindex");
    }
}
