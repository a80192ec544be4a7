#!/usr/bin/env python3
"""Backups of the full corpus's store (issue 41): `rowsearch backup` against
`cp -r` of the same files (data.mdb and the index directory), and the 48
peer queries' latency while backups run beside a server.

Usage: python3 bench/backup_vs_cp.py [--rounds 3] [--secs 10]
(needs wrk: apt-get install wrk; the store from bench/common.py's
corpus_store)

Copy speed (unpaced): --rounds rounds, the store's files read once before each (warm
page cache for both), MB/s of each one's own output (a backup's is smaller:
free pages are left out). Searches: wrk -t1 -c1 for --secs idle, then for
--secs while backups of the same store run one after another from another
process, unpaced and at `--max-mb-per-s 150`; p50 and p99 are wrk's, medians of the rounds.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, Server, arguments, corpus_store, need_wrk, peer_queries, peer_wrk_script, wrk_cycle

need_wrk()

args = arguments(rounds=(int, 3), secs=(int, 10))
store = corpus_store(args)
out_dir = os.path.join(WORK, "backup-bench")


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True).stdout.split()[0])


def warm():
    subprocess.run(f"cat {store}/data.mdb > /dev/null; find {store}/index -type f -exec cat {{}} + > /dev/null",
                   shell=True, check=True)


def timed_backup(dest):
    shutil.rmtree(dest, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([args.bin, "--data", store, "backup", dest], check=True, capture_output=True)
    return time.perf_counter() - started


def timed_cp(dest):
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    started = time.perf_counter()
    subprocess.run(["cp", "-r", f"{store}/data.mdb", f"{store}/index", dest], check=True)
    subprocess.run(["sync", "-f", dest], check=True)
    return time.perf_counter() - started


copies = {"backup": [], "cp": []}
sizes = {}
for r in range(args.rounds):
    for name, fn in (("backup", timed_backup), ("cp", timed_cp))[:: 1 if r % 2 == 0 else -1]:
        warm()
        dest = os.path.join(out_dir, name)
        secs = fn(dest)
        sizes[name] = du(dest)
        copies[name].append(secs)
    print(f"copy round {r + 1}: backup {copies['backup'][-1]:.2f} s, cp {copies['cp'][-1]:.2f} s", file=sys.stderr)

script = peer_wrk_script()
paths = [path for _, path in peer_queries()]


def wrk(server):
    return wrk_cycle(server, script, args.secs)


variants = {"unpaced": "", "paced 150 MB/s": "--max-mb-per-s 150"}
lat = {(v, k): [] for v in variants for k in ("idle p50", "idle p99", "p50", "p99")}
backups_taken = {v: [] for v in variants}
for r in range(args.rounds):
    for v, flag in variants.items():
        server = Server("now", args.bin, store)
        server.get(paths[0])
        p50, p99 = wrk(server)
        lat[(v, "idle p50")].append(p50)
        lat[(v, "idle p99")].append(p99)
        loop = subprocess.Popen(
            ["sh", "-c", f"i=0; while :; do i=$((i+1)); rm -rf {out_dir}/loop; {args.bin} --data {store} "
                         f"backup {out_dir}/loop {flag} >/dev/null 2>&1 || exit 1; echo $i; done"],
            stdout=subprocess.PIPE, text=True)
        p50, p99 = wrk(server)
        loop.kill()
        taken = loop.stdout.read().split()
        loop.wait()
        backups_taken[v].append(len(taken))
        lat[(v, "p50")].append(p50)
        lat[(v, "p99")].append(p99)
        server.stop()
        print(f"search round {r + 1} {v}: idle {lat[(v, 'idle p50')][-1]:.3f}/{lat[(v, 'idle p99')][-1]:.3f} ms, "
              f"beside backups {p50:.3f}/{p99:.3f} ms ({len(taken)} backups)", file=sys.stderr)
os.unlink(script)
shutil.rmtree(out_dir, ignore_errors=True)

med = {k: statistics.median(v) for k, v in lat.items()}
b, c = statistics.median(copies["backup"]), statistics.median(copies["cp"])
print(f"store {store}: {du(store) / 1e6:.0f} MB on disk; medians of {args.rounds} rounds")
print(f"backup: {b:.2f} s, {sizes['backup'] / 1e6:.0f} MB written, {sizes['backup'] / 1e6 / b:.0f} MB/s "
      f"({du(store) / 1e6 / b:.0f} MB/s of the store's size)")
print(f"cp -r:  {c:.2f} s, {sizes['cp'] / 1e6:.0f} MB written, {sizes['cp'] / 1e6 / c:.0f} MB/s; "
      f"backup / cp time {b / c:.2f}x")
for v in variants:
    i50, i99, g50, g99 = (med[(v, k)] for k in ("idle p50", "idle p99", "p50", "p99"))
    print(f"48 peer queries, wrk -t1 -c1 -d{args.secs}s, backups {v} in a loop beside: idle p50 {i50 * 1e3:.0f} us "
          f"p99 {i99 * 1e3:.0f} us; beside p50 {g50 * 1e3:.0f} us ({g50 / i50:.2f}x) p99 {g99 * 1e3:.0f} us "
          f"({g99 / i99:.2f}x); {statistics.median(backups_taken[v])} backups per window")
