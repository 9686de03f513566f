#!/usr/bin/env bash
# Zero-delay throughput of the simulator: streamed 128-token /v1/completions responses per
# second and server CPU per response, measured with wrk (HTTP/1.1 keep-alive, POST).
#
#   benches/simulator.sh                 # defaults below
#   REPEATS=5 DURATION=10 CONNS=64 benches/simulator.sh
#
# Needs wrk (apt-get install -y wrk). Prints one line per run and the medians.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-8}          # seconds per run
CONNS=${CONNS:-64}               # wrk connections
WRK_THREADS=${WRK_THREADS:-1}    # wrk threads
REPEATS=${REPEATS:-3}
TOKENS=${TOKENS:-128}
SERVER_ARGS=${SERVER_ARGS:-}     # e.g. "--threads 1"
ENDPOINT=${ENDPOINT:-/v1/completions}

command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
cargo build --release --bin bench >/dev/null 2>&1 || cargo build --release --bin bench
BIN=target/release/bench

TMP=$(mktemp -d)
LUA=$TMP/post.lua
if [ "$ENDPOINT" = /v1/chat/completions ]; then
  BODY="{\"model\":\"mock-model\",\"messages\":[{\"role\":\"user\",\"content\":\"Write a story about a simulator.\"}],\"max_tokens\":$TOKENS,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
else
  BODY="{\"model\":\"mock-model\",\"prompt\":\"Write a story about a simulator.\",\"max_tokens\":$TOKENS,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
fi
cat > "$LUA" <<LUA
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
LUA

# shellcheck disable=SC2086
$BIN mock-server --zero-delay --port 0 $SERVER_ARGS > "$TMP/out" 2> "$TMP/err" &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q listening "$TMP/out" && break; sleep 0.05; done
URL=$(awk '/listening on/ {print $3}' "$TMP/out")
[ -n "$URL" ] || { echo "server did not start" >&2; cat "$TMP/err" >&2; exit 1; }

# Sanity: the response really is TOKENS content events, a usage event and [DONE].
EVENTS=$(curl -sN "$URL$ENDPOINT" -H 'Content-Type: application/json' -d "$BODY" | grep -c '^data: ')
echo "server $URL (pid $PID), $ENDPOINT, $EVENTS SSE events per response, body $(curl -sN "$URL$ENDPOINT" -H 'Content-Type: application/json' -d "$BODY" | wc -c) bytes"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
TCK=$(getconf CLK_TCK)
RATES=(); CPUS=()
for i in $(seq 1 "$REPEATS"); do
  c0=$(cpu_ticks)
  OUT=$(wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" -s "$LUA" "$URL$ENDPOINT")
  c1=$(cpu_ticks)
  REQS=$(echo "$OUT" | awk '/requests in/ {print $1}')
  RPS=$(echo "$OUT" | awk '/Requests\/sec/ {print $2}')
  ERRS=$(echo "$OUT" | awk '/Non-2xx|Socket errors/ {print}' | tr '\n' ' ')
  US=$(awk -v c=$((c1 - c0)) -v t="$TCK" -v n="$REQS" 'BEGIN { printf "%.1f", c / t / n * 1e6 }')
  echo "run $i: $RPS responses/s, $REQS responses, server CPU $US us/response ${ERRS}"
  RATES+=("$RPS"); CPUS+=("$US")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median: $(median "${RATES[@]}") responses/s, server CPU $(median "${CPUS[@]}") us/response (wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s, $(nproc) cores shared by server and wrk)"
