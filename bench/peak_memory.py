"""Peak memory of the batch jobs by their budget: a full-corpus ingest into
a new store and `reindex --full` of the result, each at several
`--memory-mb`, sampling /proc/PID/status every 20 ms (peak anonymous memory:
what the process allocated; file-backed pages are LMDB's map, which the
kernel can drop).

    python3 bench/peak_memory.py [--runs 3] [--budgets 64,128,256,512]

Medians of --runs runs per budget, interleaved. With --env NAME=VALUE,...
each run is repeated with those variables set (mimalloc's options, say)."""
import os
import shutil
import statistics
import subprocess
import time

import common


def sample(cmd, env=None):
    """Runs `cmd`: (seconds, peak anonymous MiB, peak file-backed MiB)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=dict(os.environ, **(env or {})))
    peak_anon = peak_file = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            peak_anon = max(peak_anon, int(fields["RssAnon"].split()[0]))
            peak_file = max(peak_file, int(fields["RssFile"].split()[0]))
        except (FileNotFoundError, KeyError, ProcessLookupError):
            pass
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-2000:]}")
    return time.monotonic() - start, peak_anon / 1024, peak_file / 1024


def main():
    args = common.arguments(runs=(int, 3), budgets=(str, "64,128,256,512"), env=(str, ""))
    mail = common.corpus(args.corpus)
    budgets = [int(b) for b in args.budgets.split(",")]
    variants = [("default", {})]
    if args.env:
        variants.append((args.env, dict(kv.split("=", 1) for kv in args.env.split(","))))
    store = os.path.join(common.WORK, "peak-memory")
    results = {}
    for run in range(args.runs):
        for name, env in variants:
            for mb in budgets:
                shutil.rmtree(store, ignore_errors=True)
                ingest = sample([args.bin, "--data", store, "ingest", mail, "--memory-mb", str(max(mb, 176))], env)
                reindex = sample([args.bin, "--data", store, "reindex", "--full", "--memory-mb", str(mb)], env)
                results.setdefault((name, mb), []).append((ingest, reindex))
                print(f"run {run + 1} {name} {mb} MiB: ingest {ingest[0]:.2f} s {ingest[1]:.0f} MiB, "
                      f"reindex {reindex[0]:.2f} s {reindex[1]:.0f} MiB", flush=True)
    shutil.rmtree(store, ignore_errors=True)
    print("\nmedians (peak anonymous memory; ingest's budget is at least 176 MiB)")
    for (name, mb), runs in results.items():
        med = [statistics.median(r[j][i] for r in runs) for j in (0, 1) for i in (0, 1, 2)]
        print(f"{name:>10} --memory-mb {mb:>4}: ingest {med[0]:6.2f} s {med[1]:5.0f} MiB (file {med[2]:4.0f}) | "
              f"reindex {med[3]:6.2f} s {med[4]:5.0f} MiB (file {med[5]:4.0f})")


if __name__ == "__main__":
    main()
