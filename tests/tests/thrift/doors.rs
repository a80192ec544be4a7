//! The Thrift gateway's doors (issue 59), through the real binary: an
//! unknown method's name is not echoed back whole, and one client holds at
//! most its share of the gateway's connections.

use std::net::TcpStream;

use super::client::{A, Client};
use super::thrift_server;

/// A connection to `addr` from the loopback address `from` (another
/// client as the server counts them).
fn connect_from(from: &str, addr: &str) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(addr.parse().unwrap()).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

#[test]
fn thrift_an_unknown_methods_name_is_echoed_within_bounds() {
    let (_t, _s, addr) = thrift_server();
    let mut c = Client::connect(&addr);
    let name = "x".repeat(1 << 20);
    let reply = c.call(&name, &[]).expect_err("an unknown method");
    assert!(reply.contains("is not served") && reply.len() < 200, "{} bytes: {}", reply.len(), &reply[..100]);
    // The connection goes on.
    assert!(c.call("getTableNames", &[]).is_ok());
}

#[test]
fn thrift_one_client_holds_at_most_its_share_of_the_connections() {
    let (_t, _s, addr) = thrift_server();
    // 32 connections of 127.0.0.1, each served once (so the server has
    // counted it), then silent.
    let held: Vec<Client> = (0..32)
        .map(|_| {
            let mut c = Client::connect(&addr);
            assert!(c.call("getTableNames", &[]).is_ok());
            c
        })
        .collect();
    // The 33rd of the same client is closed unanswered...
    let mut more = Client::from_stream(connect_from("127.0.0.1", &addr));
    assert!(more.try_call("getTableNames", &[]).is_none(), "a connection past the client's share");
    // ...while another client is served.
    let mut other = Client::from_stream(connect_from("127.0.0.2", &addr));
    assert!(other.call("getTableNames", &[]).is_ok(), "another client");
    drop(held);
    // Its connections closed, the first client is served again.
    let served = (0..200).any(|_| {
        let mut c = Client::from_stream(connect_from("127.0.0.1", &addr));
        let ok = c.try_call("getTableNames", &[]).is_some();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        ok
    });
    assert!(served);
}

#[test]
fn thrift_clients_may_not_create_a_searchable_tables_keyword_table() {
    let (_t, s, addr) = thrift_server();
    super::create_notes(&s);
    let mut c = Client::connect(&addr);
    let create = |c: &mut Client, name: &str| {
        let families = A::Structs(vec![vec![(1, A::Bytes(b"f:"))]]);
        c.call("createTable", &[(1, A::Bytes(name.as_bytes())), (2, families)]).unwrap()
    };
    // `notes` is searchable: `notes.keywords` would be its keyword rows
    // where tables live in HBase. An exception naming the reason.
    let reply = create(&mut c, "notes.keywords");
    let exception = reply.field(1).or_else(|| reply.field(2)).or_else(|| reply.field(3));
    let message = exception.and_then(|e| e.field(1)).map(|m| String::from_utf8_lossy(m.bytes()).into_owned());
    assert!(message.as_deref().is_some_and(|m| m.contains("reserved")), "{reply:?}");
    // What rowsearch's gateway holds when it stands in for HBase is allowed.
    for name in ["rowsearch_catalog", "plain.keywords"] {
        let reply = create(&mut c, name);
        assert!(
            reply.field(1).is_none() && reply.field(2).is_none() && reply.field(3).is_none(),
            "{name}: {reply:?}"
        );
    }
    let tables = c.call("getTableNames", &[]).unwrap();
    let names: Vec<&[u8]> =
        tables.field(0).map(|l| l.items().iter().map(|v| v.bytes()).collect()).unwrap_or_default();
    assert!(!names.iter().any(|n| *n == b"notes.keywords"), "{names:?}");
}

#[test]
fn thrift_a_silent_connection_is_closed_after_the_idle_time() {
    use std::io::Read as _;
    let (_t, _s, addr) = thrift_server();
    let mut c = TcpStream::connect(&addr).unwrap();
    // Nothing sent: the gateway closes it after 60 s (HBase's read
    // timeout; it waited 300 s). Waited for up to 90 s.
    c.set_read_timeout(Some(std::time::Duration::from_secs(90))).unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let read = c.read(&mut buf);
    assert!(
        matches!(read, Ok(0)) || read.is_err() && started.elapsed().as_secs() < 89,
        "{read:?} after {:?}",
        started.elapsed()
    );
    assert!(started.elapsed().as_secs() >= 55, "closed early: {:?}", started.elapsed());
}
