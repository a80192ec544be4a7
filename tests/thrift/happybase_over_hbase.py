"""happybase straight to a real Apache HBase's Thrift gateway, beside
`rowsearch serve --hbase` over the same HBase (issue 39): a row another
client (happybase) puts into HBase is found by rowsearch's search (the
tailer reads HBase's newer cells), and a row happybase deletes is never a
hit again. Prints how long the row took to be found.

Usage: happybase_over_hbase.py ROWSEARCH_BINARY THRIFT THRIFT2  (HBase's
two gateways, HOST:PORT; run by happybase_suite.sh, in its virtualenv).
"""

import json
import subprocess
import sys
import tempfile
import time
import urllib.request

import happybase

BIN, THRIFT, THRIFT2 = sys.argv[1], sys.argv[2], sys.argv[3]
TABLE = "happybase_over_hbase"
SCHEMA = {"families": [{"name": "n"}], "search": {"fields": [{"column": "n:text", "name": "text", "type": "text"}]}}


def rowsearch(data, *args, check=True):
    return subprocess.run([BIN, "--data", data, "--hbase", THRIFT2, *args], check=check, capture_output=True, text=True)


def main():
    data = tempfile.mkdtemp()
    rowsearch(data, "drop-table", TABLE, check=False)
    rowsearch(data, "create-table", TABLE, "--schema", json.dumps(SCHEMA))
    host, port = THRIFT.rsplit(":", 1)
    hb = happybase.Connection(host, int(port))
    table = hb.table(TABLE)
    table.put(b"r1", {b"n:text": b"the first capybara"})
    rowsearch(data, "reindex", "--table", TABLE)
    server = subprocess.Popen([BIN, "--data", data, "--hbase", THRIFT2, "serve", "--listen", "127.0.0.1:0",
                               "--refresh-ms", "1000"], stdout=subprocess.PIPE, text=True)
    try:
        http = None
        while http is None:
            line = server.stdout.readline()
            if not line:
                sys.exit("the server stopped before listening")
            if line.startswith("listening on http://"):
                http = line.split("http://", 1)[1].strip()

        def search(q):
            with urllib.request.urlopen(f"http://{http}/tables/{TABLE}/search?q={q}&limit=100") as r:
                return json.load(r)

        assert search("capybara")["total"] == 1
        started = time.monotonic()
        table.put(b"r2", {b"n:text": b"a second capybara, put by happybase"})
        while search("capybara")["total"] != 2:
            if time.monotonic() - started > 30:
                sys.exit("happybase's row was not found within 30 s")
            time.sleep(0.02)
        print(f"happybase's row found by rowsearch's search after {1000 * (time.monotonic() - started):.0f} ms")
        table.delete(b"r1")
        for _ in range(5):
            keys = [h["key"] for h in search("capybara")["hits"]]
            assert "r1" not in keys, keys
            assert "r2" in keys, keys
        print("the row happybase deleted is never a hit")
    finally:
        server.terminate()
        server.wait()
    rowsearch(data, "drop-table", TABLE)


main()
