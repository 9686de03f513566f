#!/usr/bin/env python3
"""Server-metrics scraping A/B (not a test): does scraping cost client throughput?

Runs `bench run --rate-type constant` against the zero-delay simulator (`target/release/bench
mock-server --zero-delay`, a separate process) alternately with scraping off
(`--no-server-metrics`), at the default interval (1 s) and at 0.1 s, `--pairs` times each, and
prints per run: achieved and completed req/s, dispatch delay p50 / p99, client CPU, and how
many periodic scrapes the report holds. Medians per mode at the end.

    python3 benches/server_metrics_ab.py [--rate 10000] [--seconds 10] [--pairs 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from scheduler import BIN, start_server, timed

MODES = [("off", ["--no-server-metrics"]), ("1 s", []), ("0.1 s", ["--server-metrics-interval", "0.1"])]


def one(url, rate, seconds, extra, out):
    cpu, rss, rc = timed([BIN, "run", "--target", url, "--rate-type", "constant", "--rate", str(rate),
                          "--max-seconds", str(seconds), "--data", "prompt_tokens=32,output_tokens=128,samples=4096,seed=7",
                          "--quiet", "--console", "none", "--output", out] + extra)
    b = json.load(open(out))["benchmarks"][0]
    m = b["metrics"]["dispatch_delay_ms"]
    sm = b.get("server_metrics") or {}
    return {"achieved": b["rates"]["achieved_rate"], "completed": b["rates"]["requests_per_s"],
            "d50": m["percentiles"]["p50"], "d99": m["percentiles"]["p99"], "cpu": cpu, "rc": rc,
            "scrapes": sm.get("scrapes", 0), "errored": b["requests"]["errored"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    srv, url = start_server(["--zero-delay"])
    rows = {name: [] for name, _ in MODES}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"load average before: {os.getloadavg()}")
            print("| run | mode | achieved req/s | completed req/s | dispatch p50 / p99 ms | client CPU s | scrapes | errored |")
            print("|---|---|---|---|---|---|---|---|")
            for i in range(a.pairs):
                for name, extra in MODES:
                    r = one(url, a.rate, a.seconds, extra, os.path.join(tmp, "run.json"))
                    rows[name].append(r)
                    print(f"| {i + 1} | {name} | {r['achieved']:.1f} | {r['completed']:.1f} | "
                          f"{r['d50']:.3f} / {r['d99']:.3f} | {r['cpu']:.1f} | {r['scrapes']} | {r['errored']} |",
                          flush=True)
            print(f"load average after: {os.getloadavg()}")
    finally:
        srv.kill()
        srv.wait()
    print("\n| mode | median achieved req/s | median completed req/s | median dispatch p99 ms | median client CPU s |")
    print("|---|---|---|---|---|")
    for name, rs in rows.items():
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"| {name} | {med('achieved'):.1f} | {med('completed'):.1f} | {med('d99'):.3f} | {med('cpu'):.1f} |")


if __name__ == "__main__":
    main()
