//! Where a store's file goes, per LMDB database: entries, pages (leaf,
//! branch, overflow), the key and value bytes they hold, and the fill
//! (payload over page bytes). Read-only; run on a closed store:
//! `cargo run --release -p rowsearch-store --example page_usage -- DATA`.

use heed::types::Bytes;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: page_usage DATA")?;
    // SAFETY: the store is not open in this process, and the example
    // only reads; LMDB's lock file coordinates with other processes.
    #[allow(unsafe_code)]
    let env = unsafe { heed::EnvOpenOptions::new().max_dbs(4096).open(&dir)? };
    let page = env.stat().page_size as u64;
    let rtxn = env.read_txn()?;
    let main: heed::Database<Bytes, Bytes> = env.open_database(&rtxn, None)?.ok_or("no main database")?;
    let mut names = Vec::new();
    for item in main.iter(&rtxn)? {
        names.push(String::from_utf8_lossy(item?.0).into_owned());
    }
    println!(
        "{:<28} {:>9} {:>8} {:>6} {:>8} {:>9} {:>9} {:>9} {:>5}",
        "database", "entries", "leaf", "branch", "overflow", "pages MB", "keys MB", "values MB", "fill"
    );
    let mut total = 0u64;
    for name in names {
        let Some(db) = env.open_database::<Bytes, Bytes>(&rtxn, Some(&name))? else { continue };
        let s = db.stat(&rtxn)?;
        let (mut keys, mut values) = (0u64, 0u64);
        for item in db.iter(&rtxn)? {
            let (k, v) = item?;
            keys += k.len() as u64;
            values += v.len() as u64;
        }
        let pages = (s.leaf_pages + s.branch_pages + s.overflow_pages) as u64 * page;
        total += pages;
        let mb = |b: u64| b as f64 / 1e6;
        let fill = if pages == 0 { 0.0 } else { (keys + values) as f64 / pages as f64 };
        println!(
            "{name:<28} {:>9} {:>8} {:>6} {:>8} {:>9.1} {:>9.1} {:>9.1} {fill:>5.2}",
            s.entries,
            s.leaf_pages,
            s.branch_pages,
            s.overflow_pages,
            mb(pages),
            mb(keys),
            mb(values)
        );
    }
    let info = env.info();
    println!(
        "pages in databases: {:.1} MB; file up to page {}: {:.1} MB",
        total as f64 / 1e6,
        info.last_page_number,
        (info.last_page_number as u64 + 1) as f64 * page as f64 / 1e6
    );
    Ok(())
}
