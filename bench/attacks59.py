#!/usr/bin/env python3
"""What issue 59's attacks cost the server, this build against an earlier
one (default 971c199, the build the issue tried), in one script.

Usage: python3 bench/attacks59.py [--before-rev REV] [--only NAME,...]
                                  [--thread 20000] [--cap-gb 4] [--limit-s 60]

Each attack runs against a fresh server of each build (default options,
no background refresh). Printed per attack and build: what the clients
got, seconds, the server's peak memory (VmHWM) and CPU-seconds. A server
past --cap-gb of memory or still busy --limit-s after its client gave up
is killed, and that is said.

- sloppy: the issue's sloppy phrases on the full corpus's store
  (bench/common.py's, made by this build), one after another, each with a
  30 s client timeout, then the costliest sloppy phrases this build admits.
- thrift: 40 clients send a call whose method name is 15 MiB and never read
  (the gateway on the full corpus's store); VmHWM once the server is idle;
  then 256 silent connections from 127.0.0.1 and whether a call from
  127.0.0.2 is answered.
- thread: a store of one 20,000-message thread (a reply chain, built as an
  mbox); four thread views at once, their seconds and the server's CPU,
  then a search's latency while a view runs.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from common import WORK, arguments, build_at, corpus_store

args = arguments(before_rev=(str, "971c199"), only=(str, "sloppy,thrift,thread"), thread=(int, 20000),
                 cap_gb=(float, 4.0), limit_s=(float, 60.0))


class Proc:
    """A server on 127.0.0.1:0 (and its Thrift gateway) and its /proc figures."""

    def __init__(self, binary, data, serve_args=()):
        self.p = subprocess.Popen([binary, "--data", data, "serve", "--listen", "127.0.0.1:0", "--refresh-ms", "0",
                                   *serve_args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addr = self.p.stdout.readline().strip().removeprefix("listening on http://")
        self.thrift = None
        if "--thrift" in serve_args:
            for _ in range(4):
                line = self.p.stdout.readline().strip()
                if line.startswith("thrift listening on "):
                    self.thrift = line.removeprefix("thrift listening on ")
                    break

    def hwm(self):
        """VmHWM now, or the last seen before the server was killed."""
        return max(getattr(self, "peak", 0.0), self.status("VmHWM"))

    def cpu_used(self):
        """CPU-seconds now, or the last seen before the server was killed."""
        return max(getattr(self, "used", 0.0), self.cpu())

    def status(self, line):
        try:
            for l in open(f"/proc/{self.p.pid}/status"):
                if l.startswith(line + ":"):
                    return int(l.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def cpu(self):
        try:
            f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self):
        return self.p.poll() is None

    def watch(self, quiet=1.0):
        """Waits until the server used no CPU for `quiet` seconds, is past
        the memory cap (killed), or busy past the time limit (killed): what
        happened."""
        started = time.time()
        last = self.cpu()
        while True:
            time.sleep(quiet)
            if not self.alive():
                return "exited"
            self.peak = max(getattr(self, "peak", 0.0), self.status("VmHWM"))
            self.used = self.cpu()
            if self.status("VmRSS") > args.cap_gb * 1024:
                self.p.kill()
                self.p.wait()
                return f"killed past {args.cap_gb} GB after {time.time() - started:.0f} s"
            now = self.cpu()
            if now - last < 0.01:
                return f"idle after {time.time() - started:.1f} s"
            last = now
            if time.time() - started > args.limit_s:
                self.p.kill()
                self.p.wait()
                return f"killed still busy after {args.limit_s:.0f} s"

    def url(self, path):
        return f"http://{self.addr}{path}"

    def stop(self):
        if self.alive():
            self.p.terminate()
            self.p.wait()


def get(url, timeout=30):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()


def search(server, q, timeout=30):
    t = time.perf_counter()
    status, body = get(server.url(f"/tables/mail/search?limit=10&q={urllib.parse.quote(q)}"), timeout)
    return status, time.perf_counter() - t, body


def sloppy(binary, data):
    out = []
    queries = ['"the and of to a in"~1000', '"enron enron enron enron enron enron"~1000',
               '"enron enron enron enron"~100', '"the and of to a in"~100', '"gas power price market"~100']
    for q in queries:
        server = Proc(binary, data)
        cpu0 = server.cpu()
        status, seconds, body = search(server, q)
        after = server.watch()
        code = status if status else body.decode()[:40]
        out.append(f"  {q:45} -> {code} in {seconds:.2f} s; server {after}; VmHWM {server.hwm():.0f} MB, "
                   f"{server.cpu_used() - cpu0:.1f} CPU-s")
        server.stop()
    return out


def thrift_call(name):
    body = struct.pack(">I", 0x80010001) + struct.pack(">I", len(name)) + name + struct.pack(">i", 1) + b"\x00"
    return body


def thrift(binary, data):
    out = []
    server = Proc(binary, data, ("--thrift", "127.0.0.1:0"))
    host, port = server.thrift.rsplit(":", 1)
    name = b"x" * (15 << 20)
    held = []
    base = server.status("VmRSS")

    def send():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, int(port)))
        try:
            s.sendall(thrift_call(name))
        except OSError:
            pass
        held.append(s)

    threads = [threading.Thread(target=send) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = server.watch()
    out.append(f"  40 clients, a 15 MiB method name each, never reading: server {after}; VmRSS {server.status('VmRSS'):.0f} MB "
               f"(was {base:.0f}), VmHWM {server.hwm():.0f} MB")
    for s in held:
        s.close()
    server.stop()
    server = Proc(binary, data, ("--thrift", "127.0.0.1:0"))
    host, port = server.thrift.rsplit(":", 1)
    silent = []
    for _ in range(256):
        s = socket.socket()
        s.connect((host, int(port)))
        silent.append(s)
    time.sleep(0.5)
    c = socket.socket()
    c.bind(("127.0.0.2", 0))
    c.settimeout(5)
    c.connect((host, int(port)))
    c.sendall(thrift_call(b"getTableNames"))
    try:
        answer = c.recv(4096)
        got = f"answered ({len(answer)} bytes)" if answer else "closed"
    except OSError as e:
        got = f"no answer ({e})"
    out.append(f"  256 silent connections of 127.0.0.1, then a call from 127.0.0.2: {got}")
    for s in silent:
        s.close()
    server.stop()
    return out


def thread_store(binary):
    """A store of one reply chain of args.thread messages, made once."""
    data = os.path.join(WORK, f"thread-{args.thread}")
    if os.path.isdir(data):
        return data
    mbox = os.path.join(WORK, f"thread-{args.thread}.mbox")
    with open(mbox, "w") as f:
        for i in range(args.thread):
            refs = f"In-Reply-To: <m{i - 1}@example.com>\nReferences: <m0@example.com> <m{i - 1}@example.com>\n" if i else ""
            f.write(f"From someone@example.com Fri Mar  1 10:00:00 2024\nFrom: a{i % 50}@example.com\n"
                    f"To: list@example.com\nSubject: Re: the long one\nMessage-ID: <m{i}@example.com>\n{refs}"
                    f"Date: Fri, 1 Mar 2024 10:{(i // 60) % 60:02d}:{i % 60:02d} +0000\n\nmessage {i} of the chain\n\n")
    subprocess.run([binary, "--data", data + ".tmp", "ingest", mbox, "--user", "victim"], check=True,
                   capture_output=True)
    subprocess.run([binary, "--data", data + ".tmp", "reindex", "--full"], check=True, capture_output=True)
    os.rename(data + ".tmp", data)
    return data


def thread(binary, data):
    out = []
    server = Proc(binary, data)
    status, body = get(server.url("/tables/mail/search?q=chain&limit=1&fields=thread"))
    thread_id = json.loads(body)["hits"][0]["document"]["thread"]
    path = server.url(f"/tables/mail/threads/{thread_id}?fields=subject")
    cpu0 = server.cpu()
    t = time.perf_counter()
    status, body = get(path, timeout=120)
    one = time.perf_counter() - t
    messages = len(json.loads(body).get("messages", [])) if status == 200 else 0
    out.append(f"  one view of {messages} messages: {status} in {one:.2f} s, {server.cpu() - cpu0:.1f} CPU-s")
    took = []

    def view():
        t = time.perf_counter()
        get(path, timeout=120)
        took.append(time.perf_counter() - t)

    cpu0 = server.cpu()
    views = [threading.Thread(target=view) for _ in range(4)]
    for v in views:
        v.start()
    time.sleep(0.05)
    status, seconds, _ = search(server, "chain")
    for v in views:
        v.join()
    out.append(f"  four views at once: {max(took):.2f} s the slowest, {server.cpu() - cpu0:.1f} CPU-s; a search "
               f"meanwhile {status} in {seconds * 1e3:.0f} ms; VmHWM {server.status('VmHWM'):.0f} MB")
    # A view whose client leaves after 0.1 s: the CPU it goes on using.
    host, port = server.addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.sendall(f"GET /tables/mail/threads/{thread_id} HTTP/1.1\r\nHost: {server.addr}\r\n\r\n".encode())
    time.sleep(0.1)
    s.close()
    cpu0 = server.cpu()
    after = server.watch(quiet=0.5)
    out.append(f"  a view whose client left after 0.1 s: server {after}, {server.cpu_used() - cpu0:.1f} CPU-s after")
    server.stop()
    return out


def main():
    builds = [("before " + args.before_rev, build_at(args.before_rev)), ("this build", args.bin)]
    only = set(args.only.split(","))
    corpus_data = corpus_store(args) if only & {"sloppy", "thrift"} else None
    for name, binary in builds:
        print(f"== {name} ({binary})", flush=True)
        if "sloppy" in only:
            print(" sloppy phrases on the full corpus:", flush=True)
            for line in sloppy(binary, corpus_data):
                print(line, flush=True)
        if "thrift" in only:
            print(" Thrift gateway:", flush=True)
            for line in thrift(binary, corpus_data):
                print(line, flush=True)
        if "thread" in only:
            print(f" a thread of {args.thread} messages:", flush=True)
            data = os.path.join(WORK, f"thread-copy-{os.getpid()}")
            shutil.copytree(thread_store(args.bin), data)
            try:
                for line in thread(binary, data):
                    print(line, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
