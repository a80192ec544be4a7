#!/usr/bin/env python3
"""What conversations cost (issue 42), on the full corpus, one build, one
script:

- ingest: the corpus into a mail table without threads (the mail schema
  with its `threads` section removed: rows keyed by Message-ID, no thread
  entries, no copies folded) against the default mail table (threads kept
  in the write transaction, copies folded), rounds interleaved; messages
  read per second, the median of the rounds;
- search: the 48 peer queries plain against `collapse=thread`, on one
  server over the threaded store (reindexed), each query's p50 over --n
  requests after 20 untimed, the median of --rounds rounds; the ratio per
  query and the geometric mean;
- the thread view: `GET /tables/mail/threads/{id}` for the 20 largest
  threads a collapsed search for `gas` finds, p50.

Usage: python3 bench/threads.py [--rounds 3] [--n 50] [--search_only 1]
(--search_only 1: the search and thread view parts over the threaded store
an earlier run left.)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import WORK, Server, arguments, corpus, peer_queries

args = arguments(rounds=(int, 3), n=(int, 50), search_only=(int, 0))
mail = corpus(args.corpus)


def mail_schema_without_threads():
    """The mail schema an ingest makes, its `threads` section removed (read
    from an export's header)."""
    probe = os.path.join(WORK, "schema-probe")
    shutil.rmtree(probe, ignore_errors=True)
    os.makedirs(probe)
    sample = os.path.join(probe, "one.eml")
    with open(sample, "w") as f:
        f.write("Message-ID: <x@y>\nSubject: s\n\nbody\n")
    data = os.path.join(probe, "data")
    subprocess.run([args.bin, "--data", data, "ingest", sample, "--user", "probe"], check=True, capture_output=True)
    out = subprocess.run([args.bin, "--data", data, "export", "mail"], check=True, capture_output=True, text=True)
    schema = json.loads(out.stdout.splitlines()[0])["schema"]
    schema.pop("threads", None)
    return json.dumps(schema)


def ingest(data, schema_json):
    shutil.rmtree(data, ignore_errors=True)
    if schema_json:
        subprocess.run([args.bin, "--data", data, "create-table", "mail", "--schema", schema_json],
                       check=True, capture_output=True)
    t = time.perf_counter()
    out = subprocess.run([args.bin, "--data", data, "ingest", mail, "--nice", "0"], check=True, capture_output=True,
                         text=True)
    secs = time.perf_counter() - t
    seen = int(out.stdout.split(" messages:")[0].split(",")[-1].strip())
    return seen / secs, out.stdout.strip().splitlines()[0]


plain_schema = mail_schema_without_threads()
rates = {"without threads": [], "with threads": []}
summaries = {}
for r in range(0 if args.search_only else args.rounds):
    order = [("without threads", plain_schema), ("with threads", None)]
    if r % 2:
        order.reverse()
    for name, s in order:
        rate, summary = ingest(os.path.join(WORK, f"threads-{name.replace(' ', '-')}"), s)
        rates[name].append(rate)
        summaries[name] = summary
        print(f"round {r + 1}: {name} {rate:,.0f} messages/s", file=sys.stderr)
if not args.search_only:
    for name, values in rates.items():
        print(f"ingest {name}: {statistics.median(values):,.0f} messages/s (median of {args.rounds}); "
              f"{summaries[name]}")
    ratio = statistics.median(rates["with threads"]) / statistics.median(rates["without threads"])
    print(f"ingest with threads / without: {ratio:.3f}x the messages/s")

data = os.path.join(WORK, "threads-with-threads")
if not args.search_only:
    subprocess.run([args.bin, "--data", data, "reindex", "--full"], check=True, capture_output=True)
server = Server("threads", args.bin, data)
qs = peer_queries()
p50 = {(name, c): [] for name, _ in qs for c in (False, True)}
for r in range(args.rounds):
    for name, path in qs:
        for c in ((False, True) if r % 2 == 0 else (True, False)):
            p50[(name, c)].append(server.p50(path + ("&collapse=thread" if c else ""), args.n))
    print(f"round {r + 1} of the peer queries done", file=sys.stderr)
print(f"{'query':40} {'plain ms':>9} {'collapsed':>9} {'ratio':>6}")
ratios = []
for name, _ in qs:
    a, b = statistics.median(p50[(name, False)]), statistics.median(p50[(name, True)])
    ratios.append(b / a)
    print(f"{name[:40]:40} {a:9.3f} {b:9.3f} {b / a:6.2f}")
geo = statistics.geometric_mean(ratios)
print(f"collapse=thread / plain, 48 peer queries: geometric mean {geo:.3f}x, median {statistics.median(ratios):.3f}x, "
      f"max {max(ratios):.3f}x")

body = json.loads(server.get("/tables/mail/search?q=gas&collapse=thread&limit=1000&sort=newest"))
threads = sorted(body["hits"], key=lambda h: -h["thread"]["messages"])[:20]
views = []
for hit in threads:
    views.extend(server.times(f"/tables/mail/threads/{hit['thread']['id']}", args.n))
sizes = [h["thread"]["messages"] for h in threads]
print(f"thread view, the 20 largest threads of `gas` ({min(sizes)}-{max(sizes)} messages): "
      f"p50 {statistics.median(views):.3f} ms over {len(views)} requests")
server.stop()
