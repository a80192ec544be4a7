#!/usr/bin/env python3
"""Search latency and throughput: HTTP under wrk, the in-process Searcher,
and SQLite FTS5 answering the same queries over the same messages, in one run.

Usage: python3 bench/search_load.py STORE_DIR [--seconds 10] [--fts-runs 200]

STORE_DIR holds the full corpus ingested and indexed (bench/reindex_vs_tantivy.sh
leaves one in /tmp/rowsearch-bench/reindex-store). Needs wrk (Debian: apt install
wrk) and a release build (cargo build --release -p rowsearch).

1. Starts `rowsearch serve --listen 127.0.0.1:0` on the store.
2. For each query (term, two-term AND, phrase, one mailbox newest first) and
   1 and 16 connections: `wrk --latency` for --seconds; p50, p99, requests/s.
   Every request returns the top 10 hits with their rows.
3. Stops the server, then runs the in-process bench
   (search-api/benches/search.rs) on the same store: p50, p99.
4. Exports the messages (`rowsearch scan mail`), loads them into an SQLite FTS5
   table (subject, body, sender, recipients; user, date, key unindexed) and
   times the same queries (top 10 by bm25, or by date for the mailbox query,
   fetching subject and sender): p50, p99 over --fts-runs runs each.
Rows are projected to --columns (default subject and sender, an inbox listing)
on both rowsearch sides.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("store")
ap.add_argument("--seconds", type=int, default=10)
ap.add_argument("--fts-runs", type=int, default=200)
ap.add_argument("--columns", default="m:subject,m:from",
                help="columns of the returned rows (an inbox listing); 'all' for whole rows")
ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../target/release/rowsearch"))
args = ap.parse_args()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import need_wrk  # noqa: E402

need_wrk()

QUERIES = [
    ("term", "q=energy", "energy", None),
    ("and", "q=gas+price", "gas AND price", None),
    ("phrase", "q=%22natural+gas%22", '"natural gas"', None),
    ("mailbox_newest", "q=meeting&user=kaminski-v&sort=newest", "meeting", "kaminski-v"),
]


def wrk(url, connections):
    threads = min(connections, 2)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{args.seconds}s", "--latency", url],
        check=True, capture_output=True, text=True).stdout
    def ms(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        value, unit = float(m.group(1)), m.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return ms("50"), ms("99"), rps, int(errors.group(1)) if errors else 0


print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
server = subprocess.Popen([args.bin, "--data", args.store, "serve", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, text=True)
addr = server.stdout.readline().strip().removeprefix("listening on ")
http = {}
try:
    columns = "" if args.columns == "all" else f"&columns={args.columns}"
    for name, qs, _, _ in QUERIES:
        url = f"{addr}/tables/mail/search?{qs}&limit=10{columns}"
        subprocess.run(["wrk", "-t1", "-c4", "-d2s", url], check=True, capture_output=True)  # warm-up
        for c in (1, 16):
            p50, p99, rps, errors = wrk(url, c)
            assert errors == 0, f"{name}: {errors} failed requests"
            http[(name, c)] = (p50, p99, rps)
            print(f"http {name} c={c}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, {rps:.0f} req/s")
finally:
    server.terminate()
    server.wait()

bench = subprocess.run(
    ["cargo", "bench", "-q", "-p", "rowsearch", "--bench", "search"],
    cwd=root, env={**os.environ, "ROWSEARCH_BENCH_STORE": args.store,
                   "ROWSEARCH_BENCH_COLUMNS": "" if args.columns == "all" else args.columns},
    check=True, capture_output=True, text=True).stdout
inproc = {}
for line in bench.splitlines():
    m = re.match(r"in-process (\w+): p50 ([\d.]+) ms, p99 ([\d.]+) ms", line)
    if m:
        inproc[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        print(line)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fts5_db, fts5_times  # noqa: E402

db = fts5_db(args.bin, args.store)
fts = {}
for name, _, match, user in QUERIES:
    times = fts5_times(db, match, user, args.fts_runs)
    fts[name] = (statistics.median(times), times[int(len(times) * 0.99) - 1])
    print(f"fts5 {name}: p50 {fts[name][0]:.3f} ms, p99 {fts[name][1]:.3f} ms")

print("\n| query | HTTP p50 c=1 | in-process p50 | HTTP - in-process | HTTP p99 c=1 / c=16 | req/s c=1 / c=16 | x | FTS5 p50 | FTS5 / HTTP p50 |")
print("|---|---|---|---|---|---|---|---|---|")
for name, _, _, _ in QUERIES:
    h1, h16, ip, f = http[(name, 1)], http[(name, 16)], inproc[name], fts[name]
    print(f"| {name} | {h1[0]:.3f} ms | {ip[0]:.3f} ms | {h1[0] - ip[0]:+.3f} ms | {h1[1]:.2f} / {h16[1]:.2f} ms "
          f"| {h1[2]:.0f} / {h16[2]:.0f} | {h16[2] / h1[2]:.1f}x | {f[0]:.3f} ms | {f[0] / h1[0]:.1f}x |")
