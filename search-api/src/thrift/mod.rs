//! HBase's Thrift gateway protocol (issue 38), built bottom up: so far the
//! wire formats (`codec.rs`: the binary and compact protocols, decoded
//! into generic values within limits) and the transports
//! (`transport.rs`: buffered and framed, told apart by the first bytes),
//! and the service's structs over the store's types (`hbase_types.rs`:
//! column descriptors, cells, row results, exceptions). The `Hbase`
//! service's methods and `serve --thrift` are not built yet.

// Used by its tests only until the gateway above it lands.
#[allow(dead_code)]
pub(crate) mod codec;
#[allow(dead_code)]
pub(crate) mod hbase_types;
#[allow(dead_code)]
pub(crate) mod transport;
