//! Measures what block encodings of keyword rows would cost on a store's
//! keyword cells (run on a full corpus store to choose an encoding):
//! `cargo run --release -p rowsearch-store --example keyword_layout -- DATA TABLE`.

fn varint_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

fn shared(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (dir, table) = (&args[1], &args[2]);
    let store = rowsearch_store::Store::open(dir)?;
    let txn = store.begin_read()?;
    let mut columns = 0u64;
    let mut entries = 0u64;
    let mut col_key_bytes = 0u64; // partition + field + term, once per column
    let mut row_key_bytes = 0u64;
    let mut pos_bytes = 0u64;
    let mut date_delta_bytes = 0u64;
    let mut key_vs_prev = 0u64; // row key prefix-compressed vs previous row key
    let mut key_vs_prev_nodate = 0u64; // same, date bytes in row key elided
    let mut hist = [0u64; 8];
    let mut last_col: (Vec<u8>, usize, String) = (Vec::new(), usize::MAX, String::new());
    let mut col_len = 0u64;
    let mut prev_key: Vec<u8> = Vec::new();
    let mut prev_date = 0u64;
    let flush = |n: u64, hist: &mut [u64; 8]| {
        let b = (64 - n.leading_zeros()) as usize;
        hist[b.min(7)] += 1;
    };
    txn.for_each_keyword_cell(table, None, &mut |c| {
        entries += 1;
        let same = last_col.1 == c.field_index && last_col.0 == c.partition && last_col.2 == c.term;
        if !same {
            if col_len > 0 {
                flush(col_len, &mut hist);
            }
            col_len = 0;
            columns += 1;
            col_key_bytes += (c.partition.len() + 2 + 1 + c.term.len() + 2) as u64;
            last_col = (c.partition.to_vec(), c.field_index, c.term.to_owned());
            prev_key.clear();
            prev_date = u64::MAX;
        }
        col_len += 1;
        row_key_bytes += c.key.len() as u64;
        let p: Vec<u32> = c.positions().collect();
        let mut last = 0;
        let mut pb = 0;
        for x in &p {
            pb += varint_len(u64::from(x - last));
            last = *x;
        }
        pos_bytes += (pb + varint_len(pb as u64)) as u64;
        let d = prev_date.wrapping_sub(c.date_ms);
        date_delta_bytes += varint_len(if prev_date == u64::MAX { c.date_ms } else { d }) as u64;
        prev_date = c.date_ms;
        let s = shared(&prev_key, c.key);
        key_vs_prev += (varint_len(s as u64) + varint_len((c.key.len() - s) as u64) + c.key.len() - s) as u64;
        // Elide an 8-byte run equal to !date BE in the row key.
        let nd = (!c.date_ms).to_be_bytes();
        let mut k2 = c.key.to_vec();
        if let Some(at) = k2.windows(8).position(|w| w == nd) {
            k2.drain(at..at + 8);
        }
        let s2 = shared(&prev_key, &k2);
        key_vs_prev_nodate +=
            (varint_len(s2 as u64) + varint_len((k2.len() - s2) as u64) + k2.len() - s2) as u64;
        prev_key = c.key.to_vec();
        Ok(())
    })?;
    flush(col_len, &mut hist);
    let mb = |b: u64| b as f64 / 1e6;
    println!("columns {columns}, entries {entries} ({:.2} per column)", entries as f64 / columns as f64);
    println!("column key bytes {:.1} MB, row keys {:.1} MB raw", mb(col_key_bytes), mb(row_key_bytes));
    println!("positions {:.1} MB, date deltas {:.1} MB", mb(pos_bytes), mb(date_delta_bytes));
    println!(
        "row keys vs previous {:.1} MB, without the date run {:.1} MB",
        mb(key_vs_prev),
        mb(key_vs_prev_nodate)
    );
    println!("column lengths by bit width (1, 2-3, 4-7, ...): {hist:?}");
    Ok(())
}
