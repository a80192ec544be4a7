//! A searchable table given more: search fields appended, a threads
//! section, a display setting ([`Writer::extend_search`]). The rows' keyword
//! cells of the new fields are written in the same transaction, and the
//! table takes a new id, so search index generations built for the old
//! fields are built again.

use std::collections::BTreeSet;

use super::apply::Writer;
use crate::error::{Error, ErrorKind, Result};
use crate::key;
use crate::keyword::KeywordCells;
use crate::schema::TableSchema;

/// Rows whose keyword cells one update writes.
pub(crate) const CHUNK_ROWS: usize = 2_000;

impl Writer<'_> {
    /// [`crate::Store::extend_search`].
    pub fn extend_search(&self, table: &str, schema: &TableSchema) -> Result<bool> {
        schema.validate(table)?;
        let _writer = self.env.lock_writer()?;
        let tables = self.in_current(true, |wtxn, tables| {
            let old = tables.table(table)?;
            if *old.schema == *schema {
                return Ok(None);
            }
            check_extends(table, &old.schema, schema)?;
            let added = old.schema.search.as_ref().map_or(0, |s| s.fields.len());
            self.meta.put_schema(wtxn, table, schema)?;
            // A new id: index generations of the old fields are not used.
            let version = self.meta.bump_catalog_version(wtxn)?;
            self.meta.put_table_id(wtxn, table, version)?;
            let handle = std::sync::Arc::new(crate::table::open_table(
                self.env,
                &self.meta,
                &mut crate::table::DbSource::Create(wtxn),
                table,
                version,
                schema.clone(),
                self.max_dbs,
            )?);
            if let Some(search) = &handle.search
                && search.schema.fields.len() > added
            {
                let analyzer = self.catalog.analyzer_for(table)?;
                let rows = search_rows(wtxn, &handle, search)?;
                for chunk in rows.chunks(CHUNK_ROWS) {
                    let mut changes: Vec<(KeywordCells, KeywordCells)> = Vec::with_capacity(chunk.len());
                    for stored in chunk {
                        let row = if handle.is_salted() { key::salt::unsalted(stored) } else { &stored[..] };
                        let values = search.values(wtxn, stored)?;
                        let mut values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
                        let after = search.entries(analyzer, row, &values)?;
                        for v in values.iter_mut().take(search.schema.fields.len()).skip(added) {
                            *v = None;
                        }
                        let before = search.entries(analyzer, row, &values)?;
                        changes.push((before, after));
                    }
                    crate::keyword::update(
                        wtxn,
                        changes.iter().map(|(b, a)| (search, b.into(), a.into(), false)),
                        self.pending_runs.keyword,
                    )?;
                }
            }
            Ok(Some(tables.with(version, handle)))
        })?;
        Ok(self.install_changed(tables))
    }
}

/// The stored keys (salt included) of every row of `handle` holding a
/// column its search section reads, in key order.
pub(crate) fn search_rows(
    txn: &heed::RoTxn<'_>,
    handle: &crate::table::TableHandle,
    search: &crate::keyword::SearchHandle,
) -> Result<Vec<Vec<u8>>> {
    let mut rows: BTreeSet<Vec<u8>> = BTreeSet::new();
    for family in handle.families.iter().filter(|f| search.reads(f)) {
        for item in family.db.iter(txn).map_err(|e| Error::lmdb("read a table's rows", e))? {
            let (k, _) = item.map_err(|e| Error::lmdb("read a table's rows", e))?;
            let row_esc = key::RawCellKey::split(&family.db_name, k)?.row_esc;
            if !rows.contains(row_esc) {
                rows.insert(row_esc.to_vec());
            }
        }
    }
    Ok(rows.into_iter().map(|r| key::unescape(&r)).collect())
}

/// `InvalidSchema` unless `new` is `old` with search fields appended, a
/// threads section added and perhaps another display.
fn check_extends(table: &str, old: &TableSchema, new: &TableSchema) -> Result<()> {
    let refuse = |what: &str| -> Error {
        ErrorKind::InvalidSchema {
            table: table.to_owned(),
            reason: format!(
                "only search fields appended, a threads section added and the display may change here; {what} differs"
            ),
        }
        .into()
    };
    if old.families != new.families || old.row_key != new.row_key || old.splits != new.splits {
        return Err(refuse("the families, row key or splits"));
    }
    if old.indexes != new.indexes {
        return Err(refuse("the indexes"));
    }
    if old.threads.is_some() && old.threads != new.threads {
        return Err(refuse("the threads section"));
    }
    match (&old.search, &new.search) {
        (None, _) => Err(ErrorKind::NotSearchable { table: table.to_owned() }.into()),
        (Some(_), None) => Err(refuse("the search section")),
        (Some(a), Some(b)) => {
            if a.partition != b.partition || a.date_column != b.date_column {
                return Err(refuse("the partition or date column"));
            }
            if b.fields.len() < a.fields.len() || b.fields[..a.fields.len()] != a.fields[..] {
                return Err(refuse("a search field that was there"));
            }
            Ok(())
        }
    }
}
