//! The indexer's integration tests: one test binary (one link), one module
//! per area.

mod foreign;
mod ingest;
mod overlay;
mod phrases;
mod query;
mod refresh;
mod reindex;
mod reindex_prop;
mod shards;
mod suggest;

/// Every key the keyword rows give for `terms` in `user`'s mailbox, with
/// dates, newest first, read `per_page` keys at a time through the cursors.
pub(crate) fn keyword_keys(
    store: &rowsearch_indexer::store::Store,
    user: &str,
    terms: &[String],
    per_page: usize,
) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let query = rowsearch_indexer::store::KeywordQuery {
            partition: user.as_bytes().to_vec(),
            terms: terms.to_vec(),
            limit: Some(per_page),
            cursor,
        };
        let page = store.keyword_lookup("mail", &query).unwrap();
        out.extend(page.hits.into_iter().map(|h| (h.date_ms, h.key)));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}
