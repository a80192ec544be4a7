//! HBase's Thrift gateway protocols (issue 38): the wire formats
//! (`codec.rs`: the binary and compact protocols, decoded into generic
//! values within limits), the transports (`transport.rs`: buffered and
//! framed, told apart by the first bytes, with a read budget across
//! connections; `http.rs`: Thrift over HTTP, one `POST` per call), the argument readers and error mapping both services
//! share (`args.rs`), a connection's scanners (`scanners.rs`), the
//! read-modify-write operations (`ops.rs`), the `Hbase` service's structs
//! and methods (`hbase_types.rs`, `hbase.rs`), the Thrift2
//! `THBaseService`'s (`thbase_types.rs`, `thbase.rs`), and the server that
//! `serve --thrift` and `--thrift2` start beside HTTP (`server.rs`; one
//! call run off the async workers, and its reply: `calls.rs`).

// Parts of the codec (the writers' and readers' full generality) serve
// the tests and the methods still to come.
mod args;
mod calls;
mod client;
mod client_admin;
mod client_cas;
mod client_gets;
#[allow(dead_code)]
mod codec;
#[cfg(test)]
mod fuzz_tests;
mod hbase;
mod hbase_types;
mod http;
mod ops;
#[cfg(test)]
mod results_prop;
mod scanners;
mod server;
mod thbase;
mod thbase_types;
mod transport;

pub use client::{ClientError, HbaseClient, TScanSpec, put_calls};
pub use server::{Api, CallObserver, serve};
