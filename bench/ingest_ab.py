#!/usr/bin/env python3
"""Ingest of the full corpus into the embedded store by two builds,
interleaved: what a change to the ingest costs or saves.

Each round runs `rowsearch ingest` of the corpus into a fresh data
directory with the build before (--before) and this one (--bin), in
turn; per run: the wall time of the command, the ingest's own time (its
last line, before the pack it ends with), the process's user and system
CPU, and its peak anonymous memory (/proc/PID/status every 20 ms: what
it allocated; LMDB's file-backed map not counted). Prints each run, the
medians and the ratios (after / before).

Usage: python3 bench/ingest_ab.py --before BIN [--bin target/release/rowsearch]
           [--rounds 3] [--memory_mb N]
"""
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, arguments, corpus

args = arguments(before=(str, ""), rounds=(int, 3), memory_mb=(int, 0))
if not args.before:
    sys.exit("--before BIN: the build to compare with")
mail = corpus(args.corpus)


def run(binary, data):
    """One ingest: (wall s, ingest s, user s, system s, peak anonymous MiB)."""
    shutil.rmtree(data, ignore_errors=True)
    cmd = [binary, "--data", data, "ingest", mail]
    if args.memory_mb:
        cmd += ["--memory-mb", str(args.memory_mb)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{binary}: exit {proc.returncode}: {err[-2000:]}")
    took = re.search(r"skipped in ([0-9.]+) s", out)
    if not took:
        sys.exit(f"{binary}: no ingest summary in {out[-500:]!r}")
    return (wall, float(took.group(1)), after.ru_utime - before.ru_utime,
            after.ru_stime - before.ru_stime, peak / 1024)


names = ("wall", "ingest", "user", "system", "anon MiB")
results = {"before": [], "after": []}
for r in range(args.rounds):
    for name, binary in (("before", args.before), ("after", args.bin)):
        got = run(binary, os.path.join(WORK, f"ingest-ab-{name}"))
        results[name].append(got)
        print(f"round {r + 1} {name:>6}: " + ", ".join(f"{n} {v:.2f}" for n, v in zip(names, got)), flush=True)

budget = f" --memory-mb {args.memory_mb}" if args.memory_mb else ""
print(f"\nmedians of {args.rounds} rounds{budget} (before {args.before}, after {args.bin}):")
for i, n in enumerate(names):
    b = statistics.median(x[i] for x in results["before"])
    a = statistics.median(x[i] for x in results["after"])
    print(f"  {n:>8}: before {b:8.2f}  after {a:8.2f}  ({a / b:.2f}x)")
