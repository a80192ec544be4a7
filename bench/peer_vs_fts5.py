#!/usr/bin/env python3
"""The 48 peer queries over HTTP against SQLite FTS5 in process, per class,
in one run.

Usage: python3 bench/peer_vs_fts5.py [--store DIR] [--seconds 3] [--fts-runs 200]

--store (default: bench/common.py's corpus store, the full corpus ingested
and fully reindexed by this build, made when missing) is served by
`rowsearch serve`; each of the 48 queries (limit 10, documents with the
subject and sender) runs under `wrk -t1 -c1 --latency` for --seconds after a
1 s warm-up: p50. SQLite FTS5 (bench/common.py's table of the same
messages) answers the same query in process, fetching key, subject and
sender of the top 10 by bm25 (a mailbox's newest: by date), --fts-runs
times after 10 untimed: p50. `/health` under the same wrk is the floor.
Prints each query, then per class the median ratio FTS5 p50 / rowsearch
p50 (> 1: rowsearch faster) and the smallest. Needs wrk.
"""
import os
import re
import statistics
import subprocess
import sys
import time

from common import FIELDS, MAILBOX, arguments, corpus_store, fts5_db, fts5_times, need_wrk, peer_queries

need_wrk()

args = arguments(seconds=(int, 3), fts_runs=(int, 200), store=(str, ""))
store = args.store or corpus_store(args)

CLASSES = {"term": 12, "and": 12, "phrase": 8, "field": 8, "boolean": 4, "mailbox": 4}
FTS_FIELD = {"subject": "subject", "from": "sender", "to": "recipients", "body": "body"}


def fts5_match(name):
    """The FTS5 expression of a peer query (by its name)."""
    if name in FIELDS:
        field, term = name.split(":")
        return f"{FTS_FIELD[field]}:{term}"
    return re.sub(r"(^| )-(\w+)", r" NOT \2", name).strip()


def wrk_p50(url):
    subprocess.run(["wrk", "-t1", "-c1", "-d1s", url], check=True, capture_output=True)
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{args.seconds}s", "--latency", url],
                         check=True, capture_output=True, text=True).stdout
    if "Non-2xx" in out:
        sys.exit(f"{url}: failed requests\n{out}")
    m = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    value, unit = float(m.group(1)), m.group(2)
    return value if unit == "us" else value * 1000 if unit == "ms" else value * 1e6


print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; store {store}")
server = subprocess.Popen([args.bin, "--data", store, "serve", "--listen", "127.0.0.1:0", "--refresh-ms", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
addr = server.stdout.readline().strip().removeprefix("listening on ")
queries = peer_queries()
http = {}
try:
    health = wrk_p50(f"{addr}/health")
    print(f"/health p50 {health:.0f} us")
    for name, path in queries:
        http[name] = wrk_p50(addr + path)
finally:
    server.terminate()
    server.wait()

db = fts5_db(args.bin, store)
users = {f"{q} user={u} newest": (q, u) for q, u in MAILBOX}
fts = {}
for name, _ in queries:
    match, user = users.get(name, (fts5_match(name), None))
    fts[name] = statistics.median(fts5_times(db, match, user, args.fts_runs)) * 1000

print("\n| class | query | rowsearch HTTP p50 | FTS5 p50 | FTS5 / rowsearch |")
print("|---|---|---|---|---|")
by_class = {}
i = 0
for cls, n in CLASSES.items():
    for name, _ in queries[i:i + n]:
        ratio = fts[name] / http[name]
        by_class.setdefault(cls, []).append(ratio)
        print(f"| {cls} | {name} | {http[name]:.0f} us | {fts[name]:.0f} us | {ratio:.1f}x |")
    i += n
print("\n| class | median FTS5 / rowsearch | smallest |")
print("|---|---|---|")
for cls, ratios in by_class.items():
    print(f"| {cls} | {statistics.median(ratios):.1f}x | {min(ratios):.1f}x |")
everything = [r for rs in by_class.values() for r in rs]
print(f"| all 48 | {statistics.median(everything):.1f}x | {min(everything):.1f}x |")
