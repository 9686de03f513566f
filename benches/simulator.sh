#!/usr/bin/env bash
# Zero-delay throughput of the simulator: streamed 128-token /v1/completions responses per
# second and server CPU per response, measured with wrk (HTTP/1.1 keep-alive, POST), side by
# side with a plain hyper server that writes the same-size SSE body in one go
# (crates/mock/examples/plain_hyper.rs). Runs alternate between the two servers.
#
#   benches/simulator.sh                 # defaults below
#   REPEATS=5 DURATION=10 CONNS=64 benches/simulator.sh
#   PROMPTS=distinct benches/simulator.sh   # a new prompt per request (no prompt-count cache hits)
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
PROMPTS=${PROMPTS:-same}         # same | distinct

command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
cargo build --release --bin bench >/dev/null 2>&1 || cargo build --release --bin bench
cargo build --release -p bench-mock --example plain_hyper >/dev/null 2>&1 \
  || cargo build --release -p bench-mock --example plain_hyper
BIN=target/release/bench
BASE=target/release/examples/plain_hyper

TMP=$(mktemp -d)
LUA=$TMP/post.lua
if [ "$ENDPOINT" = /v1/chat/completions ]; then
  BODY="{\"model\":\"mock-model\",\"messages\":[{\"role\":\"user\",\"content\":\"Write a story about a simulator.\"}],\"max_tokens\":$TOKENS,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
else
  BODY="{\"model\":\"mock-model\",\"prompt\":\"Write a story about a simulator.\",\"max_tokens\":$TOKENS,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
fi
if [ "$PROMPTS" = distinct ]; then
  # Each request's prompt starts with a new number, so every prompt is tokenized afresh.
  PRE=${BODY%%Write a story*}; POST=${BODY#*Write a story}
  cat > "$LUA" <<LUA
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"},
    '$PRE' .. counter .. ' Write a story' .. '$POST')
end
LUA
else
  cat > "$LUA" <<LUA
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
LUA
fi

# shellcheck disable=SC2086
$BIN mock-server --zero-delay --port 0 $SERVER_ARGS > "$TMP/out" 2> "$TMP/err" &
PID=$!
$BASE > "$TMP/base_out" 2>&1 &
BPID=$!
cleanup() { kill "$PID" "$BPID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q listening "$TMP/out" && grep -q listening "$TMP/base_out" && break; sleep 0.05; done
URL=$(awk '/listening on/ {print $3}' "$TMP/out")
BURL=$(awk '/listening on/ {print $3}' "$TMP/base_out")
[ -n "$URL" ] && [ -n "$BURL" ] || { echo "servers did not start" >&2; cat "$TMP/err" >&2; exit 1; }

# Sanity: the response really is TOKENS content events, a usage event and [DONE].
EVENTS=$(curl -sN "$URL$ENDPOINT" -H 'Content-Type: application/json' -d "$BODY" | grep -c '^data: ')
echo "simulator $URL (pid $PID): $ENDPOINT, $EVENTS SSE events, $(curl -sN "$URL$ENDPOINT" -H 'Content-Type: application/json' -d "$BODY" | wc -c) bytes per response; prompts: $PROMPTS"
echo "baseline  $BURL (pid $BPID): $(curl -sN "$BURL$ENDPOINT" -d "$BODY" | grep -c '^data: ') SSE events, $(curl -sN "$BURL$ENDPOINT" -d "$BODY" | wc -c) bytes per response"

TCK=$(getconf CLK_TCK)
measure() { # name pid url
  local c0 c1 out reqs rps us errs
  c0=$(awk '{print $14 + $15}' "/proc/$2/stat")
  out=$(wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" -s "$LUA" "$3$ENDPOINT")
  c1=$(awk '{print $14 + $15}' "/proc/$2/stat")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}' | tr '\n' ' ')
  us=$(awk -v c=$((c1 - c0)) -v t="$TCK" -v n="$reqs" 'BEGIN { printf "%.1f", c / t / n * 1e6 }')
  echo "$1 $rps $us $errs"
}
SR=(); SC=(); BR=(); BC=(); RATIO=()
for i in $(seq 1 "$REPEATS"); do
  read -r _ brps bus berr <<<"$(measure baseline "$BPID" "$BURL")"
  read -r _ srps sus serr <<<"$(measure simulator "$PID" "$URL")"
  echo "run $i: simulator $srps responses/s ($sus us CPU/response) $serr| plain hyper $brps responses/s ($bus us CPU/response) $berr| load $(cut -d' ' -f1 /proc/loadavg)"
  SR+=("$srps"); SC+=("$sus"); BR+=("$brps"); BC+=("$bus")
  RATIO+=("$(awk -v a="$srps" -v b="$brps" 'BEGIN { printf "%.3f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median simulator: $(median "${SR[@]}") responses/s, $(median "${SC[@]}") us server CPU/response"
echo "median plain hyper: $(median "${BR[@]}") responses/s, $(median "${BC[@]}") us server CPU/response"
echo "median ratio simulator/plain hyper (per run): $(median "${RATIO[@]}")  (wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s, $(nproc) cores shared by servers and wrk)"
