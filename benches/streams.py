#!/usr/bin/env python3
"""Concurrent streams held open (not a test): how many streams one bench process holds, and its
memory per stream.

A slow simulator (`bench mock-server`, every sequence in one batch, one token per --step-ms,
no prefill time) answers `bench run --rate-type concurrent --rate N` with OUTPUT tokens per
stream, so every stream stays open for OUTPUT x step: N streams are held at once. Past one
source address's ephemeral ports (about 28,000 towards one server address) bench connects from
127.0.0.2, 127.0.0.3, ... by itself (docs/cli.md, --source-address); the open-file limit is
raised where the OS allows (root), else the run is refused naming it.

Prints per N: peak in flight, completed, errored, client CPU s, client peak RSS (MiB), RSS per
stream (KiB, over the smallest N's RSS), and the simulator's peak RSS.

With --http2, every stream rides one HTTP/2 connection (the simulator allows N + 100 streams
on it), so one process holds N streams whatever its open-file limit.

With --procs P, each N is held by P client processes at once, each with N/P streams against a
simulator of its own (for machines whose per-process open-file limit is below N and cannot be
raised: a process without CAP_SYS_RESOURCE cannot pass its hard limit); the figures are the
sums over the P clients.

    python3 benches/streams.py [--streams 1000,10000,100000] [--step-ms 1000] [--output 30] [--procs 1] [--http2]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import scheduler
from scheduler import start_server, timed


def peak_rss_mib(pid):
    """VmHWM (peak resident set) of a running process, MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def streams(n, step_ms, output, tmp, procs=1, http2=False):
    if procs > 1:
        return together(n, step_ms, output, tmp, procs)
    srv, url = start_server(["--max-batch", str(n + 100), "--step-base-ms", str(step_ms),
                             "--step-per-seq-ms", "0", "--prefill-overhead-ms", "0",
                             "--prefill-rate", "0", "--ignore-eos",
                             "--http2-max-streams", str(n + 100)])
    try:
        os.makedirs(tmp, exist_ok=True)
        out = os.path.join(tmp, f"streams-{n}.json")
        # Long enough for every stream to open and end: the ramp, then OUTPUT steps.
        seconds = output * step_ms / 1000.0 + 20
        t0 = time.time()
        cpu, rss, rc = timed([scheduler.BIN, "run", "--target", url, "--rate-type", "concurrent",
                              "--rate", str(n), "--max-seconds", str(seconds),
                              "--data", f"prompt_tokens=16,output_tokens={output}",
                              "--quiet", "--console", "none", "--output", out]
                             + (["--http2"] if http2 else []))
        wall = time.time() - t0
        srv_rss = peak_rss_mib(srv.pid)
        if rc != 0:
            raise SystemExit(f"bench run exited with {rc} for {n} streams")
        b = json.load(open(out))["benchmarks"][0]
        return {"streams": n, "peak": b["rates"]["peak_concurrency"],
                "completed": b["requests"]["completed"], "errored": b["requests"]["errored"],
                "errors": b.get("errors"), "cpu_s": cpu, "rss_mib": rss, "srv_rss_mib": srv_rss,
                "wall_s": wall, "rc": rc}
    finally:
        srv.kill()
        srv.wait()


def together(n, step_ms, output, tmp, procs):
    """n streams held by `procs` client processes at once, each against its own simulator."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(procs) as ex:
        parts = list(ex.map(lambda i: streams(n // procs, step_ms, output, os.path.join(tmp, str(i))),
                            range(procs)))
    total = {k: sum(p[k] for p in parts) for k in ("peak", "completed", "errored", "cpu_s", "rss_mib",
                                                   "srv_rss_mib")}
    total.update(streams=n, errors=[p["errors"] for p in parts if p["errored"]],
                 wall_s=max(p["wall_s"] for p in parts), rc=max(p["rc"] for p in parts))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", default="1000,10000,100000")
    ap.add_argument("--step-ms", type=int, default=1000)
    ap.add_argument("--output", type=int, default=30, help="tokens per stream")
    ap.add_argument("--bin", default=scheduler.BIN)
    ap.add_argument("--procs", type=int, default=1, help="client processes (each with its own simulator)")
    ap.add_argument("--http2", action="store_true",
                    help="HTTP/2: every stream on one connection (no descriptor per stream)")
    a = ap.parse_args()
    scheduler.BIN = a.bin
    tmp = tempfile.mkdtemp(prefix="bench-streams-")
    print("| streams | peak in flight | completed | errored | client CPU s | client peak RSS MiB "
          "| RSS KiB per stream | simulator peak RSS MiB | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    for n in [int(x) for x in a.streams.split(",") if x]:
        s = streams(n, a.step_ms, a.output, tmp, a.procs if n > 1000 else 1, a.http2)
        per = "" if base is None else f"{(s['rss_mib'] - base[1]) * 1024 / (n - base[0]):.1f}"
        if base is None:
            base = (n, s["rss_mib"])
        print(f"| {n} | {s['peak']} | {s['completed']} | {s['errored']} | {s['cpu_s']:.1f} "
              f"| {s['rss_mib']:.0f} | {per} | {s['srv_rss_mib']:.0f} | {s['wall_s']:.0f} |", flush=True)
        if s["errored"]:
            print(f"  errors: {s['errors']}")


if __name__ == "__main__":
    main()
