#!/usr/bin/env python3
"""Bare phrases (and bare terms as a control) in process, this build over
an index whose `_all` keeps no positions against the build --before over
the index it built (its `_all` kept them), on the same store content.

Usage: python3 bench/phrases_vs_before.py --store DIR [--before REV] [--rounds 3] [--iterations 300]

--store: an ingested and fully reindexed store of the full corpus, written
by this build or --before (the store format is the same). It is copied
twice under /tmp/rowsearch-bench: `phrases-before` (--before's `reindex
--full`) and `phrases-now` (this build's). Each round runs the engine bench
(search-api/benches/engine.rs: top 10 with subject and sender, exact
totals) of --before over its copy, then of this build over its own
(alternating sides), --iterations timed runs per query after 50; prints
per query the median of the rounds' p50s and the ratio, the totals of both
sides (which must be equal), and the two index sizes.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from common import HERE, WORK, arguments, build_at

args = arguments(store=(str, ""), before=(str, "7f90441"), rounds=(int, 3), iterations=(int, 300))
if not args.store:
    raise SystemExit("give --store DIR (an ingested, fully reindexed store of the full corpus)")
root = os.path.join(HERE, "..")
before_bin = build_at(args.before)
before_tree = os.path.dirname(os.path.dirname(os.path.dirname(before_bin)))
subprocess.run(["cargo", "build", "-q", "--release", "-p", "rowsearch", "--benches"], cwd=root, check=True)
subprocess.run(["cargo", "build", "-q", "--release", "-p", "rowsearch", "--benches"], cwd=before_tree, check=True)

QUERIES = [
    ("phrase", '"natural gas"'), ("phrase", '"power plant"'), ("phrase", '"conference call"'),
    ("phrase", '"credit risk"'), ("phrase", '"press release"'), ("phrase", '"price cap"'),
    ("phrase", '"gas storage"'), ("phrase", '"board meeting"'),
    ("phrase3", '"please let me know"'), ("phrase3", '"california power exchange"'),
    ("sloppy", '"gas price"~3'), ("sloppy", '"enron meeting"~5'),
    ("prefix", '"natural ga"*'), ("prefix", '"conference ca"*'),
    ("term", "academically"), ("term", "player"), ("term", "enron"),
    ("and2", "gas price"), ("field", 'subject:"natural gas"'),
]


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


sides = []
for label, binary, tree in [("before", before_bin, before_tree), ("now", args.bin, root)]:
    copy = os.path.join(WORK, f"phrases-{label}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(args.store, copy)
    subprocess.run([binary, "--data", copy, "reindex", "--full"], check=True, capture_output=True)
    sides.append((label, tree, copy, du(os.path.join(copy, "index"))))

with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    for _, q in QUERIES:
        f.write(json.dumps({"name": q, "query": q, "user": None}) + "\n")
    queries_file = f.name


def run(tree, store):
    env = dict(os.environ, ROWSEARCH_BENCH_STORE=store, ROWSEARCH_BENCH_QUERIES=queries_file,
               ROWSEARCH_BENCH_ITERATIONS=str(args.iterations))
    out = subprocess.run(["cargo", "bench", "-q", "-p", "rowsearch", "--bench", "engine"], cwd=tree, env=env,
                         check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {line["name"]: (line["p50_us"], line["total"]) for line in lines}


print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; {args.rounds} rounds x "
      f"{args.iterations} runs per query; before = {args.before}")
for label, _, _, size in sides:
    print(f"index {label}: {size / 1e6:.1f} MB")
results = {label: [] for label, _, _, _ in sides}
for r in range(args.rounds):
    for label, tree, copy, _ in (sides if r % 2 == 0 else sides[::-1]):
        results[label].append(run(tree, copy))
    print(f"round {r + 1} done")
os.remove(queries_file)

print("\n| class | query | total before | total now | before p50 | now p50 | now / before |")
print("|---|---|---|---|---|---|---|")
by_class = {}
for cls, q in QUERIES:
    a = statistics.median(x[q][0] for x in results["before"])
    b = statistics.median(x[q][0] for x in results["now"])
    ta, tb = results["before"][0][q][1], results["now"][0][q][1]
    by_class.setdefault(cls, []).append(b / a)
    print(f"| {cls} | `{q}` | {ta} | {tb} | {a:.0f} us | {b:.0f} us | {b / a:.2f}x |")
print("\n| class | median now / before |")
print("|---|---|")
for cls, ratios in by_class.items():
    print(f"| {cls} | {statistics.median(ratios):.2f}x |")
