//! Embedded search with live updates: rows written are found by the next
//! search, with no reindex command. The first search builds the index; the
//! ones after a write match the rows the index has not absorbed yet
//! directly (the overlay), and a deleted row is gone at once.
//!
//! `cargo run -p rowsearch --example live`

use rowsearch::store::{Delete, FamilySchema, PutCell, SearchField, SearchSchema, TableSchema};
use rowsearch::{Rowsearch, SearchRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let rs = Rowsearch::open(dir.path())?;
    let schema = TableSchema::new([FamilySchema::new("n")]).search(SearchSchema::new([
        SearchField::text("title", "n:title"),
        SearchField::text("body", "n:body"),
    ]));
    rs.store().create_table("notes", &schema)?;
    let note = |key: &str, title: &str, body: &str| {
        rs.store().put(
            "notes",
            key.as_bytes(),
            vec![PutCell::new("n", "title", title), PutCell::new("n", "body", body)],
        )
    };
    let search = |query: &str| {
        rs.searcher().search("notes", &SearchRequest { query: query.into(), ..SearchRequest::default() })
    };

    note("1", "Gas prices", "Gas went up again in Houston.")?;
    // The first search finds the table without an index and builds it.
    let found = search("gas")?;
    println!("gas: {} hit(s), generation {}, reflects write {}", found.total, found.generation, found.seq);

    // A write, then a search: the new row is matched directly.
    note("2", "Gas storage", "Storage is full before winter.")?;
    let found = search("gas")?;
    println!("gas: {} hit(s), {} matched outside the index", found.total, found.overlay_rows);
    assert_eq!(found.total, 2);

    // A delete is gone from the next search.
    rs.store().delete("notes", b"1", Delete::Row { up_to: None })?;
    let found = search("gas")?;
    println!("gas after the delete: {} hit(s)", found.total);
    assert_eq!(found.total, 1);
    Ok(())
}
