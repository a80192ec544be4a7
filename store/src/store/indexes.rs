//! Secondary indexes as the store's API: adding, building step by step,
//! rebuilding, dropping, listing, looking up and verifying them; the
//! layouts are `secondary`'s.

use super::{INDEX_BUILD_STEP_ROWS, Store};
use crate::error::Result;
use crate::schema::IndexSchema;
use crate::secondary::{IndexPage, IndexQuery, IndexState, IndexVerifyReport};
use crate::write::IndexBuildStep;

impl Store {
    /// Adds an index to an existing table and builds its entries from the
    /// rows already there ([`Store::start_index`], then
    /// [`Store::finish_index_build`]). Writes go on meanwhile, from this and
    /// other processes: the build takes the writer for one step of
    /// [`INDEX_BUILD_STEP_ROWS`] rows at a time. Adding an index that exists
    /// with the same columns finishes its build if it has not finished.
    /// `progress(done, total)` is called as cells are walked.
    ///
    /// # Errors
    /// `UnknownTable`; `IndexConflict` (the name is taken by other
    /// columns); `InvalidSchema` (bad name, unknown family); `Lmdb`.
    pub fn add_index(
        &self,
        table: &str,
        index: IndexSchema,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let name = index.name.clone();
        self.start_index(table, index)?;
        self.finish_index_build(table, &name, progress)
    }

    /// Adds an index to a table's schema, empty and marked as building:
    /// every write maintains it from this commit on, and lookups answer
    /// `IndexBuilding` until [`Store::build_index_step`] has gone through
    /// the rows. Returns `false` when an index of that name and columns
    /// exists already (built or not).
    ///
    /// # Errors
    /// As [`Store::add_index`].
    pub fn start_index(&self, table: &str, index: IndexSchema) -> Result<bool> {
        self.writer().start_index(table, index)
    }

    /// Clears an index and marks it as building again (see
    /// [`Store::start_index`]).
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn start_index_rebuild(&self, table: &str, index: &str) -> Result<()> {
        self.writer().start_rebuild(table, index)
    }

    /// Builds the entries of the next `max_rows` rows of an index being
    /// built, in one write transaction; where the build stands is kept in
    /// the store, so a build stopped anywhere (even killed) goes on from
    /// there, in any process. The step that finishes marks the index ready.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn build_index_step(&self, table: &str, index: &str, max_rows: usize) -> Result<IndexBuildStep> {
        self.writer().build_step(table, index, max_rows)
    }

    /// Runs [`Store::build_index_step`] until the index is ready.
    /// `progress(done, total)` counts cells walked.
    ///
    /// # Errors
    /// As [`Store::build_index_step`].
    pub fn finish_index_build(
        &self,
        table: &str,
        index: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let total = self.writer().build_total(table, index)?;
        let mut done = 0u64;
        loop {
            let step = self.build_index_step(table, index, INDEX_BUILD_STEP_ROWS)?;
            done += step.cells;
            if step.ready {
                progress(total.max(done), total.max(done));
                return Ok(());
            }
            progress(done.min(total), total);
        }
    }

    /// Clears an index and builds it again from the rows
    /// ([`Store::start_index_rebuild`], then [`Store::finish_index_build`]).
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn rebuild_index(&self, table: &str, index: &str, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        self.start_index_rebuild(table, index)?;
        self.finish_index_build(table, index, progress)
    }

    /// Removes an index and its entries (built or being built).
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Lmdb`.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        self.writer().drop_index(table, index)
    }

    /// A table's indexes: schema, whether being built, entries.
    ///
    /// # Errors
    /// `UnknownTable`, `Lmdb`.
    pub fn indexes(&self, table: &str) -> Result<Vec<IndexState>> {
        self.begin_read()?.indexes(table)
    }

    /// Looks rows up in a secondary index (one snapshot).
    ///
    /// ```
    /// use rowsearch_store::{FamilySchema, IndexQuery, IndexSchema, PutCell, Store, TableSchema};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// let schema = TableSchema::new([FamilySchema::new("m")]).index(IndexSchema::new("by_from", ["m:from"]));
    /// store.create_table("mail", &schema)?;
    /// store.put("mail", b"r1", vec![PutCell::new("m", "from", "ann")])?;
    /// store.put("mail", b"r2", vec![PutCell::new("m", "from", "bob")])?;
    /// store.put("mail", b"r3", vec![PutCell::new("m", "from", "ann")])?;
    /// let page = store.index_lookup("mail", "by_from", &IndexQuery { eq: vec![b"ann".to_vec()], ..Default::default() })?;
    /// let keys: Vec<&[u8]> = page.hits.iter().map(|h| h.key.as_slice()).collect();
    /// assert_eq!(keys, [b"r1", b"r3"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `InvalidCursor`, `Lmdb`.
    pub fn index_lookup(&self, table: &str, index: &str, query: &IndexQuery) -> Result<IndexPage> {
        self.begin_read()?.index_lookup(table, index, query)
    }

    /// Compares an index with the data: every row's entry present, no
    /// other entry.
    ///
    /// # Errors
    /// `UnknownTable`, `UnknownIndex`, `Corrupted`, `Lmdb`.
    pub fn verify_index(&self, table: &str, index: &str) -> Result<IndexVerifyReport> {
        self.begin_read()?.verify_index(table, index)
    }
}
