#!/usr/bin/env bash
# Consecutive constant-rate runs of one or more bench builds (not a test), in the order given,
# against one zero-delay simulator started by the first build, from a plain shell loop:
# prints per run the achieved rate, pacer lateness p99 (queue_ms), dispatch delay p50 / p99
# (ms), client user and system CPU seconds and peak RSS (KiB).
#
#   RATE=15000 SECONDS_PER_RUN=10 bash benches/consecutive.sh NEW_BIN OLD_BIN NEW_BIN OLD_BIN ...
#
# Its runs inherit the shell's descriptors. Before f5de9fe a shell that leaked a high one (this
# machine's tool shell holds fd 251) gave them a grown descriptor table, and so better tails than
# ceiling.py's, whose Python parent closes them (docs/performance.md,
# "The descriptor table, grown before the run").
#
# The first run after the simulator starts warms it (its memory and connection set grow on the
# same cores): read it apart (docs/performance.md, "Scheduler and client ceiling").
set -euo pipefail
rate=${RATE:-15000}
secs=${SECONDS_PER_RUN:-10}
data="prompt_tokens=32,output_tokens=128,samples=4096,seed=7"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
"$1" mock-server --port "$port" --zero-delay --ignore-eos >/dev/null 2>&1 &
server=$!
trap 'kill $server; rm -rf "$tmp"' EXIT
sleep 1
# Warms the simulator's prompt-count cache: 6,000 requests cover the seeded 4,096 prompts.
"$1" run --target "http://127.0.0.1:$port" --rate-type constant --rate 1000 --max-seconds 6 \
    --data "$data" --quiet --console none --output "$tmp/w.json" 2>/dev/null
for bin in "$@"; do
    /usr/bin/time -f "%U %S %M" -o "$tmp/t.txt" "$bin" run --target "http://127.0.0.1:$port" \
        --rate-type constant --rate "$rate" --max-seconds "$secs" --data "$data" --quiet \
        --console none --output "$tmp/p.json" 2>/dev/null
    python3 - "$tmp/p.json" "$tmp/t.txt" "$bin" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"][0]
m = b["metrics"]
print(f"{sys.argv[3]}: achieved {b['rates']['achieved_rate']:.1f} req/s, pacer late p99 "
      f"{m['queue_ms']['percentiles']['p99']:.3f} ms, dispatch p50 {m['dispatch_delay_ms']['median']:.3f} "
      f"/ p99 {m['dispatch_delay_ms']['percentiles']['p99']:.3f} ms, user sys RSS {open(sys.argv[2]).read().strip()}")
PY
done
