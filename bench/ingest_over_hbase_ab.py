#!/usr/bin/env python3
"""Ingest of the full corpus into HBase by two builds, interleaved: what a
change to the write path over HBase costs (issue 63: each row's keyword
record put after its runs).

One HBase (hbase/hbase.sh, 4 GiB for the master and region server, 1 GiB
for each gateway; or the one at ROWSEARCH_HBASE_THRIFT2); each run ingests
into a namespace of its own with a fresh --data, the builds alternating
for --rounds rounds; the medians and their ratio.

Usage: python3 bench/ingest_over_hbase_ab.py --before BIN [--bin target/release/rowsearch] [--rounds 3]
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, arguments, bench_hbase as hbase, corpus

args = arguments(before=(str, ""), rounds=(int, 3))
if not args.before:
    sys.exit("--before BIN: the build to compare with")
mail = corpus(args.corpus)


HB = hbase()
times = {"before": [], "after": []}
for r in range(args.rounds):
    for name, binary in (("before", args.before), ("after", args.bin)):
        data = os.path.join(WORK, f"ab-{name}")
        shutil.rmtree(data, ignore_errors=True)
        ns = f"ab{name}{r}{os.getpid()}"
        t = time.perf_counter()
        out = subprocess.run([binary, "--data", data, "--hbase", f"{HB}/{ns}", "ingest", mail],
                             capture_output=True, text=True)
        took = time.perf_counter() - t
        if out.returncode != 0:
            sys.exit(f"{name}: exit {out.returncode}: {out.stderr[-2000:]}")
        times[name].append(took)
        print(f"round {r + 1} {name}: {took:.1f} s", flush=True)
        subprocess.run([binary, "--data", data, "--hbase", f"{HB}/{ns}", "drop-table", "mail"],
                       capture_output=True)
b, a = statistics.median(times["before"]), statistics.median(times["after"])
print(f"ingest over HBase, median of {args.rounds}: before {b:.1f} s, after {a:.1f} s "
      f"(after/before {a / b:.2f}x time)")
