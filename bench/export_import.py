#!/usr/bin/env python3
"""Export and import of the full corpus's mail table (issue 41): rows/s of
`rowsearch export mail` and `rowsearch import` into a new store, beside
SQLite doing the same work on the same cells: a table (key, column,
timestamp, value) with that primary key, filled in transactions of 500
rows (the import's batch) with the cells parsed beforehand, and dumped in
key order by the sqlite3 shell's JSON mode.

Usage: python3 bench/export_import.py [--rounds 3]
(the store from bench/common.py's corpus_store; sqlite3 from apt)

The import also writes what the mail table derives from its cells (keyword
rows, the two secondary indexes, the change feed), which the SQLite table
does not have: the ratio is the price of a searchable table, not of the
format. Medians of --rounds rounds, page cache warm (each file read once
before).
"""
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import time

from common import WORK, arguments, corpus_store

args = arguments(rounds=(int, 3))
store = corpus_store(args)
work = os.path.join(WORK, "export-bench")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
export_file = os.path.join(work, "mail.jsonl")


def timed(command):
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def warm(path):
    subprocess.run(f"cat {path} > /dev/null", shell=True, check=True)


warm(os.path.join(store, "data.mdb"))
exports, imports, sq_inserts, sq_dumps = [], [], [], []
for r in range(args.rounds):
    exports.append(timed([args.bin, "--data", store, "export", "mail", "--output", export_file]))
    target = os.path.join(work, "imported")
    shutil.rmtree(target, ignore_errors=True)
    warm(export_file)
    imports.append(timed([args.bin, "--data", target, "import", export_file]))

with open(export_file) as f:
    lines = f.read().splitlines()
rows = [json.loads(line) for line in lines[1:-1]]
cells = [(row["key"], c["column"], c["timestamp"], c["value"]) for row in rows for c in row["cells"]]
n_rows, n_cells = len(rows), len(cells)
size_mb = os.path.getsize(export_file) / 1e6
# Cells grouped by row, 500 rows a transaction, as the import writes.
by_row = []
for row in rows:
    by_row.append([(row["key"], c["column"], c["timestamp"], c["value"]) for c in row["cells"]])
for r in range(args.rounds):
    db_path = os.path.join(work, "cells.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db_path + suffix):
            os.remove(db_path + suffix)
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE cells (key TEXT, col TEXT, ts INTEGER, value TEXT, PRIMARY KEY (key, col, ts)) WITHOUT ROWID")
    started = time.perf_counter()
    for i in range(0, len(by_row), 500):
        with db:
            db.executemany("INSERT OR REPLACE INTO cells VALUES (?,?,?,?)", [c for row in by_row[i:i + 500] for c in row])
    sq_inserts.append(time.perf_counter() - started)
    db.close()
    sq_dumps.append(timed(["sh", "-c", f"sqlite3 -json {db_path} 'SELECT * FROM cells ORDER BY key, col, ts DESC' > {work}/dump.json"]))

med = statistics.median
print(f"mail table: {n_rows} rows, {n_cells} cells, export {size_mb:.0f} MB; medians of {args.rounds} rounds")
print(f"export   {med(exports):6.2f} s  {n_rows / med(exports):8.0f} rows/s  {size_mb / med(exports):6.1f} MB/s")
print(f"import   {med(imports):6.2f} s  {n_rows / med(imports):8.0f} rows/s")
print(f"sqlite insert {med(sq_inserts):6.2f} s  {n_rows / med(sq_inserts):8.0f} rows/s (cells parsed beforehand)")
print(f"sqlite dump   {med(sq_dumps):6.2f} s  {n_rows / med(sq_dumps):8.0f} rows/s (sqlite3 -json)")
print(f"ratios: export/sqlite dump {med(exports) / med(sq_dumps):.2f}x time, import/sqlite insert {med(imports) / med(sq_inserts):.2f}x time")
