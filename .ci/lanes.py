#!/usr/bin/env python3
"""Runs every test binary of the workspace in two lanes at once, then the doc tests.

Why (docs/testing.md, "Two lanes"): `cargo test` runs its test binaries one after
another, and most of the suite's time is real time spent waiting on a simulator, a server or a
timeout, with the cores mostly idle. The *timed* lane holds the root test files that compare
measured timings with the simulator's closed form or drive a CPU-bound real server (each such
test takes the file's one-at-a-time lock, `serial()`): they run one binary at a time, as
before, so no two of them measure each other. The other lane runs everything else beside it,
one binary at a time, at the lowest CPU priority (nice 19): it takes only the CPU the timed
lane leaves, so it never slows a timed test down (on a 2-core machine a timed test uses about
one core).

Each binary's output is printed whole when it ends (never interleaved), then a table of every
binary's wall time, slowest first. Exit status: 0 when every binary and the doc tests passed.

Usage: python3 .ci/lanes.py [--lanes 1]   (1: a single lane, the old order; for comparison)
"""

import json
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "serial()"


def binaries():
    """(name, package dir, executable) of every test binary, built first."""
    cmd = ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, check=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m["profile"]["test"]:
            continue
        pkg_dir = os.path.dirname(m["manifest_path"])
        src = m["target"]["src_path"]
        name = os.path.relpath(src, ROOT)
        found.append((name, pkg_dir, m["executable"], src))
    return found


# The integration tests of the simulator and the worker time the simulator's engine in real
# time (steps, token gaps, capacities against the closed form): they run in the timed lane.
TIMED_CRATES = ("crates/mock/", "crates/worker/")


def timed(src):
    """Whether a test binary is one of the timed lane's: an integration test of a crate in
    TIMED_CRATES, or one whose source (its file, or for a `main.rs` every file beside it) takes
    the lock."""
    if os.sep + "tests" + os.sep not in src:
        return False
    if any(os.path.join(ROOT, c) in src for c in TIMED_CRATES):
        return True
    if os.path.basename(src) == "main.rs":
        files = []
        for d, _, names in os.walk(os.path.dirname(src)):
            files += [os.path.join(d, n) for n in names if n.endswith(".rs")]
    else:
        files = [src]
    for path in files:
        with open(path, encoding="utf-8") as f:
            if MARK in f.read():
                return True
    return False


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []

    def run(self, lane, name, pkg_dir, exe):
        start = time.monotonic()
        low = (lambda: os.nice(19)) if lane == "other" else None
        p = subprocess.run(
            [exe], cwd=pkg_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=low
        )
        secs = time.monotonic() - start
        text = p.stdout.decode("utf-8", "replace")
        with self.lock:
            status = "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"
            print(f"\n===== [{lane}] {name}: {status} in {secs:.1f} s =====", flush=True)
            print(text, end="", flush=True)
            self.rows.append((secs, lane, name, p.returncode))


def lane(results, label, items):
    for name, pkg_dir, exe, _ in items:
        results.run(label, name, pkg_dir, exe)


def main():
    lanes = 2
    if "--lanes" in sys.argv:
        lanes = int(sys.argv[sys.argv.index("--lanes") + 1])
    started = time.monotonic()
    found = binaries()
    built = time.monotonic() - started
    slow = [b for b in found if timed(b[3])]
    rest = [b for b in found if not timed(b[3])]
    results = Results()
    if lanes == 1:
        lane(results, "one", slow + rest)
    else:
        other = threading.Thread(target=lane, args=(results, "other", rest))
        other.start()
        lane(results, "timed", slow)
        other.join()
    ran = time.monotonic() - started - built
    doc_start = time.monotonic()
    doc = subprocess.run(["cargo", "test", "--workspace", "--doc"], cwd=ROOT)
    doc_secs = time.monotonic() - doc_start
    print("\n===== test binaries, slowest first =====")
    for secs, label, name, rc in sorted(results.rows, reverse=True):
        print(f"{secs:8.1f} s  {label:6}  {name}{'' if rc == 0 else '  FAILED'}")
    failed = [r for r in results.rows if r[3] != 0]
    print(
        f"built in {built:.0f} s; {len(results.rows)} binaries in {ran:.0f} s "
        f"({lanes} lane{'s' if lanes > 1 else ''}); doc tests in {doc_secs:.0f} s; "
        f"{len(failed)} failed"
    )
    for _, label, name, _ in failed:
        print(f"FAILED: {name}")
    return 1 if failed or doc.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
