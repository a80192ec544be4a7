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
//! `direct_read.rs`): their rows are numbered, partition after partition,
//! newest first, then by key, the order a column's versions come in, so
//! each list comes sorted. [`write()`] lays one or several parts down as one
//! segment (the parts' documents one after the other); [`commit()`] records
//! the segments in the index's meta with the commit's payload.

use std::io::Write;

use hashbrown::{HashMap, HashTable};
use tantivy::directory::CompositeWrite;
use tantivy::fastfield::FastFieldsWriter;
use tantivy::fieldnorm::{FieldNormReaders, FieldNormsSerializer, FieldNormsWriter};
use tantivy::index::SegmentComponent;
use tantivy::postings::FieldSerializer;
use tantivy::schema::{Field, FieldType, IndexRecordOption};
use tantivy::store::StoreWriter;
use tantivy::tokenizer::MAX_TOKEN_LEN;
use tantivy::{Directory, Index, SegmentMeta, Term};
use tantivy_common::CountingWriter;
use xxhash_rust::xxh3::xxh3_64;

use rowsearch_store::{KeywordCellRef, position_gaps};

use crate::doc::{CellDoc, DocSchema};
use crate::pairs::PairList;

/// One row's occurrences of a term in a field: the row (its number in
/// the part) and its `len` positions, as the store encodes them, from
/// byte `start` of the part's `positions`.
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
    positions: usize,
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
    /// The postings' positions, copied as the store encodes them.
    positions: Vec<u8>,
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
    bytes: usize,
    /// The bytes last counted in the readers' shared total.
    pub(super) reported: usize,
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
            positions: Vec::new(),
            rows: Vec::new(),
            norms: Vec::new(),
            facets: Vec::new(),
            doc_of: Vec::new(),
            partitions: Vec::new(),
            local: HashMap::new(),
            column: (usize::MAX, String::new(), 0),
            mark: Mark::default(),
            bytes: 0,
            reported: 0,
        }
    }

    /// About the bytes held.
    pub(super) fn bytes_held(&self) -> usize {
        self.bytes
    }

    /// Rows held.
    pub(super) fn rows(&self) -> u64 {
        self.rows.len() as u64
    }

    /// Whether the part holds more than `budget` bytes, or nears what its
    /// 32-bit numbers (rows, lists, position offsets) can count.
    pub(super) fn over(&self, budget: usize) -> bool {
        self.bytes > budget || self.near_limits()
    }

    /// Whether the current partition alone added more than `budget`
    /// bytes, or brought the part near its numbers' limits.
    pub(super) fn partition_over(&self, budget: usize) -> bool {
        self.bytes - self.mark.bytes > budget || self.near_limits()
    }

    pub(super) fn near_limits(&self) -> bool {
        const LIMIT: usize = (u32::MAX / 2) as usize;
        self.positions.len() > LIMIT || self.rows.len() > LIMIT || self.slots.len() > LIMIT
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
        let start = self.positions.len() as u32;
        let encoded = cell.encoded_positions();
        self.positions.extend_from_slice(encoded);
        let len = cell.positions().len() as u32;
        self.lists[self.column.2].push(Posting { row, start, len });
        self.norms[row as usize * self.fields + cell.field_index] += len;
        self.bytes += 12 + encoded.len();
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
            positions: self.positions.len(),
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
        self.positions.truncate(self.mark.positions);
        self.rows.truncate(self.mark.rows);
        self.norms.truncate(self.mark.rows * self.fields);
        self.facets.truncate(self.mark.facets);
        self.partitions.pop();
        self.bytes = self.mark.bytes;
        self.local.clear();
        self.column.0 = usize::MAX;
    }

    /// Doc -> row of this part (its rows numbered, the current partition's
    /// too).
    fn row_of(&mut self) -> Vec<u32> {
        self.end_partition();
        let mut row_of = vec![0u32; self.rows.len()];
        for (row, &doc) in self.doc_of.iter().enumerate() {
            row_of[doc as usize] = row as u32;
        }
        row_of
    }

    /// The id of `term`, if the part holds it.
    fn term_id(&self, term: &str) -> Option<usize> {
        let hash = xxh3_64(term.as_bytes());
        self.ids.find(hash, |&id| &*self.terms[id as usize] == term).map(|&id| id as usize)
    }

    /// Row `row`'s tokens in every search field (`_all`'s).
    fn all_norm(&self, row: usize) -> u32 {
        self.norms[row * self.fields..(row + 1) * self.fields].iter().sum()
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

/// One part's side of a segment being written: the part, its docs' rows
/// and the first doc id of its rows.
struct Side<'p, 's> {
    part: &'p Part<'s>,
    row_of: Vec<u32>,
    base: u32,
}

/// Writes the rows of `parts` as one new segment of `index` (the parts'
/// schema), the parts' docs one after the other, with the word pairs of
/// `pairs` (`pairs.rs`: every segment of a generation takes the same), its
/// fields' postings on `threads` threads: its meta, `None` when they hold
/// no rows.
pub(super) fn write(
    index: &Index,
    mut parts: Vec<Part<'_>>,
    threads: usize,
    pairs: &PairList,
) -> tantivy::Result<Option<SegmentMeta>> {
    let Some(first) = parts.first() else { return Ok(None) };
    let doc_schema = first.schema;
    let fields = first.fields;
    let mut rows_of: Vec<Vec<u32>> = parts.iter_mut().map(Part::row_of).collect();
    let mut sides = Vec::with_capacity(parts.len());
    let mut base = 0u32;
    for (part, row_of) in parts.iter().zip(rows_of.drain(..)) {
        let n = row_of.len() as u32;
        sides.push(Side { part, row_of, base });
        base += n;
    }
    let docs = base as usize;
    if docs == 0 {
        return Ok(None);
    }
    let segment = index.new_segment();
    let schema = &doc_schema.schema;

    // Field norms first: the postings' block maxima read them.
    let mut norms = FieldNormsWriter::for_schema(schema);
    for side in &sides {
        for (doc, &row) in side.row_of.iter().enumerate() {
            let (doc, row) = (side.base + doc as u32, row as usize);
            for (f, &field) in doc_schema.fields.iter().enumerate() {
                norms.record(doc, field, side.part.norms[row * fields + f]);
            }
            norms.record(doc, doc_schema.all, side.part.all_norm(row));
            for field in [doc_schema.key, doc_schema.partition, doc_schema.date] {
                norms.record(doc, field, 1);
            }
        }
    }
    norms.fill_up_to_max_doc(docs as u32);
    norms.serialize(
        FieldNormsSerializer::from_write(segment.open_write(SegmentComponent::FieldNorms)?)?,
        None,
    )?;
    let readers = FieldNormReaders::open(segment.open_read(SegmentComponent::FieldNorms)?)?;

    // Each field's postings into the segment's files in field order, as
    // tantivy writes them (a field without terms is left out): on one
    // thread straight into the files; on more, serialized in memory at
    // once, then copied in.
    let terms = merged_terms(&sides);
    let fields_indexed: Vec<Field> =
        schema.fields().filter(|(_, e)| e.is_indexed()).map(|(f, _)| f).collect();
    let mut files = [
        CompositeWrite::wrap(segment.open_write(SegmentComponent::Terms)?),
        CompositeWrite::wrap(segment.open_write(SegmentComponent::Postings)?),
        CompositeWrite::wrap(segment.open_write(SegmentComponent::Positions)?),
    ];
    if threads <= 1 {
        for &field in &fields_indexed {
            let [t, p, q] = &mut files;
            let open = move || {
                let (t, p, q) = (t, p, q);
                [t.for_field(field), p.for_field(field), q.for_field(field)]
            };
            serialize_field(&sides, &terms, pairs, doc_schema, field, readers.get_field(field)?, open)?;
        }
    } else {
        for bytes in fields_at_once(&sides, &terms, pairs, doc_schema, &fields_indexed, &readers, threads)? {
            for (file, section) in files.iter_mut().zip([&bytes.terms, &bytes.postings, &bytes.positions]) {
                file.for_field(bytes.field).write_all(section)?;
            }
        }
    }
    for file in files {
        file.close()?;
    }

    // Fast fields and the stored key, from documents without texts.
    let mut fast =
        FastFieldsWriter::from_schema_and_tokenizer_manager(schema, index.fast_field_tokenizer().clone())?;
    let settings = index.settings();
    let mut store = StoreWriter::new(
        segment.open_write(SegmentComponent::Store)?,
        settings.docstore_compression,
        settings.docstore_blocksize,
        settings.docstore_compress_dedicated_thread,
    )?;
    for side in &sides {
        let part = side.part;
        let mut facets_of: Vec<Vec<(usize, String)>> = vec![Vec::new(); side.row_of.len()];
        for (row, field, term) in &part.facets {
            facets_of[part.doc_of[*row as usize] as usize].push((*field as usize, term.to_string()));
        }
        for (facets, &row) in facets_of.into_iter().zip(&side.row_of) {
            let head = &part.rows[row as usize];
            let mut light = CellDoc::new(doc_schema);
            light.key.clone_from(&head.key);
            light.partition.clone_from(&part.partitions[head.partition as usize]);
            light.date_ms = head.date_ms;
            light.facet_terms = facets;
            fast.add_document(&light)?;
            store.store(&light, schema)?;
        }
    }
    let mut fast_write = segment.open_write(SegmentComponent::FastFields)?;
    fast.serialize(&mut fast_write, None)?;
    common_terminate(fast_write)?;
    store.close()?;
    Ok(Some(segment.with_max_doc(docs as u32).meta().clone()))
}

/// Every part's terms in order, each once: the term and, per part, its id
/// there (`NONE` where the part lacks it), at `t * parts..(t + 1) * parts`.
fn merged_terms<'p>(sides: &[Side<'p, '_>]) -> (Vec<&'p str>, Vec<u32>) {
    let orders: Vec<Vec<u32>> = sides
        .iter()
        .map(|s| {
            let mut order: Vec<u32> = (0..s.part.terms.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| s.part.terms[a as usize].cmp(&s.part.terms[b as usize]));
            order
        })
        .collect();
    let mut at = vec![0usize; sides.len()];
    let (mut terms, mut ids) = (Vec::new(), Vec::new());
    loop {
        let next = sides
            .iter()
            .zip(&orders)
            .zip(&at)
            .filter_map(|((s, order), &i)| order.get(i).map(|&id| &*s.part.terms[id as usize]))
            .min();
        let Some(term) = next else { break };
        terms.push(term);
        for ((s, order), i) in sides.iter().zip(&orders).zip(at.iter_mut()) {
            match order.get(*i) {
                Some(&id) if &*s.part.terms[id as usize] == term => {
                    ids.push(id);
                    *i += 1;
                }
                _ => ids.push(NONE),
            }
        }
    }
    (terms, ids)
}

/// The tokens of `field` in the parts' rows (their number for `_key`,
/// `_partition` and `date`).
fn tokens(sides: &[Side<'_, '_>], doc_schema: &DocSchema, field: Field) -> u64 {
    let fields = doc_schema.fields.len();
    let rows = |s: &Side<'_, '_>| 0..s.row_of.len();
    match doc_schema.fields.iter().position(|&x| x == field) {
        Some(f) => {
            sides.iter().flat_map(|s| rows(s).map(move |r| s.part.norms[r * fields + f])).map(u64::from).sum()
        }
        None if field == doc_schema.all => {
            sides.iter().flat_map(|s| rows(s).map(move |r| s.part.all_norm(r))).map(u64::from).sum()
        }
        None => sides.iter().map(|s| s.row_of.len() as u64).sum(),
    }
}

/// A field (its index among the indexed ones) serialized, if it had terms.
type Serialized = (usize, Option<FieldBytes>);

/// Every field of `fields` serialized ([`field_bytes`]) on `threads`
/// threads, the largest first (`_all`, then the longest texts) so the
/// threads finish together; in field order.
fn fields_at_once(
    sides: &[Side<'_, '_>],
    terms: &(Vec<&str>, Vec<u32>),
    pairs: &PairList,
    doc_schema: &DocSchema,
    fields: &[Field],
    readers: &FieldNormReaders,
    threads: usize,
) -> tantivy::Result<Vec<FieldBytes>> {
    let mut jobs: Vec<usize> = (0..fields.len()).collect();
    // `_pairs` reads two words' lists per pair: it goes with `_all`, first.
    let cost = |f: Field| match doc_schema.pairs {
        Some(pairs) if f == pairs => tokens(sides, doc_schema, doc_schema.all),
        _ => tokens(sides, doc_schema, f),
    };
    jobs.sort_by_key(|&i| std::cmp::Reverse(cost(fields[i])));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let serialized: Vec<tantivy::Result<Vec<Serialized>>> = std::thread::scope(|scope| {
        let work = || {
            let mut done = Vec::new();
            loop {
                let job = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = jobs.get(job) else { break };
                let field = fields[i];
                done.push((
                    i,
                    field_bytes(sides, terms, pairs, doc_schema, field, readers.get_field(field)?)?,
                ));
            }
            Ok(done)
        };
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = vec![work()];
        all.extend(helpers.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
        all
    });
    let mut by_field: Vec<Option<FieldBytes>> = (0..fields.len()).map(|_| None).collect();
    for done in serialized {
        for (i, bytes) in done? {
            by_field[i] = bytes;
        }
    }
    Ok(by_field.into_iter().flatten().collect())
}

/// One field's sections of the segment's term, postings and positions
/// files.
struct FieldBytes {
    field: Field,
    terms: Vec<u8>,
    postings: Vec<u8>,
    positions: Vec<u8>,
}

/// Field `field`'s postings serialized as tantivy's serializer writes them
/// into its sections; `None` for a field without terms, which tantivy
/// leaves out.
fn field_bytes(
    sides: &[Side<'_, '_>],
    terms: &(Vec<&str>, Vec<u32>),
    pairs: &PairList,
    doc_schema: &DocSchema,
    field: Field,
    norms: Option<tantivy::fieldnorm::FieldNormReader>,
) -> tantivy::Result<Option<FieldBytes>> {
    let mut sections = [(); 3].map(|()| CountingWriter::wrap(Vec::new()));
    let [t, p, q] = &mut sections;
    let written = serialize_field(sides, terms, pairs, doc_schema, field, norms, || [t, p, q])?;
    let [terms, postings, positions] = sections.map(CountingWriter::finish);
    Ok(written.then_some(FieldBytes { field, terms, postings, positions }))
}

/// Field `field`'s postings serialized into the sections `open` gives
/// (terms, postings, positions), opened at its first term: whether it had
/// one (tantivy leaves a field without terms out).
fn serialize_field<'w, W: Write + 'w>(
    sides: &[Side<'_, '_>],
    terms: &(Vec<&str>, Vec<u32>),
    pairs: &PairList,
    doc_schema: &DocSchema,
    field: Field,
    norms: Option<tantivy::fieldnorm::FieldNormReader>,
    open: impl FnOnce() -> [&'w mut CountingWriter<W>; 3],
) -> std::io::Result<bool> {
    let entry = doc_schema.schema.get_field_entry(field);
    let option = entry.field_type().index_record_option().unwrap_or(IndexRecordOption::Basic);
    if Some(field) == doc_schema.pairs {
        let postings = direct_pairs::postings(sides, pairs);
        if postings.is_empty() {
            return Ok(false);
        }
        // Each occurrence is a token of the field, as tantivy counts them.
        let total = postings.iter().flat_map(|(_, docs)| docs).map(|&(_, tf)| u64::from(tf)).sum();
        let [t, p, q] = open();
        let mut out = FieldSerializer::create(option, total, t, p, q, norms)?;
        for (term, docs) in &postings {
            out.new_term(term.as_bytes(), docs.len() as u32, true)?;
            for &(doc, tf) in docs {
                out.write_doc(doc, tf, &[]);
            }
            out.close_term()?;
        }
        out.close()?;
        return Ok(true);
    }
    let total = tokens(sides, doc_schema, field);
    let create = || {
        let [t, p, q] = open();
        FieldSerializer::create(option, total, t, p, q, norms)
    };
    if let Some(f) = doc_schema.fields.iter().position(|&x| x == field) {
        return write_terms(sides, terms, Some(f), create);
    }
    if field == doc_schema.all {
        return write_terms(sides, terms, None, create);
    }
    let mut values: Vec<(Vec<u8>, u32)> = Vec::new();
    for side in sides {
        for (doc, &row) in side.row_of.iter().enumerate() {
            values.push((
                side.part.value_term(field, entry.field_type(), row as usize),
                side.base + doc as u32,
            ));
        }
    }
    if values.is_empty() {
        return Ok(false);
    }
    values.sort_unstable();
    let mut out = create()?;
    for group in values.chunk_by(|a, b| a.0 == b.0) {
        out.new_term(&group[0].0, 0, false)?;
        for &(_, doc) in group {
            out.write_doc(doc, 0, &[]);
        }
        out.close_term()?;
    }
    out.close()?;
    Ok(true)
}

/// The terms of search field `field` (`None`: `_all`, every field's lists
/// summed per doc) with their postings, into the serializer `open` makes
/// at the first term: whether there was one.
fn write_terms<'w, W: Write + 'w>(
    sides: &[Side<'_, '_>],
    (terms, ids): &(Vec<&str>, Vec<u32>),
    field: Option<usize>,
    open: impl FnOnce() -> std::io::Result<FieldSerializer<'w, W>>,
) -> std::io::Result<bool> {
    let mut open = Some(open);
    let mut out = None;
    let mut gaps: Vec<u32> = Vec::new();
    // (doc, side, start, len)
    let mut list: Vec<(u32, u32, u32, u32)> = Vec::new();
    for (t, term) in terms.iter().enumerate() {
        list.clear();
        for (i, side) in sides.iter().enumerate() {
            let id = ids[t * sides.len() + i];
            if id == NONE {
                continue;
            }
            let part = side.part;
            let slots = &part.slots[id as usize * part.fields..(id as usize + 1) * part.fields];
            let from = list.len();
            for (f, &slot) in slots.iter().enumerate() {
                if slot == NONE || field.is_some_and(|g| g != f) {
                    continue;
                }
                let rows = part.lists[slot as usize].iter();
                list.extend(
                    rows.map(|p| (side.base + part.doc_of[p.row as usize], i as u32, p.start, p.len)),
                );
            }
            let mine = &mut list[from..];
            if !mine.is_sorted_by_key(|p| p.0) {
                mine.sort_unstable_by_key(|p| p.0);
            }
        }
        if field.is_none() {
            // A doc from several fields: once, its frequencies summed.
            list.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.3 += later.3;
                }
                same
            });
        }
        if list.is_empty() {
            continue;
        }
        if let Some(open) = open.take() {
            out = Some(open()?);
        }
        let Some(out) = out.as_mut() else { continue };
        out.new_term(term.as_bytes(), list.len() as u32, true)?;
        for &(doc, side, start, len) in &list {
            gaps.clear();
            if field.is_some() {
                let encoded = sides[side as usize].part.positions.get(start as usize..).unwrap_or_default();
                gaps.extend(position_gaps(encoded).take(len as usize));
            }
            // The store checked the bytes when it lent the cell: as many
            // gaps as positions.
            let tf = if field.is_some() { gaps.len() as u32 } else { len };
            out.write_doc(doc, tf, &gaps);
        }
        out.close_term()?;
    }
    match out {
        Some(out) => out.close().map(|()| true),
        None => Ok(false),
    }
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

#[path = "direct_pairs.rs"]
pub(super) mod direct_pairs;

#[cfg(test)]
#[path = "direct_tests.rs"]
mod tests;
