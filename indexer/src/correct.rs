//! `did_you_mean`: a query that finds nothing, its unknown words replaced
//! by the nearest held ones (within a key's partitions, by their
//! documents alone).

use tantivy::Term;
use tantivy::query::{Query, TermQuery};
use tantivy::schema::IndexRecordOption;

use crate::{Generation, Overlay, Result};

/// Near terms of a word counted within partitions for `did_you_mean`.
const SCOPED_NEAR_TERMS: usize = 256;

/// Characters that open a word without being part of it.
pub const OPENERS: &[char] = &['-', '+', '(', '"'];

fn term_query(field: tantivy::schema::Field, term: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::Basic))
}

impl Generation {
    /// Documents holding `term` in `field`, within `partitions` (all when
    /// empty), `overlay` laid on this generation.
    ///
    /// # Errors
    /// `Tantivy`.
    pub fn count_term(
        &self,
        field: tantivy::schema::Field,
        term: &str,
        partitions: &[&[u8]],
        overlay: Option<&Overlay>,
    ) -> Result<u64> {
        self.count(&*self.scoped(term_query(field, term), partitions), overlay)
    }
}

/// For a query that found nothing: the query with each plain word the
/// index does not hold replaced by the held term nearest to it (one edit
/// for words of 3 to 7 characters, two from 8; the one in most documents),
/// when that query finds something in `partitions`. Words inside `field:`,
/// with `*` or `~`, and operators are left as they are. Within partitions
/// a word counts as held, and a correction is chosen, by the documents of
/// those partitions alone (the one in most of them): words found only in
/// other partitions are never proposed.
pub fn did_you_mean(
    generation: &Generation,
    overlay: Option<&Overlay>,
    query: &str,
    partitions: &[&[u8]],
) -> Result<Option<String>> {
    let all = generation.schema.all;
    let mut corrected = String::with_capacity(query.len());
    let mut changed = false;
    let mut last = 0;
    for (at, token) in words(query) {
        let word = crate::analyzer::normalize(token);
        let chars = word.chars().count();
        if chars < 3 || ["and", "or", "not"].contains(&word.as_str()) {
            continue;
        }
        let scoped_docs = |term: &str| generation.count_term(all, term, partitions, overlay);
        let held = if partitions.is_empty() {
            generation.completions(all, &word, overlay)?.iter().any(|(t, _)| *t == word)
        } else {
            scoped_docs(&word)? > 0
        };
        if held {
            continue;
        }
        let edits = if chars >= 8 { 2 } else { 1 };
        let near = generation.near_terms(all, &word, edits, overlay)?;
        let best = if partitions.is_empty() {
            near.into_iter().next().map(|(term, _)| term)
        } else {
            // Each candidate counted in the partitions: the order overall
            // must not choose among them. At most the first
            // `SCOPED_NEAR_TERMS` by documents overall are counted (bounded
            // work; a word one or two edits away rarely has more).
            let mut best: Option<(u64, String)> = None;
            for (term, _) in near.into_iter().take(SCOPED_NEAR_TERMS) {
                let docs = scoped_docs(&term)?;
                let better = match &best {
                    None => docs > 0,
                    Some((n, t)) => docs > *n || (docs == *n && term < *t),
                };
                if better {
                    best = Some((docs, term));
                }
            }
            best.map(|(_, term)| term)
        };
        if let Some(term) = best {
            corrected.push_str(&query[last..at]);
            corrected.push_str(&term);
            last = at + token.len();
            changed = true;
        }
    }
    if !changed {
        return Ok(None);
    }
    corrected.push_str(&query[last..]);
    let Ok(parsed) = generation.parse(&corrected, partitions) else { return Ok(None) };
    Ok((generation.count(&*parsed, overlay)? > 0).then_some(corrected))
}

/// The plain words of a query with their byte offsets: runs of letters and
/// digits standing alone (not a `field:` name or value, not followed by
/// `*` or `~`, not part of a date range).
fn words(query: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for chunk in query.split_inclusive(char::is_whitespace) {
        let token = chunk.trim_end();
        let inner = token.trim_start_matches(OPENERS).trim_end_matches([')', '"']);
        let at = offset + (token.len() - token.trim_start_matches(OPENERS).len());
        if !inner.is_empty() && inner.chars().all(char::is_alphanumeric) {
            out.push((at, inner));
        }
        offset += chunk.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_are_picked_with_their_offsets() {
        let q = "enrn AND (-meetign) subject:gas \"powr plant\" pri* date:2001 ga~1";
        let got = words(q);
        let texts: Vec<&str> = got.iter().map(|(_, w)| *w).collect();
        assert_eq!(texts, ["enrn", "AND", "meetign", "powr", "plant"]);
        for (at, w) in got {
            assert_eq!(&q[at..at + w.len()], w);
        }
    }
}
