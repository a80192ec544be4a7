#!/usr/bin/env python3
"""rowsearch over a real Apache HBase against the embedded store, on the
full corpus, in one script (issue 39):

1. ingest of the corpus (rows and keyword rows) into HBase against into a
   fresh embedded store: messages/s, rounds interleaved;
2. full reindex from HBase's keyword rows with 1, 2 and 4 regions read in
   parallel (`--parallel N`; the mail table's keyword rows have 4 regions)
   against a full reindex of the embedded store (threads 2), interleaved;
3. the 48 peer queries over HTTP, `serve --hbase` against `serve` on the
   embedded store: each query's p50 and p99 (medians over the rounds);
4. the tailer's lag: rows put straight into HBase by another client (the
   rowsearch Thrift2 client here, one row every --lag-every ms), each timed
   until an eventual search (the index as the tailer left it, no overlay)
   finds it, at the default --refresh-ms (1000): p50 and p99;
5. index lookups (issue 62): the mail table's `by_from` index for --senders
   senders (every --senders-th of the senders in index order, so few and
   many messages), each lookup's keys over HTTP (`serve --hbase`, the index
   kept in HBase; `serve` on the embedded store) against HBase's own
   filtered scan for the same rows (happybase through HBase's Thrift
   gateway: `SingleColumnValueFilter` on m:from, keys only), the same keys
   checked; p50 per side, medians of the rounds.

HBase: standalone 2.6.1 started with hbase/hbase.sh, 4 GiB of heap for the
master and region server, 1 GiB for each gateway (or the one at
ROWSEARCH_HBASE_THRIFT2). Medians of --rounds rounds.

Usage: python3 bench/over_hbase.py [--rounds 3] [--n 50] [--lag_rows 100]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from common import HERE, WORK, Server, arguments, bench_hbase as hbase, corpus, pct, peer_queries

args = arguments(rounds=(int, 3), n=(int, 50), lag_rows=(int, 100), lag_every=(int, 200), senders=(int, 20),
                 phases=(str, "ingest,reindex,search,lag,lookups"))
PHASES = args.phases.split(",")
mail = corpus(args.corpus)
BIN = args.bin


HB = hbase()
print(f"HBase Thrift2 gateway at {HB}", file=sys.stderr)


def run(*argv, data):
    t = time.perf_counter()
    out = subprocess.run([BIN, "--data", data, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{argv}: exit {out.returncode}: {out.stderr[-2000:]}")
    return time.perf_counter() - t, out.stdout


def fresh(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


MESSAGES = None
ingest = {"embedded": [], "hbase": []}
for r in range(args.rounds if "ingest" in PHASES else 0):
    for side in (["embedded", "hbase"] if r % 2 == 0 else ["hbase", "embedded"]):
        if side == "embedded":
            secs, out = run("ingest", mail, data=fresh("over-embedded"))
        else:
            local = fresh("over-local")
            subprocess.run([BIN, "--data", local, "--hbase", HB, "drop-table", "mail"], capture_output=True)
            secs, out = run("--hbase", HB, "ingest", mail, data=local)
        MESSAGES = int(out.split(" messages:")[0].rsplit(" ", 1)[1])
        ingest[side].append(secs)
        print(f"round {r + 1} ingest {side}: {secs:.1f} s ({out.strip()})", file=sys.stderr)

reindex = {"embedded": [], 1: [], 2: [], 4: []}
for r in range(args.rounds if "reindex" in PHASES else 0):
    sides = ["embedded", 1, 2, 4] if r % 2 == 0 else [4, 2, 1, "embedded"]
    for side in sides:
        if side == "embedded":
            secs, out = run("reindex", "--full", "--threads", "2", data=os.path.join(WORK, "over-embedded"))
        else:
            secs, out = run("--hbase", HB, "reindex", "--full", "--parallel", str(side),
                            data=os.path.join(WORK, "over-local"))
        reindex[side].append(secs)
        print(f"round {r + 1} reindex {side}: {secs:.1f} s ({out.strip()})", file=sys.stderr)

# The table the tailer's lag is measured on (made first: it also makes
# rowsearch's own tables in HBase when an earlier build made the others).
LAG_SCHEMA = json.dumps({"families": [{"name": "n"}],
                         "search": {"fields": [{"column": "n:text", "name": "text", "type": "text"}]}})
subprocess.run([BIN, "--data", os.path.join(WORK, "over-local"), "--hbase", HB, "drop-table", "lagprobe"],
               capture_output=True)
run("--hbase", HB, "create-table", "lagprobe", "--schema", LAG_SCHEMA, data=os.path.join(WORK, "over-local"))

qs = peer_queries()
servers = [Server("embedded", BIN, os.path.join(WORK, "over-embedded")),
           Server("hbase", BIN, os.path.join(WORK, "over-local"), serve_args=("--hbase", HB))]
times = {(s.name, q): [] for s in servers for q, _ in qs}
for r in range(args.rounds if "search" in PHASES else 0):
    for s in (servers if r % 2 == 0 else servers[::-1]):
        for q, path in qs:
            times[(s.name, q)].append(s.times(path, args.n))
        print(f"round {r + 1} search {s.name} done", file=sys.stderr)
for s in servers:
    s.stop()

# The tailer: rows put straight into HBase by another client (happybase,
# through HBase's Thrift gateway), each timed until an eventual search (the
# index as the tailer left it) finds it.
lags = []
if "lag" in PHASES:
    local = os.path.join(WORK, "over-local")
    thrift1 = os.environ.get("ROWSEARCH_HBASE_THRIFT") or next(
        l.split("=", 1)[1] for l in open(os.path.join(WORK, "hbase", "addresses")) if l.startswith("thrift="))
    venv = os.path.join(HERE, "../target/happybase-venv/bin/python")
    if not os.path.exists(venv):
        subprocess.run([sys.executable, "-m", "venv", os.path.dirname(os.path.dirname(venv))], check=True)
        subprocess.run([os.path.join(os.path.dirname(venv), "pip"), "install", "-q", "happybase==1.3.0",
                        "thriftpy2==0.7.1", "ply==3.11", "six==1.17.0"], check=True)
    host, port = thrift1.rsplit(":", 1)
    writer = subprocess.Popen([venv, "-c", f"""
import sys, happybase
t = happybase.Connection({host!r}, {port}).table("lagprobe")
for line in sys.stdin:
    key, word = line.split()
    t.put(key.encode(), {{b"n:text": word.encode()}})
    print("ok", flush=True)
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tailer = subprocess.Popen([BIN, "--data", local, "--hbase", HB, "serve", "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    http_addr = tailer.stdout.readline().strip().removeprefix("listening on http://")

    def found(word):
        url = f"http://{http_addr}/tables/lagprobe/search?q={word}&limit=0&consistency=eventual"
        try:
            with urllib.request.urlopen(url) as resp:
                return json.load(resp)["total"] > 0
        except urllib.error.HTTPError:
            return False  # no index yet: the tailer builds the first

    for i in range(args.lag_rows):
        word = f"lagprobe{i}x{int(time.time())}"
        writer.stdin.write(f"r{i} {word}\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "ok"
        t0 = time.perf_counter()
        while not found(word):
            time.sleep(0.005)
        if i > 0:  # the first waits for the table's first index
            lags.append((time.perf_counter() - t0) * 1e3)
        time.sleep(args.lag_every / 1000)
    writer.stdin.close()
    writer.wait()
    tailer.terminate()
    tailer.wait()
    print(f"round lag done", file=sys.stderr)

def happybase_python():
    venv = os.path.join(HERE, "../target/happybase-venv/bin/python")
    if not os.path.exists(venv):
        subprocess.run([sys.executable, "-m", "venv", os.path.dirname(os.path.dirname(venv))], check=True)
        subprocess.run([os.path.join(os.path.dirname(venv), "pip"), "install", "-q", "happybase==1.3.0",
                        "thriftpy2==0.7.1", "ply==3.11", "six==1.17.0"], check=True)
    return venv


lookups = {"embedded": [], "hbase": [], "scan": []}
SENDERS = []
SCANNED, FOUND = {}, {}
if "lookups" in PHASES:
    local = os.path.join(WORK, "over-local")
    _, listed = run("index", "lookup", "mail", "by_from", "--prefix", "", data=os.path.join(WORK, "over-embedded"))
    values = []
    for line in listed.splitlines():
        v = json.loads(line)["values"][0]
        if not values or values[-1] != v:
            values.append(v)
    step = max(1, len(values) // args.senders)
    SENDERS = values[::step][:args.senders]
    thrift1 = os.environ.get("ROWSEARCH_HBASE_THRIFT") or next(
        l.split("=", 1)[1] for l in open(os.path.join(WORK, "hbase", "addresses")) if l.startswith("thrift="))
    host, port = thrift1.rsplit(":", 1)
    namespace = HB.split("/", 1)[1] + ":" if "/" in HB else ""
    scanner = subprocess.Popen([happybase_python(), "-c", f"""
import sys, time, json, happybase
t = happybase.Connection({host!r}, {port}).table({namespace + "mail"!r})
for line in sys.stdin:
    sender = json.loads(line)
    f = "SingleColumnValueFilter('m', 'from', =, 'binary:" + sender.replace("'", "''") + "', true, true)"
    t0 = time.perf_counter()
    keys = [k for k, _ in t.scan(filter=f, columns=[b"m:from"])]
    ms = (time.perf_counter() - t0) * 1e3
    print(json.dumps({{"ms": ms, "keys": len(keys)}}), flush=True)
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    servers = [Server("embedded", BIN, os.path.join(WORK, "over-embedded")),
               Server("hbase", BIN, local, serve_args=("--hbase", HB))]
    for r in range(args.rounds):
        for side in (["embedded", "hbase", "scan"] if r % 2 == 0 else ["scan", "hbase", "embedded"]):
            each = []
            for sender in SENDERS:
                if side == "scan":
                    scanner.stdin.write(json.dumps(sender) + "\n")
                    scanner.stdin.flush()
                    got = json.loads(scanner.stdout.readline())
                    each.append(got["ms"])
                    SCANNED[sender] = got["keys"]
                else:
                    s = next(x for x in servers if x.name == side)
                    path = "/tables/mail/indexes/by_from?limit=10000&eq=" + urllib.parse.quote(sender, safe="")
                    each.append(pct(s.times(path, 5), 0.5))
                    if r == 0:
                        FOUND[(side, sender)] = len(json.loads(s.get(path))["keys"])
            lookups[side].append(statistics.median(each))
            print(f"round {r + 1} lookups {side}: median over senders {statistics.median(each):.2f} ms",
                  file=sys.stderr)
    scanner.stdin.close()
    scanner.wait()
    for sender in SENDERS:
        counts = (FOUND[("embedded", sender)], FOUND[("hbase", sender)], SCANNED[sender])
        if len(set(counts)) != 1:
            sys.exit(f"lookups of {sender!r} differ: embedded, over HBase, HBase's scan: {counts}")
    for s in servers:
        s.stop()

med = statistics.median
print(f"phases: {args.phases}")
print(f"machine: {os.uname().nodename}, {os.cpu_count()} cores; rounds {args.rounds}; HBase 2.6.1 standalone "
      f"on the same machine")
if ingest["hbase"]:
  print(f"ingest of {MESSAGES} messages: embedded {med(ingest['embedded']):.1f} s "
      f"({MESSAGES / med(ingest['embedded']):.0f} msgs/s), HBase {med(ingest['hbase']):.1f} s "
      f"({MESSAGES / med(ingest['hbase']):.0f} msgs/s): HBase/embedded "
      f"{med(ingest['embedded']) / med(ingest['hbase']):.2f}x the speed")
for side in (1, 2, 4) if reindex[1] else ():
    print(f"full reindex from HBase, {side} region(s) at a time: {med(reindex[side]):.1f} s; the embedded "
          f"store's: {med(reindex['embedded']):.1f} s ({med(reindex['embedded']) / med(reindex[side]):.2f}x its speed)")
if not times[("embedded", qs[0][0])]:
    qs = []
print(f"{'query':36} {'emb p50':>8} {'hb p50':>8} {'ratio':>6} {'emb p99':>8} {'hb p99':>8}")
ratios50, ratios99 = [], []
for q, _ in qs:
    e50 = med([pct(t, 0.5) for t in times[("embedded", q)]])
    h50 = med([pct(t, 0.5) for t in times[("hbase", q)]])
    e99 = med([pct(t, 0.99) for t in times[("embedded", q)]])
    h99 = med([pct(t, 0.99) for t in times[("hbase", q)]])
    ratios50.append(h50 / e50)
    ratios99.append(h99 / e99)
    print(f"{q:36} {e50:8.2f} {h50:8.2f} {h50 / e50:5.2f}x {e99:8.2f} {h99:8.2f}")
if ratios50:
  print(f"search over HBase / embedded: p50 geometric mean {statistics.geometric_mean(ratios50):.2f}x, "
      f"p99 {statistics.geometric_mean(ratios99):.2f}x")
if lags:
  print(f"tailer lag at --refresh-ms 1000 ({len(lags)} rows put by another client): p50 {pct(lags, 0.5):.0f} ms, "
      f"p99 {pct(lags, 0.99):.0f} ms")
if lookups["hbase"]:
  print(f"index lookups by_from ({len(SENDERS)} senders, median of each sender's p50): embedded "
        f"{med(lookups['embedded']):.2f} ms, over HBase {med(lookups['hbase']):.2f} ms, HBase's own filtered "
        f"scan {med(lookups['scan']):.1f} ms ({med(lookups['scan']) / med(lookups['hbase']):.0f}x the lookup "
        f"over HBase)")
