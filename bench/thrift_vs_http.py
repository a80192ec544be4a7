#!/usr/bin/env python3
"""The same work through rowsearch's Thrift gateway (happybase) and through
its HTTP API (http.client, keep-alive), on one server, in one script
(issue 38's benchmark).

Usage: python3 bench/thrift_vs_http.py [--bin target/release/rowsearch]
                                       [--rows 5000] [--rounds 3]

Needs happybase (tests/thrift/happybase_suite.sh makes target/happybase-venv;
run this script with that venv's python). One server (`serve --create
--thrift 127.0.0.1:0`, a fresh store). Per round and side, in a table of
its own (one family, 1 version): --rows single-row puts (row key, two
cells of 40 bytes), then --rows single-row gets of those rows in another
order, then a scan of the whole table in pages of 1,000 rows. Rounds
alternate which side goes first. Printed: the median over rounds of each
side's puts/s, gets/s and scanned rows/s, and Thrift / HTTP.
"""
import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import happybase

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--bin", default=os.path.join(HERE, "../target/release/rowsearch"))
ap.add_argument("--rows", type=int, default=5000)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()

data = tempfile.mkdtemp(prefix="rowsearch-thrift-bench-")
server = subprocess.Popen([args.bin, "--data", os.path.join(data, "d"), "serve", "--create",
                           "--listen", "127.0.0.1:0", "--thrift", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, text=True)
http_addr = thrift_port = None
while thrift_port is None:
    line = server.stdout.readline()
    if not line:
        sys.exit("the server did not start")
    if line.startswith("listening on http://"):
        host, port = line.strip().removeprefix("listening on http://").split(":")
        http_addr = (host, int(port))
    if line.startswith("thrift listening on "):
        thrift_port = int(line.strip().rsplit(":", 1)[1])

conn = http.client.HTTPConnection(*http_addr)


def call(method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:200]}")
    return data


VALUE_A, VALUE_B = b"a" * 40, b"b" * 40
keys = [b"row-%08d" % i for i in range(args.rows)]
shuffled = keys[:]
random.Random(1).shuffle(shuffled)


def thrift_round(table):
    c = happybase.Connection("127.0.0.1", thrift_port)
    c.create_table(table, {"f": {"max_versions": 1}})
    t = c.table(table)
    start = time.perf_counter()
    for k in keys:
        t.put(k, {b"f:a": VALUE_A, b"f:b": VALUE_B})
    puts = len(keys) / (time.perf_counter() - start)
    start = time.perf_counter()
    for k in shuffled:
        assert t.row(k)[b"f:a"] == VALUE_A
    gets = len(keys) / (time.perf_counter() - start)
    start = time.perf_counter()
    n = sum(1 for _ in t.scan(batch_size=1000))
    scanned = n / (time.perf_counter() - start)
    assert n == len(keys)
    c.close()
    return puts, gets, scanned


def http_round(table):
    call("PUT", f"/tables/{table}", json.dumps({"families": [{"name": "f", "max_versions": 1}]}))
    body = json.dumps({"cells": [{"column": "f:a", "value": VALUE_A.decode()},
                                 {"column": "f:b", "value": VALUE_B.decode()}]})
    start = time.perf_counter()
    for k in keys:
        call("PUT", f"/tables/{table}/rows/{k.decode()}", body)
    puts = len(keys) / (time.perf_counter() - start)
    start = time.perf_counter()
    for k in shuffled:
        row = json.loads(call("GET", f"/tables/{table}/rows/{k.decode()}"))
        assert row["cells"][0]["value"] == VALUE_A.decode()
    gets = len(keys) / (time.perf_counter() - start)
    start = time.perf_counter()
    n, cursor = 0, None
    while True:
        path = f"/tables/{table}/scan?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        page = json.loads(call("GET", path))
        n += len(page["rows"])
        cursor = page.get("next_cursor")
        if not cursor:
            break
    scanned = n / (time.perf_counter() - start)
    assert n == len(keys)
    return puts, gets, scanned


results = {"thrift": [], "http": []}
try:
    for r in range(args.rounds):
        sides = [("thrift", thrift_round), ("http", http_round)]
        for name, run in sides if r % 2 == 0 else sides[::-1]:
            results[name].append(run(f"{name}{r}"))
finally:
    server.terminate()
    server.wait()
    subprocess.run(["rm", "-rf", data])

print(f"# {args.rows} rows, {args.rounds} rounds; median of rounds; {args.bin}")
print(f"{'measure':<18} {'thrift':>10} {'http':>10} {'thrift/http':>12}")
for i, measure in enumerate(["puts/s", "gets/s", "scanned rows/s"]):
    t = statistics.median(x[i] for x in results["thrift"])
    h = statistics.median(x[i] for x in results["http"])
    print(f"{measure:<18} {t:>10.0f} {h:>10.0f} {t / h:>11.2f}x")
