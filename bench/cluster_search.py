#!/usr/bin/env python3
"""Searches through a cluster of searchers (issue 64) against one server
with one index, over the same HBase and the same table.

Once: the corpus (--corpus; the full one by default) ingested over the
bench HBase (common.bench_hbase, or ROWSEARCH_HBASE_THRIFT2) into a table
of --shards shards. Then, for each of --rounds rounds:

- one server (`serve --hbase`, a fresh data directory) and, for each N of
  --searchers, N `serve --cluster` processes (fresh data directories):
  "ready" is the time from the processes' start to the first search of
  every mailbox answered 200 (its index, or every shard's, built from
  HBase: the full reindex, each searcher building its share);
- the search latency of a query set (terms, AND, phrases, a field, a
  mailbox's newest), --passes passes, requests one at a time, round-robin
  over the searchers: p50 and p99 per configuration;
- with the largest N: one searcher killed with SIGKILL, and the time until
  a search of every mailbox answers 200 again through another (the
  leases' end, a round, and the taken shards' builds).

Medians over the rounds. The machine's cores are shared by every process
and HBase: the N searchers' builds compete for them.

Usage: python3 bench/cluster_search.py [--bin target/release/rowsearch]
           [--rounds 3] [--shards 6] [--searchers 1,2,3] [--passes 5]
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from common import arguments, bench_hbase, corpus

QUERIES = ["gas", "energy", "meeting", "california", "gas price", "power plant", "natural gas",
           "\"natural gas\"", "\"conference call\"", "\"credit risk\"", "subject:meeting", "from:kaminski",
           "contract OR deal", "enron -meeting"]
MAILBOX = [("meeting", "kaminski-v"), ("gas", "dasovich-j"), ("contract", "cash-m"), ("energy", "lay-k")]


def paths(table):
    out = [f"/tables/{table}/search?q={urllib.parse.quote(q)}&limit=10" for q in QUERIES]
    out += [f"/tables/{table}/search?q={q}&user={u}&sort=newest&limit=10" for q, u in MAILBOX]
    return out


def serve(binary, hbase, data, cluster=None):
    cmd = [binary, "--data", data, "--hbase", hbase, "serve", "--create", "--listen", "127.0.0.1:0"]
    if cluster:
        cmd += ["--cluster", cluster]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit(f"server did not start: {line!r}")
    return p, line.removeprefix("listening on ")


def get(addr, path, timeout=120):
    try:
        with urllib.request.urlopen(addr + path, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, b""


def ready(addrs, table, started, limit=900):
    """Seconds from `started` until a search of every mailbox answers 200
    through the first of `addrs`."""
    while time.perf_counter() - started < limit:
        status, _ = get(addrs[0], f"/tables/{table}/search?q=gas&limit=1")
        if status == 200:
            return time.perf_counter() - started
        time.sleep(0.2)
    sys.exit(f"not ready after {limit} s")


def latencies(addrs, table, passes):
    out = []
    qs = paths(table)
    i = 0
    for _ in range(passes):
        for p in qs:
            t = time.perf_counter()
            status, body = get(addrs[i % len(addrs)], p)
            out.append((time.perf_counter() - t) * 1e3)
            if status != 200:
                sys.exit(f"{p}: {status} {body[:200]!r}")
            i += 1
    return out


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    args = arguments(rounds=(int, 3), shards=(int, 6), searchers=(str, "1,2,3"), passes=(int, 5),
                     table=(str, "mail"))
    counts = [int(n) for n in args.searchers.split(",")]
    hbase = bench_hbase()
    ns = f"{hbase}/csbench{args.shards}"
    mail = corpus(args.corpus)
    admin = tempfile.mkdtemp(prefix="rowsearch-cluster-admin-")
    subprocess.run([args.bin, "--data", admin, "--hbase", ns, "drop-table", args.table], capture_output=True)
    t = time.perf_counter()
    subprocess.run([args.bin, "--data", admin, "--hbase", ns, "ingest", mail, "--table", args.table, "--shards",
                    str(args.shards)], check=True, capture_output=True)
    print(f"ingested over HBase in {time.perf_counter() - t:.1f} s ({args.shards} shards)", flush=True)
    time.sleep(3)  # past HBase's 2 s clock margin
    results = {}

    def note(key, value):
        results.setdefault(key, []).append(value)

    for r in range(args.rounds):
        configs = [("one server", None)] + [(f"{n} searcher(s)", n) for n in counts]
        for name, n in configs:
            tmp = tempfile.mkdtemp(prefix="rowsearch-cluster-search-")
            procs = []
            try:
                started = time.perf_counter()
                if n is None:
                    procs.append(serve(args.bin, ns, os.path.join(tmp, "one")))
                else:
                    cluster = f"cs{os.getpid()}r{r}n{n}"
                    for i in range(n):
                        procs.append(serve(args.bin, ns, os.path.join(tmp, f"s{i}"), cluster))
                addrs = [a for _, a in procs]
                built = ready(addrs, args.table, started)
                note((name, "ready s"), built)
                lat = latencies(addrs, args.table, args.passes)
                note((name, "p50 ms"), pct(lat, 0.5))
                note((name, "p99 ms"), pct(lat, 0.99))
                line = f"round {r + 1} {name}: ready {built:.1f} s, p50 {pct(lat, 0.5):.2f} ms, p99 {pct(lat, 0.99):.2f} ms"
                if n is not None and n == max(counts) and n > 1:
                    victim = procs.pop(1)[0]
                    killed = time.perf_counter()
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    time.sleep(0.2)
                    back = ready([procs[0][1]], args.table, killed)
                    note((name, "takeover s"), back)
                    line += f", takeover {back:.1f} s"
                print(line, flush=True)
            finally:
                for p, _ in procs:
                    p.kill()
                    p.wait()
                shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.rounds} rounds, {args.shards} shards, table {args.table} (medians):")
    for (name, what), values in results.items():
        print(f"  {name:>14} {what:>10}: {statistics.median(values):9.2f}   ({', '.join(f'{v:.2f}' for v in values)})")
    subprocess.run([args.bin, "--data", admin, "--hbase", ns, "drop-table", args.table], capture_output=True)
    shutil.rmtree(admin, ignore_errors=True)


if __name__ == "__main__":
    main()
