"""Issue 20's reproduction loop (not a test): the two-turn run of tests/it/llamacpp.rs against a
fresh llama.cpp server each time, with `ss` snapshots of the server's port while bench runs and
the server's /slots and log kept on any failure (first-byte timeout 30 s instead of 600 s).

    python3 benches/llamacpp_two_turn_loop.py N [extra bench args...]

Needs .ci/setup's llama venv and a debug build (BENCH=path/to/bench to use another). Writes
into $TMPDIR/bench-repro/.
"""
import json, os, subprocess, sys, tempfile, time, urllib.request
PY = os.path.expanduser("~/.cache/bench/llama-venv/bin/python")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE = os.path.join(ROOT, "tests/it/llamacpp/serve.py")
OUT = os.path.join(tempfile.gettempdir(), "bench-repro")
os.makedirs(OUT, exist_ok=True)
BENCH = os.environ.get("BENCH", os.path.join(ROOT, "target/debug/bench"))
n = int(sys.argv[1]); extra = sys.argv[2:]
fails = 0
for i in range(n):
    srv = subprocess.Popen([PY, SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(OUT + f"/server-{i}.log", "w"), text=True)
    addr = srv.stdout.readline().strip()
    out = OUT + f"/run-{i}.json"
    args = [BENCH, "run", "--target", addr, "--rate-type", "concurrent", "--rate", "1", "--max-requests", "4",
            "--data", "turns=2,prompt_tokens=16,output_tokens=8", "--think-time", "50ms", "--save-records",
            "--console", "vllm", "--quiet", "--first-byte-timeout", "30", "--output", out] + extra
    t0 = time.time()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = addr.rsplit(":", 1)[1]; snaps = []
    while p.poll() is None:
        time.sleep(1)
        ss = subprocess.run(["ss", "-tanpi", f"( sport = :{port} or dport = :{port} )"], capture_output=True, text=True).stdout
        snaps = (snaps + [f"t={time.time()-t0:.1f}\n" + ss])[-3:]
    p.stdout.read()
    dt = time.time() - t0
    ok = False
    try:
        r = json.load(open(out)); b = r["benchmarks"][0]
        ok = b["requests"]["completed"] == 4
        errs = b.get("errors")
    except Exception as e:
        errs = repr(e)
    if not ok:
        fails += 1
        try:
            slots = urllib.request.urlopen(addr + "/slots", timeout=5).read().decode()
        except Exception as e:
            slots = repr(e)
        open(OUT + f"/slots-{i}.json", "w").write(slots)
        open(OUT + f"/ss-{i}.txt", "w").write("\n".join(snaps))
    print(f"iter {i}: ok={ok} rc={p.returncode} {dt:.1f}s errs={errs}", flush=True)
    srv.stdin.close(); srv.kill(); srv.wait()
print(f"fails {fails}/{n}")
