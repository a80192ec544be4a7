#!/usr/bin/env python3
"""Answers of two index builds of the same store, compared (issue 65,
eighth part): the full reindex that writes segments straight from the
keyword rows against the build before, which handed documents to
tantivy's index writer.

Usage: python3 bench/direct_answers.py --store STORE --before BIN [--after BIN]

STORE (an ingested store, left as it is) is copied twice; BIN reindexes one
copy (`reindex --full`, merged as it leaves it), the other is reindexed by
AFTER (default target/release/rowsearch), and AFTER serves both. The 48
peer queries, prefixes, fuzzy words, facets, conversations, date sorts,
suggestions and did_you_mean are asked of both; every response must be
equal but for its timing and its cursor (the two builds number documents
differently: ties go by row key, so no answer may depend on it, except a
tie longer than the 1,024 hits past the page ties are read to, as API.md
says: those are counted apart). Exit status 1 on a difference, which is
printed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, peer_queries  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def search(q, extra=""):
    return f"/tables/mail/search?q={urllib.parse.quote(q)}{extra}"


EXTRA = [
    search("enro*"), search("kamin*", "&limit=20"), search("meting~1"), search("califrnia~2", "&limit=20"),
    search("enron", "&limit=0&facets=user,from,month"), search("gas price", "&facets=user,from,month,year"),
    search("gas", "&collapse=thread&limit=20"), search("meeting", "&sort=newest&limit=30"),
    search("power", "&sort=oldest&limit=30"), search("enron", "&limit=50&offset=100"),
    search('"natural gas"~3'), search('"gas pri*"'), search("date:[2001-01-01T00:00:00Z TO 2001-02-01T00:00:00Z] gas"),
    search("zzzyzzy"), search("enrn mteting"), search("folder:inbox gas"),
    "/tables/mail/suggest?q=e", "/tables/mail/suggest?q=mee", "/tables/mail/suggest?q=gas%20pri",
    "/tables/mail/suggest?q=e&user=kaminski-v",
]

# A cursor names the index state it pages (another build, another cursor).
TIMINGS = {"took_ms", "next_cursor"}


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def long_tie(a, b):
    """Both pages are hits of one score, with the same total, longer than
    the 1,024 hits past the page that ties are read to."""
    hits = (a.get("hits") or []) + (b.get("hits") or [])
    scores = {h.get("score") for h in hits}
    return (a.get("total") == b.get("total") and len(scores) == 1 and None not in scores
            and a["total"] > 1024 + len(a["hits"]) and len(a["hits"]) == len(b["hits"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default=os.path.join(ROOT, "target/release/rowsearch"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="direct-answers-")
    try:
        stores = {}
        for name, binary in [("before", args.before), ("after", args.after)]:
            data = os.path.join(work, name)
            shutil.copytree(args.store, data)
            subprocess.run([binary, "--data", data, "reindex", "--full"], check=True,
                           stdout=subprocess.DEVNULL)
            stores[name] = data
        servers = {name: Server(name, args.after, data) for name, data in stores.items()}
        paths = [path for _, path in peer_queries()] + EXTRA
        differ = ties = 0
        for path in paths:
            a, b = (strip(json.loads(servers[n].get(path))) for n in ("before", "after"))
            if a == b:
                continue
            if long_tie(a, b):
                # API.md: a tie past 1,024 hits beyond the page is cut where
                # gathering stopped, by document address.
                ties += 1
                print(f"TIE PAST THE READ LIMIT {path}: total {a['total']}, every hit scored {a['hits'][0]['score']}")
                continue
            differ += 1
            print(f"DIFFERS {path}\n  before: {json.dumps(a)[:400]}\n  after:  {json.dumps(b)[:400]}")
        for s in servers.values():
            s.stop()
        print(f"{len(paths)} requests, {differ} differ, {ties} equal but for a tie past the read limit")
        sys.exit(1 if differ else 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
