#!/usr/bin/env python3
"""48 ordinary searches on the full corpus, this build against an earlier
one (default: the commit before issue 23), over HTTP, in one script.

Usage: python3 bench/peer_queries.py [--before_rev REV] [--n 200] [--rounds 3]
                                      [--now_extra '&format=cells'] [--now_data DIR]

1. The earlier build: a git worktree of REV at /tmp/rowsearch-bench/before-REV,
   built with cargo build --release when missing.
2. Each build ingests the full corpus into its own store and reindexes it
   fully (their schemas differ: the store of one is not read by the other).
3. Both servers run at once (idle while the other is timed); per round and
   side, each query --n times after 20 untimed, on one keep-alive
   connection; p50 per query per round. Rounds alternate the sides. The
   figure is each query's median p50 over the rounds, and the ratio
   now/before (> 1: slower now).

The queries are forms both builds take: terms, AND, phrases, field:term,
OR and NOT, and a mailbox's newest; limit 10, subject and sender projected.
--now_extra is appended to this build's requests only (the earlier build
refuses parameters it does not know): '&format=cells' asks this build for
the same answer as before (the projected cells), where the default document
also carries every search field, the bodies included. --now_data serves this
build from a store prepared otherwise (e.g. the body family with another
compression) instead of the one the script makes.
"""
import os
import statistics
import subprocess
import sys

from common import WORK, Server, arguments, build_at, corpus, peer_queries as queries

args = arguments(before_rev=(str, "2992f88"), n=(int, 200), rounds=(int, 3), now_extra=(str, ""), now_data=(str, ""))

def before_binary():
    return build_at(args.before_rev)


def store(binary, name):
    data = os.path.join(WORK, name)
    if not os.path.isdir(data):
        mail = corpus(args.corpus)
        subprocess.run([binary, "--data", data + ".tmp", "ingest", mail], check=True, capture_output=True)
        subprocess.run([binary, "--data", data + ".tmp", "reindex", "--full"], check=True, capture_output=True)
        os.rename(data + ".tmp", data)
    return data


now_bin = args.bin
before_bin = before_binary()
sides = [Server("before", before_bin, store(before_bin, f"peer-before-{args.before_rev}")),
         Server("now", now_bin, args.now_data or store(now_bin, "peer-now"), args.now_extra)]
qs = queries()
assert len(qs) == 48, len(qs)
p50s = {(s.name, name): [] for s in sides for name, _ in qs}
for r in range(args.rounds):
    order = sides if r % 2 == 0 else sides[::-1]
    for side in order:
        for name, path in qs:
            p50s[(side.name, name)].append(side.p50(path, args.n))
        print(f"round {r + 1}: {side.name} done", file=sys.stderr)
print(f"{'query':36} {'before p50':>11} {'now p50':>9} {'now/before':>10}")
ratios = []
for name, _ in qs:
    b = statistics.median(p50s[("before", name)])
    n = statistics.median(p50s[("now", name)])
    ratios.append(n / b)
    print(f"{name:36} {b:8.3f} ms {n:6.3f} ms {n / b:9.2f}x")
geo = statistics.geometric_mean(ratios)
print(f"geometric mean of now/before: {geo:.3f}x; slower than 1.10x: "
      f"{sum(r > 1.10 for r in ratios)} of 48; faster than 0.90x: {sum(r < 0.90 for r in ratios)} of 48")
for side in sides:
    side.stop()
