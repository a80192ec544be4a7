//! Where a snapshot search's overlay spends its time: builds of overlays of
//! N changed rows (reading the rows' keyword cells, indexing them in
//! memory), the same overlay extended by one more row (a layer of its
//! own), and one query on a generation with and without an overlay.
//!
//! `cargo run --release -p rowsearch-indexer --example overlay_cost -- DATA [ROWS]`
//! on a store with an indexed `mail` table (rows of it are read, nothing is
//! written). Medians of 200 runs per figure.

use std::time::Instant;

use rowsearch_indexer::store::Scan;
use rowsearch_indexer::{Overlay, SortBy, TableChanges, TableIndex, open_store};

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let data = args.next().ok_or("usage: overlay_cost DATA [ROWS]")?;
    let most: usize = args.next().map_or(Ok(1000), |n| n.parse())?;
    let store = open_store(&data)?;
    let index = TableIndex::open(&store, "mail")?;
    let generation = index.generation()?;
    let page = store.scan("mail", &Scan { keys_only: true, limit: Some(most), ..Scan::new() })?;
    let keys: Vec<Vec<u8>> = page.rows.into_iter().map(|r| r.key).collect();
    let query = generation.parse("energy", &[])?;
    let search_with = |overlay: &Overlay| -> Result<(), Box<dyn std::error::Error>> {
        std::hint::black_box(generation.search_overlaid(
            "energy",
            &*query,
            Some(overlay),
            &[],
            SortBy::Relevance,
            0,
            10,
        )?);
        Ok(())
    };
    for n in [1usize, 10, 100, 1000].into_iter().filter(|&n| n < keys.len()) {
        let changes = TableChanges { rows: keys[..n].to_vec(), next_seq: 1, first_seq: 1, last_seq: 1 };
        let tail = TableChanges { rows: vec![keys[n].clone()], next_seq: 2, first_seq: 2, last_seq: 2 };
        let (mut cells, mut build, mut search) = (Vec::new(), Vec::new(), Vec::new());
        let (mut extend, mut search2) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            let rtxn = store.begin_read()?;
            let t = Instant::now();
            for key in &changes.rows {
                std::hint::black_box(rtxn.row_keyword_cells("mail", key)?);
            }
            cells.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let overlay = Overlay::build(&rtxn, &generation.schema, 0, changes.clone())?;
            build.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            search_with(&overlay)?;
            search.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let overlay = overlay.extend(&rtxn, &generation.schema, tail.clone())?;
            extend.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            search_with(&overlay)?;
            search2.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{n:5} rows: keyword cells {:.3} ms, overlay build (cells included) {:.3} ms, search with it {:.3} ms; \
             one more row as a layer {:.3} ms, search with the two layers {:.3} ms",
            median(cells),
            median(build),
            median(search),
            median(extend),
            median(search2)
        );
    }
    let mut plain = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        std::hint::black_box(generation.search_overlaid(
            "energy",
            &*query,
            None,
            &[],
            SortBy::Relevance,
            0,
            10,
        )?);
        plain.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("no overlay: search {:.3} ms", median(plain));
    Ok(())
}
