#!/usr/bin/env python3
"""What the requests of issue 36 cost the server, this build against an
earlier one (default 82a1b56, the build the issue measured), on the full
corpus, in one script.

Usage: python3 bench/attacks.py [--before-rev REV] [--only NAME,...]
                                [--unread 200] [--searches 10] [--uploads 24]
                                [--puts 920000]

Each attack runs against a fresh server (default options, no background
refresh) over the full corpus's store (bench/confined_search.py's, made by
this build), first the earlier build's, then this one's. Printed per attack
and build: peak memory (VmHWM), memory when it settled (VmRSS), CPU-seconds
the server used, and what the clients got.

- unread: --unread HTTP/1.1 clients ask for a large search answer
  (`q=enron&limit=1000`, default documents) with a 4 KiB receive buffer and
  never read; measured once the server is idle (no CPU for 1 s).
- leave: --searches searches of 1,638 fuzzy words (`ab~2`) whose clients
  leave after 1 s; CPU-seconds from the first until the server is idle, and
  /health probes (every 100 ms, 1 s timeout) that failed meanwhile. This
  build refuses the search at its default budget (400); a third run gives
  this build `--max-expansions 100000 --max-clauses 100000` so the search
  runs and the client's leaving is what stops it.
- budget: the issue's expensive searches and the most expensive ones the
  default budgets let in, one after another: status, seconds, VmHWM.
- uploads: --uploads concurrent 64 MiB mutate bodies.
- mutate: one mutate of --puts small puts (75 MB for 920,000).
HTTP/2 clients with a shut window are measured by tests/tests/http/answers.rs
(no HTTP/2 client in Python's standard library).
"""
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from common import WORK, arguments, build_at, corpus_store

args = arguments(before_rev=(str, "82a1b56"), only=(str, "unread,leave,budget,uploads,mutate"), unread=(int, 200),
                 searches=(int, 10), uploads=(int, 24), puts=(int, 920000))




class Proc:
    """A server on 127.0.0.1:0 and its /proc figures."""

    def __init__(self, binary, data, serve_args=()):
        self.p = subprocess.Popen([binary, "--data", data, "serve", "--listen", "127.0.0.1:0", "--refresh-ms", "0",
                                   *serve_args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addr = self.p.stdout.readline().strip().removeprefix("listening on http://")
        self.host, port = self.addr.split(":")
        self.port = int(port)

    def status(self, line):
        for l in open(f"/proc/{self.p.pid}/status"):
            if l.startswith(line + ":"):
                return int(l.split()[1]) / 1024
        return 0.0

    def cpu(self):
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def until_idle(self, quiet=1.0, limit=600):
        """Waits until the server used no CPU for `quiet` seconds."""
        started = time.time()
        last = self.cpu()
        while time.time() - started < limit:
            time.sleep(quiet)
            now = self.cpu()
            if now - last < 0.01:
                return
            last = now

    def url(self, path):
        return f"http://{self.addr}{path}"

    def stop(self):
        self.p.terminate()
        self.p.wait()


def get(url, timeout=600, body=None):
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()


def unread(server):
    path = "/tables/mail/search?q=enron&limit=1000"
    status, body = get(server.url(path))
    size = len(body)
    held = []
    for _ in range(args.unread):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((server.host, server.port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {server.addr}\r\n\r\n".encode())
        held.append(s)
    server.until_idle()
    figures = f"{args.unread} clients never reading a {size / 1e6:.1f} MB answer"
    out = dict(what=figures, rss=server.status("VmRSS"), hwm=server.status("VmHWM"), cpu=server.cpu())
    statuses = {}
    for s in held:
        s.settimeout(0.2)
        try:
            head = s.recv(12).decode(errors="replace")
        except OSError:
            head = "none"
        statuses[head[9:12] or "none"] = statuses.get(head[9:12] or "none", 0) + 1
        s.close()
    out["got"] = statuses
    return out


def leave(server):
    q = urllib.parse.quote(" ".join(["ab~2"] * 1638))
    path = f"/tables/mail/search?limit=1&q={q}"
    cpu0 = server.cpu()
    failed = [0, 0]
    stop = threading.Event()

    took = []

    def probe():
        while not stop.is_set():
            t = time.perf_counter()
            status, _ = get(server.url("/health"), timeout=1)
            took.append((time.perf_counter() - t) * 1e3)
            failed[0] += status != 200
            failed[1] += 1
            time.sleep(0.1)

    prober = threading.Thread(target=probe)
    prober.start()
    answers = {}
    clients = []
    for _ in range(args.searches):
        s = socket.socket()
        s.connect((server.host, server.port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {server.addr}\r\n\r\n".encode())
        clients.append(s)
    time.sleep(1)
    for s in clients:
        s.settimeout(0.01)
        try:
            head = s.recv(12).decode(errors="replace")[9:12] or "none"
        except OSError:
            head = "none yet"
        answers[head] = answers.get(head, 0) + 1
        s.close()
    started = time.time()
    server.until_idle()
    stop.set()
    prober.join()
    return dict(what=f"{args.searches} searches of 1,638 fuzzy words, clients gone after 1 s",
                rss=server.status("VmRSS"), hwm=server.status("VmHWM"), cpu=server.cpu() - cpu0,
                got=answers, health_failed=f"{failed[0]}/{failed[1]}",
                health_ms_max=round(max(took), 1), health_ms_p50=round(sorted(took)[len(took) // 2], 1),
                idle_after_s=round(time.time() - started - 1.0, 1))


def budget(server):
    """The issue's expensive searches, and the most expensive ones within
    the default budgets: status, seconds, and VmHWM after each."""
    queries = [
        ("800 phrase prefixes", " ".join(['"the co"*'] * 800)),
        ("1,638 fuzzy words", " ".join(["ab~2"] * 1638)),
        ("2,048 prefixes", " ".join(["th*"] * 2048)),
        ("8 phrase prefixes (budget 32)", " ".join(['"the co"*'] * 8)),
        ("32 fuzzy words (budget)", " ".join(["ab~2"] * 32)),
        ("32 prefixes (budget)", " ".join(["th*"] * 32)),
        ("32 typo words, typos=auto", " ".join(["meetign", "enrgy", "contrct", "pwer"] * 8)),
        ("date:[* TO *]", "date:[* TO *]"),
    ]
    out = {}
    for name, q in queries:
        extra = "&typos=auto" if "typos" in name else ""
        t = time.perf_counter()
        status, body = get(server.url(f"/tables/mail/search?limit=10&q={urllib.parse.quote(q)}{extra}"))
        out[name] = dict(status=status, s=round(time.perf_counter() - t, 3), hwm=round(server.status("VmHWM")))
    return dict(what="the searches alone, one after another", queries=out)


def uploads(server):
    subprocess.run([server_bin, "--data", server_data, "create-table", "attack_up", "--schema",
                    '{"families":[{"name":"f"}]}'], capture_output=True)
    row = {"put": {"key": "k", "cells": [{"column": "f:q", "value": "x" * 65000}]}}
    one = json.dumps(row)
    n = (64 << 20) // (len(one) + 1) - 1
    body = ('{"mutations":[' + ",".join([one] * n) + "]}").encode()
    got = {}

    def send():
        status, _ = get(server.url("/tables/attack_up/mutate"), body=body)
        got[status] = got.get(status, 0) + 1

    threads = [threading.Thread(target=send) for _ in range(args.uploads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return dict(what=f"{args.uploads} concurrent {len(body) / 2**20:.0f} MiB mutate bodies",
                rss=server.status("VmRSS"), hwm=server.status("VmHWM"), cpu=server.cpu(), got=got)


def mutate(server):
    subprocess.run([server_bin, "--data", server_data, "create-table", "attack_mut", "--schema",
                    '{"families":[{"name":"f"}]}'], capture_output=True)
    body = json.dumps({"mutations": [{"put": {"key": f"r{i:09}", "cells": [{"column": "f:q", "value": f"v{i}"}]}}
                                     for i in range(args.puts)]}).encode()
    before = server.status("VmHWM")
    started = time.time()
    status, answer = get(server.url("/tables/attack_mut/mutate"), body=body)
    return dict(what=f"one mutate of {args.puts} puts ({len(body) / 1e6:.0f} MB)", rss=server.status("VmRSS"),
                hwm=server.status("VmHWM"), hwm_before=before, x_body=round(server.status("VmHWM") * 2**20 / len(body), 1),
                seconds=round(time.time() - started, 1), got={status: 1}, answer=answer[:80].decode(errors="replace"))


data = corpus_store(args)
before_bin = build_at(args.before_rev)
attacks = {"unread": unread, "leave": leave, "budget": budget, "uploads": uploads, "mutate": mutate}
print(f"machine: {os.cpu_count()} cores; store {data}; before {args.before_rev}")
for name in args.only.split(","):
    sides = [("before", before_bin, ()), ("now", args.bin, ())]
    if name == "leave":
        sides.append(("now, budgets raised", args.bin, ("--max-expansions", "100000", "--max-clauses", "100000")))
    if name in ("uploads", "mutate"):
        # Big bodies: the uploads' limit raised alike on both builds.
        sides = [(s, b, (*a, "--max-body", str(200 << 20))) for s, b, a in sides]
    for side, binary, serve_args in sides:
        # Writes go to a copy: the corpus store stays as it was.
        server_data = data
        if name in ("uploads", "mutate"):
            server_data = os.path.join(WORK, "attack-copy")
            subprocess.run(["rm", "-rf", server_data], check=True)
            subprocess.run(["cp", "-r", data, server_data], check=True)
        server_bin = binary
        server = Proc(binary, server_data, serve_args)
        try:
            out = attacks[name](server)
        finally:
            server.stop()
        figures = {k: (round(v) if isinstance(v, float) and k in ("rss", "hwm", "hwm_before") else v)
                   for k, v in out.items()}
        if isinstance(figures.get("cpu"), float):
            figures["cpu"] = round(figures["cpu"], 1)
        print(f"{name:8} {side:22} {json.dumps(figures)}", flush=True)
