#!/usr/bin/env python3
"""happybase writing straight to a real HBase while rowsearch follows it
through HBase's replication (issue 63), checked against a brute force over
HBase's own rows.

It starts its own HBase with hbase/hbase.sh (with the peer `rowsearch`, so
it can restart it without disturbing anyone), a table of four regions, and
`rowsearch serve --hbase` on it. Then bursts of writes by happybase to
HBase's Thrift gateway: puts at the current time and at explicit old
timestamps (1970, a day in, 2001, an hour ago), deletes of rows, families
and columns (happybase), and of single versions (HBase's Thrift2
`deleteSingle` with a column's timestamp, through thriftpy2 and HBase's own
IDL: Thrift1, and so happybase, has no single-version delete). After each
burst, every query's keys, total and `tag` facet (rowsearch's index alone:
`consistency=eventual`), and the keys a keyword lookup of its words finds
in rowsearch's keyword rows in HBase, must equal what a scan of HBase's
rows gives, and
the time that took is recorded; its p99 must be at most --p99-limit
seconds. Then the same with rowsearch killed (-9) in the middle of a burst
and started again, and with HBase stopped and started in the middle of
one: afterwards the same equality, and no key twice in any answer. Last,
the stream broken (the peer disabled): `/health` degraded with the
reason, and once it is enabled again the writes HBase queued meanwhile
arrive (the same equality).

  tests/thrift/happybase_replication.py [--bin target/debug/rowsearch] [--bursts 12] [--hbase-dir DIR]

Needs happybase and thriftpy2 (tests/thrift/happybase_suite.sh makes the
virtualenv and runs this with it). Exit 1 with the first difference.
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import happybase
import thriftpy2
from thriftpy2.rpc import make_client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HBASE_SH = os.path.join(REPO, "hbase", "hbase.sh")
TABLE = "followed"
WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "haven", "ivory", "juniper"]
TAGS = ["red", "green", "blue", "gold"]
SCHEMA = {
    "families": [{"name": "f", "max_versions": 3}],
    "splits": ["g", "n", "t"],
    "search": {"fields": [{"name": "body", "column": "f:body", "type": "text"},
                          {"name": "tag", "column": "f:tag", "type": "keyword", "facet": True}]},
}
# Explicit timestamps (ms) a backfill might carry: 1970, a day in, 2001.
OLD = [1_000, 86_400_000, 1_000_000_000_000]


def log(*args):
    print("happybase_replication:", *args, flush=True)


def fail(message):
    log("FAILED:", message)
    sys.exit(1)


class Hbase:
    """The HBase of hbase/hbase.sh in a directory of its own."""

    def __init__(self, directory, started=False):
        self.dir = directory
        if started:
            with open(os.path.join(directory, "addresses")) as f:
                self.addresses = dict(line.split("=", 1) for line in f.read().split())
            return
        env = dict(os.environ, HBASE_WATCH_PID=str(os.getpid()))
        out = subprocess.run(["bash", HBASE_SH, "start", directory], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            fail("hbase.sh start: " + out.stderr[-3000:])
        self.addresses = dict(line.split("=", 1) for line in out.stdout.split())

    def restart(self):
        out = subprocess.run(["bash", HBASE_SH, "restart", self.dir], capture_output=True, text=True)
        if out.returncode != 0:
            fail("hbase.sh restart: " + out.stderr[-3000:])

    def stop(self):
        subprocess.run(["bash", HBASE_SH, "stop", self.dir], capture_output=True)


class Writer:
    """Another client: happybase to HBase's Thrift gateway, and Thrift2 for
    single-version deletes. Every call is retried on a fresh connection
    while HBase is away (a put or a delete applied twice is the same)."""

    def __init__(self, thrift, thrift2):
        self.thrift = thrift.split(":")
        self.thrift2 = thrift2.split(":")
        jar = next(p for p in open(classpath_file()).read().strip().split(":")
                   if os.path.basename(p).startswith("hbase-thrift-"))
        idl = os.path.join(tempfile.mkdtemp(), "hbase2.thrift")
        with zipfile.ZipFile(jar) as z, open(idl, "wb") as f:
            f.write(z.read("org/apache/hadoop/hbase/thrift2/hbase.thrift"))
        self.idl = thriftpy2.load(idl, module_name="hbase2_thrift")
        self.connect()

    def connect(self):
        self.hb = happybase.Connection(self.thrift[0], int(self.thrift[1]), autoconnect=True)
        self.table = self.hb.table(TABLE)
        self.t2 = make_client(self.idl.THBaseService, self.thrift2[0], int(self.thrift2[1]), timeout=30_000)

    def retried(self, what, call):
        deadline = time.time() + 240
        while True:
            try:
                return call()
            except Exception as e:  # HBase away (restart): a new connection, again
                if time.time() > deadline:
                    fail(f"{what}: HBase did not come back: {e!r}")
                time.sleep(0.5)
                try:
                    self.hb.close()
                except Exception:
                    pass
                try:
                    self.connect()
                except Exception:
                    pass

    def put(self, row, data, timestamp=None):
        self.retried("put", lambda: self.table.put(row, data, timestamp=timestamp))

    def delete(self, row, columns=None):
        self.retried("delete", lambda: self.table.delete(row, columns=columns))

    def delete_version(self, row, family, qualifier, timestamp):
        column = self.idl.TColumn(family=family, qualifier=qualifier, timestamp=timestamp)
        d = self.idl.TDelete(row=row, columns=[column], deleteType=self.idl.TDeleteType.DELETE_COLUMN)
        self.retried("deleteSingle", lambda: self.t2.deleteSingle(TABLE.encode(), d))

    def versions(self, row, column):
        return self.retried("cells", lambda: self.table.cells(row, column, versions=3, include_timestamp=True))

    def truth(self):
        """Per query: the keys, total and tag counts a brute force over
        HBase's rows (their newest cells) gives."""
        rows = self.retried("scan", lambda: list(self.table.scan(columns=[b"f:body", b"f:tag"])))
        answers = {}
        for query in queries():
            words = query.split()
            keys, tags = [], {}
            for key, cells in rows:
                body = set(cells.get(b"f:body", b"").decode().lower().split())
                if all(w in body for w in words):
                    keys.append(key.decode())
                    tag = cells.get(b"f:tag", b"").decode().strip().lower()
                    if tag:
                        tags[tag] = tags.get(tag, 0) + 1
            answers[query] = {"keys": sorted(keys), "total": len(keys), "tag": tags, "keyword_rows": sorted(keys)}
        return answers


def classpath_file():
    version = os.environ.get("HBASE_VERSION", "2.6.1")
    return os.path.join(REPO, "target", f"hbase-classpath-{version}.txt")


def queries():
    return WORDS + ["amber basil", "cedar delta ember"]


# The servers started, stopped however the script ends (a failure too).
SERVERS = []


class Rowsearch:
    """`rowsearch serve --hbase` over the table, its own --data."""

    def __init__(self, binary, thrift2, data):
        self.binary, self.thrift2, self.data = binary, thrift2, data
        self.proc = None

    def run(self, *args):
        out = subprocess.run([self.binary, "--data", self.data, "--hbase", self.thrift2, *args],
                             capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"rowsearch {' '.join(args)}: {out.stderr[-3000:]}")
        return out.stdout

    def serve(self):
        self.proc = subprocess.Popen(
            [self.binary, "--data", self.data, "--hbase", self.thrift2, "serve",
             "--listen", "127.0.0.1:0", "--refresh-ms", "200"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        SERVERS.append(self.proc)
        for line in self.proc.stdout:
            m = re.match(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                return
        fail("rowsearch serve exited before listening")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def get(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return 0, {"error": repr(e)}

    def answer(self, query):
        q = urllib.parse.quote(query)
        status, a = self.get(f"/tables/{TABLE}/search?q={q}&limit=1000&facets=tag&facet_limit=100"
                             "&consistency=eventual")
        if status != 200:
            return None, a
        keys = [h["key"] for h in a["hits"]]
        if len(keys) != len(set(keys)):
            fail(f"{query}: a key twice in one answer: {keys}")
        tags = {t["value"] if isinstance(t, dict) else t: n for t, n in facet_items(a)}
        # The keyword rows in HBase (a lookup of every word) follow too.
        terms = urllib.parse.quote(",".join(query.split()))
        status, k = self.get(f"/tables/{TABLE}/keywords?terms={terms}&limit=1000")
        if status != 200:
            return None, k
        looked_up = [h["key"] for h in k["keys"]]
        if len(looked_up) != len(set(looked_up)):
            fail(f"{query}: a key twice in one keyword lookup: {looked_up}")
        return {"keys": sorted(keys), "total": a["total"], "tag": tags, "keyword_rows": sorted(looked_up)}, a


def facet_items(answer):
    tag = answer.get("facets", {}).get("tag", {})
    if isinstance(tag, dict):
        return tag.items()
    return [(t["value"], t["count"]) for t in tag]


def settle(rs, writer, limit, started):
    """Seconds from `started` (the burst's last write acknowledged) until
    every query's answer equals the brute force; fails past `limit`."""
    want = writer.truth()
    pending = list(want)
    last = {}
    while pending:
        query = pending[0]
        got, raw = rs.answer(query)
        if got == want[query]:
            pending.pop(0)
            continue
        last[query] = got if got is not None else raw
        if time.time() - started > limit:
            fail(f"{query!r} after {limit} s: rowsearch {last[query]} against HBase's rows {want[query]}")
        time.sleep(0.05)
    return time.time() - started


def burst(writer, rng, keys, n, middle=None):
    """n random writes of another client; `middle()` called halfway. When
    the last was acknowledged."""
    for i in range(n):
        if middle and i == n // 2:
            middle()
        row = rng.choice(keys).encode()
        kind = rng.random()
        if kind < 0.45:
            data = {b"f:body": " ".join(rng.sample(WORDS, rng.randint(1, 4))).encode()}
            if rng.random() < 0.7:
                data[b"f:tag"] = rng.choice(TAGS).encode()
            old = rng.random() < 0.4
            ts = rng.choice(OLD + [int(time.time() * 1000) - 3_600_000]) if old else None
            writer.put(row, data, timestamp=ts)
        elif kind < 0.6:
            writer.delete(row)
        elif kind < 0.7:
            writer.delete(row, columns=[b"f"])
        elif kind < 0.8:
            writer.delete(row, columns=[rng.choice([b"f:body", b"f:tag"])])
        else:
            column = rng.choice([b"f:body", b"f:tag"])
            cells = writer.versions(row, column)
            if cells:
                _, ts = rng.choice(cells)
                writer.delete_version(row, b"f", column.split(b":")[1], ts)
    return time.time()


def p99(values):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "target", "debug", "rowsearch"))
    ap.add_argument("--bursts", type=int, default=12)
    ap.add_argument("--writes", type=int, default=40, help="writes per burst")
    ap.add_argument("--p99-limit", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--hbase-dir", help="an HBase hbase/hbase.sh started there (this restarts it); "
                    "default: one of its own")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    log(f"seed {args.seed}")
    work = tempfile.mkdtemp(prefix="rowsearch-happybase-replication-")
    if args.hbase_dir:
        hbase = Hbase(args.hbase_dir, started=True)
    else:
        log("starting HBase (hbase/hbase.sh) in", work)
        hbase = Hbase(os.path.join(work, "hbase"))
    try:
        run(args, rng, hbase, work)
    finally:
        for proc in SERVERS:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if not args.hbase_dir:
            hbase.stop()


def run(args, rng, hbase, work):
    thrift2 = hbase.addresses["thrift2"]
    rs = Rowsearch(args.bin, thrift2, os.path.join(work, "data"))
    rs.run("create-table", TABLE, "--schema", json.dumps(SCHEMA))
    rs.run("reindex", "--table", TABLE, "--full")
    writer = Writer(hbase.addresses["thrift"], thrift2)
    regions = writer.retried("regions", lambda: writer.table.regions())
    if len(regions) != 4:
        fail(f"the table has {len(regions)} regions, not 4")
    keys = [f"{c}{i:03d}" for c in "adhkpsvz" for i in range(12)]
    rs.serve()

    took = []
    for b in range(args.bursts):
        took.append(settle(rs, writer, 60, burst(writer, rng, keys, args.writes)))
    log(f"{args.bursts} bursts of {args.writes} writes: equal to HBase's rows after "
        f"p50 {sorted(took)[len(took) // 2]:.2f} s, p99 {p99(took):.2f} s, max {max(took):.2f} s")
    if p99(took) > args.p99_limit:
        fail(f"p99 {p99(took):.2f} s over {args.p99_limit} s")

    # rowsearch killed (-9) in the middle of a burst, started again.
    burst(writer, rng, keys, args.writes, middle=rs.kill)
    done = burst(writer, rng, keys, args.writes)
    rs.serve()
    log(f"killed -9 in a burst and started again: equal {settle(rs, writer, 120, done):.2f} s "
        "after the last write (the restart included)")

    # HBase stopped and started in the middle of a burst.
    started = time.time()
    done = burst(writer, rng, keys, args.writes, middle=hbase.restart)
    log(f"HBase restarted in a burst (the burst took {done - started:.0f} s): "
        f"equal {settle(rs, writer, 240, done):.2f} s after the last write")
    for _ in range(2):
        took.append(settle(rs, writer, 60, burst(writer, rng, keys, args.writes)))

    # The stream broken: the peer disabled (HBase keeps the writes queued).
    # /health says so, with the reason, once no probe came back for 10 s;
    # enabled again, the queued writes arrive and nothing is lost.
    subprocess.run(["bash", HBASE_SH, "disable-peer", hbase.dir], check=True, capture_output=True)
    started = time.time()
    burst(writer, rng, keys, args.writes)
    while True:
        _, health = rs.get("/health")
        if health.get("status") == "degraded" and "replication" in health.get("reason", ""):
            break
        if time.time() - started > 60:
            fail(f"/health not degraded 60 s after the peer was disabled: {health}")
        time.sleep(0.2)
    log(f"peer disabled: /health degraded after {time.time() - started:.1f} s: {health['reason']}")
    _, table = rs.get(f"/tables/{TABLE}")
    following = table["guarantee"]["following"]
    if following.get("by") != "tailer" or not following.get("trouble"):
        fail(f"with the peer disabled, GET /tables/{TABLE} says {following}")
    subprocess.run(["bash", HBASE_SH, "enable-peer", hbase.dir], check=True, capture_output=True)
    enabled = time.time()
    log(f"peer enabled again: equal {settle(rs, writer, 120, enabled):.2f} s after")
    while rs.get("/health")[1].get("status") != "ok":
        if time.time() - enabled > 60:
            fail(f"/health not ok 60 s after the peer was enabled: {rs.get('/health')[1]}")
        time.sleep(0.2)

    deadline = time.time() + 60
    while True:
        _, table = rs.get(f"/tables/{TABLE}")
        following = table.get("guarantee", {}).get("following") or {}
        if following.get("by") == "replication":
            break
        if time.time() > deadline:
            fail(f"not following through replication after the restarts: {following}")
        time.sleep(0.2)
    log(f"following: {following}")
    rs.kill()
    log("ok")


if __name__ == "__main__":
    main()
