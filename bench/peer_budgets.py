#!/usr/bin/env python3
"""What issue 36's budgets cost ordinary searches: the 48 peer queries over
HTTP, p50 and p99, this build (budgets, cancellation and the answer budget
on, at their defaults) against an earlier one (default 82a1b56, before
them), on one store, in one script.

Usage: python3 bench/peer_budgets.py [--before-rev REV] [--n 300] [--rounds 3]

The store is bench/confined_search.py's (the full corpus, made by this
build; both builds read it). Both servers run at once, each idle while the
other is timed; per round and server, each query --n times after 20
untimed on one keep-alive connection. The figure is each query's median
p50 and p99 over the rounds; printed per query, with now/before, and the
geometric means of the ratios.
"""
import statistics

from common import Server, arguments, build_at, corpus_store, pct, peer_queries

args = arguments(before_rev=(str, "82a1b56"), n=(int, 300), rounds=(int, 3))




data = corpus_store(args)
sides = [Server("before", build_at(args.before_rev), data), Server("now", args.bin, data)]
qs = peer_queries()
figures = {(s.name, q): ([], []) for s in sides for q, _ in qs}
for r in range(args.rounds):
    for side in sides if r % 2 == 0 else sides[::-1]:
        for q, path in qs:
            times = side.times(path, args.n)
            figures[(side.name, q)][0].append(pct(times, 0.5))
            figures[(side.name, q)][1].append(pct(times, 0.99))
for s in sides:
    s.stop()
print(f"{'query':36} {'before p50':>10} {'now p50':>8} {'ratio':>6} {'before p99':>10} {'now p99':>8} {'ratio':>6}")
r50, r99 = [], []
for q, _ in qs:
    b50, b99 = (statistics.median(x) for x in figures[("before", q)])
    n50, n99 = (statistics.median(x) for x in figures[("now", q)])
    r50.append(n50 / b50)
    r99.append(n99 / b99)
    print(f"{q[:36]:36} {b50:10.3f} {n50:8.3f} {n50 / b50:6.3f} {b99:10.3f} {n99:8.3f} {n99 / b99:6.3f}")
print(f"geometric mean now/before: p50 {statistics.geometric_mean(r50):.3f}, p99 {statistics.geometric_mean(r99):.3f}")
