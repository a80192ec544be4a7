//! Telling that a file is still the version read, without reading it:
//! its stamp (time, length, inode), and a handle kept open to ask again
//! without walking its path.

use std::time::SystemTime;

/// What identifies a file's version without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) modified: Option<SystemTime>,
    pub(crate) len: u64,
    pub(crate) inode: u64,
}

pub(crate) fn stamp(path: &std::path::Path) -> Option<Stamp> {
    Some(stamp_of(&std::fs::metadata(path).ok()?))
}

fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0;
    Stamp { modified: meta.modified().ok(), len: meta.len(), inode }
}

/// A file kept open to tell, without walking its path, that it is still
/// what was read: the generation pointer and a generation's `meta.json`
/// are replaced by renames (their old inode is then unlinked) or, by the
/// direct reindex, rewritten in place (a new length or time). One `fstat`
/// of the handle instead of a `statx` of the path: every search asks.
#[derive(Debug)]
pub(crate) struct Held {
    file: std::fs::File,
    pub(crate) stamp: Stamp,
}

impl Held {
    pub(crate) fn open(path: &std::path::Path) -> Option<Held> {
        let file = std::fs::File::open(path).ok()?;
        let stamp = stamp_of(&file.metadata().ok()?);
        Some(Held { file, stamp })
    }

    /// Whether the file is unchanged and still linked (else its path may
    /// name another: the caller asks the path).
    pub(crate) fn unchanged(&self) -> bool {
        let Ok(meta) = self.file.metadata() else { return false };
        #[cfg(unix)]
        let linked = std::os::unix::fs::MetadataExt::nlink(&meta) > 0;
        #[cfg(not(unix))]
        let linked = false;
        linked && stamp_of(&meta) == self.stamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_file_tells_a_rename_over_it_and_a_rewrite_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("CURRENT");
        std::fs::write(&path, "gen-1\n").unwrap();
        let held = Held::open(&path).unwrap();
        assert!(held.unchanged());
        // Replaced by a rename (as the pointer and tantivy's meta.json are).
        std::fs::write(dir.path().join("tmp"), "gen-2\n").unwrap();
        std::fs::rename(dir.path().join("tmp"), &path).unwrap();
        assert!(!held.unchanged());
        let held = Held::open(&path).unwrap();
        assert!(held.unchanged());
        // Rewritten in place (as the direct reindex writes meta.json).
        std::fs::write(&path, "gen-10\n").unwrap();
        assert!(!held.unchanged());
        // Removed.
        let held = Held::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!held.unchanged());
        assert!(Held::open(&path).is_none());
    }
}
