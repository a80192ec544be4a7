//! Full builds straight from the keyword rows into tantivy segments.
//!
//! A keyword cell is already a posting: a term of a field of a row, with
//! its positions. Handing rows to tantivy's index writer made it hash every
//! token again (most of a build's time); here each column of a partition
//! (a field's term) is looked up once, its versions appended to the term's
//! list, and the segment is written with tantivy's own serializers (field
//! norms, postings, fast fields, doc store), in the layout its index writer
//! gives the same documents in the same order (the `direct_segment` tests
//! compare the files byte for byte).
//!
//! A [`Part`] gathers whole partitions (or hash slices of one, see
//! `full.rs`): their rows are numbered, partition after partition, newest
//! first, then by key, the order a column's versions come in, so each list
//! comes sorted. [`Part::write`] lays it down as one segment; `full.rs` records
//! the segments in the index's meta with the commit's payload.

use hashbrown::{HashMap, HashTable};
use tantivy::fastfield::FastFieldsWriter;
use tantivy::fieldnorm::{FieldNormReaders, FieldNormsSerializer, FieldNormsWriter};
use tantivy::index::SegmentComponent;
use tantivy::postings::InvertedIndexSerializer;
use tantivy::schema::{Field, FieldType, IndexRecordOption};
use tantivy::store::StoreWriter;
use tantivy::tokenizer::MAX_TOKEN_LEN;
use tantivy::{Directory, Index, SegmentMeta, Term};
use xxhash_rust::xxh3::xxh3_64;

use rowsearch_store::KeywordCellRef;

use crate::doc::{CellDoc, DocSchema};

/// One row's occurrences of a term in a field: the row (its number in
/// the part) and its positions as gaps at `start..start + len` of the
/// part's `gaps`.
#[derive(Clone, Copy)]
struct Posting {
    row: u32,
    start: u32,
    len: u32,
}

const NONE: u32 = u32::MAX;

/// What a part holds of a row besides its postings.
struct RowHead {
    key: Vec<u8>,
    /// Index in `Part::partitions`.
    partition: u32,
    date_ms: u64,
}

/// Where a part stood when its current partition began: what
/// [`Part::abandon`] goes back to.
#[derive(Default)]
struct Mark {
    gaps: usize,
    rows: usize,
    facets: usize,
    bytes: usize,
    /// Lists the partition appended to, with their lengths before.
    touched: Vec<(u32, u32)>,
}

/// The rows of whole partitions, gathered from their keyword cells.
pub(super) struct Part<'s> {
    schema: &'s DocSchema,
    fields: usize,
    /// Term id -> term; `ids` finds a term's id.
    terms: Vec<Box<str>>,
    ids: HashTable<u32>,
    /// `term_id * fields + field` -> index in `lists`, or `NONE`.
    slots: Vec<u32>,
    lists: Vec<Vec<Posting>>,
    gaps: Vec<u32>,
    rows: Vec<RowHead>,
    /// Tokens of row `r` in field `f` at `r * fields + f`.
    norms: Vec<u32>,
    /// (row, field index, term) of facet fields' cells.
    facets: Vec<(u32, u32, Box<str>)>,
    /// Row number -> doc id, set when its partition ends.
    doc_of: Vec<u32>,
    partitions: Vec<Vec<u8>>,
    /// The current partition's rows by key.
    local: HashMap<Vec<u8>, u32>,
    /// The column being read: field, term, list.
    column: (usize, String, usize),
    mark: Mark,
    /// About the bytes held.
    pub(super) bytes: usize,
}

impl<'s> Part<'s> {
    pub(super) fn new(schema: &'s DocSchema) -> Part<'s> {
        Part {
            schema,
            fields: schema.fields.len(),
            terms: Vec::new(),
            ids: HashTable::new(),
            slots: Vec::new(),
            lists: Vec::new(),
            gaps: Vec::new(),
            rows: Vec::new(),
            norms: Vec::new(),
            facets: Vec::new(),
            doc_of: Vec::new(),
            partitions: Vec::new(),
            local: HashMap::new(),
            column: (usize::MAX, String::new(), 0),
            mark: Mark::default(),
            bytes: 0,
        }
    }

    /// Rows held.
    pub(super) fn rows(&self) -> u64 {
        self.rows.len() as u64
    }

    /// About the bytes the current partition added.
    pub(super) fn partition_bytes(&self) -> usize {
        self.bytes - self.mark.bytes
    }

    /// Adds a cell; cells come partition by partition, a partition's by
    /// column (field, term).
    pub(super) fn add(&mut self, cell: &KeywordCellRef<'_>) {
        if cell.field_index >= self.fields {
            return;
        }
        if self.partitions.last().map(Vec::as_slice) != Some(cell.partition) {
            self.end_partition();
            self.partitions.push(cell.partition.to_vec());
            self.bytes += cell.partition.len() + 32;
        }
        let row = match self.local.get(cell.key) {
            Some(&row) => row,
            None => {
                let row = self.rows.len() as u32;
                let partition = (self.partitions.len() - 1) as u32;
                self.rows.push(RowHead { key: cell.key.to_vec(), partition, date_ms: cell.date_ms });
                self.local.insert(cell.key.to_vec(), row);
                self.norms.resize(self.norms.len() + self.fields, 0);
                self.bytes += 2 * cell.key.len() + 64 + 4 * self.fields;
                row
            }
        };
        if self.schema.facets[cell.field_index].is_some() {
            self.facets.push((row, cell.field_index as u32, cell.term.into()));
            self.bytes += cell.term.len() + 32;
        }
        // tantivy leaves out tokens this long (and does not count them).
        if cell.term.len() > MAX_TOKEN_LEN {
            return;
        }
        if self.column.0 != cell.field_index || self.column.1 != cell.term {
            let list = self.list(cell.term, cell.field_index);
            self.column.0 = cell.field_index;
            self.column.1.clear();
            self.column.1.push_str(cell.term);
            self.column.2 = list;
        }
        let start = self.gaps.len() as u32;
        let mut last = 0;
        for p in cell.positions() {
            self.gaps.push(p.wrapping_sub(last));
            last = p;
        }
        let len = self.gaps.len() as u32 - start;
        self.lists[self.column.2].push(Posting { row, start, len });
        self.norms[row as usize * self.fields + cell.field_index] += len;
        self.bytes += 12 + 4 * len as usize;
    }

    /// The list of `term` in field `field`, made if new (and noted for
    /// [`Self::abandon`]).
    fn list(&mut self, term: &str, field: usize) -> usize {
        let hash = xxh3_64(term.as_bytes());
        let terms = &mut self.terms;
        let id = *self
            .ids
            .entry(hash, |&id| &*terms[id as usize] == term, |&id| xxh3_64(terms[id as usize].as_bytes()))
            .or_insert_with(|| {
                terms.push(term.into());
                (terms.len() - 1) as u32
            })
            .get() as usize;
        if self.slots.len() < self.terms.len() * self.fields {
            self.bytes += (self.terms.len() * self.fields - self.slots.len()) * 4 + term.len() + 32;
            self.slots.resize(self.terms.len() * self.fields, NONE);
        }
        let slot = &mut self.slots[id * self.fields + field];
        if *slot == NONE {
            *slot = self.lists.len() as u32;
            self.lists.push(Vec::new());
            self.bytes += 24;
        }
        let list = *slot;
        self.mark.touched.push((list, self.lists[list as usize].len() as u32));
        list as usize
    }

    /// Numbers the current partition's rows newest first, then by key, as
    /// its columns' versions come, and starts a new mark.
    pub(super) fn end_partition(&mut self) {
        let first = self.mark.rows;
        let mut order: Vec<u32> = (first as u32..self.rows.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&self.rows[a as usize], &self.rows[b as usize]);
            (std::cmp::Reverse(a.date_ms), &a.key).cmp(&(std::cmp::Reverse(b.date_ms), &b.key))
        });
        self.doc_of.resize(self.rows.len(), NONE);
        for (i, row) in order.into_iter().enumerate() {
            self.doc_of[row as usize] = (first + i) as u32;
        }
        self.local.clear();
        self.column.0 = usize::MAX;
        self.mark = Mark {
            gaps: self.gaps.len(),
            rows: self.rows.len(),
            facets: self.facets.len(),
            bytes: self.bytes,
            touched: Vec::new(),
        };
    }

    /// Drops what the current partition added (too big to gather with the
    /// rest: it is read again in slices).
    pub(super) fn abandon(&mut self) {
        for &(list, len) in self.mark.touched.iter().rev() {
            self.lists[list as usize].truncate(len as usize);
        }
        self.mark.touched.clear();
        self.gaps.truncate(self.mark.gaps);
        self.rows.truncate(self.mark.rows);
        self.norms.truncate(self.mark.rows * self.fields);
        self.facets.truncate(self.mark.facets);
        self.partitions.pop();
        self.bytes = self.mark.bytes;
        self.local.clear();
        self.column.0 = usize::MAX;
    }

    /// Writes the rows as a new segment of `index` (whose schema is the
    /// part's): its meta, `None` when there are no rows.
    pub(super) fn write(mut self, index: &Index) -> tantivy::Result<Option<SegmentMeta>> {
        self.end_partition();
        let docs = self.rows.len();
        if docs == 0 {
            return Ok(None);
        }
        let mut row_of = vec![0u32; docs];
        for (row, &doc) in self.doc_of.iter().enumerate() {
            row_of[doc as usize] = row as u32;
        }
        let segment = index.new_segment();
        let schema = &self.schema.schema;

        // Field norms first: the postings' block maxima read them.
        let mut norms = FieldNormsWriter::for_schema(schema);
        let all_norm =
            |row: usize| self.norms[row * self.fields..(row + 1) * self.fields].iter().sum::<u32>();
        for (doc, &row) in row_of.iter().enumerate() {
            let row = row as usize;
            for (f, &field) in self.schema.fields.iter().enumerate() {
                norms.record(doc as u32, field, self.norms[row * self.fields + f]);
            }
            norms.record(doc as u32, self.schema.all, all_norm(row));
            for field in [self.schema.key, self.schema.partition, self.schema.date] {
                norms.record(doc as u32, field, 1);
            }
        }
        norms.fill_up_to_max_doc(docs as u32);
        norms.serialize(
            FieldNormsSerializer::from_write(segment.open_write(SegmentComponent::FieldNorms)?)?,
            None,
        )?;
        let readers = FieldNormReaders::open(segment.open_read(SegmentComponent::FieldNorms)?)?;

        let mut order: Vec<u32> = (0..self.terms.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.terms[a as usize].cmp(&self.terms[b as usize]));
        let mut postings = InvertedIndexSerializer::open(&segment)?;
        // In field order, as tantivy writes them (a field without terms
        // is left out).
        for (field, entry) in schema.fields() {
            if !entry.is_indexed() {
                continue;
            }
            let norm_reader = readers.get_field(field)?;
            if let Some(f) = self.schema.fields.iter().position(|&x| x == field) {
                let total: u64 = (0..docs).map(|r| u64::from(self.norms[r * self.fields + f])).sum();
                self.write_terms(&order, Some(f), &mut postings, (field, total, norm_reader))?;
            } else if field == self.schema.all {
                let total: u64 = (0..docs).map(|r| u64::from(all_norm(r))).sum();
                self.write_terms(&order, None, &mut postings, (field, total, norm_reader))?;
            } else {
                let mut terms: Vec<(Vec<u8>, u32)> = row_of
                    .iter()
                    .enumerate()
                    .map(|(doc, &row)| (self.value_term(field, entry.field_type(), row as usize), doc as u32))
                    .collect();
                terms.sort_unstable();
                let mut out = postings.new_field(field, docs as u64, norm_reader)?;
                for group in terms.chunk_by(|a, b| a.0 == b.0) {
                    out.new_term(&group[0].0, 0, false)?;
                    for &(_, doc) in group {
                        out.write_doc(doc, 0, &[]);
                    }
                    out.close_term()?;
                }
                out.close()?;
            }
        }
        postings.close()?;

        // Fast fields and the stored key, from documents without texts.
        let mut fast = FastFieldsWriter::from_schema_and_tokenizer_manager(
            schema,
            index.fast_field_tokenizer().clone(),
        )?;
        let settings = index.settings();
        let mut store = StoreWriter::new(
            segment.open_write(SegmentComponent::Store)?,
            settings.docstore_compression,
            settings.docstore_blocksize,
            settings.docstore_compress_dedicated_thread,
        )?;
        let mut facets_of: Vec<Vec<(usize, String)>> = vec![Vec::new(); docs];
        for (row, field, term) in self.facets.drain(..) {
            facets_of[self.doc_of[row as usize] as usize].push((field as usize, term.into()));
        }
        for (doc, facets) in facets_of.into_iter().enumerate() {
            let head = &self.rows[row_of[doc] as usize];
            let mut light = CellDoc::new(self.schema);
            light.key.clone_from(&head.key);
            light.partition.clone_from(&self.partitions[head.partition as usize]);
            light.date_ms = head.date_ms;
            light.facet_terms = facets;
            fast.add_document(&light)?;
            store.store(&light, schema)?;
        }
        let mut fast_write = segment.open_write(SegmentComponent::FastFields)?;
        fast.serialize(&mut fast_write, None)?;
        common_terminate(fast_write)?;
        store.close()?;
        Ok(Some(segment.with_max_doc(docs as u32).meta().clone()))
    }

    /// The terms of search field `field` (`None`: `_all`, every field's
    /// lists summed per doc) in `order`, with their postings, as tantivy
    /// field `opens` (field, its tokens, its norms); nothing for a field
    /// without terms, as tantivy leaves those out.
    fn write_terms(
        &self,
        order: &[u32],
        field: Option<usize>,
        postings: &mut InvertedIndexSerializer,
        opens: (Field, u64, Option<tantivy::fieldnorm::FieldNormReader>),
    ) -> std::io::Result<()> {
        let mut opens = Some(opens);
        let mut out = None;
        let mut list: Vec<(u32, u32, u32)> = Vec::new();
        for &term in order {
            let slots = &self.slots[term as usize * self.fields..(term as usize + 1) * self.fields];
            list.clear();
            for (f, &slot) in slots.iter().enumerate() {
                if slot == NONE || field.is_some_and(|g| g != f) {
                    continue;
                }
                let postings = &self.lists[slot as usize];
                list.extend(postings.iter().map(|p| (self.doc_of[p.row as usize], p.start, p.len)));
            }
            if list.is_empty() {
                continue;
            }
            if !list.is_sorted_by_key(|p| p.0) {
                list.sort_unstable_by_key(|p| p.0);
            }
            if field.is_none() {
                // A doc from several fields: once, its frequencies summed.
                list.dedup_by(|later, kept| {
                    let same = later.0 == kept.0;
                    if same {
                        kept.2 += later.2;
                    }
                    same
                });
            }
            if let Some((f, total, norms)) = opens.take() {
                out = Some(postings.new_field(f, total, norms)?);
            }
            let Some(out) = out.as_mut() else { continue };
            out.new_term(self.terms[term as usize].as_bytes(), list.len() as u32, true)?;
            for &(doc, start, len) in &list {
                let gaps = if field.is_some() {
                    &self.gaps[start as usize..(start + len) as usize]
                } else {
                    &[][..]
                };
                out.write_doc(doc, len, gaps);
            }
            out.close_term()?;
        }
        match out {
            Some(out) => out.close(),
            None => Ok(()),
        }
    }

    /// The indexed term of `_key`, `_partition` or `date` for `row`.
    fn value_term(&self, field: Field, kind: &FieldType, row: usize) -> Vec<u8> {
        let head = &self.rows[row];
        let term = match kind {
            FieldType::Date(_) => {
                let ms = i64::try_from(head.date_ms).unwrap_or(i64::MAX);
                Term::from_field_date_for_search(field, tantivy::DateTime::from_timestamp_millis(ms))
            }
            _ if field == self.schema.key => Term::from_field_bytes(field, &head.key),
            _ => Term::from_field_bytes(field, &self.partitions[head.partition as usize]),
        };
        term.serialized_value_bytes().to_vec()
    }
}

/// Whether a full build of `schema` can be written directly: the schema
/// [`DocSchema::for_search`] gives (an `_all` without positions, indexed
/// fields of the kinds this module writes).
pub(super) fn writes(schema: &DocSchema) -> bool {
    !schema.all_positions
        && schema.schema.fields().all(|(field, entry)| {
            !entry.is_indexed()
                || schema.fields.contains(&field)
                || field == schema.all
                || field == schema.key
                || field == schema.partition
                || field == schema.date
        })
        && schema.fields.iter().all(|&f| {
            schema.schema.get_field_entry(f).field_type().index_record_option()
                == Some(IndexRecordOption::WithFreqsAndPositions)
        })
}

/// Makes `segments` the index's, with the commit `payload`, as tantivy's
/// writer commits: the directory synced, then `meta.json` replaced
/// atomically (the segments' files are synced as they are closed).
pub(super) fn commit(index: &Index, segments: Vec<SegmentMeta>, payload: &str) -> tantivy::Result<()> {
    let directory = index.directory();
    let _lock = directory.acquire_lock(&tantivy::directory::INDEX_WRITER_LOCK)?;
    let mut meta = index.load_metas()?;
    meta.segments = segments;
    meta.payload = Some(payload.to_owned());
    let mut json = serde_json::to_vec_pretty(&meta)?;
    json.push(b'\n');
    directory.sync_directory()?;
    directory.atomic_write(std::path::Path::new("meta.json"), &json)?;
    Ok(())
}

fn common_terminate(write: tantivy::directory::WritePtr) -> std::io::Result<()> {
    use tantivy::directory::TerminatingWrite;
    write.terminate()
}

#[cfg(test)]
#[path = "direct_tests.rs"]
mod tests;
