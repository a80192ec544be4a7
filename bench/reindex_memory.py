#!/usr/bin/env python3
"""Peak anonymous memory of `reindex --full` at several --memory-mb, two
builds interleaved, each on a fresh copy of one store (sampled every 20 ms
from /proc/PID/status, as bench/peak_memory.py does).

    python3 bench/reindex_memory.py --store STORE --before BIN [--bin target/release/rowsearch]
        [--budgets default,128,256,512] [--rounds 2]

Prints each run (seconds, peak MiB and when) and the medians per budget."""
import argparse
import shutil
import statistics
import subprocess
import tempfile
import time

from peak_memory import sample

ap = argparse.ArgumentParser()
ap.add_argument("--store", required=True)
ap.add_argument("--before", required=True)
ap.add_argument("--bin", default="target/release/rowsearch")
ap.add_argument("--budgets", default="default,128,256,512")
ap.add_argument("--rounds", type=int, default=2)
args = ap.parse_args()

work = tempfile.mkdtemp(prefix="rowsearch-reindex-memory-")
runs = {}
for r in range(args.rounds):
    for budget in args.budgets.split(","):
        for name, binary in (("before", args.before), ("after", args.bin)):
            store = f"{work}/store"
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(args.store, store)
            cmd = [binary, "--data", store, "reindex", "--full", "--table", "mail"]
            if budget != "default":
                cmd += ["--memory-mb", budget]
            seconds, anon, _file = sample(cmd)
            runs.setdefault((budget, name), []).append((seconds, anon))
            print(f"round {r + 1} {name:6} --memory-mb {budget:>7}: {seconds:6.2f} s, peak anon {anon:5.0f} MiB",
                  flush=True)
shutil.rmtree(work, ignore_errors=True)
print("medians:")
for (budget, name), rs in runs.items():
    print(f"  {name:6} --memory-mb {budget:>7}: {statistics.median(s for s, _ in rs):6.2f} s, "
          f"peak anon {statistics.median(a for _, a in rs):5.0f} MiB")
