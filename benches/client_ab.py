#!/usr/bin/env python3
"""Client A/B (not a test): two bench builds as clients, side by side, against one simulator.

Both clients run the same constant-rate benchmark, alternately (A, B, A, B, ...), against the
same zero-delay simulator process (the --server build), so that only the client differs and
the machine's noise falls on both alike. Prints every run and the medians of each build.

    python3 benches/client_ab.py --a OLD/target/release/bench --b target/release/bench \
        [--server target/release/bench] [--rate 10000] [--seconds 10] [--pairs 4]

The data spec carries an explicit seed=, so every run sends the same 4,096 prompts and the
simulator's prompt-count cache, warmed by an unreported first pass, answers them: without it
bench salts the prompts per run (docs/data.md) and the simulator spends the first second of
every run tokenizing new prompts, which stalls both it and the client sharing its CPUs.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from scheduler import start_server, timed

DATA = "prompt_tokens=32,output_tokens=128,samples=4096,seed=7"


class RunFailed(Exception):
    """A client run that left no report (it exited with an error, or was killed)."""


def run(binary, url, rate, seconds, out, extra=()):
    """One constant-rate run of `binary`; its figures. Raises RunFailed when the run left no
    report: the file is removed first, so that a failed run never reads the run before it."""
    if os.path.exists(out):
        os.remove(out)
    cpu, rss, rc = timed([binary, "run", "--target", url, "--rate-type", "constant", "--rate", str(rate),
                          "--max-seconds", str(seconds), "--data", DATA, "--quiet", "--console", "none",
                          "--output", out, *extra])
    if not os.path.exists(out):
        raise RunFailed(f"{binary} at {rate} req/s exited {rc} and wrote no report")
    b = json.load(open(out))["benchmarks"][0]
    m = b["metrics"]
    return {
        "achieved": b["rates"]["achieved_rate"],
        "completed": b["rates"]["requests_per_s"],
        "late_p99": m["queue_ms"]["percentiles"]["p99"],
        "disp_p50": m["dispatch_delay_ms"]["median"],
        "disp_p99": m["dispatch_delay_ms"]["percentiles"]["p99"],
        "ttft_p50": m["ttft_ms"]["median"],
        "ttft_p99": m["ttft_ms"]["percentiles"]["p99"],
        "cpu_per_1k": 1000 * cpu / max(1, b["rates"]["achieved_rate"] * seconds),
        "rss": rss,
        "errors": b["requests"]["errored"],
        "rc": rc,
    }


def warm(binary, url, out):
    """Warms the simulator's prompt-count cache with every one of DATA's 4,096 seeded prompts:
    6,000 requests at 1,000 req/s (3,000 left 1,096 prompts to be tokenized 0.2 s into the first
    measured run, docs/performance.md, "Scheduler and client ceiling")."""
    run(binary, url, 1000, 6, out)


COLS = ["achieved", "completed", "late_p99", "disp_p99", "ttft_p50", "ttft_p99", "cpu_per_1k", "rss", "errors"]


def row(name, x):
    return f"| {name} | " + " | ".join(f"{x[c]:.3f}" if isinstance(x[c], float) else str(x[c]) for c in COLS) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="bench binary A (e.g. the build before a change)")
    ap.add_argument("--b", required=True, help="bench binary B (e.g. the build after it)")
    ap.add_argument("--server", default=None, help="bench binary serving the simulator [default: --b]")
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=4)
    a = ap.parse_args()
    import scheduler
    scheduler.BIN = a.server or a.b
    tmp = tempfile.mkdtemp(prefix="bench-ab-")
    srv, url = start_server(["--zero-delay", "--ignore-eos"])
    runs = {"A": [], "B": []}
    try:
        out = os.path.join(tmp, "x.json")
        warm(a.b, url, out)
        print("| build | achieved req/s | completed req/s | pacer late p99 ms | dispatch p99 ms | TTFT p50 ms "
              "| TTFT p99 ms | client CPU s per 1k req | peak RSS MiB | errors |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for _ in range(a.pairs):
            for name, binary in (("A", a.a), ("B", a.b)):
                x = run(binary, url, a.rate, a.seconds, out)
                runs[name].append(x)
                print(row(name, x), flush=True)
    finally:
        srv.kill()
        srv.wait()
    for name in ("A", "B"):
        med = {c: statistics.median(x[c] for x in runs[name]) for c in COLS}
        print(row(f"{name} median", med))


if __name__ == "__main__":
    main()
