#!/usr/bin/env python3
"""Ingest benchmark: `rowsearch ingest` against SQLite FTS5, same run.

Usage: python3 bench/ingest_vs_fts5.py [--corpus ../shared/corpus/mail.tar.zst] [--runs 5]

1. Extracts the corpus (once) into /tmp/rowsearch-bench/corpus.
2. A warm-up `rowsearch ingest` (reported, not counted: the first read of
   70k files from a cold page cache is slower whoever reads them), whose
   store is then exported once (`rowsearch scan mail`): the parsed messages
   SQLite gets.
3. `--runs` rounds, each one `rowsearch ingest` into a fresh data directory
   (wall time: parsing + rows + secondary indexes + keyword rows) followed
   by one load of the same messages into a fresh SQLite FTS5 table
   (subject, body, from, to; user and key unindexed), 4096 rows per
   transaction (wall time of the inserts only: parsing is not counted for
   SQLite). Alternating the two spreads the machine's drift over both.
Prints medians, sizes and the ratio of the medians, and the median of the
per-round ratios. Build first with `cargo build --release -p rowsearch`.
"""
import json
import re
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

from common import WORK, arguments, corpus as extract

args = arguments(runs=(int, 5))
mail_tree = extract(args.corpus)
work = WORK
corpus = os.path.dirname(mail_tree)
messages = sum(len(f) for _, _, f in os.walk(mail_tree))


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def ingest(data):
    shutil.rmtree(data, ignore_errors=True)
    t = time.perf_counter()
    out = subprocess.run([args.bin, "--data", data, "ingest", os.path.join(corpus, "mail")],
                         check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, out.strip()


def fts5_load(rows):
    db = os.path.join(work, "fts5.db")
    for suffix in ("", "-wal", "-journal"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    con = sqlite3.connect(db)
    con.execute("create virtual table mail using fts5(user unindexed, key unindexed, subject, body, sender, recipients)")
    t = time.perf_counter()
    for i in range(0, len(rows), 4096):
        with con:
            con.executemany("insert into mail values (?, ?, ?, ?, ?, ?)", rows[i:i + 4096])
    elapsed = time.perf_counter() - t
    con.close()
    return elapsed, os.path.getsize(db)


data = os.path.join(work, "data")
warm, out = ingest(data)
print(f"rowsearch warm-up (not counted): {warm:.2f} s  {out}", file=sys.stderr)
rows = []
scan = subprocess.Popen([args.bin, "--data", data, "scan", "mail"], stdout=subprocess.PIPE, text=True)
for line in scan.stdout:
    row = json.loads(line)
    cells = {c["column"]: c["value"] for c in row["cells"]}
    rows.append((row["key_fields"]["user"], row["key"], cells.get("m:subject", ""), cells.get("b:text", ""),
                 cells.get("m:from", ""), cells.get("m:to", "")))
scan.wait()
# SQLite gets the messages the store holds: copies of a message (the same
# mail in several folders) are folded into one row by the ingest.
stored = int(re.search(r"(\d+) stored", out).group(1))
assert len(rows) == stored, (len(rows), stored)

rs_times, fts_times = [], []
for run in range(args.runs):
    elapsed, out = ingest(data)
    rs_times.append(elapsed)
    rs_size = du(data)
    print(f"rowsearch run {run + 1}: {elapsed:.2f} s  {out}", file=sys.stderr)
    elapsed, fts_size = fts5_load(rows)
    fts_times.append(elapsed)
    print(f"sqlite fts5 run {run + 1}: {elapsed:.2f} s", file=sys.stderr)

rs, fts = statistics.median(rs_times), statistics.median(fts_times)
print(f"messages: {messages} files, {stored} stored (copies folded)")
print(f"rowsearch ingest: median {rs:.2f} s = {messages / rs:.0f} files/s; store {rs_size / 1e6:.0f} MB")
print(f"sqlite fts5 insert of the {stored} stored: median {fts:.2f} s = {stored / fts:.0f} messages/s; "
      f"db {fts_size / 1e6:.0f} MB")
print(f"ratio (fts5 time / rowsearch time, the same messages): {fts / rs:.2f}x; "
      f"median of per-round ratios {statistics.median(f / r for f, r in zip(fts_times, rs_times)):.2f}x")
