#!/usr/bin/env python3
"""A probe of the machine's own speed, run beside a benchmark (not a test).

Every PERIOD seconds it hashes a fixed 1 MiB buffer (SHA-256, C code) and records the CPU time
its thread spent on it (CLOCK_THREAD_CPUTIME_ID) and the wall time. The work is the same each
time, so on a steady machine the CPU time is too. When it grows, the virtual CPU itself ran
slower for that while: the host gave its core, its caches or its memory bandwidth to
something else, or took the CPU without the guest seeing it as steal. Waiting to run (our own
load on the 2 cores) shows in the wall time, not in the CPU time.

    python3 benches/noise_probe.py [--seconds 30]        # alone: how steady is the machine now

As a module (benches/ceiling.py): `calibrate()` gives the CPU ms of one unit on a quiet
machine, `Probe()` runs the loop in a child process for the length of one run, and
`Probe.stop(base)` returns the unit's CPU time over the run against it.
"""
import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time

PERIOD = 0.05
BUF = bytes(1 << 20)


def unit():
    """(CPU ms, wall ms) of hashing the buffer once."""
    w, c = time.perf_counter(), time.thread_time()
    hashlib.sha256(BUF).digest()
    return (time.thread_time() - c) * 1000, (time.perf_counter() - w) * 1000


def calibrate(n=200):
    """The CPU ms of one unit on this machine at its fastest: the 5th percentile of n units,
    taken while nothing else runs."""
    cpu = sorted(unit()[0] for _ in range(n) if time.sleep(0.002) is None)
    return cpu[n // 20]


def loop(out, stop_after=None):
    """Measures a unit every PERIOD seconds until SIGTERM (or stop_after seconds), writing
    `cpu_ms wall_ms` lines to out."""
    done = []
    signal.signal(signal.SIGTERM, lambda *_: done.append(1))
    start = time.monotonic()
    with open(out, "w") as f:
        while not done and (stop_after is None or time.monotonic() - start < stop_after):
            c, w = unit()
            f.write(f"{c:.4f} {w:.4f}\n")
            time.sleep(PERIOD)


def summary(cpu, base):
    """Slowness of the units against base: the median and p90 ratio, and the share of units
    over 1.25 times base (a quarter slower or worse)."""
    r = sorted(c / base for c in cpu)
    if not r:
        return {"probe_p50": float("nan"), "probe_p90": float("nan"), "probe_slow_pct": float("nan")}
    return {
        "probe_p50": r[len(r) // 2],
        "probe_p90": r[min(len(r) - 1, int(len(r) * 0.9))],
        "probe_slow_pct": 100.0 * sum(x > 1.25 for x in r) / len(r),
    }


class Probe:
    """The loop in a child process, for the length of one run."""

    def __init__(self):
        fd, self.path = tempfile.mkstemp(prefix="bench-probe-", suffix=".txt")
        os.close(fd)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--loop", self.path])

    def stop(self, base):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        with open(self.path) as f:
            cpu = [float(line.split()[0]) for line in f if line.strip()]
        os.unlink(self.path)
        return summary(cpu, base)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--loop", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.loop:
        loop(a.loop)
        return
    base = calibrate()
    fd, path = tempfile.mkstemp(prefix="bench-probe-", suffix=".txt")
    os.close(fd)
    loop(path, a.seconds)
    with open(path) as f:
        cpu = [float(line.split()[0]) for line in f if line.strip()]
    os.unlink(path)
    s = summary(cpu, base)
    print(f"unit {base:.3f} CPU ms at the fastest; over {a.seconds:.0f} s: median {s['probe_p50']:.2f}x, "
          f"p90 {s['probe_p90']:.2f}x, {s['probe_slow_pct']:.1f}% of units over 1.25x")


if __name__ == "__main__":
    main()
