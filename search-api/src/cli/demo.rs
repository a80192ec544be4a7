//! `demo`: the store at work on a fresh table, then the bundled sample
//! mail ingested, looked up and searched.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use rowsearch::store::{
    Batch, Column, FamilySchema, Filter, KeyField, KeyOrder, KeyType, KeyValue, PutCell, ReadOptions,
    RowKeySchema, Scan, Store, TableSchema,
};

use super::args::Args;
use super::common::create;
use super::mail::ingest;
use super::progress::reindex;
use super::sample::Sample;
use rowsearch::json::row_json;

/// The demo: everything the store can do, on a fresh table.
pub(super) fn demo(args: &Args, rows: u32, out: &mut impl Write) -> Result<Store> {
    let store = create(args)?;
    let table = "demo";
    // The mail table's key of API.md: user, date (newest first), id, salted
    // over 4 buckets against hot-spotting of monotonic dates.
    let row_key = RowKeySchema::new([
        KeyField::new("user", KeyType::String, KeyOrder::Asc),
        KeyField::new("date", KeyType::U64, KeyOrder::Desc),
        KeyField::new("id", KeyType::U64, KeyOrder::Asc),
    ])
    .salted(4);
    let schema = TableSchema::new([FamilySchema::new("m").max_versions(3), FamilySchema::new("b")])
        .row_key(row_key.clone());
    store.create_table(table, &schema)?;
    writeln!(
        out,
        "store: {} (table {table}: families m (3 versions), b; key user, date desc, id; 4 salt buckets)",
        store.path().display()
    )?;

    let users = ["allen-p", "badeer-r", "cash-m", "gay-r"];
    let started = Instant::now();
    let mut batch = Batch::new();
    for i in 0..rows {
        let user = users[i as usize % users.len()];
        let date_ms = 988_000_000_000u64 + u64::from(i) * 3_600_000;
        let key = row_key.encode(&[
            KeyValue::String(user.into()),
            KeyValue::U64(date_ms),
            KeyValue::U64(u64::from(i)),
        ])?;
        batch.put(
            table,
            key,
            vec![
                PutCell::new("m", "subject", format!("message {i} for {user}")).at(date_ms),
                PutCell::new("m", "from", format!("sender{}@enron.com", i % 7)).at(date_ms),
                PutCell::new("b", "text", format!("body of message {i}")).at(date_ms),
            ],
        );
    }
    let info = store.apply(&batch)?;
    let secs = started.elapsed().as_secs_f64();
    writeln!(
        out,
        "wrote {rows} rows in one atomic batch in {secs:.3}s ({:.0} rows/s), change feed up to seq {}",
        f64::from(rows) / secs.max(1e-9),
        info.last_seq.unwrap_or(0)
    )?;

    let newest = Scan::new()
        .prefix(row_key.encode_prefix(&[KeyValue::String("badeer-r".into())])?)
        .limit(3)
        .read(ReadOptions::default().column(Column::Qualifier("m".into(), b"subject".to_vec())));
    let page = store.scan(table, &newest)?;
    writeln!(
        out,
        "
newest 3 rows of badeer-r (prefix scan merged over the salt buckets):"
    )?;
    for row in &page.rows {
        writeln!(out, "  {}", row_json(row, Some(&row_key)))?;
    }
    if let Some(cursor) = page.next_cursor {
        let next = store.scan(table, &newest.clone().cursor(cursor.clone()))?;
        writeln!(out, "next page after cursor {}:", cursor.to_token())?;
        for row in &next.rows {
            writeln!(out, "  {}", row_json(row, Some(&row_key)))?;
        }
    }
    let filter =
        "SingleColumnValueFilter('m', 'from', =, 'binary:sender3@enron.com', true, true) AND PageFilter(2)";
    let scan = Scan::new()
        .prefix(row_key.encode_prefix(&[KeyValue::String("cash-m".into())])?)
        .filter(Filter::parse(filter)?);
    writeln!(
        out,
        "
cash-m's mail from sender3, first 2 ({filter}):"
    )?;
    for row in store.scan(table, &scan)?.rows {
        writeln!(out, "  {}", row_json(&row, Some(&row_key)))?;
    }
    writeln!(
        out,
        "
rows per user: "
    )?;
    for user in users {
        let prefix = row_key.encode_prefix(&[KeyValue::String(user.into())])?;
        writeln!(out, "  {user}: {}", store.count(table, &Scan::new().prefix(prefix))?)?;
    }
    writeln!(
        out,
        "
regions (one per salt bucket):"
    )?;
    for region in store.region_stats(table, 2)? {
        writeln!(out, "  {}", serde_json::to_string(&region)?)?;
    }
    let stats = store.stats(table)?;
    writeln!(out, "table {table}: {} cells, {} bytes", stats.cells, stats.bytes)?;
    writeln!(
        out,
        "\nTry: rowsearch --data {} scan {table} --prefix-fields '{{\"user\":\"cash-m\"}}' --limit 2 \\\n       --filter \"ValueFilter(=, 'substring:MESSAGE 1')\"",
        args.data.display()
    )?;
    sample_mail(args, &store, out)?;
    Ok(store)
}

/// Real mail: the sample this binary carries, ingested into the mail
/// table, looked up by keyword rows, indexed and searched.
fn sample_mail(args: &Args, store: &Store, out: &mut impl Write) -> Result<()> {
    let sample = Sample::unpack()?;
    let report = ingest(store, &[sample.maildir()], &rowsearch::indexer::IngestOptions::default())?;
    drop(sample);
    writeln!(
        out,
        "\nSample mail (carried in this binary, {} KB compressed):\n  {}",
        Sample::carried_bytes() / 1024,
        report.summary(3)
    )?;
    let query = rowsearch::store::KeywordQuery {
        partition: b"cash-m".to_vec(),
        terms: vec!["meeting".into(), "enron".into()],
        limit: Some(3),
        cursor: None,
    };
    let page = store.keyword_lookup("mail", &query)?;
    writeln!(out, "newest 3 messages of cash-m holding 'meeting' and 'enron', from the keyword rows:")?;
    let rk = store.schema("mail")?.row_key;
    for hit in page.hits {
        let row = store.get("mail", &hit.key, &ReadOptions::default().column(Column::parse(b"m:subject")))?;
        let subject = row.as_ref().and_then(|r| r.value("m", b"subject")).unwrap_or_default();
        let fields = match &rk {
            Some(rk) => rk.decode_json(&hit.key)?,
            None => serde_json::Value::Null,
        };
        writeln!(out, "  {fields}  {}", String::from_utf8_lossy(subject))?;
    }
    writeln!(out, "Try: rowsearch --data {} keywords --user cash-m contract --limit 5", args.data.display())?;
    // The search index, built from those keyword rows.
    let report = reindex(store, "mail", &rowsearch::indexer::ReindexOptions::default())?;
    writeln!(out, "\n{}", report.summary())?;
    let index = rowsearch::indexer::TableIndex::open(store, "mail")?;
    let query = "\"natural gas\" price";
    let hits = index.generation()?.search_keys(query, None, rowsearch::indexer::SortBy::Relevance, 0, 3)?;
    writeln!(out, "search {query:?}: {} matches in all mailboxes, best 3 by BM25:", hits.total)?;
    for (key, score) in &hits.keys {
        let row = store.get("mail", key, &ReadOptions::default().column(Column::parse(b"m:subject")))?;
        let subject = row.as_ref().and_then(|r| r.value("m", b"subject")).unwrap_or_default();
        let fields = match &rk {
            Some(rk) => rk.decode_json(key)?,
            None => serde_json::Value::Null,
        };
        writeln!(out, "  {score:5.2}  {fields}  {}", String::from_utf8_lossy(subject))?;
    }
    writeln!(
        out,
        "Try: rowsearch --data {} search 'gas deal' --user cash-m --sort newest",
        args.data.display()
    )?;
    Ok(())
}
