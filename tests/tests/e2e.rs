//! End-to-end tests of the real `rowsearch` binary. One test binary, one
//! module per area (link time).

mod cli;
mod http;
