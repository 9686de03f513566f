#!/usr/bin/env bash
# Soak: bench against the simulator at a high constant rate with 1% mixed faults, for a long
# time. Checks that every request is accounted for (bench's total plus its resends equals what
# the simulator answered, from its /metrics) and that the client's memory stays flat (RSS
# sampled every SAMPLE seconds from /proc). Figures go in docs/reliability.md.
#
#   benches/soak.sh                           # 600 s at 5,000 req/s
#   DURATION=60 RATE=5000 benches/soak.sh     # the short run in docs/reliability.md
#
# Prints the RSS samples, then one summary line; exits 1 when a request is unaccounted for or
# the RSS of the second half grew more than 10% over the first half's.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}   # seconds of load
RATE=${RATE:-5000}          # requests per second (constant)
SAMPLE=${SAMPLE:-5}         # seconds between RSS samples
TOKENS=${TOKENS:-16}        # output tokens per request

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

"$BIN" run --target "$URL" --rate-type constant --rate "$RATE" --max-seconds "$DURATION" \
  --data "prompt_tokens=32,output_tokens=$TOKENS" --console none -q \
  --output "$TMP/soak.json" 2>"$TMP/bench.err" &
CLIENT=$!
: >"$TMP/rss"
while kill -0 $CLIENT 2>/dev/null; do
  awk '/VmRSS/ {print $2}' /proc/$CLIENT/status 2>/dev/null >>"$TMP/rss" || true
  sleep "$SAMPLE"
done
set +e; wait $CLIENT; CODE=$?; set -e

METRICS=$(curl -s "$URL/metrics" 2>/dev/null || python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]+'/metrics').read().decode())" "$URL")
ANSWERED=$(echo "$METRICS" | awk '/^vllm:request_success_total|^bench_mock:request_errors_total/ {s+=$2} END {printf "%d", s}')
RESENT=$(grep -o '[0-9]* request(s) were resent' "$TMP/bench.err" | awk '{print $1}' || true)
RESENT=${RESENT:-0}
python3 - "$TMP/soak.json" "$TMP/rss" "$ANSWERED" "$RESENT" "$CODE" "$RATE" "$DURATION" <<'PY'
import json, sys, statistics
run, rss_path, answered, resent, code, rate, duration = sys.argv[1:]
b = json.load(open(run))["benchmarks"][0]
r = b["requests"]
rss = [int(x) for x in open(rss_path).read().split() if x.strip()]
for i, x in enumerate(rss):
    print(f"rss[{i}] {x/1024:.1f} MiB")
half = max(1, len(rss) // 2)
# The first sample is taken before the load ramps up: it is left out of the first half.
first, second = rss[1:half] or rss[:half], rss[half:] or rss
growth = statistics.median(second) / statistics.median(first) - 1
accounted = r["total"] + int(resent) == int(answered)
print(
    f"soak: exit {code}, {duration} s at {rate} req/s: bench total {r['total']} "
    f"(completed {r['completed']}, incomplete {r['incomplete']}, errored {r['errored']}) "
    f"+ resent {resent} vs simulator answered {answered}: "
    f"{'all accounted' if accounted else 'MISMATCH'}; "
    f"achieved {b['rates']['requests_per_s']:.0f} req/s; RSS median first half "
    f"{statistics.median(first)/1024:.1f} MiB, second half {statistics.median(second)/1024:.1f} MiB "
    f"({growth*100:+.1f}%), max {max(rss)/1024:.1f} MiB"
)
sys.exit(0 if accounted and growth < 0.10 else 1)
PY
