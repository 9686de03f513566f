#!/usr/bin/env python3
"""The client ceiling table (not a test), in one command: constant-rate runs of one or two bench
builds against one zero-delay simulator process streaming 128-token answers, each rate run by
every build in turn (A, B, A, B, ...) so that the machine's noise falls on both alike; prints
every run, then per build and rate the medians of: achieved req/s, dispatch delay p50 and p99
(ms), client CPU seconds per 1,000 requests, client peak RSS (MiB), the client's and the
simulator's cores, the steal time of the run (% of the machine's CPU time the hypervisor
gave to others: on a shared virtual machine, the noise the run met), and the noise probe's
figures (benches/noise_probe.py: how much slower than the machine's fastest a fixed unit of
work ran during the run, in CPU time, the noise steal does not show) and the memory the kernel
reported free to the hypervisor during the run (free page reporting, where the kernel has it);
then every run's
dispatch p99 and how many were under 1 ms (a median hides a bimodal spread: on this shared
machine a run is either about 0.1-1 ms or 3-100+ ms, docs/performance.md).

    python3 benches/ceiling.py --a target/release/bench [--b OLD/target/release/bench] \
        [--server SIM_BIN] [--rates 10000,15000,20000,25000] [--seconds 10] [--repeats 2] [--http2]

The simulator is --a's build unless --server names another, with its build's allocator settings
(docs/performance.md, "Allocator": with purging off it grew without bound over HTTP/2). A build's
simulator is part of the machine the clients share. A run that leaves no report (the client or
the simulator failed or was killed) is printed as failed and left out of the medians.

The runs and their data are client_ab.py's (same simulator flags, same seeded 4,096 prompts).
"""
import argparse
import os
import statistics
import tempfile

import scheduler
from client_ab import RunFailed, run, warm
from noise_probe import Probe, calibrate
from scheduler import proc_cpu, start_server

COLS = ["achieved", "disp_p50", "disp_p99", "cpu_per_1k", "rss", "errors", "client_cores", "sim_cores", "steal_pct",
        "probe_p50", "probe_p90", "probe_slow_pct", "reported_mib"]

# The guest kernel's free page reporting (virtio-balloon): how much freed memory it handed to
# the host so far. On this machine it reports 64 MiB batches in passes about 2.1 s apart, and
# in runs with --save-records the late requests crowded around its passes (one trigger of the
# slow runs, not the only one: docs/performance.md, "How to read these figures"). Absent on
# machines without it (the column reads 0).
REPORTED_KIB = "/sys/module/page_reporting/parameters/reported_kib"


def reported_mib():
    """Memory the kernel has reported free to the hypervisor so far, MiB (0 without it)."""
    try:
        with open(REPORTED_KIB) as f:
            return int(f.read()) / 1024.0
    except (OSError, ValueError):
        return 0.0


def cpu_ticks():
    """(steal, total) jiffies of all CPUs so far (Linux /proc/stat): steal is time the
    hypervisor ran something else while a virtual CPU of this machine wanted to run."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[7] if len(v) > 7 else 0, sum(v[:8])


def line(build, rate, x):
    cells = [f"{x[c]:.3f}" if isinstance(x[c], float) else str(x[c]) for c in COLS]
    return f"| {build} | {rate} | " + " | ".join(cells) + " |"


HEADER = ("| build | target req/s | achieved req/s | dispatch p50 ms | dispatch p99 ms | client CPU s per 1k req "
          "| peak RSS MiB | errors | client cores | simulator cores | steal % | probe p50 | probe p90 "
          "| probe units over 1.25x % | reported to host MiB |")
RULE = "|---" * (HEADER.count("|") - 1) + "|"


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="bench binary (the build measured)")
    ap.add_argument("--b", default=None, help="a second build run side by side (e.g. the previous main)")
    ap.add_argument("--server", default=None, help="bench binary serving the simulator [default: --a]")
    ap.add_argument("--rates", default="10000,15000,20000,25000")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--http2", action="store_true",
                    help="every client sends over HTTP/2 (one connection, streams) instead of HTTP/1.1")
    return ap.parse_args()


def measured(binary, srv, url, rate, seconds, out, extra, base):
    """One run of `binary` with the machine's figures beside it (raises RunFailed)."""
    before = proc_cpu(srv.pid)
    steal0, total0 = cpu_ticks()
    reported0 = reported_mib()
    probe = Probe()
    try:
        x = run(binary, url, rate, seconds, out, extra)
    finally:
        noise = probe.stop(base)
    x.update(noise)
    x["reported_mib"] = reported_mib() - reported0
    steal1, total1 = cpu_ticks()
    x["steal_pct"] = 100.0 * (steal1 - steal0) / max(1, total1 - total0)
    # CPU per second of the run, client and simulator: what the 2 cores carried.
    x["sim_cores"] = (proc_cpu(srv.pid) - before) / seconds
    x["client_cores"] = x["cpu_per_1k"] * x["achieved"] / 1000
    return x


def summary(rates, builds, runs, failed):
    """The medians per build and rate, then every run's dispatch p99 and the machine's noise."""
    print("\nMedians (errors: the most in one run):\n")
    print(HEADER)
    print(RULE)
    for rate in rates:
        for name, _ in builds:
            xs = runs.get((name, rate))
            if not xs:
                print(f"| {name} | {rate} | every run failed |")
                continue
            # Errors: the most of any run, not a median.
            med = {c: statistics.median(x[c] for x in xs) for c in COLS}
            med["errors"] = max(x["errors"] for x in xs)
            print(line(name, rate, med))
    print("\nDispatch p99 of every run (ms), and the runs under 1 ms:\n")
    print("| build | target req/s | dispatch p99, run by run | under 1 ms | probe units over 1.25x %, run by run "
          "| reported to host MiB, run by run |")
    print("|---|---|---|---|---|---|")
    for rate in rates:
        for name, _ in builds:
            xs = runs.get((name, rate), [])
            p99s = [x["disp_p99"] for x in xs]
            under = sum(p < 1.0 for p in p99s)
            n = len(p99s) + len(failed.get((name, rate), []))
            lost = f" ({n - len(p99s)} failed)" if n > len(p99s) else ""
            slow = ", ".join(f"{x['probe_slow_pct']:.1f}" for x in xs)
            reported = ", ".join(f"{x['reported_mib']:.0f}" for x in xs)
            print(f"| {name} | {rate} | " + ", ".join(f"{p:.3f}" for p in p99s)
                  + f" | {under} of {n}{lost} | {slow} | {reported} |")


def main():
    a = args()
    extra = ["--http2"] if a.http2 else []
    builds = [("A", a.a)] + ([("B", a.b)] if a.b else [])
    scheduler.BIN = a.server or a.a
    rates = [int(r) for r in a.rates.split(",")]
    out = os.path.join(tempfile.mkdtemp(prefix="bench-ceiling-"), "x.json")
    srv, url = start_server(["--zero-delay", "--ignore-eos"])
    runs, failed = {}, {}
    try:
        base = calibrate()
        print(f"noise probe: one unit takes {base:.3f} CPU ms at the machine's fastest\n")
        warm(a.a, url, out)
        print(HEADER)
        print(RULE)
        for rate in rates:
            for _ in range(a.repeats):
                for name, binary in builds:
                    try:
                        x = measured(binary, srv, url, rate, a.seconds, out, extra, base)
                    except RunFailed as e:
                        failed.setdefault((name, rate), []).append(str(e))
                        print(f"| {name} | {rate} | failed: {e} |", flush=True)
                        continue
                    runs.setdefault((name, rate), []).append(x)
                    print(line(name, rate, x), flush=True)
    finally:
        srv.kill()
        srv.wait()
    summary(rates, builds, runs, failed)


if __name__ == "__main__":
    main()
