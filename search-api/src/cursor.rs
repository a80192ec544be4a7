//! A search's cursor: `c1.<generation>.<commit hex>.<offset>.<fingerprint
//! hex>`, bound to the walk it resumes (the generation and commit it was
//! read from) and to the search it belongs to (its fingerprint).

use crate::{Error, Result};

const CURSOR_PREFIX: &str = "c1.";

/// The cursor of the page at `offset` of the walk on `generation` at
/// `commit` of the search whose fingerprint is `made_for`.
pub(crate) fn cursor(generation: u64, commit: u64, offset: usize, made_for: u64) -> String {
    format!("{CURSOR_PREFIX}{generation}.{commit:x}.{offset}.{made_for:x}")
}

/// `c1.<generation>.<commit hex>.<offset>.<fingerprint hex>`.
pub(crate) fn parse_cursor(cursor: &str) -> Result<(u64, u64, usize, u64)> {
    let bad = || Error::BadRequest(format!("bad cursor {cursor:?}"));
    let rest = cursor.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
    let mut parts = rest.split('.');
    let (Some(generation), Some(commit), Some(offset), Some(made_for), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    Ok((
        generation.parse().map_err(|_| bad())?,
        u64::from_str_radix(commit, 16).map_err(|_| bad())?,
        offset.parse().map_err(|_| bad())?,
        u64::from_str_radix(made_for, 16).map_err(|_| bad())?,
    ))
}
