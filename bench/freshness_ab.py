#!/usr/bin/env python3
"""Write-to-searchable before and after a change, both builds in one
script, on one store (issue 37's freshness figures).

Usage: python3 bench/freshness_ab.py --before_rev REV [--data DIR]
                                     [--data_before DIR] [--puts 100] [--rounds 3]

Both servers serve a copy of DIR each (default
/tmp/rowsearch-bench/confined-now, the full corpus as
bench/confined_search.py leaves it), with the default background refresh
(1,000 ms) and overlay. Per round and side, --puts times: one single-row
PUT over HTTP into `mail` (a word of its own, and "energy"), then at once
`GET /tables/mail/search?q=<its word>` (snapshot consistency: the search
must find it, through the overlay) and `q=energy&limit=10` (10 k matches
and the overlay); then `GET /tables/mail` polled every 2 ms until
`freshness.index_seq` reaches the write's seq (the refresher's absorb
time). Rounds alternate which side goes first. Printed: the median over
rounds of each side's p50 and p99 per measure, and now/before.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import HERE, WORK, build_at, pct

ap = argparse.ArgumentParser()
ap.add_argument("--before_rev", required=True)
ap.add_argument("--bin", default=os.path.join(HERE, "../target/release/rowsearch"))
ap.add_argument("--data", default=os.path.join(WORK, "confined-now"))
ap.add_argument("--data_before", default="", help="the before side's copy from here (default --data: an index "
                "format the earlier build does not read needs its own)")
ap.add_argument("--puts", type=int, default=100)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()

KEY = {"user": "bench-fresh", "date": 1, "id": 0}


class Side:
    def __init__(self, name, binary, source):
        self.name = name
        self.data = os.path.join(WORK, f"freshness-{name}")
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.copytree(source, self.data)
        self.proc = subprocess.Popen([binary, "--data", self.data, "serve", "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, text=True)
        host, port = self.proc.stdout.readline().strip().removeprefix("listening on http://").split(":")
        self.address = (host, int(port))
        self.conn = http.client.HTTPConnection(*self.address)
        self.n = 0

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                # The server closed an idle keep-alive connection: a new one.
                self.conn = http.client.HTTPConnection(*self.address)
                if attempt:
                    raise
        if r.status >= 300:
            sys.exit(f"{self.name} {method} {path}: {r.status} {data[:300]}")
        return json.loads(data) if data else None

    def one(self):
        self.n += 1
        word = f"freshword{self.n:05d}x"
        key = dict(KEY, id=self.n)
        path = "/tables/mail/rows?key_fields=" + json.dumps(key, separators=(",", ":")).replace('"', "%22")
        body = json.dumps({"cells": [{"column": "m:subject", "value": f"{word} energy"}]})
        answer = self.call("PUT", path, body)
        seq = answer["seq"]
        t = time.perf_counter()
        found = self.call("GET", f"/tables/mail/search?q={word}&limit=1")["total"]
        own = (time.perf_counter() - t) * 1e3
        if found != 1:
            sys.exit(f"{self.name}: the row just written is not found ({found})")
        t = time.perf_counter()
        self.call("GET", "/tables/mail/search?q=energy&limit=10")
        common = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        while self.call("GET", "/tables/mail")["freshness"]["index_seq"] < seq:
            time.sleep(0.002)
        absorb = (time.perf_counter() - t) * 1e3
        return own, common, absorb

    def round(self):
        samples = [self.one() for _ in range(args.puts)]
        return [(pct([s[i] for s in samples], 0.5), pct([s[i] for s in samples], 0.99)) for i in range(3)]


sides = [Side("before", build_at(args.before_rev), args.data_before or args.data), Side("now", args.bin, args.data)]
results = {s.name: [] for s in sides}
try:
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            results[side.name].append(side.round())
finally:
    for side in sides:
        side.proc.terminate()
        side.proc.wait()
        shutil.rmtree(side.data, ignore_errors=True)

print(f"# before {args.before_rev}, now {args.bin}; {args.rounds} rounds of {args.puts} puts; "
      "median of round p50 / p99, ms")
print(f"{'measure':<44} {'before p50':>10} {'now p50':>8} {'ratio':>6} {'before p99':>10} {'now p99':>8} {'ratio':>6}")
names = ["search for the row just written", "q=energy right after a write", "write to absorbed by the refresher"]
for i, name in enumerate(names):
    b50 = statistics.median(r[i][0] for r in results["before"])
    n50 = statistics.median(r[i][0] for r in results["now"])
    b99 = statistics.median(r[i][1] for r in results["before"])
    n99 = statistics.median(r[i][1] for r in results["now"])
    print(f"{name:<44} {b50:>10.2f} {n50:>8.2f} {n50 / b50:>5.2f}x {b99:>10.2f} {n99:>8.2f} {n99 / b99:>5.2f}x")
