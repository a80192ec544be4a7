#!/usr/bin/env python3
"""A cluster of searchers over one HBase (issue 64): how long the shards'
leases take to settle, to move off a searcher killed with SIGKILL or
stopped with SIGTERM, and to give a joining searcher its share.

For each of --rounds rounds, on the bench HBase (common.bench_hbase, or
ROWSEARCH_HBASE_THRIFT2) in a namespace of its own: a searchable table
with --shards shards, --searchers `serve --cluster` processes, each with
its own data directory; then one is killed (-9), a new one joins, one is
stopped (SIGTERM). Each time is measured from the event to the moment a
remaining searcher's GET /cluster shows every shard held by a live
searcher, each holding its share (polled every 50 ms). Medians and the
largest over the rounds.

Usage: python3 bench/cluster.py [--bin target/release/rowsearch]
           [--rounds 5] [--searchers 3] [--shards 12]
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from common import arguments, bench_hbase


def searcher(binary, hbase, data):
    p = subprocess.Popen([binary, "--data", data, "--hbase", hbase, "serve", "--create", "--cluster", "bench",
                          "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit(f"searcher did not start: {line!r}")
    return p, line.removeprefix("listening on ")


def settled(addr, n, shards, limit=60.0):
    """Seconds until `addr`'s view shows `shards` shards over `n` live
    searchers, each with its share."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        with urllib.request.urlopen(addr + "/cluster") as r:
            v = json.load(r)
        live = [m["id"] for m in v["searchers"] if m["live"]]
        held = [s["holder"] for s in v["shards"] if s["holder"]]
        counts = sorted(held.count(i) for i in live)
        fair = sorted(shards // n + (1 if k < shards % n else 0) for k in range(n))
        if len(live) == n and len(held) == shards and all(h in live for h in held) and counts == fair:
            return time.perf_counter() - start
        time.sleep(0.05)
    sys.exit(f"not settled over {n} searchers in {limit} s")


def main():
    args = arguments(rounds=(int, 5), searchers=(int, 3), shards=(int, 12))
    hbase = bench_hbase()
    results = {"start": [], "kill": [], "join": [], "stop": []}
    for r in range(args.rounds):
        ns = f"{hbase}/cluster_bench_{os.getpid()}_{r}"
        tmp = tempfile.mkdtemp(prefix="rowsearch-cluster-")
        schema = json.dumps({"families": [{"name": "f"}],
                             "search": {"fields": [{"name": "body", "column": "f:body"}], "shards": args.shards}})
        subprocess.run([args.bin, "--data", os.path.join(tmp, "admin"), "--hbase", ns, "create-table", "notes",
                        "--schema", schema], check=True, capture_output=True)
        procs = []
        try:
            t0 = time.perf_counter()
            for i in range(args.searchers):
                procs.append(searcher(args.bin, ns, os.path.join(tmp, f"s{i}")))
            first = procs[0][1]
            settled(first, args.searchers, args.shards)
            results["start"].append(time.perf_counter() - t0)
            victim = procs.pop(1)[0]
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            results["kill"].append(settled(first, args.searchers - 1, args.shards))
            t = time.perf_counter()
            procs.append(searcher(args.bin, ns, os.path.join(tmp, "joined")))
            settled(first, args.searchers, args.shards)
            results["join"].append(time.perf_counter() - t)
            stopped = procs.pop(1)[0]
            t = time.perf_counter()
            stopped.send_signal(signal.SIGTERM)
            stopped.wait()
            settled(first, args.searchers - 1, args.shards)
            results["stop"].append(time.perf_counter() - t)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in results.items()), flush=True)
        finally:
            for p, _ in procs:
                p.kill()
                p.wait()
            subprocess.run([args.bin, "--data", os.path.join(tmp, "admin"), "--hbase", ns, "drop-table", "notes"],
                           capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.searchers} searchers, {args.shards} shards, {args.rounds} rounds (median / largest, s):")
    for k, v in results.items():
        print(f"  {k:>5}: {statistics.median(v):.2f} / {max(v):.2f}")


if __name__ == "__main__":
    main()
