//! The `threads` section of a table schema: which columns link rows into
//! conversations (mail's Message-ID, In-Reply-To and References), and
//! whether rows without links are gathered by subject. The engine that
//! keeps threads is `crate::threads`.

use serde::{Deserialize, Serialize};

use super::column::parse_column;
use super::family::FamilySchema;

/// Default width of the window in which a reply without references joins
/// a message of the same subject: 30 days.
pub const DEFAULT_SUBJECT_WINDOW_MS: u64 = 30 * 24 * 3600 * 1000;

/// A table's threading setting.
///
/// ```
/// use rowsearch_store::ThreadSchema;
/// let threads: ThreadSchema = serde_json::from_str(
///     r#"{"id_column": "m:message_id", "refs_columns": ["m:in_reply_to", "m:references"],
///         "thread_column": "m:thread", "subject_column": "m:subject"}"#,
/// ).unwrap();
/// assert_eq!(threads.subject_window_ms, rowsearch_store::DEFAULT_SUBJECT_WINDOW_MS);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSchema {
    /// The column holding a row's message ids: one per line (a row folding
    /// copies holds each copy's id). A row without it threads alone.
    pub id_column: String,
    /// Columns holding the ids a row refers to (`<id>` each, as mail's
    /// In-Reply-To and References): a row joins the thread of every id it
    /// names, as notmuch groups messages.
    #[serde(default)]
    pub refs_columns: Vec<String>,
    /// The column the thread id is written to, in the same transaction as
    /// the row (a search field of kind keyword makes `thread:` queries and
    /// collapsing work).
    pub thread_column: String,
    /// The subject column: a reply (`Re:`, `Fwd:` ...) without references
    /// joins messages of the same subject within
    /// [`ThreadSchema::subject_window_ms`] of its date. `None`: by
    /// references only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_column: Option<String>,
    /// The window of subject gathering, in milliseconds either side.
    #[serde(default = "default_window")]
    pub subject_window_ms: u64,
    /// Copies fold: rows that differ only in id and folder are one row
    /// carrying every id and folder (for a writer that derives row keys
    /// from content, as `rowsearch ingest` does; the store itself keeps
    /// what it is given).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fold_copies: bool,
}

fn default_window() -> u64 {
    DEFAULT_SUBJECT_WINDOW_MS
}

impl ThreadSchema {
    /// Threads by the ids in `id_column` and `refs_columns`, writing the
    /// thread id to `thread_column`.
    pub fn new(
        id_column: impl Into<String>,
        refs_columns: impl IntoIterator<Item = impl Into<String>>,
        thread_column: impl Into<String>,
    ) -> ThreadSchema {
        ThreadSchema {
            id_column: id_column.into(),
            refs_columns: refs_columns.into_iter().map(Into::into).collect(),
            thread_column: thread_column.into(),
            subject_column: None,
            subject_window_ms: DEFAULT_SUBJECT_WINDOW_MS,
            fold_copies: false,
        }
    }

    /// Copies fold (see [`ThreadSchema::fold_copies`]).
    pub fn fold_copies(mut self) -> ThreadSchema {
        self.fold_copies = true;
        self
    }

    /// Gathers replies without references by the subject in `column`.
    pub fn by_subject(mut self, column: impl Into<String>) -> ThreadSchema {
        self.subject_column = Some(column.into());
        self
    }

    /// Every column it names, parsed: id, refs, thread, subject.
    pub(crate) fn parsed(&self) -> std::result::Result<ParsedThreads, String> {
        let one = |what: &str, c: &str| parse_column(&format!("threads: {what}"), c);
        Ok(ParsedThreads {
            id: one("id_column", &self.id_column)?,
            refs: self.refs_columns.iter().map(|c| one("refs_columns", c)).collect::<Result<_, _>>()?,
            thread: one("thread_column", &self.thread_column)?,
            subject: self.subject_column.as_deref().map(|c| one("subject_column", c)).transpose()?,
        })
    }

    /// Checks the section against the families: the reason, when it does
    /// not fit.
    pub(crate) fn check(&self, families: &[FamilySchema], has_date: bool) -> std::result::Result<(), String> {
        let parsed = self.parsed()?;
        let mut all = vec![&parsed.id, &parsed.thread];
        all.extend(&parsed.refs);
        all.extend(&parsed.subject);
        for (family, _) in all {
            if !families.iter().any(|f| &f.name == family) {
                return Err(format!("threads: unknown family {family:?}"));
            }
        }
        if parsed.thread == parsed.id || parsed.refs.contains(&parsed.thread) {
            return Err("threads: thread_column must be a column of its own".into());
        }
        if self.subject_column.is_some() && !has_date {
            return Err("threads: gathering by subject needs the search section's date_column".into());
        }
        Ok(())
    }
}

/// A [`ThreadSchema`]'s columns as (family, qualifier).
#[derive(Debug, Clone)]
pub(crate) struct ParsedThreads {
    pub id: (String, Vec<u8>),
    pub refs: Vec<(String, Vec<u8>)>,
    pub thread: (String, Vec<u8>),
    pub subject: Option<(String, Vec<u8>)>,
}
