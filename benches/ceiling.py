#!/usr/bin/env python3
"""The client ceiling table (not a test), in one command: constant-rate runs of one or two bench
builds against one zero-delay simulator process streaming 128-token answers, each rate run by
every build in turn (A, B, A, B, ...) so that the machine's noise falls on both alike; prints
every run, then per build and rate the medians of: achieved req/s, dispatch delay p50 and p99
(ms), client CPU seconds per 1,000 requests and client peak RSS (MiB).

    python3 benches/ceiling.py --a target/release/bench [--b OLD/target/release/bench] \
        [--rates 10000,15000,20000,25000] [--seconds 10] [--repeats 2]

The runs and their data are client_ab.py's (same simulator flags, same seeded 4,096 prompts).
"""
import argparse
import os
import statistics
import tempfile

import scheduler
from client_ab import run
from scheduler import start_server

COLS = ["achieved", "disp_p50", "disp_p99", "cpu_per_1k", "rss", "errors"]


def line(build, rate, x):
    cells = [f"{x[c]:.3f}" if isinstance(x[c], float) else str(x[c]) for c in COLS]
    return f"| {build} | {rate} | " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="bench binary (the build measured)")
    ap.add_argument("--b", default=None, help="a second build run side by side (e.g. the previous main)")
    ap.add_argument("--rates", default="10000,15000,20000,25000")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    builds = [("A", a.a)] + ([("B", a.b)] if a.b else [])
    scheduler.BIN = a.a
    rates = [int(r) for r in a.rates.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench-ceiling-")
    out = os.path.join(tmp, "x.json")
    srv, url = start_server(["--zero-delay", "--ignore-eos"])
    runs = {}
    header = "| build | target req/s | achieved req/s | dispatch p50 ms | dispatch p99 ms | client CPU s per 1k req | peak RSS MiB | errors |"
    try:
        run(a.a, url, 1000, 3, out)  # warms the simulator's prompt-count cache
        print(header)
        print("|---|---|---|---|---|---|---|---|")
        for rate in rates:
            for _ in range(a.repeats):
                for name, binary in builds:
                    x = run(binary, url, rate, a.seconds, out)
                    runs.setdefault((name, rate), []).append(x)
                    print(line(name, rate, x), flush=True)
    finally:
        srv.kill()
        srv.wait()
    print("\nMedians:\n")
    print(header)
    print("|---|---|---|---|---|---|---|---|")
    for rate in rates:
        for name, _ in builds:
            xs = runs[(name, rate)]
            print(line(name, rate, {c: statistics.median(x[c] for x in xs) for c in COLS}))


if __name__ == "__main__":
    main()
