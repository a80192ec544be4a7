//! Test harness for end-to-end tests: locate (or build) the real `rowsearch`
//! binary and run it against a temporary data directory.

mod hbase;
mod proxy;

pub use hbase::{HBase, hbase, repo};
pub use proxy::Proxy;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The `rowsearch` binary: `$ROWSEARCH_BIN`, else the workspace's, built
/// with the feature set of the workspace's test build (`--workspace
/// --tests`): within `cargo test --workspace` it is built already and this
/// is a no-op, where `cargo build -p rowsearch` alone resolves features for
/// that one package and builds tantivy and more a second time (about five
/// minutes on 2 cores on a fresh clone).
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
        cargo.args(["build", "-q", "--workspace", "--bins", "--tests"]);
        if release {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo build");
        assert!(status.success(), "cargo build --workspace --bins --tests failed");
        profile_dir.join("rowsearch")
    })
    .clone()
}

/// Where a test's tables live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store of the test's data directory.
    Store,
    /// A real Apache HBase (`hbase/hbase.sh`), in an HBase namespace of
    /// the test's own; the data directory keeps rowsearch's own (index
    /// generations, access keys).
    Hbase,
}

/// A temporary data directory and a way to run the binary on it.
pub struct TestDir {
    /// Kept alive for the test's duration.
    pub dir: tempfile::TempDir,
    /// `HOST:PORT/NAMESPACE` every command names (`ROWSEARCH_HBASE`) when
    /// the tables live in HBase.
    hbase: Option<String>,
}

impl Drop for TestDir {
    /// Over HBase, the test's namespace goes with it (its tables and
    /// regions would otherwise pile up in the one HBase of the run).
    fn drop(&mut self) {
        if let Some(hbase) = &self.hbase {
            let mut client =
                rowsearch::thrift::HbaseClient::new(hbase.as_str(), std::time::Duration::from_secs(60));
            if let Err(e) = client.drop_namespace() {
                eprintln!("dropping the test's HBase namespace {hbase}: {e}");
            }
        }
    }
}

impl Default for TestDir {
    fn default() -> Self {
        Self::new()
    }
}

impl TestDir {
    /// A fresh, empty directory; the tables in its store.
    pub fn new() -> TestDir {
        TestDir { dir: tempfile::tempdir().expect("tempdir"), hbase: None }
    }

    /// A fresh, empty directory, the tables on `backend`: over HBase (the
    /// test process's, started on first use), every command it runs names
    /// a new namespace of its own, so tests running at once never meet.
    ///
    /// # Panics
    /// Over HBase, when none can be started (Java 17 or Maven missing).
    pub fn on(backend: Backend) -> TestDir {
        let mut t = TestDir::new();
        if backend == Backend::Hbase {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let hbase = hbase::hbase("the HTTP suite over HBase").expect(
                "the HTTP suite over HBase needs a real HBase: Java 17 and Maven (.ci/run installs them)",
            );
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() % 1_000_000);
            t.hbase = Some(format!("{}/t{started}_{}_{n}", hbase.thrift2, std::process::id()));
        }
        t
    }

    /// `HOST:PORT/NAMESPACE` of its tables, when they live in HBase.
    pub fn hbase(&self) -> Option<&str> {
        self.hbase.as_deref()
    }

    /// The binary with `--data` (and, over HBase, `ROWSEARCH_HBASE`) set.
    pub fn command(&self) -> Command {
        let mut command = Command::new(bin());
        command.arg("--data").arg(self.data());
        if let Some(hbase) = &self.hbase {
            command.env("ROWSEARCH_HBASE", hbase);
        }
        command
    }

    /// The store's data directory inside it.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs `rowsearch --data <dir> ARGS...` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run rowsearch")
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

/// A running `rowsearch serve` (or `demo`), killed when dropped.
pub struct Server {
    child: std::process::Child,
    /// `HOST:PORT` it listens on.
    pub addr: String,
    /// Stdout lines printed up to and including `listening on ...` and
    /// any lines the caller asked for after it.
    pub lines: Vec<String>,
    reader: std::io::BufReader<std::process::ChildStdout>,
}

impl TestDir {
    /// Starts `rowsearch --data <dir> ARGS... --listen 127.0.0.1:0` and
    /// waits for its `listening on http://...` line (no sleeping).
    pub fn serve(&self, args: &[&str]) -> Server {
        let mut command = self.command();
        command.args(args).args(["--listen", "127.0.0.1:0"]);
        Server::spawn(command)
    }
}

impl Server {
    /// Starts `command` (a server that prints `listening on http://...`)
    /// and waits for that line (no sleeping).
    // The child moves into the returned Server, whose Drop kills and waits.
    pub fn spawn(command: Command) -> Server {
        Server::spawn_with_stderr(command, std::process::Stdio::inherit())
    }

    /// [`Server::spawn`] with the server's stderr (its log) going to
    /// `stderr` (a file the test reads).
    #[allow(clippy::zombie_processes)]
    pub fn spawn_with_stderr(mut command: Command, stderr: std::process::Stdio) -> Server {
        use std::io::BufRead;
        let mut child =
            command.stdout(std::process::Stdio::piped()).stderr(stderr).spawn().expect("spawn rowsearch");
        let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                let _ = child.wait();
                panic!("server exited before listening; output: {lines:?}");
            }
            let line = line.trim_end().to_owned();
            lines.push(line.clone());
            if let Some(addr) = line.strip_prefix("listening on http://") {
                return Server { child, addr: addr.to_owned(), lines, reader };
            }
        }
    }
}

impl Server {
    /// Reads `n` more stdout lines.
    pub fn read_lines(&mut self, n: usize) -> Vec<String> {
        use std::io::BufRead;
        let mut out = Vec::new();
        for _ in 0..n {
            let mut line = String::new();
            if self.reader.read_line(&mut line).expect("read stdout") == 0 {
                break;
            }
            out.push(line.trim_end().to_owned());
        }
        self.lines.extend(out.iter().cloned());
        out
    }

    /// One HTTP/1.1 request (`Connection: close`); (status, body).
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        let (status, body) = self.raw(method, path, &[], body.map(str::as_bytes));
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// GET, expecting a JSON body.
    pub fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let (status, body) = self.request("GET", path, None);
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {body}")))
    }

    /// Any request with extra headers and a raw body; (status, body bytes).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> (u16, Vec<u8>) {
        parse_response(&raw_request(&self.addr, method, path, headers, body))
    }

    /// Sends SIGTERM and waits for the process; returns its exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        self.child.wait().expect("wait")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds the server has used so far (user + system, from
    /// `/proc/PID/stat`, in clock ticks of 1/100 s).
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).expect("read /proc stat");
        // Fields after the command name (which may hold spaces), from 3.
        let fields: Vec<&str> = stat.rsplit_once(')').expect("stat format").1.split_whitespace().collect();
        let ticks = |i: usize| fields[i].parse::<f64>().expect("stat number");
        (ticks(11) + ticks(12)) / 100.0
    }

    /// A status line of the server's `/proc/PID/status` in kB (`VmRSS`,
    /// `VmHWM`).
    pub fn memory_kb(&self, line: &str) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("read /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(line)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {line} in /proc status"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (status, body) of an HTTP/1.1 response (Content-Length or chunked).
pub fn parse_response(response: &[u8]) -> (u16, Vec<u8>) {
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").expect("no header end in response");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
    let mut body = response[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest = &rest[eol + 2 + size + 2..];
        }
        body = out;
    }
    (status, body)
}

/// One HTTP/1.1 request on `addr` with `Connection: close` (a JSON content
/// type unless one is given); the whole response, unparsed.
pub fn raw_request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case("content-type")) && body.is_some() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (h, v) in headers {
        head.push_str(&format!("{h}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.map_or(0, <[u8]>::len)));
    stream.write_all(head.as_bytes()).expect("write head");
    if let Some(body) = body {
        // The server may answer (413) and close before reading it all.
        let _ = stream.write_all(body);
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response
}

/// A seed from the clock (odd, as [`Rng`] needs), printed on stderr so a
/// failing run can be repeated.
pub fn time_seed() -> u64 {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1;
    eprintln!("seed {seed}");
    seed
}

/// A small seeded xorshift generator, so a failing run can be repeated from
/// its printed seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Sends `request` (a whole HTTP/1.1 request, as bytes) on a new
/// connection to `addr`; (status, body) of the answer.
pub fn send_raw(addr: &str, request: &[u8]) -> (u16, Vec<u8>) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(request).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    parse_response(&response)
}
