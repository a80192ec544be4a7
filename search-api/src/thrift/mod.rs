//! HBase's Thrift gateway protocol (issue 38), built bottom up: so far the
//! wire formats (`codec.rs`: the binary and compact protocols, decoded
//! into generic values within limits) and the transports
//! (`transport.rs`: buffered and framed, told apart by the first bytes),
//! the service's structs over the store's types (`hbase_types.rs`: column
//! descriptors, cells, row results, exceptions), the service's methods
//! over the store (`hbase.rs`), and the server that `serve --thrift`
//! starts beside HTTP (`server.rs`).

// Parts of the codec (the writers' and readers' full generality) serve
// the tests and the methods still to come.
mod args;
#[allow(dead_code)]
mod codec;
mod hbase;
mod hbase_types;
mod ops;
mod scanners;
mod server;
mod thbase;
mod thbase_types;
mod transport;

pub use server::{Api, CallObserver, serve};
