#!/usr/bin/env python3
"""Issue 23's features on the full corpus, against SQLite FTS5 where it has
the feature: prefix and fuzzy queries, facets, suggestions, did_you_mean.

Usage: python3 bench/search_features.py [--data DIR] [--n 300]

1. DIR (default /tmp/rowsearch-bench/features): the full corpus ingested
   and fully reindexed by this build, made when missing.
2. The same messages exported once (`rowsearch scan mail`) into an FTS5
   table (subject, body, sender, recipients indexed; user, folder, month
   unindexed) at /tmp/rowsearch-bench/features-fts5.db, and an fts5vocab
   table over it.
3. rowsearch over HTTP (one keep-alive connection, idle server, the index
   current): --n timed requests per query after 20 untimed; FTS5 in this
   process (no HTTP), the same count. p50 and p99 in ms.

FTS5 equivalents: a prefix query is `MATCH 'enro*'` (top 10 by rank and
the count, as rowsearch answers both); a facet is a GROUP BY over the
matches (the sender facet groups whole From values, where rowsearch counts
addresses); suggestions read fts5vocab (terms by documents). FTS5 has no
fuzzy terms and no did_you_mean. Build first: cargo build --release -p
rowsearch.
"""
import datetime
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.parse

from common import WORK, arguments, corpus, pct

args = arguments(n=(int, 300), data=(str, os.path.join(WORK, "features")))


def build():
    if os.path.isdir(args.data):
        return
    mail = corpus(args.corpus)
    subprocess.run([args.bin, "--data", args.data, "ingest", mail], check=True, capture_output=True)
    subprocess.run([args.bin, "--data", args.data, "reindex", "--full"], check=True, capture_output=True)


def month_of(date):
    date = date.strip()
    if date.isdigit():
        t = datetime.datetime.fromtimestamp(int(date) / 1000, datetime.timezone.utc)
    else:
        try:
            t = datetime.datetime.fromisoformat(date.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
        except ValueError:
            return ""
    return t.strftime("%Y-%m")


def fts5():
    db = os.path.join(WORK, "features-fts5.db")
    if os.path.exists(db):
        return sqlite3.connect(db)
    con = sqlite3.connect(db + ".tmp")
    con.execute("create virtual table mail using fts5(user unindexed, key unindexed, subject, body, sender,"
                " recipients, folder unindexed, month unindexed)")
    scan = subprocess.Popen([args.bin, "--data", args.data, "scan", "mail"], stdout=subprocess.PIPE, text=True)
    batch = []
    for line in scan.stdout:
        row = json.loads(line)
        c = {x["column"]: x["value"] for x in row["cells"]}
        batch.append((row["key_fields"]["user"], row["key"], c.get("m:subject", ""), c.get("b:text", ""),
                      c.get("m:from", ""), c.get("m:to", ""), c.get("m:folder", ""), month_of(c.get("m:date", ""))))
        if len(batch) == 4096:
            with con:
                con.executemany("insert into mail values (?, ?, ?, ?, ?, ?, ?, ?)", batch)
            batch = []
    with con:
        con.executemany("insert into mail values (?, ?, ?, ?, ?, ?, ?, ?)", batch)
        con.execute("create virtual table vocab using fts5vocab(mail, row)")
    scan.wait()
    con.close()
    os.rename(db + ".tmp", db)
    return sqlite3.connect(db)


def timed(run):
    times = []
    for i in range(args.n + 20):
        t = time.perf_counter()
        out = run()
        if i >= 20:
            times.append((time.perf_counter() - t) * 1e3)
    return pct(times, 0.5), pct(times, 0.99), out


build()
con = fts5()
server = subprocess.Popen([args.bin, "--data", args.data, "serve", "--listen", "127.0.0.1:0", "--refresh-ms", "0"],
                          stdout=subprocess.PIPE, text=True)
host, port = server.stdout.readline().strip().removeprefix("listening on http://").split(":")
conn = http.client.HTTPConnection(host, int(port))


def get(path):
    global conn
    try:
        conn.request("GET", path)
        r = conn.getresponse()
    except (http.client.RemoteDisconnected, ConnectionError):
        # The server closes a connection idle past its keep-alive time
        # (while FTS5 is timed): open another.
        conn = http.client.HTTPConnection(host, int(port))
        conn.request("GET", path)
        r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit(f"{path}: {r.status} {body[:300]}")
    return body


def search(q, extra=""):
    return f"/tables/mail/search?q={urllib.parse.quote(q)}&columns=m:subject,m:from{extra}"


def sql(*statements):
    def run():
        return [con.execute(s, p).fetchall() for s, p in statements]
    return run


top10 = "select key from mail where mail match ? order by rank limit 10"
count = "select count(*) from mail where mail match ?"
group = "select {0}, count(*) from mail where mail match ? group by {0} order by 2 desc limit 10"
suggest = "select term, doc from vocab where term >= ? and term < ? order by doc desc limit 5"

CASES = [
    # (name, rowsearch path, FTS5 statements or None)
    ("enron (a term, for scale)", search("enron"), sql((top10, ("enron",)), (count, ("enron",)))),
    ("enro*", search("enro*"), sql((top10, ("enro*",)), (count, ("enro*",)))),
    ("subject:pri*", search("subject:pri*"), sql((top10, ("subject:pri*",)), (count, ("subject:pri*",)))),
    ("\"natural ga\"*", search("\"natural ga\"*"),
     sql((top10, ("\"natural\" + \"ga\"*",)), (count, ("\"natural\" + \"ga\"*",)))),
    ("enrn~1", search("enrn~1"), None),
    ("meetign~1", search("meetign~1"), None),
    ("body:powr~2", search("body:powr~2"), None),
    ("meetign typos=auto", search("meetign", "&typos=auto"), None),
    ("facets user (enron, limit 0)", search("enron", "&limit=0&facets=user"),
     sql((count, ("enron",)), (group.format("user"), ("enron",)))),
    ("facets from (enron, limit 0)", search("enron", "&limit=0&facets=from"),
     sql((count, ("enron",)), (group.format("sender"), ("enron",)))),
    ("facets month (enron, limit 0)", search("enron", "&limit=0&facets=month"),
     sql((count, ("enron",)), (group.format("month"), ("enron",)))),
    ("facets user,from,month (enron, limit 0)", search("enron", "&limit=0&facets=user,from,month"),
     sql((count, ("enron",)), (group.format("user"), ("enron",)), (group.format("sender"), ("enron",)),
         (group.format("month"), ("enron",)))),
    ("facets user,from,month (enron, limit 10)", search("enron", "&facets=user,from,month"),
     sql((top10, ("enron",)), (count, ("enron",)), (group.format("user"), ("enron",)),
         (group.format("sender"), ("enron",)), (group.format("month"), ("enron",)))),
    ("did_you_mean (enrn, limit 0)", search("enrn", "&limit=0"), None),
]
for prefix in ["e", "en", "enr", "mee", "kaminski"]:
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    CASES.append((f"suggest {prefix}", f"/tables/mail/suggest?q={prefix}", sql((suggest, (prefix, end)))))
CASES.append(("suggest gas pri", "/tables/mail/suggest?q=gas%20pri", sql((suggest, ("pri", "prj")))))
CASES.append(("suggest e user=kaminski-v", "/tables/mail/suggest?q=e&user=kaminski-v", None))
CASES.append(("suggest mee user=kaminski-v", "/tables/mail/suggest?q=mee&user=kaminski-v", None))

print(f"{'query':44} {'rowsearch p50 / p99':>22} {'FTS5 p50 / p99':>22} {'ratio':>7}")
for name, path, fts in CASES:
    get(path)
    r50, r99, body = timed(lambda: get(path))
    if fts:
        f50, f99, _ = timed(fts)
        ratio = f"{f50 / r50:.1f}x"
        fts_text = f"{f50:8.2f} / {f99:8.2f} ms"
    else:
        fts_text, ratio = "(no such feature)", ""
    print(f"{name:44} {r50:8.2f} / {r99:8.2f} ms {fts_text:>22} {ratio:>7}   {body[:70].decode(errors='replace')}")
server.terminate()
server.wait()
