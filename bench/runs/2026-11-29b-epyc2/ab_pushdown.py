import os, sys, statistics
sys.path.insert(0, "/work/main/bench")
from common import Server, peer_queries, pct
HB = "127.0.0.1:44575"
BIN = "/work/main/target/release/rowsearch"
qs = peer_queries()[::4]
res = {"push": [], "nopush": []}
for r in range(3):
    for side in (["push", "nopush"] if r % 2 == 0 else ["nopush", "push"]):
        if side == "nopush":
            os.environ["ROWSEARCH_AB_NO_PUSHDOWN"] = "1"
        else:
            os.environ.pop("ROWSEARCH_AB_NO_PUSHDOWN", None)
        s = Server(side, BIN, "/tmp/rowsearch-bench/over-local", serve_args=("--hbase", HB))
        p50s = [pct(s.times(path, 30), 0.5) for q, path in qs]
        s.stop()
        res[side].append(statistics.geometric_mean(p50s))
        print(r, side, res[side][-1], flush=True)
print({k: statistics.median(v) for k, v in res.items()})
