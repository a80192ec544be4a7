#!/usr/bin/env python3
"""The fixed cost of a search (issue 40, first measurement): a rare word's
search over HTTP against `/health` on the same server and connection, with
`limit=0` and with 10 documents, snapshot (the default: the freshness check
reads the change feed) and `consistency=eventual`, and the answer's own
`took_ms` (the search inside the server) beside the client's time.

Usage: python3 bench/search_fixed_cost.py [--n 500] [--rounds 3]
(the full corpus's store from bench/common.py's corpus_store)
"""
import json
import statistics
import sys

from common import Server, arguments, corpus_store, pct

args = arguments(n=(int, 500), rounds=(int, 3))
server = Server("now", args.bin, corpus_store(args))
RARE = "q=zanzibar"  # a word a handful of messages hold
paths = {
    "/health": "/health",
    "rare, limit=0": f"/tables/mail/search?{RARE}&limit=0",
    "rare, limit=0, eventual": f"/tables/mail/search?{RARE}&limit=0&consistency=eventual",
    "rare, 10 documents": f"/tables/mail/search?{RARE}&limit=10",
    "rare, 10 documents, eventual": f"/tables/mail/search?{RARE}&limit=10&consistency=eventual",
    "rare, 10 subjects (fields=subject)": f"/tables/mail/search?{RARE}&limit=10&fields=subject",
}
total = json.loads(server.get(paths["rare, limit=0"]))["total"]
p50s = {name: [] for name in paths}
took = {name: [] for name in paths}
for r in range(args.rounds):
    for name, path in paths.items():
        p50s[name].append(server.p50(path, args.n))
        if name != "/health":
            took[name].append(statistics.median(
                json.loads(server.get(path))["took_ms"] for _ in range(50)))
    print(f"round {r + 1} done", file=sys.stderr)
server.stop()
health = statistics.median(p50s["/health"])
print(f"rare word: {RARE} ({total} matches); medians of {args.rounds} rounds of {args.n} requests, one keep-alive "
      f"connection")
print(f"{'request':36} {'HTTP p50':>9} {'x /health':>9} {'took_ms':>8}")
for name in paths:
    p = statistics.median(p50s[name])
    t = f"{statistics.median(took[name]):.3f}" if took[name] else ""
    print(f"{name:36} {p:7.3f} ms {p / health:8.2f}x {t:>8}")
