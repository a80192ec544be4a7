#!/usr/bin/env python3
"""The search engine in process against SQLite FTS5 in process, per class.

Usage: python3 bench/engine_vs_fts5.py [--store DIR] [--rounds 3] [--iterations 500]

Both sides answer each query in their own process, no HTTP: rowsearch as a
Rust program embeds it (`search-api/benches/engine.rs`: `Rowsearch::open`,
`searcher().search`), SQLite FTS5 through Python's sqlite3 (bench/common.py's
table of the same messages, exported from the store). Each answer is the
top 10 (by relevance, or a mailbox's newest by date) with key, subject and
sender, and the exact number of matches (FTS5: a `count(*)` beside the top
10, timed with it). --rounds rounds, each running every query on both sides
(--iterations timed runs after 50 untimed): p50 per query per round; the
table gives the median of the rounds' p50s, per query and per class (the
classes' ratio: the median over its queries of FTS5 p50 / rowsearch p50).

--store (default: bench/common.py's corpus store, the full corpus ingested
and fully reindexed by this build, made when missing).
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

from common import HERE, arguments, corpus_store, fts5_db

args = arguments(store=(str, ""), rounds=(int, 3), iterations=(int, 500))
store = args.store or corpus_store(args)
root = os.path.join(HERE, "..")

# (class, [(query as rowsearch and FTS5 take it, mailbox or None)]); words
# picked by document frequency in the full corpus (FTS5's vocabulary):
# rare 15-40 documents, mid 800-2,500, common over 15,000.
CLASSES = [
    ("rare", [("academically", None), ("presidency", None), ("embarrassing", None), ("grabs", None)]),
    ("mid", [("player", None), ("remaining", None), ("charges", None), ("assistance", None)]),
    ("common", [("enron", None), ("please", None), ("message", None), ("know", None)]),
    ("and2", [("gas price", None), ("power plant", None), ("energy trading", None), ("credit risk", None)]),
    ("and3", [("gas price california", None), ("enron energy trading", None), ("power plant meeting", None),
              ("please call tomorrow", None)]),
    ("or2", [("gas OR power", None), ("contract OR deal", None), ("player OR charges", None),
             ("presidency OR wives", None)]),
    ("phrase", [('"natural gas"', None), ('"power plant"', None), ('"conference call"', None),
                ('"credit risk"', None), ('"press release"', None), ('"price cap"', None),
                ('"gas storage"', None), ('"board meeting"', None)]),
    ("newest", [("meeting", "kaminski-v"), ("gas", "dasovich-j"), ("contract", "cash-m"), ("energy", "lay-k")]),
]
queries = [(cls, q, u) for cls, qs in CLASSES for q, u in qs]
name = {(q, u): f"{q} user={u} newest" if u else q for _, q, u in queries}


def rowsearch_round():
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for _, q, u in queries:
            f.write(json.dumps({"name": name[(q, u)], "query": q, "user": u}) + "\n")
    env = dict(os.environ, ROWSEARCH_BENCH_STORE=store, ROWSEARCH_BENCH_QUERIES=f.name,
               ROWSEARCH_BENCH_ITERATIONS=str(args.iterations))
    out = subprocess.run(["cargo", "bench", "-q", "-p", "rowsearch", "--bench", "engine"], cwd=root, env=env,
                         check=True, capture_output=True, text=True).stdout
    os.remove(f.name)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {line["name"]: (line["p50_us"], line["total"]) for line in lines}


def fts5_round(db):
    result = {}
    for _, q, u in queries:
        if u:
            top = ("SELECT key, subject, sender FROM mail WHERE mail MATCH ? AND user = ? "
                   "ORDER BY date DESC LIMIT 10", (q, u))
            count = ("SELECT count(*) FROM mail WHERE mail MATCH ? AND user = ?", (q, u))
        else:
            top = ("SELECT key, subject, sender FROM mail WHERE mail MATCH ? ORDER BY rank LIMIT 10", (q,))
            count = ("SELECT count(*) FROM mail WHERE mail MATCH ?", (q,))
        for _ in range(50):
            db.execute(*top).fetchall()
            total = db.execute(*count).fetchone()[0]
        times = []
        for _ in range(args.iterations):
            t = time.perf_counter()
            db.execute(*top).fetchall()
            db.execute(*count).fetchone()
            times.append((time.perf_counter() - t) * 1e6)
        result[name[(q, u)]] = (statistics.median(times), total)
    return result


subprocess.run(["cargo", "build", "-q", "--release", "-p", "rowsearch", "--benches"], cwd=root, check=True)
db = fts5_db(args.bin, store)
print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; store {store}; "
      f"{args.rounds} rounds x {args.iterations} runs per query")
ours, theirs = [], []
for r in range(args.rounds):
    ours.append(rowsearch_round())
    theirs.append(fts5_round(db))
    print(f"round {r + 1}: " + ", ".join(f"{n} {ours[-1][n][0]:.0f}/{theirs[-1][n][0]:.0f} us"
                                         for n in list(name.values())[:3]) + ", ...")

print("\n| class | query | rowsearch total | FTS5 total | rowsearch p50 | FTS5 p50 | FTS5 / rowsearch |")
print("|---|---|---|---|---|---|---|")
by_class = {}
for cls, q, u in queries:
    n = name[(q, u)]
    a = statistics.median(o[n][0] for o in ours)
    b = statistics.median(t[n][0] for t in theirs)
    by_class.setdefault(cls, []).append(b / a)
    print(f"| {cls} | `{n}` | {ours[0][n][1]} | {theirs[0][n][1]} | {a:.0f} us | {b:.0f} us | {b / a:.1f}x |")
print("\n| class | median FTS5 / rowsearch | smallest |")
print("|---|---|---|")
for cls, ratios in by_class.items():
    print(f"| {cls} | {statistics.median(ratios):.1f}x | {min(ratios):.1f}x |")
