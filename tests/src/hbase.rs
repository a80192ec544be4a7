//! A real Apache HBase for the tests that compare with it or run over it:
//! started once per test process with the repository's script
//! (`hbase/hbase.sh`, standalone HBase with its Thrift and Thrift2
//! gateways on loopback ports) and stopped when that process ends (the
//! script watches its pid). Where the machine has no Java or Maven, the
//! tests that need it say loudly that they did not run, and how to run
//! them; under CI (`CI` set) that is a failure instead. To reuse one
//! started by hand, set `ROWSEARCH_HBASE_THRIFT` and
//! `ROWSEARCH_HBASE_THRIFT2` (and `ROWSEARCH_HBASE_ZOOKEEPER`, for HBase's
//! own Java client) to the addresses `hbase.sh start` printed.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// A running HBase: its gateways' addresses.
#[derive(Debug, Clone)]
pub struct HBase {
    /// HBase's Thrift gateway (the `Hbase` service), `HOST:PORT`.
    pub thrift: String,
    /// HBase's Thrift2 gateway (`THBaseService`), `HOST:PORT`.
    pub thrift2: String,
    /// Its ZooKeeper, `HOST:PORT`, where HBase's own Java client finds it
    /// (`None` for one started by hand without `ROWSEARCH_HBASE_ZOOKEEPER`).
    pub zookeeper: Option<String>,
}

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// The HBase of this test process, started on first use; `None` (after
/// saying so on stderr) where Java or Maven is missing and this is not CI.
/// `test` names the test that will not run.
pub fn hbase(test: &str) -> Option<HBase> {
    static HBASE: OnceLock<Option<HBase>> = OnceLock::new();
    let started = HBASE.get_or_init(|| {
        // One already running (`hbase/hbase.sh start` prints these).
        if let (Ok(thrift), Ok(thrift2)) =
            (std::env::var("ROWSEARCH_HBASE_THRIFT"), std::env::var("ROWSEARCH_HBASE_THRIFT2"))
        {
            return Some(HBase {
                thrift,
                thrift2,
                zookeeper: std::env::var("ROWSEARCH_HBASE_ZOOKEEPER").ok(),
            });
        }
        let missing: Vec<&str> = ["java", "mvn"].into_iter().filter(|t| !have(t)).collect();
        if !missing.is_empty() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} missing: HBase's tests need Java 17 and Maven (.ci/run installs them)",
                missing.join(" and ")
            );
            return None;
        }
        let dir = repo().join("target").join(format!("hbase-test-{}", std::process::id()));
        let out = Command::new("bash")
            .arg(repo().join("hbase/hbase.sh"))
            .args(["start"])
            .arg(&dir)
            .env("HBASE_WATCH_PID", std::process::id().to_string())
            .output()
            .expect("run hbase/hbase.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "hbase/hbase.sh start failed:\n{}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let address = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {stdout}"))
                .to_owned()
        };
        Some(HBase {
            thrift: address("thrift="),
            thrift2: address("thrift2="),
            zookeeper: Some(address("zookeeper=")),
        })
    });
    if started.is_none() {
        // Past libtest's capture (which would hide it for a passing test):
        // straight to the terminal.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED {test}: it needs a real Apache HBase, and this machine lacks Java 17 or Maven \
             (apt-get install openjdk-17-jdk-headless maven, then cargo test again; .ci/run does) ***\n"
        );
    }
    started.clone()
}
