//! Column names: `family` or `family:qualifier`, as reads select them and
//! schemas declare them.

/// A column selection: a whole family or one qualifier of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    /// Every qualifier of the family (`f`).
    Family(String),
    /// One qualifier (`f:q`; `f:` is the empty qualifier).
    Qualifier(String, Vec<u8>),
}

impl Column {
    /// Parses `f`, `f:` or `f:q` (the qualifier may hold any bytes, `:` too).
    ///
    /// ```
    /// use rowsearch_store::Column;
    /// assert_eq!(Column::parse(b"m"), Column::Family("m".into()));
    /// assert_eq!(Column::parse(b"m:"), Column::Qualifier("m".into(), vec![]));
    /// assert_eq!(Column::parse(b"m:a:b"), Column::Qualifier("m".into(), b"a:b".to_vec()));
    /// ```
    pub fn parse(spec: &[u8]) -> Column {
        match spec.iter().position(|&b| b == b':') {
            Some(i) => {
                Column::Qualifier(String::from_utf8_lossy(&spec[..i]).into_owned(), spec[i + 1..].to_vec())
            }
            None => Column::Family(String::from_utf8_lossy(spec).into_owned()),
        }
    }

    /// The family this selection reads.
    pub fn family(&self) -> &str {
        match self {
            Column::Family(f) | Column::Qualifier(f, _) => f,
        }
    }
}

/// A `family:qualifier` column of a schema (a binary string); the reason,
/// prefixed with `what`, when it is not one.
pub(crate) fn parse_column(what: &str, column: &str) -> std::result::Result<(String, Vec<u8>), String> {
    let bytes = crate::binstr::decode(column).map_err(|e| format!("{what} {column:?}: {e}"))?;
    match Column::parse(&bytes) {
        Column::Qualifier(f, q) => Ok((f, q)),
        Column::Family(_) => Err(format!("{what} {column:?} must be family:qualifier")),
    }
}
