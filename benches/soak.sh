#!/usr/bin/env bash
# Soak: bench against the simulator at a high constant rate with 1% mixed faults (500, 503,
# reset, stream error: 0.25% each), as BENCHMARKS benchmarks of RATE x DURATION / BENCHMARKS
# requests each (at most CONCURRENCY in flight). Two checks, and exit 1 if either fails:
#
# - every request is accounted for: bench's total plus its resends equals what the simulator
#   answered (its /metrics);
# - memory is flat: the client's peak RSS during the last benchmark is no higher than during the
#   second (the first warms the allocator and the runtime up) by more than TOLERANCE percent.
#   Each benchmark keeps a compact entry per request until it ends (docs/reports.md), so the
#   RSS rises within a benchmark by design; benchmarks of the same size must peak alike.
#
# The peak is exact, not sampled: every SAMPLE seconds the script reads the kernel's high-water
# mark (VmHWM) and resets it (`echo 5 > /proc/PID/clear_refs`), and each interval goes to the
# benchmark running at its end (the benchmarks' wall-clock spans come from the report).
#
#   benches/soak.sh                                  # 600 s at 5,000 req/s, 5 benchmarks
#   DURATION=90 RATE=5000 benches/soak.sh            # the short run in docs/reliability.md
#   BIN=path/to/bench benches/soak.sh                # another build (default: release)
#
# Prints the peak per benchmark, then one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}     # seconds of load
RATE=${RATE:-5000}            # requests per second (constant)
BENCHMARKS=${BENCHMARKS:-5}   # benchmarks of the same size, one after the other
SAMPLE=${SAMPLE:-1}           # seconds between RSS readings
TOKENS=${TOKENS:-16}          # output tokens per request
CONCURRENCY=${CONCURRENCY:-256}  # in-flight cap (requests beyond it wait: client queue time)
TOLERANCE=${TOLERANCE:-10}    # percent the last benchmark's peak may exceed the second's
# A request count rather than a time limit, so that no request is cut off at the end and the
# count can be compared exactly with the simulator's.
REQUESTS=$((RATE * DURATION / BENCHMARKS))

if [ -z "${BIN:-}" ]; then
  cargo build --release --bin bench >/dev/null 2>&1 || cargo build --release --bin bench
  BIN=target/release/bench
fi
TMP=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT

# 1% of requests get a fault, four kinds of 0.25% each; zero-delay generation.
"$BIN" mock-server --port 0 --zero-delay \
  --fail-500 0.0025 --fail-503 0.0025 --reset-rate 0.0025 \
  --stream-error-rate 0.0025 >"$TMP/server.out" 2>"$TMP/server.err" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.out" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^listening on //p' "$TMP/server.out")

RATES=$(printf "$RATE,%.0s" $(seq "$BENCHMARKS")); RATES=${RATES%,}
"$BIN" run --target "$URL" --rate-type constant --rate "$RATES" \
  --max-concurrency "$CONCURRENCY" --max-requests "$REQUESTS" \
  --data "prompt_tokens=32,output_tokens=$TOKENS" --console none -q \
  --output "$TMP/soak.json" 2>"$TMP/bench.err" &
CLIENT=$!
: >"$TMP/rss"
while kill -0 $CLIENT 2>/dev/null; do
  sleep "$SAMPLE"
  # "<unix time> <peak RSS KiB since the last reading>"; the reset may be refused (then the
  # high-water mark only grows, which can only make the check stricter).
  HWM=$(awk '/VmHWM/ {print $2}' /proc/$CLIENT/status 2>/dev/null || true)
  (echo 5 >/proc/$CLIENT/clear_refs) 2>/dev/null || true
  [ -n "$HWM" ] && echo "$(date +%s.%N) $HWM" >>"$TMP/rss"
done
set +e; wait $CLIENT; CODE=$?; set -e
tail -n 3 "$TMP/bench.err" >&2
kill -0 $SERVER 2>/dev/null || { echo "soak: the simulator died:" >&2; tail -n 5 "$TMP/server.err" >&2; exit 1; }

METRICS=$(curl -s "$URL/metrics" 2>/dev/null || python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]+'/metrics').read().decode())" "$URL")
ANSWERED=$(echo "$METRICS" | awk '/^vllm:request_success_total|^bench_mock:request_errors_total/ {s+=$2} END {printf "%d", s}')
RESENT=$(grep -o '[0-9]* request(s) were resent' "$TMP/bench.err" | awk '{print $1}' || true)
RESENT=${RESENT:-0}
python3 - "$TMP/soak.json" "$TMP/rss" "$ANSWERED" "$RESENT" "$CODE" "$RATE" "$TOLERANCE" <<'PY'
import json, sys
from datetime import datetime
run, rss_path, answered, resent, code, rate, tolerance = sys.argv[1:]
bs = json.load(open(run))["benchmarks"]
tot = {k: sum(b["requests"][k] for b in bs) for k in ("total", "completed", "incomplete", "errored")}
starts = [datetime.fromisoformat(b["start"].replace("Z", "+00:00")).timestamp() for b in bs]
samples = [tuple(map(float, l.split())) for l in open(rss_path) if l.strip()]
# An interval belongs to the benchmark that was running at its end (its report's computation
# and files, after its end, count with it: they come before the next one starts).
peaks = [0.0] * len(bs)
for t, kib in samples:
    i = max([j for j, s in enumerate(starts) if s <= t] or [0])
    peaks[i] = max(peaks[i], kib / 1024)
for i, (b, p) in enumerate(zip(bs, peaks)):
    print(f"benchmark {i + 1}: {b['requests']['total']} requests, "
          f"{b['rates']['requests_per_s']:.0f} req/s, peak RSS {p:.1f} MiB")
growth = peaks[-1] / max(1e-9, peaks[min(1, len(peaks) - 1)]) - 1
flat = growth * 100 <= float(tolerance)
accounted = tot["total"] + int(resent) == int(answered)
print(
    f"soak: exit {code}, {len(bs)} benchmarks at {rate} req/s: bench total {tot['total']} "
    f"(completed {tot['completed']}, incomplete {tot['incomplete']}, errored {tot['errored']}) "
    f"+ resent {resent} vs simulator answered {answered}: "
    f"{'all accounted' if accounted else 'MISMATCH'}; peak RSS per benchmark "
    + ", ".join(f"{p:.1f}" for p in peaks)
    + f" MiB: last vs second {growth * 100:+.1f}% ({'flat' if flat else 'GROWING'}, "
    f"tolerance {tolerance}%)"
)
sys.exit(0 if accounted and flat and code == "0" else 1)
PY
