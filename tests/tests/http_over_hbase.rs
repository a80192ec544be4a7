//! The HTTP end-to-end suite (`http/`, the same tests `e2e` runs on the
//! embedded store) again, every table in a real Apache HBase
//! (`hbase/hbase.sh`, one per test process), each test in an HBase
//! namespace of its own: the same answers route by route, and where the
//! HBase mode answers otherwise (what only the embedded store keeps, or a
//! guarantee HBase gives differently) the test says so and checks HBase's.

mod http;

/// Where the suite's tables live in this binary.
const BACKEND: rowsearch_tests::Backend = rowsearch_tests::Backend::Hbase;
