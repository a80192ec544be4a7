#!/usr/bin/env python3
"""The fixed cost of a search (issue 40): rare words' searches against
`/health` on the same server, timed by wrk (one thread, one keep-alive
connection), this build and the build before issue 40 side by side on the
same store (this build's copy with the mail table's display set, as its
next ingest sets it: default documents without the body), rounds
alternating; and where the time goes inside the server,
from the answers' `Server-Timing` header (queue: waiting for a worker;
snapshot: the freshness check and the snapshot; query: parse and run;
rows: reading the hits' rows; json: the answer's bytes).

Usage: python3 bench/search_fixed_cost.py [--secs 4] [--rounds 3]
           [--before_rev 13b72cf | --before_bin PATH]
(the full corpus's store from bench/common.py's corpus_store; needs wrk:
apt-get install wrk)
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

from common import WORK, Server, arguments, build_at, corpus_store, need_wrk

need_wrk()

args = arguments(secs=(int, 4), rounds=(int, 3), before_rev=(str, "13b72cf"), before_bin=(str, ""))
RARE = ["zanzibar", "burrito", "kayak"]  # a handful of messages each
paths = {"/health": "/health"}
for word in RARE:
    paths[f"{word}, limit=0"] = f"/tables/mail/search?q={word}&limit=0"
    paths[f"{word}, 10 subjects"] = f"/tables/mail/search?q={word}&limit=10&fields=subject"
    paths[f"{word}, 10 documents"] = f"/tables/mail/search?q={word}&limit=10"
    paths[f"{word}, 10 cropped"] = f"/tables/mail/search?q={word}&limit=10&crop=body:30"

store = corpus_store(args)
# This build's copy of the store: the mail table's display set, as the next
# `rowsearch ingest` sets it on a mail table an earlier build made (the
# build before reads no schema with a display, so it keeps the original).
now_store = os.path.join(WORK, "fixed-cost-now")
if not os.path.isdir(now_store):
    shutil.copytree(store, now_store + ".tmp")
    subprocess.run([args.bin, "--data", now_store + ".tmp", "display", "mail", "subject,from,to,folder,user,date"],
                   check=True, capture_output=True)
    os.rename(now_store + ".tmp", now_store)
sides = [Server("before", args.before_bin or build_at(args.before_rev), store), Server("now", args.bin, now_store)]


def wrk(server, path):
    """wrk's p50 and p99 (ms) of `path` over one connection."""
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{args.secs}s", "--latency",
                          f"http://{server.host}:{server.port}{path}"], capture_output=True, text=True,
                         check=True).stdout

    def ms(label):
        value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", out).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    return ms("50%"), ms("99%")


p50 = {(s.name, n): [] for s in sides for n in paths}
p99 = {(s.name, n): [] for s in sides for n in paths}
for r in range(args.rounds):
    for side in (sides if r % 2 == 0 else sides[::-1]):
        for name, path in paths.items():
            if side.name == "before" and "crop=" in path:
                continue  # a parameter the build before does not take
            a, b = wrk(side, path)
            p50[(side.name, name)].append(a)
            p99[(side.name, name)].append(b)
    print(f"round {r + 1} done", file=sys.stderr)

# Where the time goes: the Server-Timing steps of this build, medians of 200.
steps = {}
now = sides[1]
for name, path in paths.items():
    if name == "/health":
        continue
    seen = {}
    for _ in range(200):
        now.conn.request("GET", path)
        response = now.conn.getresponse()
        response.read()
        for step, dur in re.findall(r"(\w+);dur=([\d.]+)", response.getheader("server-timing") or ""):
            seen.setdefault(step, []).append(float(dur))
    steps[name] = {step: statistics.median(v) for step, v in seen.items()}
for side in sides:
    side.stop()

print(f"rare words {', '.join(RARE)}; wrk -t1 -c1 -d{args.secs}s per request and side, medians of "
      f"{args.rounds} rounds (sides alternating)")
print(f"{'request':26} {'before p50':>10} {'now p50':>9} {'now/before':>10} {'x /health':>9} {'now p99':>8}")
med = {k: statistics.median(v) for k, v in p50.items() if v}
for name in paths:
    b, n = med.get(("before", name)), med[("now", name)]
    h = med[("now", "/health")]
    before = f"{b * 1e3:7.0f} us" if b else f"{'-':>10}"
    ratio = f"{n / b:9.2f}x" if b else f"{'-':>10}"
    print(f"{name:26} {before} {n * 1e3:6.0f} us {ratio} {n / h:8.2f}x "
          f"{statistics.median(p99[('now', name)]) * 1e3:5.0f} us")
print()
print("inside the server (this build), Server-Timing medians of 200 requests, us:")
names = ["queue", "snapshot", "query", "rows", "json", "work"]
print(f"{'request':26} " + " ".join(f"{s:>8}" for s in names))
for name, by_step in steps.items():
    print(f"{name:26} " + " ".join(f"{by_step.get(s, 0) * 1e3:8.1f}" for s in names))
