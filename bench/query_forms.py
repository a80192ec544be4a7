#!/usr/bin/env python3
"""Latency of the query forms of issue 23 on the full corpus, over HTTP, one
keep-alive connection: p50 and p99 of --n searches each (limit 10, rows
projected to subject and sender), idle server.

Usage: python3 bench/query_forms.py DATA [--n 300]
DATA: a data directory with the full corpus ingested and indexed (for
example the one bench/overlay.py leaves in /tmp/rowsearch-bench/overlay).
Build first: cargo build --release -p rowsearch.
"""
import http.client
import os
import subprocess
import sys
import time
import urllib.parse

from common import arguments, pct

args = arguments(n=(int, 300), data=(str, "/tmp/rowsearch-bench/overlay"))
QUERIES = ["enron", "enro*", "subject:pri*", "\"natural ga\"*", "enrn~1", "meetign~1", "body:powr~2",
           "date:2001-05", "date:[2001-01-01 TO 2001-01-31] gas"]
server = subprocess.Popen([args.bin, "--data", args.data, "serve", "--listen", "127.0.0.1:0", "--refresh-ms", "0"],
                          stdout=subprocess.PIPE, text=True)
line = server.stdout.readline().strip()
host, port = line.removeprefix("listening on http://").split(":")
conn = http.client.HTTPConnection(host, int(port))
for q in QUERIES:
    path = f"/tables/mail/search?q={urllib.parse.quote(q)}&columns=m:subject,m:from"
    times, total = [], None
    for i in range(args.n + 20):
        t = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit(f"{q}: {r.status} {body[:200]}")
        if i >= 20:
            times.append((time.perf_counter() - t) * 1e3)
        total = body[:40]
    print(f"{q:40} p50 {pct(times, 0.5):.2f} ms, p99 {pct(times, 0.99):.2f} ms  {total.decode(errors='replace')}")
server.terminate()
server.wait()
