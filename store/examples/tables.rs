//! The store on its own: a table with column families, versioned puts in
//! one atomic batch, a scan with HBase's filter language, and a secondary
//! index looked up by value.
//!
//! `cargo run -p rowsearch-store --example tables`

use rowsearch_store::{
    ALL_VERSIONS, Batch, FamilySchema, Filter, IndexQuery, IndexSchema, PutCell, ReadOptions, Scan, Store,
    TableSchema,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;

    // Users with an `info` family keeping three versions of each cell, and
    // an index on their city.
    let schema = TableSchema::new([FamilySchema::new("info").max_versions(3)])
        .index(IndexSchema::new("by_city", ["info:city"]));
    store.create_table("users", &schema)?;

    // One batch: every row or none.
    let mut batch = Batch::new();
    for (name, city, age) in [("ann", "Houston", "34"), ("bob", "Portland", "51"), ("cid", "Houston", "27")] {
        batch.put("users", name, vec![PutCell::new("info", "city", city), PutCell::new("info", "age", age)]);
    }
    store.apply(&batch)?;
    // A second version of ann's city: the newest is read by default.
    store.put("users", b"ann", vec![PutCell::new("info", "city", "Austin")])?;
    let ann = store.get("users", b"ann", &ReadOptions::default())?.ok_or("ann is missing")?;
    println!("ann lives in {}", String::from_utf8_lossy(ann.value("info", b"city").unwrap_or_default()));
    let history = ReadOptions { versions: ALL_VERSIONS, ..ReadOptions::default() };
    let ann = store.get("users", b"ann", &history)?.ok_or("ann is missing")?;
    println!("ann's city versions: {}", ann.cells.iter().filter(|c| c.qualifier == b"city").count());

    // A scan with a filter in HBase's filter language.
    let filter = Filter::parse("SingleColumnValueFilter('info', 'city', =, 'binary:Houston')")?;
    let page = store.scan("users", &Scan::new().filter(filter))?;
    let keys: Vec<String> = page.rows.iter().map(|r| String::from_utf8_lossy(&r.key).into_owned()).collect();
    println!("living in Houston: {keys:?}");

    // The secondary index, kept in the same transactions as the rows.
    let query = IndexQuery { eq: vec![b"Houston".to_vec()], ..IndexQuery::default() };
    let hits = store.index_lookup("users", "by_city", &query)?.hits;
    let keys: Vec<String> = hits.iter().map(|h| String::from_utf8_lossy(&h.key).into_owned()).collect();
    println!("by_city = Houston: {keys:?}");
    assert_eq!(keys, ["cid"], "ann moved to Austin; the index followed");
    Ok(())
}
