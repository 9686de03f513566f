"""Peer load generators run against the same server as bench, for side-by-side figures.

Used by `benches/scheduler.py`; each peer runs in its own virtualenv given by path, offline
(no hub downloads: the tokenizer is bench's built-in one, written to a local folder).

  guidellm_constant(venv, url, rate, seconds, tmp): `guidellm run` (guidellm 0.8.x) at a
      constant rate, synthetic 32-token prompts / 128 output tokens, streamed /v1/completions.
  vllm_constant(venv, url, rate, seconds, tmp): `vllm bench serve` (vLLM 0.32), the same
      workload: random dataset 32 / 128 tokens, --ignore-eos, evenly spaced requests.

Every peer is run as a new user would run it (the tool's defaults, except what the scenario
needs: for vLLM, `--burstiness inf`, its constant rate), while a sampler reads /proc every
200 ms to measure the CPU time and memory of the peer's whole process tree: guidellm starts
10 worker processes by default, so the peak RSS of one process (what /usr/bin/time reports)
would understate it.

Figures are computed from the per-request timings the peer writes, so that they are defined as
bench defines its own: dispatch delay = actual send - intended send, per request.

The virtualenvs (outside the repository: each pulls torch, 6 to 9 GB):
    python3 -m venv /work/venvs/guidellm && /work/venvs/guidellm/bin/pip install guidellm==0.8.1
    python3 -m venv /work/venvs/vllm && /work/venvs/vllm/bin/pip install vllm
vLLM needs no GPU here: only its client (`vllm bench serve`) runs; it imports with warnings
about missing CUDA kernels.

Alone, against a server already listening (`bench mock-server --zero-delay --ignore-eos`):
    python3 benches/peers.py --url URL --guidellm VENV [--vllm VENV] --rates 100,300 --seconds 10
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILTIN_TOKENIZER = os.path.join(ROOT, "crates", "tokenizer", "assets", "builtin-tokenizer.json")

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")

# Columns of the side-by-side table printed by `benches/scheduler.py` (see `table_row`).
TABLE_HEADER = (
    "| peer | target req/s | achieved req/s | completed req/s | dispatch delay mean / p50 / p99 ms "
    "| TTFT p50 / p99 ms (from send) | TTFT p50 / p99 ms (from intended) "
    "| TTFT p50 / p99 ms (simulator) | errors "
    "| CPU s in window (total) | peak RSS MiB tree (PSS) | load avg before |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def tokenizer_dir(tmp):
    """Writes bench's built-in tokenizer as a Hugging Face tokenizer folder; returns its path.

    The simulator counts prompt tokens with the same tokenizer, so the peer's synthetic prompts
    have exactly the length it asked for, and nothing is fetched from the hub.
    """
    tok = os.path.join(tmp, "tokenizer")
    os.makedirs(tok, exist_ok=True)
    shutil.copy(BUILTIN_TOKENIZER, os.path.join(tok, "tokenizer.json"))
    with open(os.path.join(tok, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, f)
    return tok


def _children():
    """Maps each pid to the list of its children's pids, from /proc."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we were looking
        # The command name (field 2) may hold spaces; the fields after it are fixed.
        fields = stat[stat.rfind(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def _tree(root):
    """Pids of root and all its descendants alive now."""
    kids = _children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def _proc_usage(pid):
    """(CPU seconds, RSS bytes, PSS bytes) of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rfind(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
        rss = int(fields[21]) * PAGE
        pss = 0
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
        return cpu, rss, pss
    except (OSError, ValueError, IndexError):
        return None


def run_tree(cmd, env, cwd, log_path, interval=0.2):
    """Runs cmd, sampling its process tree until it exits.

    Returns a dict: rc; cpu_s, the user + system CPU of the whole tree (from wait4, which
    includes every descendant the tree reaped); samples, a list of (epoch seconds, tree CPU
    seconds so far, tree RSS bytes, tree PSS bytes); peak_rss and peak_pss, the largest sums
    seen (RSS counts pages shared between processes once per process, PSS splits them).
    """
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    cpu_seen = {}  # pid -> last CPU seconds read: a process that exits keeps its last value
    samples, peak_rss, peak_pss = [], 0, 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now, rss, pss = time.time(), 0, 0
        for p in _tree(proc.pid):
            u = _proc_usage(p)
            if u is not None:
                cpu_seen[p] = u[0]
                rss += u[1]
                pss += u[2]
        samples.append((now, sum(cpu_seen.values()), rss, pss))
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(interval)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": proc.returncode, "cpu_s": usage.ru_utime + usage.ru_stime, "samples": samples,
            "peak_rss": peak_rss, "peak_pss": peak_pss}


def cpu_between(samples, t0, t1):
    """Tree CPU seconds spent between epoch times t0 and t1, interpolated from the samples."""
    def at(t):
        if not samples:
            return 0.0
        if t <= samples[0][0]:
            return samples[0][1]
        for (ta, ca, _, _), (tb, cb, _, _) in zip(samples, samples[1:]):
            if ta <= t <= tb:
                return ca + (cb - ca) * (t - ta) / max(tb - ta, 1e-9)
        return samples[-1][1]
    return at(t1) - at(t0)


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in 0..100) of an ascending list; None when empty."""
    if not sorted_values:
        return None
    k = math.ceil(q / 100.0 * len(sorted_values)) - 1
    return sorted_values[max(0, min(len(sorted_values) - 1, k))]


def _summary_ms(values_s):
    """mean, p50 and p99 in milliseconds of a list of durations in seconds."""
    v = sorted(x * 1000.0 for x in values_s)
    return {"mean": sum(v) / len(v) if v else None, "p50": percentile(v, 50), "p99": percentile(v, 99),
            "count": len(v)}


def _tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def log_size(path):
    """Size of the simulator's request log (0 when there is none), to read only what follows."""
    try:
        return os.path.getsize(path) if path else 0
    except OSError:
        return 0


def server_ttft(path, offset):
    """TTFT as the simulator saw it (request received -> first token written), ms, sorted, for
    the entries of its --log-requests file after byte offset: the truth the peers' TTFT is
    compared with. Empty when there is no log."""
    out = []
    if not path:
        return out
    try:
        with open(path) as f:
            f.seek(offset)
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line being written as we read
                first, arrival = e.get("first_token_unix_ns"), e.get("arrival_unix_ns")
                if first is not None and arrival is not None:
                    out.append((first - arrival) / 1e6)
    except OSError:
        return out
    return sorted(out)


def _add_truth(res, server_log, offset):
    """Adds the simulator's TTFT p50 / p99 (truth_p50, truth_p99, ms) of the requests logged
    since offset to res."""
    t = server_ttft(server_log, offset)
    res["truth_p50"], res["truth_p99"] = percentile(t, 50), percentile(t, 99)


def guidellm_constant(venv, url, rate, seconds, tmp, server_log=None):
    """Runs `guidellm run` at a constant rate for `seconds` against url; returns its figures.

    Keys: peer, target, seconds, rc; achieved (requests started within guidellm's measured
    window, per second), completed_rps (requests finished successfully within it, per second),
    disp (dispatch delay = request_start - targeted_start per started request: mean/p50/p99 ms),
    g_disp_mean / g_disp_p99 (guidellm's own request_dispatch_delay, successful requests, ms),
    ttft_p50 / ttft_p99 (guidellm's time_to_first_token_ms of successful requests, measured
    from its request_start), ttft_int_p50 / ttft_int_p99 (first token - targeted_start, ms),
    completed, errored, incomplete, error (first error message), load1 (the machine's load
    average before the run), cpu_window_s (tree CPU inside the measured window), cpu_s (tree
    CPU of the whole run, start-up included), rss_mib and pss_mib (peak of the tree's summed
    RSS / PSS), report (guidellm's JSON file), log; with server_log (the simulator's
    --log-requests file), truth_p50 / truth_p99: the simulator's TTFT of the same requests.
    On failure (no report written) the dict has rc, error and the log's tail.
    """
    out = os.path.join(tmp, f"guidellm-{rate}.json")
    log = os.path.join(tmp, f"guidellm-{rate}.log")
    scenario = {
        "spec": {
            "backend": {"kind": "openai_http", "target": url, "model": "mock-model",
                        "request_format": "/v1/completions", "stream": True},
            "profile": {"kind": "constant", "rate": rate},
            "tokenizer": {"kind": "hf_auto", "model": tokenizer_dir(tmp)},
            "data": [{"kind": "synthetic_text", "prompt_tokens": 32, "output_tokens": 128}],
            "constraints": [{"kind": "max_duration", "seconds": seconds}],
            "outputs": [{"kind": "json", "path": out}],
        }
    }
    sc = os.path.join(tmp, f"guidellm-{rate}.scenario.json")
    with open(sc, "w") as f:
        json.dump(scenario, f)
    if os.path.exists(out):
        os.remove(out)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    # The machine's 1-minute load average before the run: on a shared machine, a peer that
    # falls behind may be starved of CPU rather than slow, and this tells which.
    load1 = os.getloadavg()[0]
    offset = log_size(server_log)
    # cwd=tmp: guidellm writes guidellm.log into its working directory.
    run = run_tree([os.path.join(venv, "bin", "guidellm"), "run", "--scenario", sc,
                    "--disable-console-interactive"], env=env, cwd=tmp, log_path=log)
    res = {"peer": "guidellm", "target": rate, "seconds": seconds, "rc": run["rc"], "log": log,
           "load1": load1, "cpu_s": run["cpu_s"],
           "rss_mib": run["peak_rss"] / 2**20, "pss_mib": run["peak_pss"] / 2**20}
    _add_truth(res, server_log, offset)
    if not os.path.exists(out):
        res["error"] = f"guidellm wrote no report (exit {run['rc']}); log tail:\n{_tail(log)}"
        return res
    with open(out) as f:
        report = json.load(f)
    res["report"] = out
    benches = report.get("benchmarks") or []
    if not benches:
        res["error"] = "guidellm's report holds no benchmark"
        return res
    b = benches[0]
    t0, t1 = b.get("start_time"), b.get("end_time")
    if t0 is None or t1 is None:
        res["error"] = "guidellm's report has no benchmark start_time / end_time"
        return res
    dur = max(t1 - t0, 1e-9)
    res["duration"] = dur

    # Every request guidellm started, whatever its outcome; requests cancelled before they
    # were sent have no request_start.
    groups = b.get("requests") or {}
    started, delays, ttft_int = 0, [], []
    completed_in_window = 0
    for status in ("successful", "errored", "incomplete"):
        for r in groups.get(status) or []:
            tm = (r.get("info") or {}).get("timings") or {}
            start, target = tm.get("request_start"), tm.get("targeted_start")
            if start is None or not t0 <= start <= t1:
                continue
            started += 1
            if target is not None:
                delays.append(start - target)
                first = tm.get("first_token_iteration")
                if status == "successful" and first is not None:
                    ttft_int.append(first - target)
            end = tm.get("request_end")
            if status == "successful" and end is not None and end <= t1:
                completed_in_window += 1
    res["achieved"] = started / dur
    res["completed_rps"] = completed_in_window / dur
    res["disp"] = _summary_ms(delays)
    ti = _summary_ms(ttft_int)
    res["ttft_int_p50"], res["ttft_int_p99"] = ti["p50"], ti["p99"]

    m = b.get("metrics") or {}
    totals = m.get("request_totals") or {}
    res["completed"] = totals.get("successful")
    res["errored"] = totals.get("errored")
    res["incomplete"] = totals.get("incomplete")
    errs = groups.get("errored") or []
    res["error"] = (errs[0].get("info") or {}).get("error") if errs else None
    gd = (m.get("request_dispatch_delay") or {}).get("successful") or {}
    res["g_disp_mean"] = gd["mean"] * 1000.0 if gd.get("mean") is not None else None
    p99 = (gd.get("percentiles") or {}).get("p99")
    res["g_disp_p99"] = p99 * 1000.0 if p99 is not None else None
    tt = (m.get("time_to_first_token_ms") or {}).get("successful") or {}
    res["ttft_p50"] = tt.get("median")
    res["ttft_p99"] = (tt.get("percentiles") or {}).get("p99")
    res["cpu_window_s"] = cpu_between(run["samples"], t0, t1)
    return res


def vllm_constant(venv, url, rate, seconds, tmp, server_log=None):
    """Runs `vllm bench serve` at a constant rate for about `seconds`; returns its figures.

    vLLM's client sends a fixed number of prompts, so it is given rate x seconds of them, with
    `--burstiness inf` (evenly spaced requests: its default, burstiness 1, is a Poisson
    process). Same keys as guidellm_constant, with these definitions:
      achieved: requests sent per second, (n - 1) / (last send - first send);
      completed_rps: vLLM's request_throughput (completed requests / its benchmark duration);
      disp: dispatch delay = send time - intended time. vLLM does not save the intended times,
        only the send times (`start_times`, time.perf_counter). Its pacer schedules request i at
        t0 + (i + 1) / rate with t0 unknown, so t0 is estimated as the earliest
        send_i - (i + 1) / rate: the figures are exact when some request left on time (in
        practice the first one) and otherwise a lower bound;
      ttft_p50 / ttft_p99: vLLM's own, measured from the send; ttft_int_*: from intended time;
      cpu_window_s: tree CPU between the first send and the last response;
      truth_p50 / truth_p99 include vLLM's one test request sent before the run.
    """
    n = max(1, int(round(rate * seconds)))
    out_name = f"vllm-{rate}.json"
    out = os.path.join(tmp, out_name)
    log = os.path.join(tmp, f"vllm-{rate}.log")
    if os.path.exists(out):
        os.remove(out)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    load1 = os.getloadavg()[0]
    offset = log_size(server_log)
    cmd = [os.path.join(venv, "bin", "vllm"), "bench", "serve", "--backend", "openai",
           "--base-url", url, "--endpoint", "/v1/completions", "--model", "mock-model",
           "--tokenizer", tokenizer_dir(tmp), "--dataset-name", "random",
           "--random-input-len", "32", "--random-output-len", "128", "--ignore-eos",
           "--request-rate", str(rate), "--burstiness", "inf", "--num-prompts", str(n),
           "--save-result", "--save-detailed", "--result-dir", tmp, "--result-filename", out_name,
           "--disable-tqdm"]
    run = run_tree(cmd, env=env, cwd=tmp, log_path=log)
    res = {"peer": "vllm", "target": rate, "seconds": seconds, "rc": run["rc"], "log": log,
           "load1": load1, "cpu_s": run["cpu_s"],
           "rss_mib": run["peak_rss"] / 2**20, "pss_mib": run["peak_pss"] / 2**20}
    _add_truth(res, server_log, offset)
    if not os.path.exists(out):
        res["error"] = f"vllm wrote no result (exit {run['rc']}); log tail:\n{_tail(log)}"
        return res
    with open(out) as f:
        report = json.load(f)
    res["report"] = out
    starts, ttfts = report.get("start_times") or [], report.get("ttfts") or []
    lats, errors = report.get("latencies") or [], report.get("errors") or []
    if len(starts) < 2 or not len(starts) == len(ttfts) == len(lats):
        res["error"] = "vllm's result has no per-request start_times / ttfts / latencies"
        return res
    # Outputs are in request order (asyncio.gather over the tasks in creation order).
    t0 = min(st - (i + 1) / rate for i, st in enumerate(starts))
    delays = [st - (t0 + (i + 1) / rate) for i, st in enumerate(starts)]
    ok = [i for i, e in enumerate(errors) if not e] if len(errors) == len(starts) else range(len(starts))
    ttft_int = [starts[i] + ttfts[i] - (t0 + (i + 1) / rate) for i in ok]
    res["achieved"] = (len(starts) - 1) / max(max(starts) - min(starts), 1e-9)
    res["completed_rps"] = report.get("request_throughput")
    res["disp"] = _summary_ms(delays)
    ti = _summary_ms(ttft_int)
    res["ttft_int_p50"], res["ttft_int_p99"] = ti["p50"], ti["p99"]
    res["ttft_p50"], res["ttft_p99"] = report.get("median_ttft_ms"), report.get("p99_ttft_ms")
    res["completed"], res["errored"] = report.get("completed"), report.get("failed")
    res["error"] = next((e for e in errors if e), None)
    # vLLM's times come from time.perf_counter, which on Linux is CLOCK_MONOTONIC, shared by
    # all processes: shift them onto the epoch clock of the samples.
    shift = time.time() - time.perf_counter()
    end = max(st + lat for st, lat in zip(starts, lats))
    res["cpu_window_s"] = cpu_between(run["samples"], min(starts) + shift, end + shift)
    res["duration"] = report.get("duration")
    return res


def _f(x, fmt="{:.1f}"):
    return "-" if x is None else fmt.format(x)


def table_row(r):
    """One markdown row of TABLE_HEADER for a result of guidellm_constant or vllm_constant."""
    if "achieved" not in r:
        return (f"| {r['peer']} | {r['target']} | failed (exit {r['rc']}, see {r['log']}) | | | | | | | "
                f"{_f(r['cpu_s'])} | {_f(r['rss_mib'], '{:.0f}')} | {r['load1']:.1f} |")
    d = r["disp"]
    return (f"| {r['peer']} | {r['target']} | {r['achieved']:.1f} | {r['completed_rps']:.1f} | "
            f"{_f(d['mean'], '{:.2f}')} / {_f(d['p50'], '{:.2f}')} / {_f(d['p99'], '{:.2f}')} | "
            f"{_f(r['ttft_p50'], '{:.2f}')} / {_f(r['ttft_p99'], '{:.2f}')} | "
            f"{_f(r['ttft_int_p50'], '{:.2f}')} / {_f(r['ttft_int_p99'], '{:.2f}')} | "
            f"{_f(r.get('truth_p50'), '{:.2f}')} / {_f(r.get('truth_p99'), '{:.2f}')} | "
            f"{r['errored']}{' ' + str(r['error']) if r.get('error') else ''} | "
            f"{_f(r['cpu_window_s'])} ({_f(r['cpu_s'])}) | "
            f"{_f(r['rss_mib'], '{:.0f}')} ({_f(r['pss_mib'], '{:.0f}')}) | {r['load1']:.1f} |")


def main():
    """Runs only the peers, against a server already listening (bench's own runs are
    `benches/scheduler.py`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000")
    ap.add_argument("--guidellm", default=None, help="virtualenv holding guidellm")
    ap.add_argument("--vllm", default=None, help="virtualenv holding vllm")
    ap.add_argument("--rates", default="100,300,1000")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--tmp", default=None, help="folder for reports and logs (default: a new one)")
    ap.add_argument("--server-log", default=None,
                    help="the simulator's --log-requests file, for its TTFT beside the peers'")
    a = ap.parse_args()
    tmp = a.tmp or tempfile.mkdtemp(prefix="bench-peers-")
    os.makedirs(tmp, exist_ok=True)
    print(TABLE_HEADER)
    for r in [int(x) for x in a.rates.split(",") if x]:
        if a.guidellm:
            g = guidellm_constant(a.guidellm, a.url, r, a.seconds, tmp, a.server_log)
            print(table_row(g), flush=True)
        if a.vllm:
            v = vllm_constant(a.vllm, a.url, r, a.seconds, tmp, a.server_log)
            print(table_row(v), flush=True)
    print(f"reports and logs in {tmp}")


if __name__ == "__main__":
    main()
