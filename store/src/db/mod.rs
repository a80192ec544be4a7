//! The LMDB layer: every database of a store named in one place, the
//! environment with its map growth and poisoning ([`env`]), the metadata
//! database ([`meta`]), the change feed ([`feed`]), open family databases
//! ([`family`]) and sorted puts ([`sorted`]).
//!
//! Every LMDB database of a store:
//!
//! | name                   | key                    | value                          |
//! |------------------------|------------------------|--------------------------------|
//! | `meta`                 | see the `META_*` keys  | format marker, schemas, table ids, catalog version, counters |
//! | `feed`                 | sequence (u64 BE)      | table name length (u16 BE), table, row key |
//! | `keys`                 | access key uid         | the key's record, JSON (see `keys`) |
//! | `t/<table>/f/<family>` | cell key (see `key`)   | value bytes                    |
//! | `t/<table>/i/<index>`  | index entry (see `index`) | expiry (u64 BE; empty: never) |
//! | `t/<table>/p/<index>`  | run id (u32 BE), index entry; run 0: the run directory | as above; directory: entries written (u64 BE) |
//! | `t/<table>/kv`         | keyword block key, or `00`: the cell count (see `keyword`) | keyword block; the count: u64 BE |
//! | `t/<table>/kp`         | run id (u32 BE) ‖ keyword block key; run 0: the run directory (see `keyword::runs`) | keyword block; directory: versions written (u64 BE) |
//! | `t/<table>/kb`         | (format 4: keyword blocks with row keys; emptied by the upgrade) | |
//! | `t/<table>/kr`         | `01` ‖ row number (u32 BE); `02` ‖ row key (see `keyword::rows`) | row key; row number (u32 BE) |
//! | `t/<table>/th`         | thread entries (see `threads::entries`) | as there |
//! | `t/<table>/k`          | (format 3: keyword cell; emptied by the upgrade) | positions |

pub(crate) mod backup;
pub(crate) mod consumers;
pub(crate) mod durability;
pub(crate) mod env;
pub(crate) mod family;
pub(crate) mod feed;
pub(crate) mod keys;
pub(crate) mod meta;
pub(crate) mod repack;
pub(crate) mod sorted;
pub(crate) mod value;

use heed::Database;
use heed::types::Bytes;

/// Every database holds raw bytes; the layouts are the owners' business.
pub(crate) type BytesDb = Database<Bytes, Bytes>;

/// The metadata database.
pub(crate) const META: &str = "meta";
/// The change feed.
pub(crate) const FEED: &str = "feed";
/// The access keys (see `keys`).
pub(crate) const KEYS: &str = "keys";

/// Meta key holding the store format marker.
pub(crate) const META_FORMAT: &[u8] = b"format";
/// Meta key holding the next change-feed sequence (u64 BE).
pub(crate) const META_FEED_NEXT_SEQ: &[u8] = b"feed/next_seq";
/// Meta key prefix for commit times: ‖ the commit's first feed sequence
/// (u64 BE) -> ms (u64 BE); see `feed`.
pub(crate) const META_FEED_TIME_PREFIX: &[u8] = b"feed/time/";
/// Meta key holding the secret access keys are hashed with (32 bytes).
pub(crate) const META_KEYS_SECRET: &[u8] = b"keys/secret";
/// Meta key holding the version of the key set (u64 BE; absent: 0).
pub(crate) const META_KEYS_VERSION: &[u8] = b"keys/version";
/// Meta key prefix for table schemas (JSON).
pub(crate) const META_SCHEMA_PREFIX: &[u8] = b"schema/";
/// Meta key holding the catalog version (u64 BE; absent: 0): bumped by
/// every schema change in its own transaction, so every process sees in
/// each transaction whether the schemas it holds are the current ones.
pub(crate) const META_CATALOG_VERSION: &[u8] = b"catalog/version";
/// Meta key prefix marking an index whose entries are being built (see
/// `write::derived::BuildCursor` for the value); absent once it is ready.
pub(crate) const META_INDEX_BUILD_PREFIX: &[u8] = b"index_build/";
/// Meta key prefix for table ids (u64 BE: the catalog version that created
/// the table; absent for tables created before ids existed: 0). A table
/// dropped and created again has a new id.
pub(crate) const META_TABLE_ID_PREFIX: &[u8] = b"table_id/";
/// Meta key prefix marking a disabled table (HBase's disable: the table
/// refuses reads and writes until enabled); absent for an enabled one.
/// Older builds ignore it (they see every table enabled).
pub(crate) const META_DISABLED_PREFIX: &[u8] = b"disabled/";
/// `dict/<table>/<family>`: a zstd family's dictionary (`value.rs`).
pub(crate) const META_DICT_PREFIX: &[u8] = b"dict/";

/// The format this build reads and writes.
pub const FORMAT: &str = "rowsearch-store/10";
/// Older formats this build opens and marks as [`FORMAT`]: version 1 had no
/// pending index databases (created empty on open); version 2 kept pending
/// index entries without run ids (moved into the main index on open). An
/// older build would misread pending runs, so it must refuse a version 3
/// store. Version 3 kept one keyword cell per entry in `t/<table>/k`;
/// version 4 keeps blocks in `t/<table>/kb` (converted on open, in the
/// opening transaction); version 5's blocks hold row numbers (`t/<table>/kr`)
/// where version 4's held row keys (converted on open the same way).
/// Version 6 keeps new keyword versions in pending runs (`t/<table>/kp`,
/// created empty on open), which an older build would not read. Version 7's
/// terms are folded (`crème` is `creme`) and a keyword value holds a term
/// per line: every keyword cell is written again on open, and a table whose
/// cells changed takes a new id (its search index is built again); an older
/// build would look up unfolded terms. Version 8's thread member entries
/// hold their rows (copied in from the id entries on open), which an older
/// build would misread as partitions. Version 9 adds values compressed with
/// a family's dictionary (tag `03`, `value.rs`), which an older build would
/// refuse as corrupt: nothing is rewritten on open. Version 10's keyword
/// blocks keep Δdates in seconds where they are whole seconds and short
/// positions lengths inside other numbers (`keyword/block.rs`): every block is rewritten on
/// open, and an older build would misread each one.
pub const UPGRADES_FROM: &[&str] = &[
    "rowsearch-store/1",
    "rowsearch-store/2",
    "rowsearch-store/3",
    "rowsearch-store/4",
    "rowsearch-store/5",
    "rowsearch-store/6",
    "rowsearch-store/7",
    "rowsearch-store/8",
    "rowsearch-store/9",
];

/// Databases besides the families.
pub(crate) const FIXED_DBS: u32 = 3;

/// The database holding one family of one table.
pub(crate) fn family_db(table: &str, family: &str) -> String {
    format!("t/{table}/f/{family}")
}

/// The database holding one index of one table.
pub(crate) fn index_db(table: &str, index: &str) -> String {
    format!("t/{table}/i/{index}")
}

/// The database buffering an index's recent entries.
pub(crate) fn pending_index_db(table: &str, index: &str) -> String {
    format!("t/{table}/p/{index}")
}

/// The database holding a table's keyword rows (blocks; format 5).
pub(crate) fn keyword_db(table: &str) -> String {
    format!("t/{table}/kv")
}

/// The database holding a table's pending keyword runs (format 6; see
/// `keyword::runs`).
pub(crate) fn keyword_runs_db(table: &str) -> String {
    format!("t/{table}/kp")
}

/// The database that held a table's keyword blocks with row keys (format
/// 4): read by the upgrade, then emptied.
pub(crate) fn keyword_blocks_db_v4(table: &str) -> String {
    format!("t/{table}/kb")
}

/// The database numbering the rows a table's keyword blocks refer to
/// (format 5; see `keyword::rows`).
pub(crate) fn keyword_rows_db(table: &str) -> String {
    format!("t/{table}/kr")
}

/// The database holding a table's thread entries (see `threads::entries`).
pub(crate) fn threads_db(table: &str) -> String {
    format!("t/{table}/th")
}

/// The database that held a table's keyword cells one per entry (format
/// 3): read by the upgrade, then emptied.
pub(crate) fn keyword_cells_db_v3(table: &str) -> String {
    format!("t/{table}/k")
}

/// The meta key of a table's id.
pub(crate) fn table_id_key(table: &str) -> Vec<u8> {
    [META_TABLE_ID_PREFIX, table.as_bytes()].concat()
}

/// The meta key marking index `index` of `table` as being built.
pub(crate) fn index_build_key(table: &str, index: &str) -> Vec<u8> {
    [META_INDEX_BUILD_PREFIX, table.as_bytes(), b"/", index.as_bytes()].concat()
}

/// The meta key marking `table` disabled.
pub(crate) fn disabled_key(table: &str) -> Vec<u8> {
    [META_DISABLED_PREFIX, table.as_bytes()].concat()
}

/// The meta key of a family's zstd dictionary.
pub(crate) fn dict_key(table: &str, family: &str) -> Vec<u8> {
    [META_DICT_PREFIX, table.as_bytes(), b"/", family.as_bytes()].concat()
}

/// The meta key of a table's schema.
pub(crate) fn schema_key(table: &str) -> Vec<u8> {
    [META_SCHEMA_PREFIX, table.as_bytes()].concat()
}
