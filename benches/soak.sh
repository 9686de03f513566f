#!/usr/bin/env bash
# Soak: bench against the simulator at a high constant rate with 1% mixed faults (500, 503,
# reset, stream error: 0.25% each), three benchmarks of RATE x DURATION / 3 requests each (at most
# CONCURRENCY in flight). Checks that every request is accounted for (bench's total plus its
# resends equals what the simulator answered, from its /metrics) and that memory does not leak:
# the client's RSS (sampled every SAMPLE seconds from /proc) peaks no higher in the third
# benchmark than in the second (+10% allowed; the first warms the allocator up). Within a benchmark the RSS grows by design with
# the report's compact entry per request. Figures go in docs/reliability.md.
#
#   benches/soak.sh                           # 600 s at 5,000 req/s
#   DURATION=60 RATE=5000 benches/soak.sh     # the short run in docs/reliability.md
#
# Prints the RSS samples, then one summary line; exits 1 on a mismatch or a leak.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}   # seconds of load
RATE=${RATE:-5000}          # requests per second (constant)
SAMPLE=${SAMPLE:-5}         # seconds between RSS samples
TOKENS=${TOKENS:-16}        # output tokens per request
CONCURRENCY=${CONCURRENCY:-256}  # in-flight cap (requests beyond it wait: client queue time)
# A request count rather than a time limit, so that no request is cut off at the end and the
# count can be compared exactly with the simulator's.
# Three benchmarks of RATE x DURATION / 3 requests each.
REQUESTS=$((RATE * DURATION / 3))

cargo build --release --bin bench >/dev/null 2>&1 || cargo build --release --bin bench
BIN=target/release/bench
TMP=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT

# 1% of requests get a fault, four kinds of 0.25% each; zero-delay generation.
"$BIN" mock-server --port 0 --zero-delay \
  --fail-500 0.0025 --fail-503 0.0025 --reset-rate 0.0025 \
  --stream-error-rate 0.0025 >"$TMP/server.out" 2>/dev/null &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.out" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^listening on //p' "$TMP/server.out")

"$BIN" run --target "$URL" --rate-type constant --rate "$RATE,$RATE,$RATE" \
  --max-concurrency "$CONCURRENCY" --max-requests "$REQUESTS" \
  --data "prompt_tokens=32,output_tokens=$TOKENS" --console none -q \
  --output "$TMP/soak.json" 2>"$TMP/bench.err" &
CLIENT=$!
: >"$TMP/rss"
while kill -0 $CLIENT 2>/dev/null; do
  awk '/VmRSS/ {print $2}' /proc/$CLIENT/status 2>/dev/null >>"$TMP/rss" || true
  sleep "$SAMPLE"
done
set +e; wait $CLIENT; CODE=$?; set -e
tail -n 3 "$TMP/bench.err" >&2

METRICS=$(curl -s "$URL/metrics" 2>/dev/null || python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]+'/metrics').read().decode())" "$URL")
ANSWERED=$(echo "$METRICS" | awk '/^vllm:request_success_total|^bench_mock:request_errors_total/ {s+=$2} END {printf "%d", s}')
RESENT=$(grep -o '[0-9]* request(s) were resent' "$TMP/bench.err" | awk '{print $1}' || true)
RESENT=${RESENT:-0}
python3 - "$TMP/soak.json" "$TMP/rss" "$ANSWERED" "$RESENT" "$CODE" "$RATE" "$DURATION" <<'PY'
import json, os, sys, statistics
run, rss_path, answered, resent, code, rate, duration = sys.argv[1:]
bs = json.load(open(run))["benchmarks"]
tot = {k: sum(b["requests"][k] for b in bs) for k in ("total", "completed", "incomplete", "errored")}
rss = [int(x) for x in open(rss_path).read().split() if x.strip()]
for i, x in enumerate(rss):
    print(f"rss[{i}] {x/1024:.1f} MiB")
# The report keeps a compact entry per request of the running benchmark (a few integers and
# one u32 per chunk, docs/reports.md), released when the benchmark ends: within a benchmark
# the RSS grows with its requests by design. A leak shows as the third benchmark (same size)
# peaking above the second (the first warms the allocator up).
third = len(rss) // 3
peak1, peak2, peak3 = (max(rss[i * third:(i + 1) * third] or [0]) for i in range(3))
peak3 = max(peak3, max(rss[3 * third:] or [0]))
growth = peak3 / max(1, peak2) - 1
accounted = tot["total"] + int(resent) == int(answered)
print(
    f"soak: exit {code}, 3 benchmarks at {rate} req/s: bench total {tot['total']} "
    f"(completed {tot['completed']}, incomplete {tot['incomplete']}, errored {tot['errored']}) "
    f"+ resent {resent} vs simulator answered {answered}: "
    f"{'all accounted' if accounted else 'MISMATCH'}; achieved "
    + ", ".join(f"{b['rates']['requests_per_s']:.0f}" for b in bs)
    + f" req/s; RSS peaks by thirds {peak1/1024:.1f}, {peak2/1024:.1f}, {peak3/1024:.1f} MiB "
    f"(third vs second {growth*100:+.1f}%)"
)
sys.exit(0 if accounted and growth < 0.10 and code == "0" else 1)
PY
