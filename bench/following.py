#!/usr/bin/env python3
"""Following HBase under a steady write load of other clients (issue 63):
HBase's replication (the peer `rowsearch`) against the time-range tailer,
with 1 table and with 50.

For each way of following, a fresh HBase (hbase/hbase.sh; the tailer's
with HBASE_REPLICATION=0, so no peer) and `serve --hbase --refresh-ms R`
over `--tables` rowsearch tables (one of them written, the rest idle: what
a deployment with many tables looks like). Other clients, --writers
happybase connections to HBase's Thrift gateway, put --rate rows a second
in all into the written table, steadily, for --seconds; meanwhile a prober
puts a row with a word of its own every 250 ms and times how long until an
eventual search (the index as the refresher keeps it, no overlay) finds
it: the lag, p50 and p99. Over the same window, the CPU seconds the
rowsearch server and HBase (master and region server's JVM; its Thrift2
gateway, which rowsearch reads through) spent: the cost of following.

Usage (happybase from tests/thrift/happybase_suite.sh's virtualenv):
  target/happybase-venv/bin/python bench/following.py [--bin target/release/rowsearch]
      [--seconds 60] [--rate 50] [--writers 2] [--tables 1,50] [--refresh-ms 1000]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import happybase

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORDS = ("gas power price market deal contract energy meeting report trading credit risk storage "
         "plant natural conference call board press release").split()
SCHEMA = {"families": [{"name": "f"}],
          "search": {"fields": [{"name": "body", "column": "f:body", "type": "text"}]}}


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]


class Hbase:
    def __init__(self, directory, replication):
        self.dir = directory
        shutil.rmtree(directory, ignore_errors=True)
        env = dict(os.environ, HBASE_WATCH_PID=str(os.getpid()), HBASE_REPLICATION="1" if replication else "0",
                   HBASE_HEAP="2g", HBASE_THRIFT_HEAP="512m")
        out = subprocess.run(["bash", os.path.join(REPO, "hbase/hbase.sh"), "start", directory], env=env,
                             check=True, capture_output=True, text=True).stdout
        self.addresses = dict(line.split("=", 1) for line in out.split())

    def pids(self):
        return {name: int(open(os.path.join(self.dir, f"{name}.pid")).read()) for name in ("master", "thrift2")}

    def stop(self):
        subprocess.run(["bash", os.path.join(REPO, "hbase/hbase.sh"), "stop", self.dir], capture_output=True)


def rowsearch(args, hbase, data, *argv):
    out = subprocess.run([args.bin, "--data", data, "--hbase", hbase.addresses["thrift2"], *argv],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"rowsearch {argv}: {out.stderr[-2000:]}")


def writer(thrift, table, rate, stop, written):
    host, port = thrift.split(":")
    t = happybase.Connection(host, int(port)).table(table)
    rng = random.Random()
    period, next_at, n = 1.0 / rate, time.time(), 0
    while not stop.is_set():
        body = " ".join(rng.choice(WORDS) for _ in range(12))
        t.put(f"w{rng.getrandbits(48):012x}".encode(), {b"f:body": body.encode()})
        n += 1
        next_at += period
        time.sleep(max(0.0, next_at - time.time()))
    written.append(n)


def measure(args, replication, tables):
    name = "replication" if replication else "tailer"
    work = os.path.join(args.work, f"{name}-{tables}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    hbase = Hbase(os.path.join(work, "hbase"), replication)
    try:
        data = os.path.join(work, "data")
        for i in range(tables):
            rowsearch(args, hbase, data, "create-table", f"t{i:02d}", "--schema", json.dumps(SCHEMA))
        for i in range(tables):
            rowsearch(args, hbase, data, "reindex", "--table", f"t{i:02d}", "--full")
        server = subprocess.Popen([args.bin, "--data", data, "--hbase", hbase.addresses["thrift2"], "serve",
                                   "--listen", "127.0.0.1:0", "--refresh-ms", str(args.refresh_ms)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = server.stdout.readline().strip().removeprefix("listening on ")
        # Settled: the way it follows known (replication: probes came back).
        deadline = time.time() + 60
        while time.time() < deadline:
            with urllib.request.urlopen(f"{url}/tables/t00") as r:
                by = json.loads(r.read())["guarantee"].get("following", {}).get("by")
            if by == ("replication" if replication else "tailer"):
                break
            time.sleep(0.5)
        else:
            sys.exit(f"{name}: the server follows by {by}")
        time.sleep(5)
        host, port = hbase.addresses["thrift"].split(":")
        probe = happybase.Connection(host, int(port)).table("t00")
        stop, written = threading.Event(), []
        threads = [threading.Thread(target=writer, args=(hbase.addresses["thrift"], "t00",
                                                        args.rate / args.writers, stop, written))
                   for _ in range(args.writers)]
        pids = dict(hbase.pids(), rowsearch=server.pid)
        cpu0 = {k: cpu_seconds(p) for k, p in pids.items()}
        started = time.time()
        for t in threads:
            t.start()
        lags, i = [], 0
        while time.time() - started < args.seconds:
            word = f"probe{os.getpid()}x{i}"
            i += 1
            probe.put(f"p{i:06d}".encode(), {b"f:body": f"{word} {random.choice(WORDS)}".encode()})
            put_at = time.time()
            while True:
                q = urllib.parse.quote(word)
                with urllib.request.urlopen(f"{url}/tables/t00/search?q={q}&consistency=eventual&limit=1") as r:
                    if json.loads(r.read())["total"] == 1:
                        lags.append((time.time() - put_at) * 1000)
                        break
                if time.time() - put_at > 30:
                    sys.exit(f"{name}: {word} not found after 30 s")
                time.sleep(0.01)
            time.sleep(max(0.0, 0.25 - (time.time() - put_at)))
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.time() - started
        cpu = {k: cpu_seconds(p) - cpu0[k] for k, p in pids.items()}
        server.terminate()
        server.wait()
        return {"way": name, "tables": tables, "rate": sum(written) / elapsed, "probes": len(lags),
                "lag_p50_ms": pct(lags, 0.5), "lag_p99_ms": pct(lags, 0.99),
                "cpu_s_per_min": {k: v * 60 / elapsed for k, v in cpu.items()}}
    finally:
        hbase.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "target/release/rowsearch"))
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--rate", type=float, default=50.0, help="other clients' rows a second, in all")
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--tables", default="1,50")
    ap.add_argument("--refresh-ms", type=int, default=1000)
    ap.add_argument("--ways", default="replication,tailer")
    ap.add_argument("--work", default="/tmp/rowsearch-bench/following")
    args = ap.parse_args()
    results = []
    for tables in [int(t) for t in args.tables.split(",")]:
        for way in args.ways.split(","):
            r = measure(args, way == "replication", tables)
            print(json.dumps(r), flush=True)
            results.append(r)
    print()
    print(f"| way | tables | rows/s written | lag p50 ms | lag p99 ms | rowsearch CPU-s/min | "
          f"HBase CPU-s/min | Thrift2 gateway CPU-s/min |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        c = r["cpu_s_per_min"]
        print(f"| {r['way']} | {r['tables']} | {r['rate']:.0f} | {r['lag_p50_ms']:.0f} | {r['lag_p99_ms']:.0f} | "
              f"{c['rowsearch']:.1f} | {c['master']:.1f} | {c['thrift2']:.1f} |")


if __name__ == "__main__":
    main()
