//! A column family's schema: its version and TTL rules.

use serde::{Deserialize, Serialize};

/// One column family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySchema {
    /// The family name.
    pub name: String,
    /// How many versions of a cell are kept (default 1); older ones are purged on write.
    #[serde(default = "default_max_versions")]
    pub max_versions: u32,
    /// Cells older than this (by their timestamp) are never returned and are
    /// purged by `compact` and on write. `None`: cells live forever.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
    /// How values are compressed (HBase's `COMPRESSION`), each cell alone.
    #[serde(default, skip_serializing_if = "Compression::is_none")]
    pub compression: Compression,
}

/// A family's value compression.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Values as they are.
    #[default]
    None,
    /// LZ4: fast, a modest gain.
    Lz4,
    /// zstd (level 3): a larger gain, still fast to read.
    Zstd,
}

impl Compression {
    /// Whether it is `None` (the default, left out of a schema's JSON).
    pub fn is_none(&self) -> bool {
        *self == Compression::None
    }
}

fn default_max_versions() -> u32 {
    1
}

impl FamilySchema {
    /// A family keeping one version, without TTL.
    pub fn new(name: impl Into<String>) -> FamilySchema {
        FamilySchema { name: name.into(), max_versions: 1, ttl_seconds: None, compression: Compression::None }
    }

    /// Sets `max_versions`.
    pub fn max_versions(mut self, max_versions: u32) -> FamilySchema {
        self.max_versions = max_versions;
        self
    }

    /// Sets the compression of its values.
    pub fn compression(mut self, compression: Compression) -> FamilySchema {
        self.compression = compression;
        self
    }

    /// Sets `ttl_seconds`.
    pub fn ttl_seconds(mut self, ttl_seconds: u64) -> FamilySchema {
        self.ttl_seconds = Some(ttl_seconds);
        self
    }

    /// The TTL in milliseconds, if any.
    pub(crate) fn ttl_ms(&self) -> Option<u64> {
        self.ttl_seconds.map(|s| s.saturating_mul(1000))
    }

    /// Whether a cell written at `timestamp` is still alive at `now_ms`.
    pub(crate) fn is_live(&self, timestamp: u64, now_ms: u64) -> bool {
        match self.ttl_ms() {
            Some(ttl) => now_ms < timestamp.saturating_add(ttl),
            None => true,
        }
    }
}
