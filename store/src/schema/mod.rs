//! Table schemas: declared column families with their version and TTL
//! rules, and the sections that derive data from them: the typed row key
//! (`crate::key::rowkey`), secondary indexes ([`index`]) and keyword rows
//! ([`search`]). Only types and validation live here; the engines that
//! keep derived data are `crate::secondary` and `crate::keyword`.

mod column;
mod family;
mod index;
pub(crate) mod name;
mod search;
mod table;
mod threads;

pub use column::Column;
pub(crate) use column::parse_column;
pub use family::{Compression, FamilySchema};
pub use index::IndexSchema;
pub use name::{CATALOG_TABLE, KEYWORDS_SUFFIX, MAX_FAMILY_NAME_BYTES, MAX_TABLE_NAME_BYTES, THREADS_SUFFIX};
pub use search::{Analyzer, DATE_NAME, FieldKind, MAX_SEARCH_FIELDS, MAX_SHARDS, SearchField, SearchSchema};
pub use table::{MAX_FAMILIES, MAX_INDEXES, TableSchema};
pub(crate) use threads::ParsedThreads;
pub use threads::{DEFAULT_SUBJECT_WINDOW_MS, ThreadSchema};
