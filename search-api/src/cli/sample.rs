//! The sample mail `rowsearch demo` loads, carried inside the binary: the
//! repository's fixture (`tests/fixtures/mail/maildir`, 347 real Enron
//! messages) as a zstd-compressed tar (`assets/sample-mail.tar.zst`, made
//! by `tests/fixtures/mail/pack.sh`), so a binary copied to another
//! machine has its demo mail with it.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// The archive: a tar of `maildir/...`, zstd-compressed.
const ARCHIVE: &[u8] = include_bytes!("../../assets/sample-mail.tar.zst");

/// The sample unpacked into a fresh directory of the system's temporary
/// directory, removed when dropped.
pub(super) struct Sample {
    root: PathBuf,
}

impl Sample {
    /// Unpacks the carried archive.
    ///
    /// # Errors
    /// The temporary directory cannot be made or written.
    pub(super) fn unpack() -> Result<Sample> {
        let root = std::env::temp_dir().join(format!("rowsearch-demo-mail-{}", std::process::id()));
        // A directory left by an earlier run of this pid.
        match std::fs::remove_dir_all(&root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", root.display()));
            }
            _ => {}
        }
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        let sample = Sample { root };
        let decoder = zstd::stream::read::Decoder::new(ARCHIVE).context("reading the carried sample mail")?;
        tar::Archive::new(decoder)
            .unpack(&sample.root)
            .with_context(|| format!("unpacking the sample mail into {}", sample.root.display()))?;
        Ok(sample)
    }

    /// The Maildir tree (`<tmp>/maildir`).
    pub(super) fn maildir(&self) -> PathBuf {
        self.root.join("maildir")
    }

    /// The archive's size, compressed.
    pub(super) fn carried_bytes() -> usize {
        ARCHIVE.len()
    }
}

impl Drop for Sample {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every file under `dir` by its path relative to it, with its bytes.
    fn files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.insert(path.strip_prefix(dir).unwrap().to_owned(), std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    /// The archive holds the fixture, file for file and byte for byte (a
    /// change to the fixture without `pack.sh` fails here).
    #[test]
    fn the_carried_sample_is_the_fixture() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mail/maildir");
        let sample = Sample::unpack().unwrap();
        let (carried, expected) = (files(&sample.maildir()), files(&fixture));
        assert_eq!(carried.len(), 347);
        assert_eq!(carried.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
        for (path, bytes) in &expected {
            assert!(carried[path] == *bytes, "{} differs: run tests/fixtures/mail/pack.sh", path.display());
        }
        let root = sample.root.clone();
        drop(sample);
        assert!(!root.try_exists().unwrap(), "removed when dropped");
    }
}
