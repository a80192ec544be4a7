#!/usr/bin/env python3
"""Live search on the full corpus, one run (issue 22's benchmarks):

Usage: python3 bench/live_search.py [--corpus ../shared/corpus/mail.tar.zst] [--queries 400] [--puts 200]

1. Extracts the corpus once into /tmp/rowsearch-bench/corpus; a fresh data
   directory; `rowsearch ingest` of the corpus into table `mail` (the server
   then builds its index on its own: no reindex is run).
2. `rowsearch serve` (background refresh every 1,000 ms, the default).
3. Idle: the four queries of bench/search_load.py, --queries times each, one
   HTTP/1.1 keep-alive connection, snapshot consistency (the default): p50, p99.
4. Under load: the CLI ingests the whole corpus again into table `mail2` of the
   same store (searchable: the server refreshes its index in the background as
   it fills) while the same queries run against `mail`: p50, p99; and the
   ingest's wall time.
5. The same ingest into `mail4` with the server refreshing and no queries
   running, then (after 6) into `mail3` with the server stopped: the ratio of
   the two is the ingest throughput the background refresh leaves.
6. Write to absorb: --puts single-row PUTs over HTTP into `mail`, each
   followed by polling `GET /tables/mail` (every 2 ms) until its
   `freshness.index_seq` reaches the write's seq: p50, p99 of the time from the
   write's answer to the background refresh absorbing it (no search asks for
   it, so this is the refresher's own pace).
Build first: cargo build --release -p rowsearch.
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, arguments, corpus, pct

args = arguments(queries=(int, 400), puts=(int, 200))
mail = corpus(args.corpus)
data = os.path.join(WORK, "live")
shutil.rmtree(data, ignore_errors=True)

QUERIES = [
    ("term", "q=energy"),
    ("and", "q=gas+price"),
    ("phrase", "q=%22natural+gas%22"),
    ("mailbox_newest", "q=meeting&user=kaminski-v&sort=newest"),
]


def ingest(table):
    t = time.perf_counter()
    subprocess.run([args.bin, "--data", data, "ingest", mail, "--table", table], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def run_queries(conn, n):
    out = {}
    for name, q in QUERIES:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            conn.request("GET", f"/tables/mail/search?{q}&columns=m:subject,m:from")
            r = conn.getresponse()
            body = r.read()
            times.append((time.perf_counter() - t) * 1e3)
            if r.status != 200:
                sys.exit(f"{name}: {r.status} {body[:200]}")
        out[name] = times
    return out


def report(label, results):
    for name, times in results.items():
        print(f"{label} {name}: p50 {pct(times, 0.5):.2f} ms, p99 {pct(times, 0.99):.2f} ms (n={len(times)})")


t0 = ingest("mail")
print(f"first ingest into mail: {t0:.2f} s")
server = subprocess.Popen([args.bin, "--data", data, "serve", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, text=True)
line = server.stdout.readline().strip()
assert line.startswith("listening on http://"), line
host, port = line.removeprefix("listening on http://").split(":")
conn = http.client.HTTPConnection(host, int(port))
# The first search waits for the refresher to build mail's index.
t = time.perf_counter()
conn.request("GET", "/tables/mail/search?q=energy")
r = conn.getresponse()
r.read()
print(f"first search (index built on the way): {time.perf_counter() - t:.2f} s, status {r.status}")
run_queries(conn, 50)  # warm-up

idle = run_queries(conn, args.queries)
report("idle", idle)

loader = subprocess.Popen([args.bin, "--data", data, "ingest", mail, "--table", "mail2"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t = time.perf_counter()
loaded = {name: [] for name, _ in QUERIES}
while loader.poll() is None:
    for name, times in run_queries(conn, 5).items():
        loaded[name].extend(times)
with_server = time.perf_counter() - t
report("during ingest", loaded)
print(f"ingest into mail2 with the server refreshing: {with_server:.2f} s (queries running meanwhile)")

# The same ingest with the server refreshing and no queries running.
with_refresh = ingest("mail4")
print(f"ingest into mail4 with the server refreshing, no queries: {with_refresh:.2f} s")

lags = []
conn = http.client.HTTPConnection(host, int(port))  # the last one idled out during the ingest
for i in range(args.puts):
    body = json.dumps({"cells": [{"column": "m:subject", "value": f"absorb probe {i}"},
                                 {"column": "m:date", "value": "2001-05-16T08:00:00Z"}]})
    key = "%7B%22user%22%3A%22probe%22%2C%22date%22%3A990000000000%2C%22id%22%3A" + str(i) + "%7D"
    conn.request("PUT", f"/tables/mail/rows?key_fields={key}", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    answer = r.read()
    acked = time.perf_counter()
    if r.status not in (200, 201):
        sys.exit(f"put: {r.status} {answer[:200]}")
    seq = json.loads(answer)["seq"]
    while True:
        conn.request("GET", "/tables/mail")
        r = conn.getresponse()
        table = json.loads(r.read())
        if table["freshness"]["index_seq"] >= seq:
            break
        time.sleep(0.002)
    lags.append((time.perf_counter() - acked) * 1e3)
print(f"write to absorb (background, refresh every 1000 ms): p50 {pct(lags, 0.5):.0f} ms, "
      f"p99 {pct(lags, 0.99):.0f} ms (n={len(lags)})")
server.terminate()
server.wait()

alone = ingest("mail3")
print(f"ingest into mail3 alone (server stopped): {alone:.2f} s")
print(f"ingest throughput with the server refreshing (no queries) / alone: {alone / with_refresh:.2f}x; "
      f"with queries running too: {alone / with_server:.2f}x")
for name, _ in QUERIES:
    print(f"{name}: p50 during ingest / idle {pct(loaded[name], 0.5) / pct(idle[name], 0.5):.2f}x, "
          f"p99 during ingest {pct(loaded[name], 0.99):.2f} ms")
