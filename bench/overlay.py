#!/usr/bin/env python3
"""Live search's overlay on the full corpus, one run (issue 22):

Usage: python3 bench/overlay.py [--corpus ../shared/corpus/mail.tar.zst] [--puts 200] [--repeat 20]

1. Extracts the corpus once into /tmp/rowsearch-bench/corpus; a fresh data
   directory; `rowsearch ingest` of the corpus into table `mail`, then
   `rowsearch reindex --full`.
2. Write then search, the two designs side by side: a server with the overlay
   (the default, `--overlay-max-rows 1000`) and one without it
   (`--overlay-max-rows 0`: a search after a write to its table waits for the
   refresher's incremental commit), each with the default 1,000 ms refresh.
   --puts times: one single-row PUT over HTTP (its own word and "energy"),
   then at once the searches `q=<its word>` and `q=energy` (10 k matches):
   p50, p99 of each search's wall time, and whether it found the row.
   The servers take turns (A, B, A, B ...) so noise hits both alike.
3. Overlay size: a server with `--refresh-ms 0` (nothing absorbs writes):
   N rows written in one `mutate`, then `q=energy` searched --repeat times:
   the first search (builds the overlay of N rows), and the p50 of the
   others (the overlay reused), for N = 0, 1, 10, 100, 256, and 257 (past
   the limit: the search waits for an incremental reindex instead).
Build first: cargo build --release -p rowsearch.
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import time

from common import WORK, arguments, corpus, pct

args = arguments(puts=(int, 200), repeat=(int, 20))
mail = corpus(args.corpus)
data = os.path.join(WORK, "overlay")
shutil.rmtree(data, ignore_errors=True)


def run(*argv):
    t = time.perf_counter()
    subprocess.run([args.bin, "--data", data, *argv], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


class Server:
    def __init__(self, *flags):
        self.proc = subprocess.Popen([args.bin, "--data", data, "serve", "--listen", "127.0.0.1:0", *flags],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on http://"), line
        host, port = line.removeprefix("listening on http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port))

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        t = time.perf_counter()
        self.conn.request(method, path, None if body is None else json.dumps(body), headers)
        r = self.conn.getresponse()
        answer = r.read()
        ms = (time.perf_counter() - t) * 1e3
        if r.status not in (200, 201):
            sys.exit(f"{method} {path}: {r.status} {answer[:300]}")
        return ms, json.loads(answer)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def put_body(user, i, words):
    return {"cells": [{"column": "m:subject", "value": words},
                      {"column": "b:text", "value": words},
                      {"column": "m:date", "value": "2001-05-16T08:00:00Z"}]}


def key_fields(user, i):
    return "%7B%22user%22%3A%22" + user + "%22%2C%22date%22%3A990000000000%2C%22id%22%3A" + str(i) + "%7D"


print(f"ingest: {run('ingest', mail):.2f} s; full reindex: {run('reindex', '--full'):.2f} s")

# 2. Write then search, the two designs taking turns.
servers = {"overlay": Server(), "wait": Server("--overlay-max-rows", "0")}
for s in servers.values():
    for _ in range(30):
        s.call("GET", "/tables/mail/search?q=energy")
times = {name: {"own word": [], "energy": []} for name in servers}
overlaid = {name: 0 for name in servers}
for i in range(args.puts):
    for name, s in servers.items():
        word = f"probe{name}{i}"
        s.call("PUT", f"/tables/mail/rows?key_fields={key_fields('probe-' + name, i)}",
               put_body("probe", i, f"{word} energy"))
        ms, v = s.call("GET", f"/tables/mail/search?q={word}")
        if v["total"] != 1:
            sys.exit(f"{name}: the write was not found: {v}")
        times[name]["own word"].append(ms)
        ms, v = s.call("GET", "/tables/mail/search?q=energy")
        times[name]["energy"].append(ms)
for name in servers:
    for q, xs in times[name].items():
        print(f"write then search, {name}: q={q}: p50 {pct(xs, 0.5):.2f} ms, p99 {pct(xs, 0.99):.2f} ms "
              f"(n={len(xs)})")
for q in ("own word", "energy"):
    print(f"write then search, q={q}: p50 wait / overlay "
          f"{pct(times['wait'][q], 0.5) / pct(times['overlay'][q], 0.5):.1f}x")
for s in servers.values():
    s.stop()

# 3. Overlay size: nothing absorbs the writes.
run("reindex")
s = Server("--refresh-ms", "0")
next_id = 0
for n in (0, 1, 10, 100, 256, 257):
    if n:
        mutations = [{"put": {"key_fields": {"user": "bulk", "date": 990000000000 + j, "id": next_id + j},
                              "cells": put_body("bulk", j, f"bulk{n} energy")["cells"]}} for j in range(n)]
        next_id += n
        s.call("POST", "/tables/mail/mutate", {"mutations": mutations})
    first, v = s.call("GET", "/tables/mail/search?q=energy")
    rest = [s.call("GET", "/tables/mail/search?q=energy")[0] for _ in range(args.repeat)]
    _, table = s.call("GET", "/tables/mail")
    print(f"{n:5} rows pending: first search {first:.2f} ms, then p50 {pct(rest, 0.5):.2f} ms; "
          f"total {v['total']}; lag afterwards {table['freshness']['lag_rows']} rows")
    # Each size on its own: absorb the rows before the next.
    s.stop()
    run("reindex")
    s = Server("--refresh-ms", "0")
s.stop()
