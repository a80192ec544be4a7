//! A table's open thread entries and the columns it threads by.

use crate::db::BytesDb;
use crate::schema::{ParsedThreads, ThreadSchema};

/// A table's open thread entries and the columns it threads by.
#[derive(Debug)]
pub(crate) struct ThreadsHandle {
    pub schema: ThreadSchema,
    pub columns: ParsedThreads,
    pub db: BytesDb,
}
