#!/usr/bin/env python3
"""What keeping the mail table's secondary index costs an ingest over a
real HBase (issue 62): the full corpus ingested into HBase with the mail
schema as it is (its `by_from` index kept with Phoenix's three phases)
against the same schema without `indexes`, rounds interleaved.

Needs an HBase (`hbase/hbase.sh start DIR`) and ROWSEARCH_HBASE_THRIFT2
set to its Thrift2 gateway. Usage: python3 bench/index_cost_over_hbase.py
[--rounds 2]
"""
import json
import os
import shutil
import statistics
import subprocess
import time

from common import WORK, arguments, corpus

args = arguments(rounds=(int, 2))
mail = corpus(args.corpus)
HB = os.environ["ROWSEARCH_HBASE_THRIFT2"]
probe = os.path.join(WORK, "index-cost-probe")
shutil.rmtree(probe, ignore_errors=True)
os.makedirs(probe)
with open(os.path.join(probe, "one.eml"), "w") as f:
    f.write("Message-ID: <x@y>\nSubject: s\n\nbody\n")
run = lambda *a, **k: subprocess.run([args.bin, *a], check=True, capture_output=True, text=True, **k)
run("--data", probe + "/d", "ingest", probe + "/one.eml", "--user", "p")
schema = json.loads(run("--data", probe + "/d", "export", "mail").stdout.splitlines()[0])["schema"]
schema.pop("indexes", None)
local = os.path.join(WORK, "index-cost-local")
secs = {"with": [], "without": []}
for r in range(args.rounds):
    for side in (["without", "with"] if r % 2 == 0 else ["with", "without"]):
        shutil.rmtree(local, ignore_errors=True)
        subprocess.run([args.bin, "--data", local, "--hbase", HB, "drop-table", "mail"], capture_output=True)
        if side == "without":
            run("--data", local, "--hbase", HB, "create-table", "mail", "--schema", json.dumps(schema))
        t = time.perf_counter()
        out = run("--data", local, "--hbase", HB, "ingest", mail).stdout
        secs[side].append(time.perf_counter() - t)
        print(f"round {r + 1} ingest over HBase {side} by_from: {secs[side][-1]:.1f} s ({out.strip()[:100]})",
              flush=True)
w, wo = statistics.median(secs["with"]), statistics.median(secs["without"])
print(f"machine: {os.uname().nodename}, {os.cpu_count()} cores; {args.rounds} rounds; ingest over HBase with the "
      f"by_from index {w:.1f} s, without {wo:.1f} s: the index costs {100 * (w / wo - 1):.0f}%")
