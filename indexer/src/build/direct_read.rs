//! The readers of a full build that writes its segments directly (see
//! `direct.rs`): whole partitions gathered into a [`Part`]; a part past a
//! reader's share of the budget is written as a segment of its own, and a
//! partition that alone is past it is read again in slices by a hash of
//! the row key, each slice its own segment. What the readers hold at the
//! end is written as one segment (`full.rs`).

use std::sync::atomic::Ordering;

use rowsearch_store::RowView;
use tantivy::Index;

use super::{MAX_SLICES, Part, Readers, direct, slice_of, store_err, unwrap_store_err};
use crate::Result;
use crate::error::tantivy_err;

impl<'a> Readers<'a> {
    /// Gathers the partitions in `[from, to)` into `part`, writing it out
    /// between partitions whenever it is past the budget: the rows written.
    pub(super) fn range_direct(
        &self,
        rtxn: &dyn RowView,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        index: &Index,
        part: &mut Part<'a>,
    ) -> Result<Option<u64>> {
        let (table, budget) = (self.table, self.group_budget);
        let mut rows = 0u64;
        let mut partition: Option<Vec<u8>> = None;
        let mut oversized: Vec<Vec<u8>> = Vec::new();
        let mut skipping = false;
        let mut unreported = 0u64;
        let read = rtxn.for_each_keyword_cell_between(table, from, to, &mut |cell| {
            self.tick(&mut unreported)?;
            if partition.as_deref() != Some(cell.partition) {
                if self.write_now(part) {
                    rows += self.write_part(index, part).map_err(store_err)?;
                }
                partition = Some(cell.partition.to_vec());
                skipping = false;
            }
            if skipping {
                return Ok(());
            }
            part.add(cell);
            if part.partition_over(budget) {
                // Too big to gather at once: in slices after this pass.
                part.abandon();
                oversized.push(cell.partition.to_vec());
                skipping = true;
            }
            Ok(())
        });
        if !self.settle(unreported, read)? {
            return Ok(None);
        }
        for p in &oversized {
            rows += self.write_part(index, part)?;
            rows += self.slices_direct(rtxn, p, 2, 0, index, part)?
                + self.slices_direct(rtxn, p, 2, 1, index, part)?;
        }
        Ok(Some(rows))
    }

    /// Writes the rows of partition `p` whose key hashes to `residue`
    /// modulo `modulus` as a segment, halving the slice again while it is
    /// past the budget (`part` comes and goes empty).
    fn slices_direct(
        &self,
        rtxn: &dyn RowView,
        p: &[u8],
        modulus: u64,
        residue: u64,
        index: &Index,
        part: &mut Part<'a>,
    ) -> Result<u64> {
        let mut over = false;
        rtxn.for_each_keyword_cell(self.table, Some(p), &mut |cell| {
            if !over && slice_of(cell.key, modulus) == residue {
                part.add(cell);
                over = part.over(self.group_budget) && modulus < MAX_SLICES;
            }
            Ok(())
        })
        .map_err(unwrap_store_err)?;
        if over {
            *part = Part::new(self.schema);
            let m = modulus * 2;
            return Ok(self.slices_direct(rtxn, p, m, residue, index, part)?
                + self.slices_direct(rtxn, p, m, residue + modulus, index, part)?);
        }
        self.write_part(index, part)
    }

    /// Whether `part` (between partitions) is to be written now: near its
    /// numbers' limits, or the readers' parts together (those being
    /// written too) past the gathering budget while it holds at least its
    /// share of the parts still gathering (the largest always does; the
    /// others gather on). Counts its bytes in the total.
    fn write_now(&self, part: &mut Part<'a>) -> bool {
        let (now, before) = (part.bytes_held(), part.reported);
        part.reported = now;
        let total = if now >= before {
            self.gathered.fetch_add(now - before, Ordering::Relaxed) + (now - before)
        } else {
            self.gathered.fetch_sub(before - now, Ordering::Relaxed).saturating_sub(before - now)
        };
        if part.near_limits() {
            return true;
        }
        let gathering = total.saturating_sub(self.writing.load(Ordering::Relaxed));
        let gatherers = self.readers.saturating_sub(self.writers.load(Ordering::Relaxed)).max(1);
        total > self.gather_budget && now.saturating_mul(gatherers) >= gathering
    }

    /// Writes `part` as a segment (noted for the commit) and empties it:
    /// the rows it held.
    pub(super) fn write_part(&self, index: &Index, part: &mut Part<'a>) -> Result<u64> {
        let full = std::mem::replace(part, Part::new(self.schema));
        let (rows, reported) = (full.rows(), full.reported);
        self.writing.fetch_add(reported, Ordering::Relaxed);
        self.writers.fetch_add(1, Ordering::Relaxed);
        let written = direct::write(index, vec![full], 1, &crate::pairs::PairList::default());
        // Counted until freed: the other readers do not gather into
        // memory it still holds.
        self.writers.fetch_sub(1, Ordering::Relaxed);
        self.writing.fetch_sub(reported, Ordering::Relaxed);
        self.gathered.fetch_sub(reported, Ordering::Relaxed);
        if let Some(meta) = written.map_err(tantivy_err(self.table, "write segment"))? {
            self.segments.lock().unwrap_or_else(|e| e.into_inner()).push(meta);
        }
        Ok(rows)
    }
}
