#!/usr/bin/env python3
"""YCSB, the yardstick of the stores in this space, against rowsearch's
Thrift2 gateway and a real HBase standalone on the same machine, through
YCSB's own `hbase2` binding (HBaseClient2) and HBase's own Java client.

Usage: python3 bench/ycsb.py [--records 20000] [--ops 20000] [--threads 4]
                             [--phases load,a,b,c,f,d,e] [--rounds 1]
                             [--targets hbase,hbase-gateway,rowsearch,rowsearch-process]
                             [--ycsb-src DIR] [--out DIR]

- YCSB is compiled from its source (its HBase bindings are not on Maven
  Central): the checkout at --ycsb-src, else a clone of
  github.com/brianfrankcooper/YCSB at the commit pinned below, in
  target/ycsb/src. Its core and hbase2 binding are compiled with javac
  against bench/ycsb/pom.xml's class path (YCSB core's dependencies and
  HBase 2.6.1's client with hbase-thrift, from Maven Central).
- Targets: `hbase` is HBase standalone through its native client
  (hbase/hbase.sh, ZooKeeper); `hbase-gateway` the same HBase through its
  own Thrift2 gateway and `ThriftConnection`; `rowsearch` is
  `serve --thrift2` (release build, a fresh --data) through
  `ThriftConnection`, as issue 60 asks (`clientbuffering=false`);
  `rowsearch-process` the same with `--durability process` (a write on
  disk within a second, not before its answer: what HBase's default
  SYNC_WAL promises, and more than HBase standalone on a local file system
  does).
- Phases in turn, every target one after the other for each phase:
  `load` (the table dropped and created first), then workloads a, b, c, f,
  d, e in YCSB's recommended order (d and e insert past the loaded keys).
- Printed per phase and target: ops/s, and per operation p50 and p99 (us)
  and the operations that did not return OK. Each run's whole YCSB output
  is kept under --out (default bench/runs/DATE-ycsb).
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(REPO, "target", "ycsb")
YCSB_GIT = "https://github.com/brianfrankcooper/YCSB"
YCSB_COMMIT = "d9faaac8"  # master, 2024 (0.18.0-SNAPSHOT)

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--records", type=int, default=20000)
parser.add_argument("--ops", type=int, default=20000)
parser.add_argument("--threads", type=int, default=4)
parser.add_argument("--phases", default="load,a,b,c,f,d,e")
parser.add_argument("--rounds", type=int, default=1)
parser.add_argument("--targets", default="hbase,hbase-gateway,rowsearch")
parser.add_argument("--ycsb-src", default=None)
parser.add_argument("--out", default=None)
args = parser.parse_args()


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def ycsb_classes():
    src = args.ycsb_src or os.path.join(WORK, "src")
    if not os.path.isdir(os.path.join(src, "hbase2")):
        print(f"== cloning YCSB ({YCSB_COMMIT}) into {src}", flush=True)
        run(["git", "clone", "-q", YCSB_GIT, src])
        run(["git", "-C", src, "checkout", "-q", YCSB_COMMIT])
    cp_file = os.path.join(WORK, "classpath.txt")
    os.makedirs(WORK, exist_ok=True)
    run(["mvn", "-B", "-q", "-f", os.path.join(REPO, "bench", "ycsb", "pom.xml"), "dependency:build-classpath",
         f"-Dmdep.outputFile={cp_file}"])
    classpath = open(cp_file).read().strip()
    classes = os.path.join(WORK, "classes")
    shutil.rmtree(classes, ignore_errors=True)
    os.makedirs(classes)
    sources = []
    for module in ("core", "hbase2"):
        for root, _, files in os.walk(os.path.join(src, module, "src", "main", "java")):
            sources += [os.path.join(root, f) for f in files if f.endswith(".java")]
    run(["javac", "-nowarn", "-d", classes, "-cp", classpath] + sources)
    props = open(os.path.join(src, "core", "src", "main", "resources", "project.properties")).read()
    with open(os.path.join(classes, "project.properties"), "w") as f:
        f.write(props.replace("${project.version}", "0.18.0-SNAPSHOT"))
    return src, f"{classes}:{classpath}"


def site(name, props):
    conf = os.path.join(WORK, f"conf-{name}")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "hbase-site.xml"), "w") as f:
        f.write("<?xml version=\"1.0\"?>\n<configuration>\n")
        for k, v in props.items():
            f.write(f"  <property><name>{k}</name><value>{v}</value></property>\n")
        f.write("</configuration>\n")
    return conf


def thrift_site(name, address):
    host, port = address.rsplit(":", 1)
    return site(name, {"hbase.client.connection.impl": "org.apache.hadoop.hbase.thrift2.client.ThriftConnection",
                       "hbase.thrift.server.name": host, "hbase.thrift.server.port": port})


def start_hbase():
    out = run(["bash", os.path.join(REPO, "hbase", "hbase.sh"), "start", os.path.join(WORK, "hbase")],
              env={**os.environ, "HBASE_HEAP": os.environ.get("HBASE_HEAP", "2g")}).stdout
    return dict(line.split("=", 1) for line in out.split() if "=" in line)


def start_rowsearch(durability):
    run(["cargo", "build", "-q", "--release", "-p", "rowsearch"], cwd=REPO)
    data = os.path.join(WORK, f"rowsearch-data-{durability}")
    shutil.rmtree(data, ignore_errors=True)
    proc = subprocess.Popen([os.path.join(REPO, "target", "release", "rowsearch"), "serve", "--data", data,
                             "--create", "--listen", "127.0.0.1:0", "--thrift2", "127.0.0.1:0",
                             "--durability", durability],
                            stdout=subprocess.PIPE, text=True)
    http = thrift2 = None
    while not (http and thrift2):
        line = proc.stdout.readline()
        if not line:
            sys.exit("rowsearch serve ended before listening")
        if line.startswith("listening on "):
            http = line.split()[-1]
        if line.startswith("thrift2 listening on "):
            thrift2 = line.split()[-1]
    return proc, http, thrift2


def recreate(thrift2):
    """usertable (family `family`) dropped and made again, through the
    Thrift2 gateway at `thrift2` (rowsearch's CLI as an HBase client)."""
    rs = os.path.join(REPO, "target", "release", "rowsearch")
    subprocess.run([rs, "drop-table", "usertable", "--hbase", thrift2], capture_output=True)
    run([rs, "create-table", "usertable", "--hbase", thrift2, "--schema", '{"families":[{"name":"family"}]}'])


OP = re.compile(r"^\[(\w[\w-]*)\], (.+?), (.+)$")


def ycsb(src, classpath, conf, phase, out_file):
    workload = os.path.join(src, "workloads", "workloada" if phase == "load" else f"workload{phase}")
    cmd = ["java", "-cp", f"{conf}:{classpath}", "site.ycsb.Client", "-load" if phase == "load" else "-t",
           "-db", "site.ycsb.db.hbase2.HBaseClient2", "-P", workload, "-p", "table=usertable",
           "-p", "columnfamily=family", "-p", f"recordcount={args.records}", "-p", f"operationcount={args.ops}",
           "-p", "clientbuffering=false", "-threads", str(args.threads)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    with open(out_file, "w") as f:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        shown = " ".join(cmd).replace(classpath, "<target/ycsb/classes>:<bench/ycsb/pom.xml class path>")
        f.write(shown + "\n" + done.stdout + "\n--- stderr (last lines)\n" + tail + "\n")
    figures = {}
    for line in done.stdout.splitlines():
        m = OP.match(line)
        if m:
            figures.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return done.returncode, figures


def summary(code, figures):
    if code != 0 or "OVERALL" not in figures:
        return "FAILED (see the run's file)", {}
    ops = float(figures["OVERALL"]["Throughput(ops/sec)"])
    per = {}
    for op, f in figures.items():
        if op in ("OVERALL", "CLEANUP") or op.startswith("TOTAL") or "Operations" not in f:
            continue
        failed = sum(int(v) for k, v in f.items() if k.startswith("Return=") and k != "Return=OK")
        per[op] = (int(f.get("50thPercentileLatency(us)", 0)), int(f.get("99thPercentileLatency(us)", 0)),
                   failed, int(f["Operations"]))
    return ops, per


def main():
    stamp = datetime.date.today().isoformat()
    out = args.out or os.path.join(REPO, "bench", "runs", f"{stamp}-ycsb")
    os.makedirs(out, exist_ok=True)
    src, classpath = ycsb_classes()
    targets = args.targets.split(",")
    hbase = start_hbase() if any(t.startswith("hbase") for t in targets) else None
    # rowsearch's targets: `rowsearch` syncs every write (the default),
    # `rowsearch-process` runs `--durability process` (HBase's SYNC_WAL
    # promise: survives the process, synced within a second).
    servers = {t: start_rowsearch("process" if t == "rowsearch-process" else "sync")
               for t in targets if t.startswith("rowsearch")}
    confs = {}
    gateways = {}
    if hbase:
        zk_host, zk_port = hbase["zookeeper"].rsplit(":", 1)
        confs["hbase"] = site("hbase", {"hbase.zookeeper.quorum": zk_host,
                                        "hbase.zookeeper.property.clientPort": zk_port})
        confs["hbase-gateway"] = thrift_site("hbase-gateway", hbase["thrift2"])
        gateways["hbase"] = gateways["hbase-gateway"] = hbase["thrift2"]
    for target, (_, _, rs_thrift2) in servers.items():
        confs[target] = thrift_site(target, rs_thrift2)
        gateways[target] = rs_thrift2
    print(f"YCSB {YCSB_COMMIT} hbase2 binding; {args.records} records, {args.ops} operations, "
          f"{args.threads} threads, clientbuffering=false; {os.cpu_count()} cores; results in {out}")
    results = {}
    try:
        for rnd in range(args.rounds):
            loaded = set()
            for phase in args.phases.split(","):
                for target in targets:
                    # HBase's two clients share one table: loaded once.
                    table_of = "hbase" if target.startswith("hbase") else target
                    if phase == "load":
                        if table_of in loaded:
                            continue
                        recreate(gateways[target])
                        loaded.add(table_of)
                    started = time.time()
                    code, figures = ycsb(src, classpath, confs[target], phase,
                                         os.path.join(out, f"{target}-{phase}-r{rnd}.txt"))
                    ops, per = summary(code, figures)
                    results.setdefault((phase, target), []).append((ops, per))
                    ops_text = ops if isinstance(ops, str) else f"{ops:8.0f} ops/s"
                    detail = "  ".join(f"{op} p50 {p50} p99 {p99}" + (f" FAILED {bad}/{n}" if bad else "")
                                       for op, (p50, p99, bad, n) in sorted(per.items()))
                    print(f"round {rnd} {phase:>4} {target:<14} {ops_text}  {detail}  ({time.time() - started:.0f} s)",
                          flush=True)
    finally:
        for proc, _, _ in servers.values():
            proc.terminate()
            proc.wait()
    print("\nMedians over rounds: phase, target, ops/s, and against hbase (native client)")
    for phase in args.phases.split(","):
        base = None
        for target in targets:
            rows = [r for r in results.get((phase, target), []) if not isinstance(r[0], str)]
            if not rows:
                continue
            # The median round (the lower middle of an even count), with
            # its own latencies.
            ops, p = sorted(rows, key=lambda r: r[0])[(len(rows) - 1) // 2]
            if target == "hbase":
                base = ops
            ratio = f"{ops / base:5.2f}x" if base else "     "
            detail = "  ".join(f"{op} p50 {v[0]} p99 {v[1]}" for op, v in sorted(p.items()))
            print(f"{phase:>4} {target:<14} {ops:8.0f} ops/s {ratio}  {detail}")


if __name__ == "__main__":
    main()
