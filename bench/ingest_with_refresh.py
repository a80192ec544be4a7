#!/usr/bin/env python3
"""Ingest throughput with the server refreshing against ingest alone
(issue 22: at least 0.8x), median of interleaved rounds.

Usage: python3 bench/ingest_with_refresh.py [--rounds 3] [--corpus ../shared/corpus/mail.tar.zst]

Each round: the CLI ingests the whole corpus into a new table of one store
while `rowsearch serve` (default 1,000 ms refresh) runs on it and keeps the
new table's index current in the background; then the same ingest into
another new table with no server. Times are wall times of the ingest
commands. Build first: cargo build --release -p rowsearch.
"""
import os
import shutil
import statistics
import subprocess
import time

from common import WORK, arguments, corpus

args = arguments(rounds=(int, 3))
mail = corpus(args.corpus)
data = os.path.join(WORK, "ingest-refresh")
shutil.rmtree(data, ignore_errors=True)


def ingest(table):
    t = time.perf_counter()
    subprocess.run([args.bin, "--data", data, "ingest", mail, "--table", table], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


ingest("warmup")
served, alone = [], []
for r in range(args.rounds):
    server = subprocess.Popen([args.bin, "--data", data, "serve", "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout.readline().startswith("listening on")
    served.append(ingest(f"served{r}"))
    server.terminate()
    server.wait()
    alone.append(ingest(f"alone{r}"))
    print(f"round {r + 1}: with the server refreshing {served[-1]:.2f} s, alone {alone[-1]:.2f} s, "
          f"ratio {alone[-1] / served[-1]:.2f}x", flush=True)
print(f"median: with the server refreshing {statistics.median(served):.2f} s, alone {statistics.median(alone):.2f} s, "
      f"throughput ratio {statistics.median(alone) / statistics.median(served):.2f}x")
