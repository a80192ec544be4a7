//! A direct build's word pairs (`pairs.rs`): which pairs the generation
//! keeps ([`select`]), and each kept pair's postings ([`postings`]), both
//! from the parts' postings and positions.

use hashbrown::HashMap;
use rowsearch_store::position_gaps;

use super::{NONE, Part, Posting, Side};
use crate::pairs::{COMMON_WORDS, MIN_DOCS, PairList, usable};

/// The selection counts pairs in one document of this many.
const STRIDE: u32 = 4;

/// The kept pairs' postings (as the sample estimates them) are at most
/// this share of the words' (`_all`'s, about): 1/5, some 5% of the index's
/// bytes (on the mail corpus the pairs hold 15% of `_all`'s postings, 3.5%
/// of its bytes). A larger corpus keeps its most frequent pairs.
const MAX_SHARE: u64 = 5;

/// Documents whose positions are gathered at once while counting.
const CHUNK_DOCS: u32 = 8192;

/// The pairs a build of `parts` keeps: pairs of words each in at least
/// [`MIN_DOCS`] documents and neither among the [`COMMON_WORDS`] most
/// frequent, standing side by side in at least [`MIN_DOCS`] documents as
/// every [`STRIDE`]th document estimates it, the most frequent first while
/// their postings stay within 1/[`MAX_SHARE`] of the words'. The parts are
/// counted on up to `threads` threads.
pub(crate) fn select(parts: &mut [Part<'_>], threads: usize) -> PairList {
    // Every row numbered (the last partition's too).
    for part in parts.iter_mut() {
        part.end_partition();
    }
    let parts = &*parts;
    // Documents per term, as those of its most frequent field (at most
    // `_all`'s: enough to rank, and a word's text is mostly in one field).
    let mut docs: HashMap<&str, u32> = HashMap::new();
    for part in parts {
        for (id, term) in part.terms.iter().enumerate() {
            let n = part.slots[id * part.fields..(id + 1) * part.fields]
                .iter()
                .filter(|&&s| s != NONE)
                .map(|&s| part.lists[s as usize].len())
                .max()
                .unwrap_or(0);
            *docs.entry(&**term).or_default() += n as u32;
        }
    }
    // Ranked among the words in enough documents only (the most frequent
    // are among them).
    let mut ranked: Vec<(u32, &str)> =
        docs.iter().filter(|&(_, n)| *n >= MIN_DOCS).map(|(t, n)| (*n, *t)).collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    let words: Vec<&str> = ranked
        .iter()
        .skip(COMMON_WORDS)
        .take_while(|(n, _)| *n >= MIN_DOCS)
        .map(|(_, t)| *t)
        .filter(|t| usable(t))
        .collect();
    if words.len() < 2 {
        return PairList::default();
    }
    let id_of: HashMap<&str, u32> = words.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let counted: Vec<HashMap<(u32, u32), u32>> = std::thread::scope(|scope| {
        let work = || {
            let mut counts = HashMap::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(part) = parts.get(i) else { break };
                count(part, &id_of, &mut counts);
            }
            counts
        };
        let helpers: Vec<_> = (1..threads.clamp(1, parts.len().max(1))).map(|_| scope.spawn(work)).collect();
        let mut all = vec![work()];
        all.extend(helpers.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
        all
    });
    let mut counts = HashMap::new();
    for part in counted {
        for (pair, n) in part {
            *counts.entry(pair).or_insert(0u32) += n;
        }
    }
    let floor = MIN_DOCS.div_ceil(STRIDE);
    let mut kept: Vec<((u32, u32), u32)> = counts.into_iter().filter(|&(_, n)| n >= floor).collect();
    // The most frequent pairs first (their phrases read the most
    // positions), while their postings stay within the budget.
    let texts = |&((a, b), _): &((u32, u32), u32)| crate::pairs::text(words[a as usize], words[b as usize]);
    kept.sort_unstable_by(|x, y| y.1.cmp(&x.1).then_with(|| texts(x).cmp(&texts(y))));
    let postings: u64 = docs.values().map(|&n| u64::from(n)).sum();
    let budget = postings / MAX_SHARE;
    let mut spent = 0u64;
    let within = kept.iter().take_while(|&&(_, n)| {
        spent += u64::from(n) * u64::from(STRIDE);
        spent <= budget
    });
    PairList::new(within.map(texts).collect::<Vec<_>>())
}

/// Counts into `counts`, per pair of `words` (their ids), the sampled
/// documents of `part` where the two stand side by side in some field.
fn count(part: &Part<'_>, words: &HashMap<&str, u32>, counts: &mut HashMap<(u32, u32), u32>) {
    // The lists of the part's candidate words: (list, field, word).
    let mut lists: Vec<(usize, u32, u32)> = Vec::new();
    for (id, term) in part.terms.iter().enumerate() {
        let Some(&word) = words.get(&**term) else { continue };
        for (f, &slot) in part.slots[id * part.fields..(id + 1) * part.fields].iter().enumerate() {
            if slot != NONE {
                lists.push((slot as usize, f as u32, word));
            }
        }
    }
    let mut at = vec![0usize; lists.len()];
    // (doc, field, position, word)
    let mut gathered: Vec<(u32, u32, u32, u32)> = Vec::new();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let docs = part.doc_of.len() as u32;
    let mut from = 0u32;
    while from < docs {
        let to = from.saturating_add(CHUNK_DOCS);
        gathered.clear();
        for (i, &(slot, field, word)) in lists.iter().enumerate() {
            let list = &part.lists[slot];
            while let Some(p) = list.get(at[i]) {
                let doc = part.doc_of[p.row as usize];
                if doc >= to {
                    break;
                }
                at[i] += 1;
                if !doc.is_multiple_of(STRIDE) {
                    continue;
                }
                let encoded = part.positions.get(p.start as usize..).unwrap_or_default();
                let mut position = 0u32;
                for gap in position_gaps(encoded).take(p.len as usize) {
                    position = position.wrapping_add(gap);
                    gathered.push((doc, field, position, word));
                }
            }
        }
        gathered.sort_unstable();
        for doc in gathered.chunk_by(|a, b| a.0 == b.0) {
            pairs.clear();
            // Words may share a position: each of one place pairs with
            // each of the next.
            let mut before: &[(u32, u32, u32, u32)] = &[];
            for here in doc.chunk_by(|x, y| (x.1, x.2) == (y.1, y.2)) {
                if let (Some(&(_, f, p, _)), &(_, g, q, _)) = (before.first(), &here[0])
                    && f == g
                    && p.checked_add(1) == Some(q)
                {
                    for &(_, _, _, a) in before {
                        pairs.extend(here.iter().filter(|h| h.3 != a).map(|h| (a, h.3)));
                    }
                }
                before = here;
            }
            pairs.sort_unstable();
            pairs.dedup();
            for &pair in &pairs {
                *counts.entry(pair).or_insert(0) += 1;
            }
        }
        from = to;
    }
}

/// Each pair of `list` the sides' documents hold, in term order, with its
/// documents (ids in the segment, ascending) and how often its words stand
/// side by side in each, over the fields.
pub(super) fn postings(sides: &[Side<'_, '_>], list: &PairList) -> Vec<(String, Vec<(u32, u32)>)> {
    let mut out = Vec::new();
    let mut docs: Vec<(u32, u32)> = Vec::new();
    let (mut pa, mut pb): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    // Per side, per list: 0 not looked at, 1 in document order, 2 not.
    let mut order: Vec<Vec<u8>> = sides.iter().map(|s| vec![0; s.part.lists.len()]).collect();
    for text in list.texts() {
        let Some((a, b)) = crate::pairs::split(text) else { continue };
        docs.clear();
        for (side, order) in sides.iter().zip(order.iter_mut()) {
            let part = side.part;
            let (Some(ia), Some(ib)) = (part.term_id(a), part.term_id(b)) else { continue };
            for f in 0..part.fields {
                let (sa, sb) = (part.slots[ia * part.fields + f], part.slots[ib * part.fields + f]);
                if sa == NONE || sb == NONE {
                    continue;
                }
                let (la, lb) = (sorted_list(part, sa, order), sorted_list(part, sb, order));
                // The shorter list leads; the other is searched forward.
                let a_leads = la.len() <= lb.len();
                let (lead, other) = if a_leads { (&la, &lb) } else { (&lb, &la) };
                let mut j = 0;
                for x in lead.iter() {
                    let doc = part.doc_of[x.row as usize];
                    j = seek(other, &part.doc_of, j, doc);
                    let Some(y) = other.get(j) else { break };
                    if part.doc_of[y.row as usize] != doc {
                        continue;
                    }
                    let (xa, xb) = if a_leads { (x, y) } else { (y, x) };
                    decode(part, xa, &mut pa);
                    decode(part, xb, &mut pb);
                    let n = pa
                        .iter()
                        .filter(|&&p| p.checked_add(1).is_some_and(|q| pb.binary_search(&q).is_ok()))
                        .count() as u32;
                    if n > 0 {
                        docs.push((side.base + doc, n));
                    }
                }
            }
        }
        if docs.is_empty() {
            continue;
        }
        docs.sort_unstable();
        docs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        out.push((text.clone(), docs.clone()));
    }
    out
}

/// List `slot` of `part` in document order: itself (lists come so, as
/// rows are numbered), or a sorted copy.
fn sorted_list<'p>(part: &'p Part<'_>, slot: u32, order: &mut [u8]) -> std::borrow::Cow<'p, [Posting]> {
    let list = &part.lists[slot as usize];
    let known = &mut order[slot as usize];
    if *known == 0 {
        *known = if list.is_sorted_by_key(|p| part.doc_of[p.row as usize]) { 1 } else { 2 };
    }
    if *known == 1 {
        return std::borrow::Cow::Borrowed(list);
    }
    let mut copy = list.clone();
    copy.sort_unstable_by_key(|p| part.doc_of[p.row as usize]);
    std::borrow::Cow::Owned(copy)
}

/// The first index at or after `from` of `list` (in document order) whose
/// document is at or after `target` (the list's length if none): a
/// galloping search, so a long list costs the log of the distance.
fn seek(list: &[Posting], doc_of: &[u32], from: usize, target: u32) -> usize {
    let doc = |i: usize| doc_of[list[i].row as usize];
    let (mut low, mut high, mut step) = (from, from, 1usize);
    while high < list.len() && doc(high) < target {
        low = high + 1;
        high += step;
        step *= 2;
    }
    let high = high.min(list.len());
    low + list[low..high].partition_point(|p| doc_of[p.row as usize] < target)
}

/// `posting`'s positions, into `out`.
fn decode(part: &Part<'_>, posting: &Posting, out: &mut Vec<u32>) {
    out.clear();
    let encoded = part.positions.get(posting.start as usize..).unwrap_or_default();
    let mut at = 0u32;
    for gap in position_gaps(encoded).take(posting.len as usize) {
        at = at.wrapping_add(gap);
        out.push(at);
    }
}
