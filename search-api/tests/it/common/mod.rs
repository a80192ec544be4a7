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

/// Optimal string alignment distance, over characters.
pub fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}
