#!/usr/bin/env python3
"""What access keys cost a search: HTTP p50 with a key against without, in one run.

Usage: python3 bench/keys_overhead.py [STORE_DIR] [--seconds 5] [--rounds 5]

Without STORE_DIR, the fixture mail (tests/fixtures/mail) is ingested and
indexed into a temporary store: its searches are the fastest, so the key's
fixed cost shows the most there. Two servers run on the one store at once
(the product supports that): one without a master key, one with a master key,
searched with a key made for `search` and confined to nothing (the common
case), and with one confined to a mailbox, against the same query with
`user=` of that mailbox without a key. wrk at one connection, the rounds
interleaved, medians of the rounds' p50s. Needs wrk and a release build.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("store", nargs="?")
ap.add_argument("--seconds", type=int, default=5)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../target/release/rowsearch"))
args = ap.parse_args()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import need_wrk  # noqa: E402

need_wrk()
MASTER = "bench-master-key-0123456789abcdef"

tmp = tempfile.mkdtemp()
store = args.store
if store is None:
    store = os.path.join(tmp, "store")
    fixture = os.path.join(root, "tests/fixtures/mail/maildir")
    subprocess.run([args.bin, "--data", store, "ingest", fixture], check=True, capture_output=True)
    subprocess.run([args.bin, "--data", store, "reindex"], check=True, capture_output=True)


def make_key(extra):
    out = subprocess.run([args.bin, "--data", store, "keys", "create", "--actions", "search", *extra],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["key"]


def serve(extra):
    proc = subprocess.Popen([args.bin, "--data", store, "serve", "--listen", "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    return proc, line.split("listening on ")[1].strip()


def p50(url, header=None):
    cmd = ["wrk", "-t1", "-c1", f"-d{args.seconds}s", "--latency", url]
    if header:
        cmd[1:1] = ["-H", header]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


plain_key = make_key([])
confined_key = make_key(["--partitions", "cash-m"])
open_server, open_addr = serve([])
keyed_server, keyed_addr = serve(["--master-key", MASTER])
query = "/tables/mail/search?q=enron+meeting&limit=10&columns=m:subject,m:from"
cases = [
    ("no key", f"{open_addr}{query}", None),
    ("search key", f"{keyed_addr}{query}", f"Authorization: Bearer {plain_key}"),
    ("no key, user=cash-m", f"{open_addr}{query}&user=cash-m", None),
    ("key confined to cash-m", f"{keyed_addr}{query}", f"Authorization: Bearer {confined_key}"),
]
runs = {name: [] for name, _, _ in cases}
try:
    for _ in range(args.rounds):
        for name, url, header in cases:
            runs[name].append(p50(url, header))
finally:
    open_server.kill()
    keyed_server.kill()
med = {name: statistics.median(v) for name, v in runs.items()}
for name, values in runs.items():
    print(f"{name:24} p50 median {med[name]*1000:7.1f} us   runs: {' '.join(f'{v*1000:.0f}' for v in values)}")
print(f"search key / no key:              {med['search key'] / med['no key']:.3f}")
print(f"confined key / no key with user=: {med['key confined to cash-m'] / med['no key, user=cash-m']:.3f}")
