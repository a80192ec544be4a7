#!/usr/bin/env python3
"""What confinement inside the scope costs a search (issue 35): the 48 peer
queries over HTTP, without a key and with a key confined to one mailbox,
this build against an earlier one (default: the build before issue 35),
on one store, in one script.

Usage: python3 bench/confined_search.py [--before-rev REV] [--n 200] [--rounds 3]
                                         [--mailbox kaminski-v]

The store is the full corpus ingested and reindexed by this build (both
builds read format 4). Four servers run on it at once, each idle while
another is timed: before and now, each open (no master key) and keyed (a
master key; searched with a key made for `search` and confined to
--mailbox). Open: the peer queries as they are. Confined: the same queries
by the confined key, `user=` dropped (the key's mailbox is the scope). Per
round and server, each query --n times after 20 untimed on one keep-alive
connection; the figure is each query's median p50 over the rounds. Printed:
the four p50s per query, now/before for each, and their geometric means.
Now, a confined search scores with its mailbox's statistics
(indexer/src/scoped_stats.rs), where before it used the whole index's.
"""
import json
import re
import statistics
import subprocess
import sys

from common import Server, arguments, build_at, corpus_store, peer_queries

args = arguments(before_rev=(str, "82a1b56"), n=(int, 200), rounds=(int, 3), mailbox=(str, "kaminski-v"))
MASTER = "bench-master-key-0123456789abcdef"




data = corpus_store(args)
key = json.loads(subprocess.run([args.bin, "--data", data, "keys", "create", "--actions", "search",
                                 "--partitions", args.mailbox], check=True, capture_output=True,
                                text=True).stdout)["key"]
before_bin = build_at(args.before_rev)
auth = {"Authorization": f"Bearer {key}"}
keyed = ["--master-key", MASTER]
sides = [Server("before open", before_bin, data), Server("before confined", before_bin, data, "", auth, keyed),
         Server("now open", args.bin, data), Server("now confined", args.bin, data, "", auth, keyed)]
qs = peer_queries()
confined_qs = [(name, re.sub(r"&user=[^&]*", "", path)) for name, path in qs]
p50s = {(s.name, name): [] for s in sides for name, _ in qs}
for r in range(args.rounds):
    order = sides if r % 2 == 0 else sides[::-1]
    for side in order:
        for (name, path), (_, confined) in zip(qs, confined_qs):
            p50s[(side.name, name)].append(side.p50(confined if "confined" in side.name else path, args.n))
        print(f"round {r + 1}: {side.name} done", file=sys.stderr)
med = {k: statistics.median(v) for k, v in p50s.items()}
print(f"confined to {args.mailbox}; before = {args.before_rev}; p50 in ms, median of {args.rounds} rounds")
print(f"{'query':34} {'bef open':>8} {'bef conf':>8} {'now open':>8} {'now conf':>8} {'open n/b':>8} {'conf n/b':>8}")
open_r, conf_r, cost_r = [], [], []
for name, _ in qs:
    bo, bc, no, nc = (med[(s, name)] for s in ["before open", "before confined", "now open", "now confined"])
    open_r.append(no / bo)
    conf_r.append(nc / bc)
    cost_r.append(nc / no)
    print(f"{name:34} {bo:8.3f} {bc:8.3f} {no:8.3f} {nc:8.3f} {no / bo:7.2f}x {nc / bc:7.2f}x")
g = statistics.geometric_mean
print(f"geometric means: open now/before {g(open_r):.3f}x, confined now/before {g(conf_r):.3f}x, "
      f"confined/open now {g(cost_r):.3f}x")
for side in sides:
    side.stop()
