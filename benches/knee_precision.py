#!/usr/bin/env python3
"""The knee with and without --precision (issue 37, point 3), on full-size simulators.

Runs `bench sweep --mock` twice per simulator, without and with `--precision`, and prints each
sweep's knee and capacity with their 95% intervals, then whether the two knees' intervals meet
(the sweeps' rungs differ, so the knees are equal within their intervals, not to the digit).
Too long for the test suite (a precise sweep of the default simulator takes about 6.5 minutes
in release); `tests/it/precision.rs::the_knee_under_precision_is_the_knee_without_it` checks the
same on a small simulator in about a minute. Results: docs/performance.md, "The knee under
--precision".

    cargo build --release
    python3 benches/knee_precision.py [--bench target/release/bench] [--precision 5%] \
        [--only default|vllm-cpu-fast]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (extra arguments, the engine's capacity in req/s from its closed form)
SIMULATORS = {
    # docs/simulator.md: 64 slots, 8 + 0.1 ms per slot a step, 256/128 tokens.
    "default": ([], 34.45),
    # tests/it/sustained.rs: admits every request (chunked prefill, decodes first).
    "vllm-cpu-fast": (
        ["--mock-config", os.path.join(ROOT, "examples/simulator/vllm-cpu-fast.yaml"),
         "--data", "prompt_tokens=64,output_tokens=32", "--max-seconds", "4"],
        106.7,
    ),
}


def sweep(bench, extra, precision):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        argv = [bench, "sweep", "--mock", "--quiet", "--console", "none", "--output", out]
        argv += extra
        if precision:
            argv += ["--precision", precision]
        started = time.monotonic()
        subprocess.run(argv, check=True, env={**os.environ, "RUST_LOG": "warn"})
        secs = time.monotonic() - started
        with open(out) as f:
            return json.load(f), secs


def interval(iv):
    if not iv:
        return "no interval"
    high = iv.get("high")
    return f"{iv['low']:.2f}-{'open' if high is None else f'{high:.2f}'}"


def knee_of(run):
    cap = run["capacity"]
    ivs = cap.get("intervals") or {}
    return cap.get("knee_requests_per_s"), ivs.get("knee_requests_per_s"), cap, ivs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/bench"))
    ap.add_argument("--precision", default="5%")
    ap.add_argument("--only", choices=sorted(SIMULATORS))
    a = ap.parse_args()
    met = True
    for name, (extra, engine) in SIMULATORS.items():
        if a.only and name != a.only:
            continue
        ends = []
        for precision in (None, a.precision):
            run, secs = sweep(a.bench, extra, precision)
            knee, kiv, cap, ivs = knee_of(run)
            label = f"--precision {precision}" if precision else "without --precision"
            print(
                f"{name}, {label} ({secs:.0f} s): knee {knee} ({interval(kiv)}), capacity "
                f"{cap['max_requests_per_s']:.2f} ({interval(ivs.get('max_requests_per_s'))}); "
                f"engine capacity {engine}",
                flush=True,
            )
            for b in run["benchmarks"]:
                r = b["rates"]
                print(f"    {b['label']:>18}  {r['requests_per_s']:8.2f} req/s  "
                      f"stop {b.get('stop_reason')}", flush=True)
            if kiv:
                high = kiv.get("high")
                ends.append((kiv["low"], float("inf") if high is None else high))
        if len(ends) == 2:
            low, high = max(e[0] for e in ends), min(e[1] for e in ends)
            ok = low <= high
            met &= ok
            print(f"{name}: the knees' intervals {'meet' if ok else 'DO NOT meet'} "
                  f"({low:.2f} <= {high:.2f})", flush=True)
        else:
            met = False
            print(f"{name}: a knee without an interval", flush=True)
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
