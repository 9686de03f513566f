#!/usr/bin/env python3
"""Runs every test of the workspace in lanes, then prints every unit's wall time.

Why (docs/testing.md, "Lanes"): `cargo test` runs its test binaries one after another, and
most of the suite's time is real time spent waiting on a simulator, a server or a timeout, with
the cores mostly idle (a sweep against the in-process simulator uses about a quarter of one
core). The lanes:

- **other**: every binary that times nothing (unit tests, format and error checks, fault
  injection) and every untimed module of the root binary, one after another, then the doc tests, at the lowest CPU priority (SCHED_IDLE,
  inherited by every process it starts): it takes only the CPU the timed lanes leave.
- **timed**, three workers: the *timed* tests, those that compare measured timings with the
  simulator's closed form or drive a real server. A module of the root integration binary
  (`tests/it/`) is timed when its tests take the one-at-a-time lock (`serial()`); its tests are
  run one per process (`--exact`), so
  the workers share them out, longest first. The simulator's and the worker's integration
  tests run as whole binaries (they hold their own lock between timing and CPU-heavy tests). At
  most three timed tests run at once (four read the simulator wrong: docs/testing.md, "Lanes").
- **alone**: the timed tests that must have the machine's timed share to themselves (listed
  in ALONE: a CPU-bound real server, the 1% closed-form claims, the busiest token streams) run first, one after another,
  before the workers start; the other lane runs beside them at that priority.

Each unit's output is printed whole when it ends (never interleaved), then a table of every
unit's wall time, slowest first. Exit status: 0 when every unit and the doc tests passed.

Usage: python3 .ci/lanes.py [--workers N]   (N timed workers, default 3; 1 runs them one by one)
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "serial()"

# The integration tests of the simulator and the worker time the simulator's engine in real
# time (steps, token gaps, capacities against the closed form): timed, as whole binaries.
TIMED_CRATES = ("crates/mock/", "crates/worker/")

# Timed tests that run with no other timed test beside them: (file, test name; "*" every test
# of the file). llama.cpp takes both cores (its server runs 2 threads); the ITL test and the 30 s
# throughput test state a closed form within 2% and 1%; the sustained sweep's SLO point moves 2.7
# times the ITL median it is read by, and its closed-loop rungs read 114.8 req/s for a capacity
# of 106.7 beside two timed tests (107.2 alone; docs/simulator.md, "Preset: vllm-cpu").
ALONE = (
    ("tests/it/llamacpp.rs", "*"),
    ("tests/it/steady_latency.rs",
     "the_itl_median_of_a_steady_open_loop_benchmark_is_the_engine_models_step_within_2pct"),
    ("tests/it/sustained.rs", "the_sweep_states_the_capacity_of_a_server_that_admits_everything"),
    # 139 and 64 req/s of a debug build's client and simulator: beside a sweep and the other
    # of the two in a CI run, the client fell behind its own departures and read 94.9 req/s
    # (95%: 83.6-106.1) where the simulator's log had 107.8 (alone, quiet or with two busy
    # loops: 109.0 against 111.5-112.7).
    ("tests/it/sustained.rs",
     "a_rate_past_the_capacity_is_surely_not_kept_up_and_reads_the_engines_departures"),
    ("tests/it/sustained.rs", "a_rate_below_the_capacity_is_kept_up_and_reads_the_rate_sent"),
    ("tests/it/honest_windows.rs",
     "a_30s_throughput_benchmark_reads_the_closed_form_capacity_within_1_percent"),
    # 128 streams of a debug build's simulator and client (4,400 SSE events/s): starved to a
    # third of a core (two nice-0 busy loops) the process falls behind its own token stream and
    # reads 3.7-8% high; beside timed tests in CI it read 33.40 and 36.69 against 34.45.
    ("tests/it/honest_windows.rs",
     "a_5s_throughput_benchmark_reads_the_closed_form_capacity_within_3_percent"),
    # The simulator's log against the label of a 5 s benchmark at 65% of the capacity (7.5 s):
    # beside two timed tests in a CI run the debug simulator slowed in the last second and
    # held 35.31 requests there against 28.60 after the steady start (the label said steady,
    # rightly for the client's spans until then; the climb was the machine's).
    ("tests/it/steady_latency.rs",
     "a_5s_benchmark_near_capacity_labels_its_count_as_the_simulators_log_shows_it"),
    # The engine's TTFT of each turn within +20 ms of its closed form, in real time (9.8 s):
    # beside two timed tests in a CI run one request's took 278.6 ms against 248.4 (its three
    # fellows 249.7-250.2), the debug simulator's step loop run late by the machine.
    ("tests/it/sessions_report.rs", "per_turn_ttft_drops_with_the_prefix_cache_and_grows_without_it"),
    # Reasoning time in 4 ms steps (2.2 s): beside three timed tests in the first CI run with
    # four workers (commit fc737dc), its median read 7.99 ms against the engine's 20 (5
    # steps): two steps, the first reasoning tokens read in one go. Gaps of 4 ms are within a
    # busy debug process's scheduling delay; with three workers it had passed every run.
    ("tests/it/reasoning_cli.rs", "reasoning_figures_equal_the_closed_form_and_the_log"),
)

# Rough wall times (s) of the longest timed tests, to start them first; any other counts 10.
LONG = {
    "the_slo_answer_of_a_sweep_holds": 100,
    "the_sweep_states_the_capacity": 100,
    "the_trace_sweep_states_the_capacity": 80,
    "the_knee_under_precision_is_the_knee_without_it": 85,
    "requests_outlast_a_quarter_benchmark": 70,
    "sweep_mock_finds_the_simulators_capacity": 60,
    "the_library_example_states_the_closed_form_capacity": 60,
    "capacity_and_slo_rate_batch16": 50,
    "a_sweep_over_a_trace_states": 45,
    "capacity_and_slo_rate_batch8": 40,
    "a_plan_sizes_each_configuration": 60,
    "an_slo_answer_is_never_above_the_capacity": 35,
    "the_github_actions_example_keeps_a_baseline": 85,
    "a_slower_simulator_fails_the_gate": 50,
}


def binaries():
    """(name, package dir, executable, source) of every test binary, built first."""
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
        found.append((os.path.relpath(src, ROOT), pkg_dir, m["executable"], src))
    return found


def in_crates(src):
    return any(os.path.join(ROOT, c) in src for c in TIMED_CRATES)


def timed(src):
    """Whether a test binary is timed: an integration test of a crate in TIMED_CRATES, or one
    whose source (its file, or for a `main.rs` every file beside it) takes the lock."""
    if os.sep + "tests" + os.sep not in src or src == os.path.join(ROOT, "tests", "it", "main.rs"):
        return False
    if in_crates(src):
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


def tests_of(exe, pkg_dir):
    """The test names a binary lists."""
    out = subprocess.run([exe, "--list"], cwd=pkg_dir, stdout=subprocess.PIPE, text=True).stdout
    return [m.group(1) for m in re.finditer(r"^(\S+): test$", out, re.M)]


def module_file(module):
    """The source of a module of the root integration binary."""
    flat = os.path.join(ROOT, "tests", "it", module + ".rs")
    return flat if os.path.exists(flat) else os.path.join(ROOT, "tests", "it", module, "mod.rs")


def takes_lock(path):
    """Whether a module's source (its file, and the files of its folder) takes the lock."""
    files = [path]
    folder = os.path.splitext(path)[0] if not path.endswith("mod.rs") else os.path.dirname(path)
    if os.path.isdir(folder):
        for d, _, names in os.walk(folder):
            files += [os.path.join(d, n) for n in names if n.endswith(".rs")]
    for f in files:
        with open(f, encoding="utf-8") as fh:
            if MARK in fh.read():
                return True
    return False


def root_units(binary):
    """The root integration binary's units, split by module: each timed module's tests one per
    process (timed lane), each other module's tests together (other lane)."""
    name, pkg_dir, exe, _ = binary
    by_module = {}
    for t in tests_of(exe, pkg_dir):
        by_module.setdefault(t.split("::", 1)[0], []).append(t)
    timed_units, other_units = [], []
    for module, tests in sorted(by_module.items()):
        src = os.path.relpath(module_file(module), ROOT)
        if not takes_lock(module_file(module)):
            other_units.append((src, pkg_dir, [exe, "--exact", *tests]))
            continue
        for t in tests:
            short = t.split("::", 1)[1]
            alone = any(f == src and (n == "*" or n == short) for f, n in ALONE)
            weight = next((w for k, w in LONG.items() if k in short), 10)
            timed_units.append((f"{src}::{short}", pkg_dir, [exe, "--exact", t], alone, weight))
    return timed_units, other_units


def is_root(binary):
    return binary[3] == os.path.join(ROOT, "tests", "it", "main.rs")


def units(binary):
    """A timed binary's units: (label, pkg_dir, argv, alone, weight)."""
    name, pkg_dir, exe, src = binary
    if in_crates(src):
        return [(name, pkg_dir, [exe], False, 60)]
    out = []
    for t in tests_of(exe, pkg_dir):
        alone = any(f == name and (n == "*" or n == t) for f, n in ALONE)
        weight = next((w for k, w in LONG.items() if k in t), 10)
        out.append((f"{name}::{t}", pkg_dir, [exe, "--exact", t], alone, weight))
    return out


def background():
    """The other lane's scheduling: SCHED_IDLE (Linux), which the kernel runs only when no
    normal task wants the core and preempts as soon as one wakes (nice 19 alone still lets a
    task finish its slice). Falls back to nice 19 where SCHED_IDLE is missing
    (docs/testing.md, "Lanes")."""
    os.nice(19)
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:
        try:
            os.sched_setscheduler(0, idle, os.sched_param(0))
        except OSError:
            pass


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []

    def run(self, lane, label, pkg_dir, argv):
        start = time.monotonic()
        low = background if lane == "other" else None
        p = subprocess.run(
            argv, cwd=pkg_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=low
        )
        secs = time.monotonic() - start
        text = p.stdout.decode("utf-8", "replace")
        with self.lock:
            status = "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"
            print(f"\n===== [{lane}] {label}: {status} in {secs:.1f} s =====", flush=True)
            print(text, end="", flush=True)
            self.rows.append((secs, lane, label, p.returncode))


def other_lane(results, rest, root_other):
    for name, pkg_dir, exe, _ in rest:
        results.run("other", name, pkg_dir, [exe])
    for label, pkg_dir, argv in root_other:
        results.run("other", label, pkg_dir, argv)
    results.run("other", "doc tests", ROOT, ["cargo", "test", "--workspace", "--doc"])


def timed_lanes(results, queue, workers):
    lock = threading.Lock()

    def worker(i):
        while True:
            with lock:
                if not queue:
                    return
                label, pkg_dir, argv, _, _ = queue.pop(0)
            results.run(f"timed{i}", label, pkg_dir, argv)

    threads = [threading.Thread(target=worker, args=(i + 1,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    workers = 3
    if "--workers" in sys.argv:
        workers = int(sys.argv[sys.argv.index("--workers") + 1])
    started = time.monotonic()
    found = binaries()
    built = time.monotonic() - started
    root_timed, root_other = [], []
    for b in filter(is_root, found):
        t, o = root_units(b)
        root_timed += t
        root_other += o
    rest = [b for b in found if not timed(b[3]) and not is_root(b)]
    all_units = [u for b in found if timed(b[3]) for u in units(b)] + root_timed
    alone = [u for u in all_units if u[3]]
    shared = sorted((u for u in all_units if not u[3]), key=lambda u: -u[4])
    n_shared = len(shared)
    results = Results()
    other = threading.Thread(target=other_lane, args=(results, rest, root_other))
    other.start()
    for label, pkg_dir, argv, _, _ in alone:
        results.run("alone", label, pkg_dir, argv)
    timed_lanes(results, shared, workers)
    other.join()
    ran = time.monotonic() - started - built
    print("\n===== test units, slowest first =====")
    for secs, label, name, rc in sorted(results.rows, reverse=True):
        print(f"{secs:8.1f} s  {label:6}  {name}{'' if rc == 0 else '  FAILED'}")
    failed = [r for r in results.rows if r[3] != 0]
    print(
        f"built in {built:.0f} s; {len(results.rows)} units in {ran:.0f} s "
        f"({len(alone)} alone, {n_shared} on {workers} timed workers, "
        f"{len(rest)} binaries, {len(root_other)} untimed root modules and the doc tests beside "
        f"them); {len(failed)} failed"
    )
    for _, label, name, _ in failed:
        print(f"FAILED: {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
