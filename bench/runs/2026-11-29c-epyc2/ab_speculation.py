"""A/B of the search over HBase answered while its feed read confirms the
snapshot (issue 62): the build before (OLD) and this one (NEW) over the same
HBase tables, and the embedded store (NEW), the 48 peer queries, p50 of
--n timed GETs each on one keep-alive connection, rounds interleaved.
Usage: python3 ab_speculation.py OLD NEW HBASE_THRIFT2 [rounds] [n]"""
import os, sys, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
from common import Server, peer_queries, pct, WORK

OLD, NEW, HB = sys.argv[1:4]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
N = int(sys.argv[5]) if len(sys.argv) > 5 else 30
qs = peer_queries()
sides = {"embedded": (NEW, os.path.join(WORK, "over-embedded"), ()),
         "hbase-old": (OLD, os.path.join(WORK, "over-local"), ("--hbase", HB)),
         "hbase-new": (NEW, os.path.join(WORK, "over-local"), ("--hbase", HB))}
p50s = {(side, q): [] for side in sides for q, _ in qs}
order = list(sides)
for r in range(ROUNDS):
    for side in (order if r % 2 == 0 else order[::-1]):
        binary, data, extra = sides[side]
        s = Server(side, binary, data, serve_args=extra)
        for q, path in qs:
            p50s[(side, q)].append(pct(s.times(path, N), 0.5))
        s.stop()
        print(f"round {r + 1} {side} done", file=sys.stderr, flush=True)
med = {k: statistics.median(v) for k, v in p50s.items()}
print(f"machine: {os.uname().nodename}, {os.cpu_count()} cores; rounds {ROUNDS}, n {N}; 48 peer queries")
print(f"{'query':36} {'emb':>7} {'hb old':>7} {'hb new':>7}")
for q, _ in qs:
    print(f"{q[:36]:36} {med[('embedded', q)]:7.2f} {med[('hbase-old', q)]:7.2f} {med[('hbase-new', q)]:7.2f}")
g = {side: statistics.geometric_mean([med[(side, q)] for q, _ in qs]) for side in sides}
print(f"geometric mean of the p50s (ms): embedded {g['embedded']:.2f}, over HBase before {g['hbase-old']:.2f} "
      f"({g['hbase-old'] / g['embedded']:.2f}x), now {g['hbase-new']:.2f} ({g['hbase-new'] / g['embedded']:.2f}x)")
r_old = statistics.geometric_mean([med[('hbase-old', q)] / med[('embedded', q)] for q, _ in qs])
r_new = statistics.geometric_mean([med[('hbase-new', q)] / med[('embedded', q)] for q, _ in qs])
print(f"geometric mean of the per-query ratios: before {r_old:.2f}x, now {r_new:.2f}x")
