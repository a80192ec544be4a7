#!/usr/bin/env python3
"""Searches while an ingest runs beside them (issue 40): the 48 peer
queries (bench/common.py) cycled by wrk on one connection against a server
on the full corpus's store, idle and while the CLI ingests the whole corpus
into another table of the same store, this build and the build before
issue 40 in one run (each on its own copy of the store), rounds alternating;
this build's ingest at each nice value of --nices (0: no yielding; the
default is 10).

Usage: python3 bench/search_during_ingest.py [--secs 10] [--rounds 3]
           [--before_rev 13b72cf | --before_bin PATH]
(needs wrk: apt-get install wrk; the store from bench/common.py's
corpus_store)

Each round and side: a fresh copy of the store, wrk for --secs idle, then `rowsearch ingest CORPUS --table other` started and wrk for
--secs at once (the ingest takes longer than that on 2 cores: the whole
window is beside it). p50 and p99 are wrk's, over every request of the
window. Ingest seconds are reported too (this build's ingest yields the
cores to searches: `--nice`, default 10).
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, Server, arguments, build_at, corpus, corpus_store, need_wrk, peer_queries, peer_wrk_script, wrk_cycle

need_wrk()

args = arguments(secs=(int, 10), rounds=(int, 3), before_rev=(str, "13b72cf"), before_bin=(str, ""),
                 nices=(str, "0,10,19"))
mail = corpus(args.corpus)
source = corpus_store(args)
# Sides: the build before, and this build's ingest at each --nices value.
sides = {"before": (args.before_bin or build_at(args.before_rev), "before", [])}
for nice in args.nices.split(","):
    sides[f"nice {nice}"] = (args.bin, "now", ["--nice", nice])
stores = {name: os.path.join(WORK, f"during-ingest-{name}") for name in ("before", "now")}
bins = sides


def fresh_copy(path):
    """The corpus store copied anew: every side starts from the same store
    (the feed holds no other table's writes)."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(source, path)

script = peer_wrk_script()
paths = [path for _, path in peer_queries()]


def wrk(server):
    return wrk_cycle(server, script, args.secs)


figures = {(side, phase, q): [] for side in bins for phase in ("idle", "ingest") for q in ("p50", "p99")}
ingest_secs = {side: [] for side in bins}
for r in range(args.rounds):
    for side in (list(bins) if r % 2 == 0 else list(bins)[::-1]):
        binary, store, extra = bins[side]
        data = stores[store]
        fresh_copy(data)
        server = Server(side, binary, data)
        server.get(paths[0])
        p50, p99 = wrk(server)
        figures[(side, "idle", "p50")].append(p50)
        figures[(side, "idle", "p99")].append(p99)
        started = time.perf_counter()
        ingest = subprocess.Popen([binary, "--data", data, "ingest", mail, "--table", "other", *extra],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p50, p99 = wrk(server)
        still = ingest.poll() is None
        ingest.wait()
        ingest_secs[side].append(time.perf_counter() - started)
        if not still:
            print(f"warning: {side}'s ingest ended before the window did", file=sys.stderr)
        figures[(side, "ingest", "p50")].append(p50)
        figures[(side, "ingest", "p99")].append(p99)
        server.stop()
    print(f"round {r + 1} done", file=sys.stderr)
os.unlink(script)

med = {k: statistics.median(v) for k, v in figures.items()}
print(f"48 peer queries cycled by wrk -t1 -c1 -d{args.secs}s, idle and beside a CLI ingest of the full corpus "
      f"into another table; medians of {args.rounds} rounds (sides alternating)")
print(f"{'side':8} {'idle p50':>9} {'ingest p50':>11} {'ratio':>6} {'idle p99':>9} {'ingest p99':>11} "
      f"{'ingest s':>9}")
for side in bins:
    i50, g50 = med[(side, "idle", "p50")], med[(side, "ingest", "p50")]
    i99, g99 = med[(side, "idle", "p99")], med[(side, "ingest", "p99")]
    print(f"{side:8} {i50 * 1e3:6.0f} us {g50 * 1e3:8.0f} us {g50 / i50:5.2f}x {i99 * 1e3:6.0f} us "
          f"{g99 * 1e3:8.0f} us {statistics.median(ingest_secs[side]):8.1f}")
