"""End to end with happybase itself (not a client of ours) against the real
binary: a row put with happybase is found by the next HTTP search and
keyword lookup; a happybase scan with a filter string equals the HTTP scan
with that filter; counters incremented from four processes at once lose
no increment; kill -9 of the server during happybase batches loses no
acknowledged batch.

Usage: happybase_e2e.py ROWSEARCH_BINARY   (run by happybase_suite.sh, in
its virtualenv). Exits non-zero, saying what differed, on any failure.
"""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

import happybase

BIN = sys.argv[1]


class Server:
    """`rowsearch serve --thrift` on a data directory; its two addresses."""

    def __init__(self, data, create=True):
        args = [BIN, "--data", data, "serve", "--listen", "127.0.0.1:0", "--thrift", "127.0.0.1:0"]
        if create:
            args.append("--create")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.http = self.thrift = None
        while self.http is None or self.thrift is None:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"the server stopped before listening (exit {self.proc.wait()})")
            if line.startswith("listening on http://"):
                self.http = line.split("http://", 1)[1].strip()
            elif line.startswith("thrift listening on "):
                self.thrift = line.rsplit(" ", 1)[1].strip()

    def connection(self):
        host, port = self.thrift.rsplit(":", 1)
        return happybase.Connection(host, int(port), autoconnect=True)

    def get(self, path):
        with urllib.request.urlopen(f"http://{self.http}{path}") as r:
            return json.load(r)

    def put(self, path, body):
        req = urllib.request.Request(f"http://{self.http}{path}", data=json.dumps(body).encode(), method="PUT")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req) as r:
            return r.status

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        self.proc.wait()


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")
    print(f"ok: {what}")


def counter_worker(thrift, n):
    host, port = thrift.rsplit(":", 1)
    table = happybase.Connection(host, int(port)).table("counters")
    for _ in range(n):
        table.counter_inc(b"c", b"f:n")


def searchable_and_scans(server):
    schema = {"families": [{"name": "n"}], "search": {"fields": [{"column": "n:text", "name": "text", "type": "text"}]}}
    check("PUT /tables/notes", server.put("/tables/notes", schema), 201)
    notes = server.connection().table("notes")
    notes.put(b"r1", {b"n:text": b"walrus season opens", b"n:tag": b"zoo"})
    notes.put(b"r2", {b"n:text": b"the walrus sleeps", b"n:tag": b"zoo"})
    notes.put(b"r3", {b"n:text": b"penguins only", b"n:tag": b"ice"})
    check("an HTTP search finds the happybase rows at once", server.get("/tables/notes/search?q=walrus")["total"], 2)
    keys = sorted(k["key"] for k in server.get("/tables/notes/keywords?terms=walrus")["keys"])
    check("a keyword lookup finds them", keys, ["r1", "r2"])
    flt = "SingleColumnValueFilter('n', 'tag', =, 'binary:zoo', true, true)"
    over_thrift = [(k.decode(), {c.decode(): v.decode() for c, v in d.items()}) for k, d in notes.scan(filter=flt)]
    rows = server.get("/tables/notes/scan?filter=" + urllib.parse.quote(flt))["rows"]
    over_http = [(r["key"], {c["column"]: c["value"] for c in r["cells"]}) for r in rows]
    check("a happybase scan with a filter equals the HTTP scan", over_thrift, over_http)
    check("the filter kept two rows", len(over_thrift), 2)


def counters(server):
    server.connection().create_table("counters", {"f": {}})
    workers = [multiprocessing.Process(target=counter_worker, args=(server.thrift, 50)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
        check("a counter process ended well", w.exitcode, 0)
    check("four processes' increments, none lost", server.connection().table("counters").counter_get(b"c", b"f:n"), 200)


def kill_during_batches(data):
    server = Server(data, create=False)
    server.connection().create_table("batches", {"f": {}})
    acked = []
    stop = threading.Event()

    def writer():
        table = server.connection().table("batches")
        i = 0
        while not stop.is_set():
            try:
                with table.batch(transaction=True) as b:
                    for j in range(20):
                        b.put(f"b{i:05d}-{j:02d}".encode(), {b"f:v": str(i).encode()})
            except Exception:
                return
            acked.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    while len(acked) < 30:
        if not thread.is_alive():
            sys.exit("the writer stopped before the kill")
    server.stop(signal.SIGKILL)
    stop.set()
    thread.join()
    server = Server(data, create=False)
    rows = {}
    for key, _ in server.connection().table("batches").scan():
        batch = int(key[1:6])
        rows[batch] = rows.get(batch, 0) + 1
    missing = [i for i in acked if rows.get(i) != 20]
    check(f"every one of {len(acked)} acknowledged batches is whole after kill -9", missing, [])
    partial = [i for i, n in rows.items() if n != 20]
    check("no batch is there in part", partial, [])
    server.stop()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "d")
        server = Server(data)
        try:
            searchable_and_scans(server)
            counters(server)
        finally:
            server.stop()
        kill_during_batches(data)


if __name__ == "__main__":
    main()
