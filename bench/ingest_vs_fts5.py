#!/usr/bin/env python3
"""Ingest benchmark: `rowsearch ingest` against SQLite FTS5, same run.

Usage: python3 bench/ingest_vs_fts5.py [--corpus ../shared/corpus/mail.tar.zst] [--runs 3]

1. Extracts the corpus (once) into /tmp/rowsearch-bench/corpus.
2. Runs `rowsearch ingest` into a fresh data directory `--runs` times:
   wall time (parsing + rows + secondary indexes + keyword rows), store size.
3. Exports the parsed messages once (`rowsearch scan mail`) and loads those
   same messages into an SQLite FTS5 table (subject, body, from, to; user
   and key unindexed), 4096 rows per transaction, `--runs` times: wall time
   of the inserts only (parsing is not counted for SQLite), database size.
Prints medians and the ratio; build first with `cargo build --release -p rowsearch`.
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "../../shared/corpus/mail.tar.zst"))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../target/release/rowsearch"))
args = ap.parse_args()

work = "/tmp/rowsearch-bench"
corpus = os.path.join(work, "corpus")
if not os.path.isdir(os.path.join(corpus, "mail")):
    os.makedirs(corpus, exist_ok=True)
    subprocess.run(["tar", "--zstd", "-xf", os.path.abspath(args.corpus), "-C", corpus], check=True)
messages = sum(len(f) for _, _, f in os.walk(os.path.join(corpus, "mail")))


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


rs_times, rs_size = [], 0
for run in range(args.runs):
    data = os.path.join(work, "data")
    shutil.rmtree(data, ignore_errors=True)
    t = time.perf_counter()
    out = subprocess.run([args.bin, "--data", data, "ingest", os.path.join(corpus, "mail")],
                         check=True, capture_output=True, text=True).stdout
    rs_times.append(time.perf_counter() - t)
    rs_size = du(data)
    print(f"rowsearch run {run + 1}: {rs_times[-1]:.2f} s  {out.strip()}", file=sys.stderr)

rows = []
scan = subprocess.Popen([args.bin, "--data", os.path.join(work, "data"), "scan", "mail"], stdout=subprocess.PIPE, text=True)
for line in scan.stdout:
    row = json.loads(line)
    cells = {c["column"]: c["value"] for c in row["cells"]}
    rows.append((row["key_fields"]["user"], row["key"], cells.get("m:subject", ""), cells.get("b:text", ""),
                 cells.get("m:from", ""), cells.get("m:to", "")))
scan.wait()
assert len(rows) == messages, (len(rows), messages)

fts_times, fts_size = [], 0
for run in range(args.runs):
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
    fts_times.append(time.perf_counter() - t)
    con.close()
    fts_size = os.path.getsize(db)
    print(f"sqlite fts5 run {run + 1}: {fts_times[-1]:.2f} s", file=sys.stderr)

rs, fts = statistics.median(rs_times), statistics.median(fts_times)
print(f"messages: {messages}")
print(f"rowsearch ingest: median {rs:.2f} s = {messages / rs:.0f} messages/s; store {rs_size / 1e6:.0f} MB")
print(f"sqlite fts5 insert: median {fts:.2f} s = {messages / fts:.0f} messages/s; db {fts_size / 1e6:.0f} MB")
print(f"ratio (rowsearch / fts5 messages/s): {fts / rs:.2f}x")
