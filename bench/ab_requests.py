#!/usr/bin/env python3
"""The same GET requests against this build and an earlier one, serving
one store, in one script: for a change whose effect is a few requests.

Usage: python3 bench/ab_requests.py (--before_rev REV | --before_bin BIN) [--data DIR]
                                    [--n 500] [--rounds 3] PATH [PATH ...]

Both servers serve DIR (default /tmp/rowsearch-bench/features, made by
bench/search_features.py) at once, read only, with no refresher; each is
idle while the other is timed. Per round and side, each PATH --n times
after 20 untimed on one keep-alive connection; rounds alternate which
side goes first. Printed per path: the median over rounds of each side's
p50 over HTTP, and of the p50 of the server's own `took_ms` where the
answer has one, in ms. The earlier build: a git worktree of REV under
/tmp/rowsearch-bench, built when missing, or a binary given as --before_bin
(for a change of the binary alone, such as its allocator settings).
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

from common import HERE, WORK, build_at, pct

ap = argparse.ArgumentParser()
before = ap.add_mutually_exclusive_group(required=True)
before.add_argument("--before_rev")
before.add_argument("--before_bin")
ap.add_argument("--bin", default=os.path.join(HERE, "../target/release/rowsearch"))
ap.add_argument("--data", default=os.path.join(WORK, "features"))
ap.add_argument("--n", type=int, default=500)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("paths", nargs="+")
args = ap.parse_args()


class Side:
    def __init__(self, name, binary):
        self.name = name
        self.proc = subprocess.Popen([binary, "--data", args.data, "serve", "--listen", "127.0.0.1:0",
                                      "--refresh-ms", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        host, port = self.proc.stdout.readline().strip().removeprefix("listening on http://").split(":")
        self.address = (host, int(port))
        self.conn = http.client.HTTPConnection(*self.address)

    def get(self, path):
        for _ in range(2):
            try:
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                body = r.read()
                if r.status != 200:
                    sys.exit(f"{self.name} {path}: {r.status} {body[:300]}")
                return body
            except (http.client.RemoteDisconnected, ConnectionError):
                self.conn = http.client.HTTPConnection(*self.address)
        sys.exit(f"{self.name} {path}: connection lost twice")

    def time(self, path):
        for _ in range(20):
            self.get(path)
        wall, took = [], []
        for _ in range(args.n):
            t = time.perf_counter()
            body = self.get(path)
            wall.append((time.perf_counter() - t) * 1e3)
            answer = json.loads(body)
            if isinstance(answer, dict) and "took_ms" in answer:
                took.append(answer["took_ms"])
        return pct(wall, 0.5), (pct(took, 0.5) if took else None)


sides = [Side("before", args.before_bin or build_at(args.before_rev)), Side("now", args.bin)]
results = {(s.name, p): [] for s in sides for p in args.paths}
try:
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            for path in args.paths:
                results[(side.name, path)].append(side.time(path))
finally:
    for side in sides:
        side.proc.terminate()
        side.proc.wait()

print(f"# before {args.before_rev or args.before_bin}, now {args.bin}; {args.rounds} rounds of {args.n}; median of round p50s, ms")
print(f"{'path':<60} {'before':>8} {'now':>8} {'now/before':>10}   server took_ms before / now")
for path in args.paths:
    b = statistics.median(w for w, _ in results[("before", path)])
    n = statistics.median(w for w, _ in results[("now", path)])
    tb = [t for _, t in results[("before", path)] if t is not None]
    tn = [t for _, t in results[("now", path)] if t is not None]
    took = f"{statistics.median(tb):.3f} / {statistics.median(tn):.3f}" if tb and tn else ""
    print(f"{path:<60} {b:>8.3f} {n:>8.3f} {n / b:>9.2f}x   {took}")
