#!/usr/bin/env python3
"""The data directory after a plain ingest and a full reindex (no `repack`
run by hand) against the raw baseline, this build against an earlier one.

Usage: python3 bench/storage_vs_raw.py [--rounds 3] [--before REV]

Each round, for the build of git revision --before (default d5a1b9b, the
last build before issue 65; built at /tmp/rowsearch-bench/before-REV) and
this build, interleaved: a fresh data directory, `rowsearch ingest` of the
full corpus, `rowsearch reindex --full`, then `du -sb` of the directory
(wall times of both commands too). The raw baseline, once, from this
build's store: raw LMDB holding each row as key -> JSON of its cells,
appended in key order (full pages), plus raw tantivy's index of the same
fields (indexer/benches/reindex.rs, `ROWSEARCH_BENCH_ONLY=size`). Prints
medians and the ratios to the raw total.
"""
import os
import re
import shutil
import statistics
import subprocess
import time

from common import HERE, WORK, arguments, build_at, corpus

args = arguments(rounds=(int, 3), before=(str, "d5a1b9b"))
mail = corpus(args.corpus)
root = os.path.join(HERE, "..")
subprocess.run(["cargo", "build", "-q", "--release", "-p", "rowsearch"], cwd=root, check=True)
builds = [(f"before ({args.before})", build_at(args.before)), ("now", args.bin)]


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(binary, data, *command):
    t = time.perf_counter()
    subprocess.run([binary, "--data", data, *command], check=True, capture_output=True)
    return time.perf_counter() - t


print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; {args.rounds} rounds")
figures = {label: [] for label, _ in builds}
for r in range(args.rounds):
    for label, binary in builds:
        data = os.path.join(WORK, "storage-" + label.split()[0])
        shutil.rmtree(data, ignore_errors=True)
        ingest = run(binary, data, "ingest", mail)
        reindex = run(binary, data, "reindex", "--full")
        size = du(data)
        store = os.path.getsize(os.path.join(data, "data.mdb"))
        figures[label].append((size, store, ingest, reindex))
        print(f"round {r + 1} {label}: {size / 1e6:.1f} MB (data.mdb {store / 1e6:.1f} MB), "
              f"ingest {ingest:.2f} s, reindex {reindex:.2f} s")

out = subprocess.run(["cargo", "bench", "-q", "-p", "rowsearch-indexer", "--bench", "reindex"], cwd=root,
                     env=dict(os.environ, ROWSEARCH_BENCH_STORE=os.path.join(WORK, "storage-now"),
                              ROWSEARCH_BENCH_ONLY="size"),
                     check=True, capture_output=True, text=True).stdout
m = re.search(r"raw size: lmdb (\d+) bytes, tantivy (\d+) bytes, total (\d+) bytes", out)
lmdb, tantivy, raw = (int(g) for g in m.groups())
print(f"\nraw baseline: LMDB key -> JSON row {lmdb / 1e6:.1f} MB + raw tantivy {tantivy / 1e6:.1f} MB "
      f"= {raw / 1e6:.1f} MB")
print("\n| build | data directory | data.mdb | / raw | ingest | reindex --full |")
print("|---|---|---|---|---|---|")
for label, _ in builds:
    size, store, ingest, reindex = (statistics.median(f[i] for f in figures[label]) for i in range(4))
    print(f"| {label} | {size / 1e6:.1f} MB | {store / 1e6:.1f} MB | {size / raw:.2f}x | {ingest:.2f} s "
          f"| {reindex:.2f} s |")
