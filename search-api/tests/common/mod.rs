//! The fixture mail, ingested and indexed in a fresh store, for the
//! library-level tests.

use std::sync::Arc;

use rowsearch::indexer::{IngestOptions, ReindexOptions, ingest, open_store, reindex};
use rowsearch::store::Store;

/// A store holding the fixture mail (tests/fixtures/mail), indexed.
pub fn fixture_store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).unwrap();
    let mail = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
    ingest(&store, &[mail], &IngestOptions::default(), &mut |_| {}).unwrap();
    reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {}).unwrap();
    (dir, Arc::new(store))
}
