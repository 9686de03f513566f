#!/usr/bin/env python3
"""What N shards deliver together (not a test), measured on one machine: for each N, N
`bench run --shard I/N --start-at T` processes send one constant-rate benchmark (the total
rate given, each shard its 1/N) against one zero-delay simulator process streaming 128-token
answers, then `bench merge` merges them. Prints, per N and repeat: the merged achieved req/s
and dispatch delay p99 (ms), each shard's client CPU seconds per 1,000 of its own requests and
its peak RSS; then the medians per N.

    python3 benches/shards_scaling.py --bin target/release/bench \
        [--shards 1,2,4] [--rate 20000] [--seconds 10] [--repeats 3]

Read it for what it is: every shard and the simulator share this machine's CPUs, so the
merged rate is bounded by the machine (on 2 cores, 4 shards and the simulator compete), not
by the shards. It shows what a shard costs (CPU per 1k requests, growing with N by the data
split: each shard builds the whole sequence and keeps its 1/N, docs/distributed.md) and that
N processes together sustain a rate one process cannot, as far as the cores allow. For the
scale on N machines see docs/performance.md, "Scaling out". Run it on a quiet machine.

The data carry seed=, so every run sends the same 4,096 prompts and the simulator's
prompt-count cache, warmed by an unreported first run, answers them (as client_ab.py).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import scheduler
from client_ab import DATA
from scheduler import start_server


def launch(binary, url, rate, seconds, shard, count, start_at, out, timing):
    """One shard under /usr/bin/time (its CPU and RSS written to `timing`)."""
    cmd = [binary, "run", "--target", url, "--rate-type", "constant", "--rate", str(rate),
           "--max-seconds", str(seconds), "--data", DATA, "--quiet", "--console", "none",
           "--shard", f"{shard}/{count}", "--start-at", start_at, "--output", out]
    if shard > 0:
        cmd.append("--no-server-metrics")
    return subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", timing] + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_round(binary, url, rate, seconds, count, tmp):
    """N shards side by side, merged; the merged figures and each shard's cost."""
    start_at = f"{time.time() + 2.0 + 0.2 * count:.3f}"
    outs = [os.path.join(tmp, f"shard-{i}.json") for i in range(count)]
    times = [os.path.join(tmp, f"shard-{i}.time") for i in range(count)]
    procs = [launch(binary, url, rate, seconds, i, count, start_at, outs[i], times[i])
             for i in range(count)]
    rcs = [p.wait() for p in procs]
    merged = os.path.join(tmp, "merged.json")
    subprocess.check_call([binary, "merge", "--console", "none", "--max-skew", "5"] + outs
                          + ["-o", merged], stdout=subprocess.DEVNULL)
    b = json.load(open(merged))["benchmarks"][0]
    cpu_per_1k, rss = [], []
    for out, t in zip(outs, times):
        u, s, m = open(t).read().split()[-3:]
        sb = json.load(open(out))["benchmarks"][0]
        sent = max(1.0, sb["rates"]["achieved_rate"] * seconds)
        cpu_per_1k.append(1000 * (float(u) + float(s)) / sent)
        rss.append(int(m) / 1024.0)
    return {
        "achieved": b["rates"]["achieved_rate"],
        "completed": b["rates"]["requests_per_s"],
        "disp_p99": b["metrics"]["dispatch_delay_ms"]["percentiles"]["p99"],
        "cpu_per_1k_max": max(cpu_per_1k),
        "cpu_per_1k_mean": statistics.mean(cpu_per_1k),
        "rss_max": max(rss),
        "errors": b["requests"]["errored"],
        "rc": max(rcs),
    }


COLS = ["achieved", "completed", "disp_p99", "cpu_per_1k_mean", "cpu_per_1k_max", "rss_max", "errors"]
HEADER = ("| shards | target req/s (total) | achieved req/s (merged) | completed req/s | "
          "dispatch p99 ms (merged) | client CPU s per 1k req (mean of shards) | (worst shard) | "
          "peak RSS MiB (worst shard) | errors |")


def line(n, rate, x):
    cells = [f"{x[c]:.3f}" if isinstance(x[c], float) else str(x[c]) for c in COLS]
    return f"| {n} | {rate} | " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="bench binary (a release build)")
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--rate", type=int, default=20000, help="total rate over all shards")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    scheduler.BIN = a.bin
    counts = [int(n) for n in a.shards.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench-shards-")
    srv, url = start_server(["--zero-delay", "--ignore-eos"])
    runs = {}
    try:
        run_round(a.bin, url, 1000, 3, 1, tmp)  # warms the simulator's prompt-count cache
        print(HEADER)
        print("|---|---|---|---|---|---|---|---|---|")
        for _ in range(a.repeats):
            for n in counts:
                x = run_round(a.bin, url, a.rate, a.seconds, n, tmp)
                runs.setdefault(n, []).append(x)
                print(line(n, a.rate, x), flush=True)
    finally:
        srv.kill()
        srv.wait()
    print("\nMedians:\n")
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|")
    for n in counts:
        xs = runs[n]
        print(line(n, a.rate, {c: statistics.median(x[c] for x in xs) for c in COLS}))


if __name__ == "__main__":
    main()
