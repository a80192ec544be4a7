#!/usr/bin/env python3
"""Suggestions right after the index commits, this build against an
earlier one, on a copy of the full corpus's store, over HTTP.

Usage: python3 bench/suggest_after_commit.py --before_rev REV [--rounds 20]
                                             [--blocks 2]

A commit gives the index a new reader state; the first completion of a
short prefix in a new state is where a cache kept per state pays in full.
Per round: one row written (PUT, a fresh mailbox), waited for until
`GET /tables/mail` says the index reflects it (`lag_rows` 0, the server
refreshing every 50 ms), then each prefix suggested twice: the first is
"after commit", the second "warm". Per side and prefix the median of the
rounds, in ms. The sides run one after the other in blocks (before, now,
before, now ...), each its own server on one copy of the store
(/tmp/rowsearch-bench/suggest-commit, copied from the store that
bench/search_features.py makes; the rows written are left there).
The earlier build: a git worktree of REV under /tmp/rowsearch-bench,
built when missing.
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse

from common import WORK, arguments, build_at

args = arguments(before_rev=(str, ""), rounds=(int, 20), blocks=(int, 2),
                 source=(str, os.path.join(WORK, "features")))
PREFIXES = ["e", "en", "s", "t", "co"]


def before_binary():
    if not args.before_rev:
        sys.exit("--before_rev is needed")
    return build_at(args.before_rev)


def data_copy():
    data = os.path.join(WORK, "suggest-commit")
    if not os.path.isdir(data):
        if not os.path.isdir(args.source):
            sys.exit(f"{args.source}: run bench/search_features.py first")
        shutil.copytree(args.source, data + ".tmp")
        os.rename(data + ".tmp", data)
    return data


class Server:
    def __init__(self, binary, data):
        self.proc = subprocess.Popen([binary, "--data", data, "serve", "--listen", "127.0.0.1:0",
                                      "--refresh-ms", "50"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        host, port = line.removeprefix("listening on http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port))

    def call(self, method, path, body=None):
        headers = {"content-type": "application/json"} if body is not None else {}
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            sys.exit(f"{method} {path}: {r.status} {data[:300]}")
        return json.loads(data)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def rounds(server, tag, out):
    for i in range(args.rounds):
        fields = {"user": f"bench-{tag}", "date": 1_100_000_000_000 + i, "id": i}
        key = urllib.parse.quote(json.dumps(fields, separators=(",", ":")))
        body = json.dumps({"cells": [{"column": "m:subject", "value": f"suggest bench round {tag} {i}"}]})
        server.call("PUT", f"/tables/mail/rows?key_fields={key}", body)
        deadline = time.time() + 30
        while server.call("GET", "/tables/mail")["freshness"]["lag_rows"] != 0:
            if time.time() > deadline:
                sys.exit("the index did not absorb the write in 30 s")
            time.sleep(0.005)
        for p in PREFIXES:
            for kind in ("after commit", "warm"):
                t = time.perf_counter()
                server.call("GET", f"/tables/mail/suggest?q={p}")
                out[(p, kind)].append((time.perf_counter() - t) * 1e3)


def main():
    data = data_copy()
    binaries = {"before": before_binary(), "now": args.bin}
    times = {side: {(p, k): [] for p in PREFIXES for k in ("after commit", "warm")} for side in binaries}
    for block in range(args.blocks):
        for side, binary in binaries.items():
            server = Server(binary, data)
            server.call("GET", "/tables/mail/suggest?q=x")  # the index opened
            rounds(server, f"{side}{block}", times[side])
            server.stop()
    print(f"# {args.blocks} blocks x {args.rounds} rounds per side; median ms")
    print(f"{'prefix':<8} {'':<13} {'before':>8} {'now':>8} {'before/now':>10}")
    for p in PREFIXES:
        for kind in ("after commit", "warm"):
            b = statistics.median(times["before"][(p, kind)])
            n = statistics.median(times["now"][(p, kind)])
            print(f"{p:<8} {kind:<13} {b:>8.2f} {n:>8.2f} {b / n:>9.1f}x")


main()
