//! The indexer on its own: ingest a small Maildir tree (one row per
//! message, keyword rows kept in the same transactions), look a mailbox's
//! keywords up in the store, then build the search index from the keyword
//! rows and query it.
//!
//! `cargo run -p rowsearch-indexer --example mail_index`

use std::path::PathBuf;

use rowsearch_indexer::store::KeywordQuery;
use rowsearch_indexer::{IngestOptions, ReindexOptions, SortBy, TableIndex, ingest, open_store, reindex};

const MESSAGES: [(&str, &str, &str, &str); 3] = [
    ("ann", "Mon, 14 May 2001 16:39:00 -0700", "Gas prices in Houston", "The gas curve moved again."),
    ("ann", "Tue, 15 May 2001 09:12:00 -0700", "Power deal", "The power deal closes Friday."),
    ("bob", "Wed, 16 May 2001 11:00:00 -0700", "Lunch", "Gas station tacos at noon?"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A Maildir tree: one directory per mailbox.
    let mail = tempfile::tempdir()?;
    for (n, (user, date, subject, body)) in MESSAGES.iter().enumerate() {
        let folder = mail.path().join(user).join("inbox");
        std::fs::create_dir_all(&folder)?;
        let message = format!(
            "Message-ID: <{n}@example.com>\r\nDate: {date}\r\nFrom: {user}@example.com\r\n\
             To: team@example.com\r\nSubject: {subject}\r\n\r\n{body}\r\n"
        );
        std::fs::write(folder.join(format!("{n}.")), message)?;
    }

    let data = tempfile::tempdir()?;
    let store = open_store(data.path())?;
    let paths: Vec<PathBuf> = vec![mail.path().to_owned()];
    let report = ingest(&store, &paths, &IngestOptions::default(), &mut |_| {})?;
    println!("{}", report.summary(0));

    // Keyword rows: a mailbox's messages holding every word, newest first,
    // straight from the store (no index needed).
    let query =
        KeywordQuery { partition: b"ann".to_vec(), terms: vec!["gas".into()], ..KeywordQuery::default() };
    let page = store.keyword_lookup("mail", &query)?;
    println!("keyword rows: ann has {} message(s) with \"gas\"", page.hits.len());

    // The search index, built from the keyword rows.
    let built = reindex(&store, "mail", &ReindexOptions::default(), &mut |_| {})?;
    println!("{}", built.summary());
    let generation = TableIndex::open(&store, "mail")?.generation()?;
    let found = generation.search_keys("gas", None, SortBy::Newest, 0, 10)?;
    println!("index: {} message(s) with \"gas\" in any mailbox", found.total);
    assert_eq!((page.hits.len(), found.total), (1, 2));
    Ok(())
}
