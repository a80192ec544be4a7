//! Embedding rowsearch in a program: create a searchable table, write rows,
//! build the index, search, and read the rows back.
//!
//! `cargo run -p rowsearch --example embed`

use rowsearch::store::{FamilySchema, PutCell, SearchField, SearchSchema, TableSchema};
use rowsearch::{Rowsearch, SearchRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let rs = Rowsearch::open(dir.path())?;

    // A table of notes, searchable by title and body, partitioned by author.
    let schema = TableSchema::new([FamilySchema::new("n")]).search(
        SearchSchema::new([SearchField::text("title", "n:title"), SearchField::text("body", "n:body")])
            .partition("n:author")
            .date_column("n:date"),
    );
    rs.store().create_table("notes", &schema)?;
    let notes = [
        ("ann/1", "ann", "2026-11-01T09:00:00Z", "Gas prices", "Gas went up again in Houston."),
        ("ann/2", "ann", "2026-11-05T09:00:00Z", "Power deal", "The power deal closes Friday; gas is next."),
        ("bob/1", "bob", "2026-11-02T09:00:00Z", "Lunch", "Tacos at noon?"),
    ];
    for (key, author, date, title, body) in notes {
        rs.store().put(
            "notes",
            key.as_bytes(),
            vec![
                PutCell::new("n", "author", author),
                PutCell::new("n", "date", date),
                PutCell::new("n", "title", title),
                PutCell::new("n", "body", body),
            ],
        )?;
    }

    // The index is built from the keyword rows the puts kept.
    let report = rs.reindex("notes")?;
    println!("{}", report.summary());

    // Newest first within one author, with highlights.
    let request = SearchRequest {
        query: "gas".into(),
        partition: Some(b"ann".to_vec()),
        sort: rowsearch::indexer::SortBy::Newest,
        highlight: true,
        ..SearchRequest::default()
    };
    let found = rs.searcher().search("notes", &request)?;
    println!("{} notes of ann mention gas:", found.total);
    for hit in &found.hits {
        let title = String::from_utf8_lossy(hit.row.value("n", b"title").unwrap_or_default());
        println!("  {} {title:?} {:?}", String::from_utf8_lossy(&hit.row.key), hit.highlights);
    }
    Ok(())
}
