//! Test harness for end-to-end tests: locate (or build) the real `rowsearch`
//! binary and run it against a temporary data directory.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The `rowsearch` binary: `$ROWSEARCH_BIN`, else built once with cargo and
/// found next to this test executable's target directory.
pub fn bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("ROWSEARCH_BIN") {
            return PathBuf::from(path);
        }
        // target/<profile>/deps/<test-exe> -> target/<profile>/rowsearch
        let exe = std::env::current_exe().expect("current_exe");
        let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target/<profile>");
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(["build", "-q", "-p", "rowsearch", "--bin", "rowsearch"]);
        if release {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo build");
        assert!(status.success(), "cargo build -p rowsearch failed");
        profile_dir.join("rowsearch")
    })
    .clone()
}

/// A temporary data directory and a way to run the binary on it.
pub struct TestDir {
    /// Kept alive for the test's duration.
    pub dir: tempfile::TempDir,
}

impl Default for TestDir {
    fn default() -> Self {
        Self::new()
    }
}

impl TestDir {
    /// A fresh, empty directory.
    pub fn new() -> TestDir {
        TestDir { dir: tempfile::tempdir().expect("tempdir") }
    }

    /// The store's data directory inside it.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs `rowsearch --data <dir> ARGS...` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(bin()).arg("--data").arg(self.data()).args(args).output().expect("run rowsearch")
    }
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
