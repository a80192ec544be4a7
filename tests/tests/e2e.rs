//! End-to-end tests of the real `rowsearch` binary, the kill -9 crash
//! tests and the search page in a browser. One test binary for the crate,
//! one module per area (link time).

mod browser;
mod cli;
mod crash;
mod http;
mod thrift;

/// Where the HTTP suite's tables live in this binary: the embedded store
/// (`http_over_hbase` runs the same suite over a real HBase).
const BACKEND: rowsearch_tests::Backend = rowsearch_tests::Backend::Store;
