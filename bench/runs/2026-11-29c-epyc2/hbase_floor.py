"""The floor of a search over HBase on this machine: one batched get of a
page's 10 rows, the 2 columns a page shows, through HBase's Thrift
gateway (happybase, one connection), p50 of 2,000 after 200 untimed;
and the same for a scan of an empty time range of rowsearch_feed (what
the feed read is). Usage: target/happybase-venv/bin/python hbase_floor.py THRIFT1_HOST:PORT"""
import sys, time, statistics, happybase
host, port = sys.argv[1].rsplit(":", 1)
c = happybase.Connection(host, int(port))
t = c.table("mail")
keys = [k for k, _ in t.scan(limit=5000, columns=[b"m:subject"])][::500][:10]
def timed(f, n=2000):
    for _ in range(200):
        f()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)
rows = timed(lambda: t.rows(keys, columns=[b"m:subject", b"m:from"]))
feed = c.table("rowsearch_feed")
now = int(time.time() * 1000)
scan = timed(lambda: list(feed.scan(timestamp=1, limit=10)))
print(f"10 rows, 2 columns (getMultiple): p50 {rows:.3f} ms; an empty scan of rowsearch_feed: p50 {scan:.3f} ms")
