#!/usr/bin/env bash
# Memory of a trace replay: a ROWS-row Bailian-style trace (16-token blocks, conversations
# sharing system-prompt blocks, RECORDED req/s as recorded) streamed from disk, inspected with
# `bench trace` and replayed at SPEEDUP times its speed (RECORDED x SPEEDUP req/s) for DURATION seconds
# against a separate zero-delay simulator. Prints the peak RSS of each `bench` process (GNU
# time's maximum resident set size), and the replay's fidelity line (docs/metrics.md, "Traces").
#
#   benches/trace_memory.sh                         # 1,000,000 rows, 5,000 req/s for 20 s
#   BIN=target/debug/bench benches/trace_memory.sh  # another build (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${ROWS:-1000000}
RECORDED=${RECORDED:-100}     # rows per second as recorded
SPEEDUP=${SPEEDUP:-50}
DURATION=${DURATION:-20}     # seconds of replay
BIN=${BIN:-target/release/bench}
DIR=${DIR:-$(mktemp -d)}
TRACE=$DIR/trace.jsonl

# The trace: conversation k uses system prompt k % 64 (2 blocks), then its own blocks; rows
# 1/RECORDED s apart; 16 to 128 prompt tokens, 16 output tokens.
python3 - "$TRACE" "$ROWS" "$RECORDED" <<'PY'
import random, sys
path, rows, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r = random.Random(7)
nid = 10_000
with open(path, "w") as f:
    for i in range(rows):
        ids = [2 * (i % 64), 2 * (i % 64) + 1]
        for _ in range(r.randint(0, 6)):
            ids.append(nid); nid += 1
        n = (len(ids) - 1) * 16 + r.randint(1, 16)
        f.write('{"timestamp": %.3f, "input_length": %d, "output_length": 16, "hash_ids": %s}\n'
                % (i * 1000.0 / rate, n, ids))
PY
ls -l "$TRACE" | awk '{printf "trace: %s rows, %.1f MB\n", '"$ROWS"', $5 / 1e6}'

"$BIN" mock-server --port 0 --zero-delay --max-batch 4096 >"$DIR/mock.out" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  PORT=$(grep -o '127.0.0.1:[0-9]*' "$DIR/mock.out" | head -1 | cut -d: -f2) && [ -n "$PORT" ] && break
  sleep 0.1
done

/usr/bin/time -f "bench trace: peak RSS %M KB, %e s" "$BIN" trace "trace=$TRACE,format=bailian"
/usr/bin/time -f "bench run: peak RSS %M KB, %e s" "$BIN" run --target "http://127.0.0.1:$PORT" \
  --data "trace=$TRACE,format=bailian" --speedup "$SPEEDUP" --max-seconds "$DURATION" \
  --drain-timeout 10 --console vllm -q --output "$DIR/run.json" | grep '^trace fidelity'
