"""What the corpus benches share: their common arguments, the corpus
extracted once under /tmp/rowsearch-bench, and percentiles."""
import argparse
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = "/tmp/rowsearch-bench"


def arguments(**extra):
    """--corpus, --bin and the bench's own options (name -> (type, default))."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "../../shared/corpus/mail.tar.zst"))
    ap.add_argument("--bin", default=os.path.join(HERE, "../target/release/rowsearch"))
    for name, (kind, default) in extra.items():
        ap.add_argument(f"--{name}", type=kind, default=default)
    return ap.parse_args()


def bench_hbase():
    """The Thrift2 address of the HBase benchmarks use: ROWSEARCH_HBASE_THRIFT2,
    or one hbase/hbase.sh starts at WORK/hbase (4 GiB master and region
    server, 1 GiB per gateway)."""
    addr = os.environ.get("ROWSEARCH_HBASE_THRIFT2")
    if addr:
        return addr
    hdir = os.path.join(WORK, "hbase")
    env = dict(os.environ, HBASE_HEAP="4g", HBASE_THRIFT_HEAP="1g")
    out = subprocess.run(["bash", os.path.join(HERE, "../hbase/hbase.sh"), "start", hdir],
                         check=True, capture_output=True, text=True, env=env).stdout
    return next(line.split("=", 1)[1] for line in out.splitlines() if line.startswith("thrift2="))


def corpus(archive):
    """The corpus extracted once: the path of its `mail` tree."""
    root = os.path.join(WORK, "corpus")
    if not os.path.isdir(os.path.join(root, "mail")):
        os.makedirs(root, exist_ok=True)
        subprocess.run(["tar", "--zstd", "-xf", os.path.abspath(archive), "-C", root], check=True)
    return os.path.join(root, "mail")


def corpus_store(args):
    """The full corpus ingested and fully reindexed by `args.bin`, made
    once at /tmp/rowsearch-bench/confined-now: its path."""
    data = os.path.join(WORK, "confined-now")
    if not os.path.isdir(data):
        mail = corpus(args.corpus)
        subprocess.run([args.bin, "--data", data + ".tmp", "ingest", mail], check=True, capture_output=True)
        subprocess.run([args.bin, "--data", data + ".tmp", "reindex", "--full"], check=True, capture_output=True)
        os.rename(data + ".tmp", data)
    return data


def fts5_db(binary, store):
    """The messages of `store` (exported with `rowsearch scan mail`) in an
    SQLite FTS5 table (subject, body, sender, recipients; user, date, key
    unindexed), made once at /tmp/rowsearch-bench/search-fts5.db: a
    connection to it."""
    db_path = os.path.join(WORK, "search-fts5.db")
    os.makedirs(WORK, exist_ok=True)
    if not os.path.exists(db_path):
        export = subprocess.Popen([binary, "--data", store, "scan", "mail", "--columns",
                                   "m:subject,b:text,m:from,m:to"], stdout=subprocess.PIPE, text=True)
        db = sqlite3.connect(db_path + ".tmp")
        db.execute("CREATE VIRTUAL TABLE mail USING fts5(subject, body, sender, recipients, "
                   "user UNINDEXED, date UNINDEXED, key UNINDEXED)")
        rows = []
        for line in export.stdout:
            row = json.loads(line)
            cells = {c["column"]: c["value"] for c in row["cells"]}
            rows.append((cells.get("m:subject", ""), cells.get("b:text", ""), cells.get("m:from", ""),
                         cells.get("m:to", ""), row["key_fields"]["user"], row["key_fields"]["date"], row["key"]))
        db.executemany("INSERT INTO mail VALUES (?,?,?,?,?,?,?)", rows)
        db.commit()
        db.close()
        os.rename(db_path + ".tmp", db_path)
    return sqlite3.connect(db_path)


def fts5_times(db, match, user, runs):
    """Milliseconds of `runs` runs (after 10 untimed) of an FTS5 query of
    the table `fts5_db` makes, sorted: the top 10 by bm25 fetching key,
    subject and sender, or with `user` that mailbox's newest 10."""
    if user:
        sql = "SELECT key, subject, sender FROM mail WHERE mail MATCH ? AND user = ? ORDER BY date DESC LIMIT 10"
        params = (match, user)
    else:
        sql = "SELECT key, subject, sender FROM mail WHERE mail MATCH ? ORDER BY rank LIMIT 10"
        params = (match,)
    for _ in range(10):
        db.execute(sql, params).fetchall()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        db.execute(sql, params).fetchall()
        times.append((time.perf_counter() - t) * 1000)
    return sorted(times)


def build_at(rev):
    """The release binary of git revision `rev`, from a worktree at
    /tmp/rowsearch-bench/before-REV, built when missing."""
    tree = os.path.join(WORK, f"before-{rev}")
    binary = os.path.join(tree, "target/release/rowsearch")
    if not os.path.exists(binary):
        if not os.path.isdir(tree):
            subprocess.run(["git", "-C", os.path.join(HERE, ".."), "worktree", "add", "--detach", tree, rev],
                           check=True)
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "rowsearch"], cwd=tree, check=True)
    return binary


def pct(xs, p):
    """The p-th quantile of xs (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]


TERMS = ["energy", "enron", "meeting", "gas", "power", "california", "contract", "price", "market", "deal",
         "trading", "report"]
ANDS = ["gas price", "power plant", "enron meeting", "natural gas", "california power", "contract deal",
        "market price", "energy trading", "meeting tomorrow", "conference call", "credit risk", "gas storage"]
PHRASES = ['"natural gas"', '"power plant"', '"conference call"', '"credit risk"', '"press release"',
           '"price cap"', '"gas storage"', '"board meeting"']
FIELDS = ["subject:meeting", "subject:gas", "subject:contract", "from:kaminski", "to:kaminski", "subject:report",
          "subject:california", "body:deal"]
BOOLEAN = ["gas OR power", "enron -meeting", "contract OR deal", "price NOT gas"]
MAILBOX = [("meeting", "kaminski-v"), ("gas", "dasovich-j"), ("contract", "cash-m"), ("energy", "lay-k")]


def peer_queries():
    """The 48 ordinary searches (name, path): terms, AND, phrases, field:term,
    OR and NOT, and a mailbox's newest; limit 10, subject and sender."""
    out = [(q, f"q={urllib.parse.quote(q)}") for q in TERMS + ANDS + PHRASES + FIELDS + BOOLEAN]
    out += [(f"{q} user={u} newest", f"q={q}&user={u}&sort=newest") for q, u in MAILBOX]
    return [(name, f"/tables/mail/search?{qs}&limit=10&columns=m:subject,m:from") for name, qs in out]


class Server:
    """A rowsearch server on 127.0.0.1:0 over `data` (no background
    refresh), asked GETs on one keep-alive connection: `extra` appended to
    every path, `headers` sent with every request, `serve_args` added."""

    def __init__(self, name, binary, data, extra="", headers=None, serve_args=()):
        self.name = name
        self.extra = extra
        self.headers = headers or {}
        self.server = subprocess.Popen([binary, "--data", data, "serve", "--listen", "127.0.0.1:0",
                                        "--refresh-ms", "0", *serve_args],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.server.stdout.readline().strip()
        self.host, self.port = line.removeprefix("listening on http://").split(":")
        self.conn = http.client.HTTPConnection(self.host, int(self.port))

    def get(self, path):
        path += self.extra
        for _ in range(2):
            try:
                self.conn.request("GET", path, headers=self.headers)
                r = self.conn.getresponse()
                body = r.read()
                if r.status != 200:
                    sys.exit(f"{self.name} {path}: {r.status} {body[:300]}")
                return body
            except (http.client.RemoteDisconnected, ConnectionError):
                # Closed while idle (another server was being timed).
                self.conn = http.client.HTTPConnection(self.host, int(self.port))
        sys.exit(f"{self.name} {path}: connection lost twice")

    def p50(self, path, n):
        """The median of `n` timed GETs of `path` (ms), after 20 untimed."""
        return pct(self.times(path, n), 0.5)

    def times(self, path, n):
        """`n` timed GETs of `path` (ms), after 20 untimed."""
        for _ in range(20):
            self.get(path)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            self.get(path)
            times.append((time.perf_counter() - t) * 1e3)
        return times

    def stop(self):
        self.server.terminate()
        self.server.wait()


def need_wrk():
    """Exits with how to install it when `wrk` (the HTTP load tool the
    HTTP benches drive) is not on PATH: it is a Debian package, not on a
    fresh machine."""
    import shutil
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: the HTTP benches drive it (install with `sudo apt-get install -y wrk`)")


def peer_wrk_script():
    """A wrk Lua script cycling through the 48 peer queries' paths: its
    file name (the caller removes it)."""
    import tempfile
    paths = [path for _, path in peer_queries()]
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    script.write("paths = {" + ",".join(f'"{p}"' for p in paths) + "}\n"
                 "i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format(\"GET\", paths[i])\nend\n")
    script.close()
    return script.name


def wrk_cycle(server, script, secs):
    """wrk -t1 -c1 for `secs` seconds running `script` against `server`
    (a `Server`): its p50 and p99 in ms; exits on any error answer. Its
    callers check for wrk first (`need_wrk`)."""
    import re
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{secs}s", "--latency", "-s", script,
                          f"http://{server.host}:{server.port}/"], capture_output=True, text=True,
                         check=True).stdout

    def ms(label):
        value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", out).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"wrk: {errors.group(1)} error answers")
    return ms("50%"), ms("99%")
